"""A pool of fixed-size rolling windows: many streams in one preallocated tensor.

Every stream's window has the same shape (layers x kv_heads x L x head_dim, for keys and for
values), so a stream is just a slot index into two big tensors that are allocated once and
never grow. Token ``p`` of a stream lives in ring position ``p % L``. When more streams are
active than there are slots, the least recently used idle stream is copied to host memory and
its slot reused; when it comes back it is copied into a free slot bit for bit. Only the ring
positions a stream has filled are copied: a short stream (an HDFS block's session of a few hundred
tokens) costs host memory for its tokens, not for a whole window.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

import torch
from torch import Tensor

from .pages import PoolStats


@dataclass
class StreamState:
    """Where a stream's window lives and how far the stream has got."""

    length: int = 0  # tokens seen so far; the next token has stream index `length`
    base: int = 0  # keys are stored rotated at RoPE position (stream index - base)
    slot: int | None = None  # index into the pool while resident
    host: "HostWindow | None" = None  # the window while offloaded


@dataclass
class HostWindow:
    keys: Tensor  # [layers, Hkv, n, hd]: ring positions 0..n-1 (n = min(stream length, L))
    values: Tensor
    last_hidden: Tensor  # [dim]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.keys, self.values, self.last_hidden))


@dataclass
class SlotPool:
    n_layers: int
    n_kv_heads: int
    head_dim: int
    dim: int
    window: int
    slots: int
    device: torch.device
    dtype: torch.dtype
    host_bytes_limit: int | None = None
    keys: Tensor = field(init=False)  # [layers, slots, Hkv, L, hd]
    values: Tensor = field(init=False)
    last_hidden: Tensor = field(init=False)  # [slots, dim]
    streams: "OrderedDict[str, StreamState]" = field(init=False)  # least recently used first
    _resident: "OrderedDict[str, None]" = field(init=False)  # the streams holding a slot, least recent first
    _free: list[int] = field(init=False)
    _host_bytes: int = field(init=False, default=0)
    _counters: dict = field(init=False)

    def __post_init__(self):
        if self.slots < 1:
            raise ValueError("the slot pool needs at least one slot")
        shape = (self.n_layers, self.slots, self.n_kv_heads, self.window, self.head_dim)
        # Zeros, not empty: masked-out ring positions are still multiplied by 0 and must be finite.
        self.keys = torch.zeros(shape, device=self.device, dtype=self.dtype)
        self.values = torch.zeros(shape, device=self.device, dtype=self.dtype)
        self.last_hidden = torch.zeros(self.slots, self.dim, device=self.device, dtype=self.dtype)
        self.streams = OrderedDict()
        self._resident = OrderedDict()
        self._free = list(range(self.slots - 1, -1, -1))  # pop() hands out slot 0 first
        self._counters = {"offloads": 0, "restores": 0, "forgotten": 0}

    @staticmethod
    def bytes_per_slot(n_layers: int, n_kv_heads: int, head_dim: int, dim: int, window: int,
                       dtype: torch.dtype) -> int:
        elem = torch.empty((), dtype=dtype).element_size()
        return (2 * n_layers * n_kv_heads * window * head_dim + dim) * elem

    def tensors(self) -> tuple[Tensor, Tensor, Tensor]:
        return self.keys, self.values, self.last_hidden

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors())

    # --- residency ------------------------------------------------------------------------

    def acquire(self, stream_ids: list[str], fresh_hidden: Tensor) -> list[StreamState]:
        """Make every stream in ``stream_ids`` resident (at most ``slots`` distinct ids).

        New streams start empty with ``fresh_hidden`` as their predictor of the first token.
        Streams not in ``stream_ids`` are the only candidates for offloading.
        """
        if len(set(stream_ids)) > self.slots:
            raise ValueError(f"{len(set(stream_ids))} streams in one batch but the pool has {self.slots} slots")
        wanted = set(stream_ids)
        states = []
        for sid in stream_ids:
            state = self.streams.get(sid)
            if state is None:
                state = StreamState()
                self.streams[sid] = state
            self.streams.move_to_end(sid)
            if state.slot is None:
                state.slot = self._take_slot(wanted)
                if state.host is not None:
                    self._restore(state)
                else:
                    self.last_hidden[state.slot].copy_(fresh_hidden)
            self._resident[sid] = None
            self._resident.move_to_end(sid)
            states.append(state)
        return states

    def drop(self, stream_id: str) -> bool:
        """Forget a stream (ended, or its partition moved to another worker)."""
        state = self.streams.pop(stream_id, None)
        if state is None:
            return False
        self._resident.pop(stream_id, None)
        if state.slot is not None:
            self._free.append(state.slot)
        if state.host is not None:
            self._host_bytes -= state.host.nbytes()
        return True

    def _take_slot(self, keep: set[str]) -> int:
        if self._free:
            return self._free.pop()
        for sid in self._resident:  # least recently used first; O(batch), not O(streams known)
            if sid not in keep:
                return self._offload(sid, self.streams[sid])
        raise RuntimeError("no slot can be freed: every resident stream is in the current batch")

    def _offload(self, stream_id: str, state: StreamState) -> int:
        slot, used = state.slot, min(state.length, self.window)
        pin = self.device.type == "cuda"

        def copy(tensor: Tensor) -> Tensor:
            part = tensor[:, slot, :, :used]
            return part.to("cpu", copy=True).pin_memory() if pin else part.cpu().clone()

        host = HostWindow(keys=copy(self.keys), values=copy(self.values),
                          last_hidden=self.last_hidden[slot].cpu().clone())
        state.host, state.slot = host, None
        del self._resident[stream_id]
        self._host_bytes += host.nbytes()
        self._counters["offloads"] += 1
        self._enforce_host_budget(keep=stream_id)
        return slot

    def _restore(self, state: StreamState) -> None:
        host = state.host
        used = host.keys.shape[2]  # ring positions past these are masked out until written
        self.keys[:, state.slot, :, :used].copy_(host.keys, non_blocking=True)
        self.values[:, state.slot, :, :used].copy_(host.values, non_blocking=True)
        self.last_hidden[state.slot].copy_(host.last_hidden)
        self._host_bytes -= host.nbytes()
        state.host = None
        self._counters["restores"] += 1

    def _enforce_host_budget(self, keep: str) -> None:
        if self.host_bytes_limit is None or self._host_bytes <= self.host_bytes_limit:
            return
        for sid in list(self.streams):
            if self._host_bytes <= self.host_bytes_limit:
                return
            state = self.streams[sid]
            if state.host is not None and sid != keep:
                self.drop(sid)
                self._counters["forgotten"] += 1

    def stats(self) -> PoolStats:
        resident = sum(1 for s in self.streams.values() if s.slot is not None)
        return PoolStats(
            slots=self.slots,
            slots_in_use=self.slots - len(self._free),
            streams_resident=resident,
            streams_on_host=sum(1 for s in self.streams.values() if s.host is not None),
            device_bytes=self.nbytes(),
            host_bytes=self._host_bytes,
            **self._counters,
        )
