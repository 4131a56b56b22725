"""The StreamingLLM-style cache engine: one shared sink prefix, one rolling window per stream."""

from .engine import Chunk, ChunkScores, EngineConfig, StreamingEngine
from .pool import PoolStats, SlotPool
from .sink import SinkPrefix, prime_sink_prefix

__all__ = [
    "Chunk", "ChunkScores", "EngineConfig", "StreamingEngine", "PoolStats", "SlotPool", "SinkPrefix",
    "prime_sink_prefix",
]
