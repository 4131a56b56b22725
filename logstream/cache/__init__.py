"""The StreamingLLM-style cache engine: one shared sink prefix, one rolling window per stream."""

from .engine import Chunk, ChunkScores, EngineConfig, StreamingEngine
from .pages import PagedPool, PoolStats
from .pool import SlotPool
from .sink import SinkPrefix, prime_sink_prefix

__all__ = [
    "Chunk", "ChunkScores", "EngineConfig", "StreamingEngine", "PagedPool", "PoolStats", "SlotPool", "SinkPrefix",
    "prime_sink_prefix",
]
