"""Paged stream windows: every stream's keys and values in fixed-size pages, in memory tiers.

A stream holds only the pages its history fills: token ``p`` of a stream lives in its logical page
``p // P`` at offset ``p % P`` (``P`` = ``page_tokens``), and the stream's page table lists the pool
pages of its logical pages, oldest first. Pages that slide out of the window (every token on them
more than ``L`` back) go back to the pool. So an HDFS session of 200 tokens costs 7 pages of 32
tokens, not a 2048-token slot, and memory is spent on tokens, not on streams.

When the pool runs short of pages, room is made in this order, least recently used streams first
(never a stream of the pass being prepared):

1. **shrink** cold streams' windows to their last ``shrink_to`` tokens (``L'``): the oldest context
   matters least to the next line (StreamingLLM's point), and nothing is copied;
2. **host**: move cold streams' pages to host memory (pinned on a GPU), bit for bit;
3. **disk**: move them on to a memory-mapped file under ``disk_dir``, bit for bit, when the host
   tier is over its byte budget;
4. **forget** the least recently used stream of the last tier only when every tier is full, and
   say so: ``PagedStream.forgotten`` marks its next scores, ``PoolStats.forgotten`` counts it.

Shrinking first costs a little accuracy and no time; the tiers cost a copy (host) or I/O (disk)
when the stream comes back, and keep it exact; forgetting loses the stream's whole context, so it
comes last. On a CPU the pool already lives in host memory: there the host tier only adds a second
budget, and by default it is off.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from .transfer import to_device

PAD_PAGE = 0  # a page of zeros that pads every page table; never handed out, never written

POOL, HOST, DISK = "pool", "host", "disk"


@dataclass
class PagedStream:
    """One stream's history: where its pages are and how far the stream has got."""

    length: int = 0  # tokens seen; the next token has stream index `length`
    first: int = 0  # stream index of the oldest token kept (later than 0 once shrunk or slid)
    base: int = 0  # keys are stored rotated at RoPE position (stream index - base)
    page0: int = 0  # logical page number of pages[0]
    pages: list[int] = field(default_factory=list)  # pool pages while in the pool, oldest first
    last_hidden: Tensor | None = None  # [dim] after the stream's last token; None: a new stream
    tier: str = POOL
    host: tuple[Tensor, Tensor] | None = None  # [layers, n, P, Hkv, hd] keys, values on the host tier
    disk: list[int] | None = None  # disk pages on the disk tier
    forgotten: bool = False  # its history was forgotten since its last scored tokens

    def held(self) -> int:
        """Pages this stream holds, in whichever tier."""
        if self.tier == POOL:
            return len(self.pages)
        if self.tier == HOST:
            return self.host[0].shape[1]
        return len(self.disk)


@dataclass
class PoolStats:
    slots: int  # pool pages (the paged pool's unit)
    slots_in_use: int
    streams_resident: int
    streams_on_host: int
    device_bytes: int
    host_bytes: int
    offloads: int = 0
    restores: int = 0
    forgotten: int = 0
    streams_on_disk: int = 0
    disk_bytes: int = 0
    shrunk: int = 0
    page_tokens: int = 0


class DiskTier:
    """Pages in one memory-mapped file: [pages, 2 (keys, values), layers, P, Hkv, hd], a free list."""

    def __init__(self, directory: str | Path, pages: int, page_shape: tuple[int, ...], dtype: torch.dtype):
        Path(directory).mkdir(parents=True, exist_ok=True)
        self.dtype = dtype
        # numpy has no bfloat16: the bytes are kept as 16-bit (or 32-bit) integers and viewed back
        self.np_dtype = {2: np.int16, 4: np.int32, 1: np.int8}[torch.empty((), dtype=dtype).element_size()]
        handle, name = tempfile.mkstemp(prefix="logstream-kv-", suffix=".pages", dir=directory)
        os.close(handle)
        self.path = Path(name)
        self.data = np.memmap(self.path, dtype=self.np_dtype, mode="w+", shape=(pages, 2, *page_shape))
        self.path.unlink()  # the mapping stays valid; nothing is left behind when the process ends
        self._free = list(range(pages - 1, -1, -1))
        self.page_bytes = int(np.prod(self.data.shape[1:])) * self.data.itemsize

    def free_pages(self) -> int:
        return len(self._free)

    def write(self, keys: Tensor, values: Tensor) -> list[int]:
        """keys/values [layers, n, P, Hkv, hd] (on the CPU) -> the disk pages now holding them."""
        n = keys.shape[1]
        pages = [self._free.pop() for _ in range(n)]
        both = torch.stack((keys, values))  # [2, layers, n, P, Hkv, hd]
        array = both.contiguous().view(_int_dtype(self.dtype)).numpy()
        self.data[pages] = np.moveaxis(array, 2, 0)
        return pages

    def read(self, pages: list[int]) -> tuple[Tensor, Tensor]:
        array = np.moveaxis(np.asarray(self.data[pages]), 0, 2)  # [2, layers, n, P, Hkv, hd]
        both = torch.from_numpy(np.ascontiguousarray(array)).view(self.dtype)
        return both[0], both[1]

    def release(self, pages: list[int]) -> None:
        self._free.extend(pages)


def _int_dtype(dtype: torch.dtype) -> torch.dtype:
    return {2: torch.int16, 4: torch.int32, 1: torch.int8}[torch.empty((), dtype=dtype).element_size()]


class PagedPool:
    """Fixed-size pages of keys and values for many streams, with host and disk tiers behind it.

    ``keys``/``values``: [layers, pages, P, Hkv, hd] in the storage dtype (bfloat16 by default in the
    service: half the bytes of float32, the accuracy cost is measured in ``benchmarks/streams.py``).
    Allocated once with ``torch.empty``: memory is committed as pages are first used.
    """

    def __init__(self, n_layers: int, n_kv_heads: int, head_dim: int, dim: int, window: int, page_tokens: int,
                 pages: int, device: torch.device, dtype: torch.dtype, *, host_bytes: int | None = 0,
                 disk_dir: str | Path | None = None, disk_bytes: int = 0, shrink_to: int | None = None,
                 forgotten_memory: int = 100_000):
        if pages < 1:
            raise ValueError("the page pool needs at least one page")
        if shrink_to is not None and shrink_to < 1:
            raise ValueError(f"shrink_to must be at least 1 token, got {shrink_to}")
        if shrink_to is not None and shrink_to >= window:
            shrink_to = None  # a window of that many tokens or more has nothing to shrink
        self.n_layers, self.n_kv_heads, self.head_dim, self.dim = n_layers, n_kv_heads, head_dim, dim
        self.window, self.page_tokens, self.device, self.dtype = window, page_tokens, device, dtype
        self.capacity = pages
        shape = (n_layers, pages + 1, page_tokens, n_kv_heads, head_dim)  # + the padding page
        self.keys = torch.empty(shape, device=device, dtype=dtype)
        self.values = torch.empty(shape, device=device, dtype=dtype)
        self.keys[:, PAD_PAGE].zero_()
        self.values[:, PAD_PAGE].zero_()
        self.host_bytes_limit = host_bytes
        self.shrink_to = shrink_to
        self.page_bytes = 2 * n_layers * page_tokens * n_kv_heads * head_dim * self.keys.element_size()
        self.disk = None
        if disk_dir is not None and disk_bytes >= self.page_bytes:
            self.disk = DiskTier(disk_dir, disk_bytes // self.page_bytes,
                                 (n_layers, page_tokens, n_kv_heads, head_dim), dtype)
        self.streams: OrderedDict[str, PagedStream] = OrderedDict()  # least recently used first
        # the streams of each tier, least recently used first, and the pool's windows longer than
        # shrink_to: making room costs what it frees, not a walk over every stream (100,000 of them)
        self._tier: dict[str, OrderedDict[str, None]] = {POOL: OrderedDict(), HOST: OrderedDict(), DISK: OrderedDict()}
        self._shrinkable: OrderedDict[str, None] = OrderedDict()
        self._free = list(range(pages, 0, -1))  # pop() hands out page 1 first; 0 is the padding page
        self._host_bytes = 0
        self._forgotten_ids: OrderedDict[str, bool] = OrderedDict()  # to flag their next scores
        self._forgotten_memory = forgotten_memory
        self._counters = {"offloads": 0, "restores": 0, "forgotten": 0, "shrunk": 0}

    @staticmethod
    def bytes_per_page(n_layers: int, n_kv_heads: int, head_dim: int, page_tokens: int, dtype: torch.dtype) -> int:
        return 2 * n_layers * page_tokens * n_kv_heads * head_dim * torch.empty((), dtype=dtype).element_size()

    # --- what a pass needs ------------------------------------------------------------------------

    def pages_for(self, stream_id: str, new_tokens: int) -> int:
        """Pool pages a stream holds while a pass adds ``new_tokens`` to it: its visible history and
        the new tokens' pages."""
        state = self.streams.get(stream_id)
        length, first = (state.length, state.first) if state else (0, 0)
        lo = max(first, length - self.window)
        return (length + new_tokens - 1) // self.page_tokens - lo // self.page_tokens + 1

    def acquire(self, stream_ids: list[str], new_tokens: list[int]) -> list[PagedStream]:
        """Make every stream of a pass resident with pages for its new tokens (distinct ids)."""
        need = sum(self.pages_for(sid, n) for sid, n in zip(stream_ids, new_tokens))
        if need > self.capacity:
            raise ValueError(f"a pass needs {need} pages but the pool has {self.capacity}: fewer rows per pass")
        wanted = set(stream_ids)
        states, fresh = [], []
        for sid, n in zip(stream_ids, new_tokens):
            state = self.streams.get(sid)
            if state is None:
                state = self.streams[sid] = PagedStream()
                state.forgotten = self._forgotten_ids.pop(sid, False)
                self._tier[POOL][sid] = None
            self.streams.move_to_end(sid)
            self._tier[state.tier].move_to_end(sid)
            if sid in self._shrinkable:
                self._shrinkable.move_to_end(sid)
            if state.tier != POOL:
                self._restore(sid, state, wanted)
            last = (state.length + n - 1) // self.page_tokens  # logical page of the last new token
            if not state.pages:
                state.page0 = max(state.first, state.length - self.window) // self.page_tokens
            missing = last - (state.page0 + len(state.pages)) + 1
            if missing > 0:
                taken = self._take(missing, wanted)
                state.pages += taken
                fresh += taken
            states.append(state)
        self._zero(fresh)  # in one op for the pass, not one a stream (on CUDA each waited for the device)
        return states

    def commit(self, stream_id: str, state: PagedStream, added: int) -> None:
        """After a pass: the stream is ``added`` tokens longer; pages no future token can see are freed."""
        state.length += added
        state.forgotten = False
        self._keep_from(state, state.length - self.window)
        if self.shrink_to is not None and state.length - state.first > self.shrink_to:
            self._shrinkable[stream_id] = None

    # --- room ---------------------------------------------------------------------------------

    def _take(self, n: int, keep: set[str]) -> list[int]:
        """``n`` free pages, as they are: their old contents stay until written or ``_zero``-ed."""
        if len(self._free) < n:
            self._make_room(n, keep)
        return [self._free.pop() for _ in range(n)]

    def _zero(self, pages: list[int]) -> None:
        """A page's unwritten positions are masked out, but must be finite (0 * inf is not 0)."""
        if pages:
            index = to_device(pages, self.device)
            self.keys.index_fill_(1, index, 0)
            self.values.index_fill_(1, index, 0)

    def _make_room(self, n: int, keep: set[str]) -> None:
        """Free pool pages until ``n`` are free: shrink, then move to the host or disk tier, then forget."""
        for sid in _oldest(self._shrinkable, keep):
            if len(self._free) >= n:
                return
            state = self.streams[sid]
            self._keep_from(state, state.length - self.shrink_to)
            del self._shrinkable[sid]
            self._counters["shrunk"] += 1
        for sid in _oldest(self._tier[POOL], keep):
            if len(self._free) >= n:
                return
            if self.streams[sid].pages:
                self._evict(sid, self.streams[sid])
        if len(self._free) < n:
            raise RuntimeError(f"no room for {n} pages: every page is held by a stream of this pass")

    def _keep_from(self, state: PagedStream, first: int) -> None:
        """Drop the stream's tokens before ``first`` (its window slid, or was shrunk)."""
        if first <= state.first:
            return
        state.first = first
        drop = min(first // self.page_tokens - state.page0, len(state.pages))
        if drop > 0:
            self._free.extend(state.pages[:drop])
            del state.pages[:drop]
            state.page0 += drop

    def _evict(self, stream_id: str, state: PagedStream) -> None:
        """Move a cold stream out of the pool: to the host tier, else the disk tier, else forget it."""
        if self.host_bytes_limit == 0 and self.disk is None:  # no tier to move it to: nothing to copy
            self._forget(stream_id)
            return
        keys, values = self._read_pages(state.pages)
        self._free.extend(state.pages)
        state.pages = []
        self._shrinkable.pop(stream_id, None)
        self._counters["offloads"] += 1
        if self.host_bytes_limit != 0:  # None: no limit
            self._move(stream_id, state, HOST)
            state.host = (keys, values)
            self._host_bytes += _nbytes(keys, values)
            self._enforce_host_budget(keep=stream_id)
        else:
            self._to_disk_or_forget(stream_id, state, keys, values)

    def _move(self, stream_id: str, state: PagedStream, tier: str) -> None:
        del self._tier[state.tier][stream_id]
        self._tier[tier][stream_id] = None
        state.tier = tier

    def _read_pages(self, pages: list[int]) -> tuple[Tensor, Tensor]:
        index = torch.tensor(pages, device=self.device, dtype=torch.long)
        pin = self.device.type == "cuda"

        def copy(tensor: Tensor) -> Tensor:
            part = tensor.index_select(1, index)
            return part.to("cpu", copy=True).pin_memory() if pin else part.cpu()

        return copy(self.keys), copy(self.values)

    def _to_disk_or_forget(self, stream_id: str, state: PagedStream, keys: Tensor, values: Tensor) -> None:
        if self.disk is not None:
            for sid in _oldest(self._tier[DISK], {stream_id}):  # room on disk: forget its oldest streams
                if self.disk.free_pages() >= keys.shape[1]:
                    break
                self._forget(sid)
            if self.disk.free_pages() >= keys.shape[1]:
                self._move(stream_id, state, DISK)
                state.disk, state.host = self.disk.write(keys, values), None
                return
        self._forget(stream_id)

    def _enforce_host_budget(self, keep: str) -> None:
        if self.host_bytes_limit is None:
            return
        for sid in _oldest(self._tier[HOST], {keep}):
            if self._host_bytes <= self.host_bytes_limit:
                return
            state = self.streams[sid]
            keys, values = state.host
            self._host_bytes -= _nbytes(keys, values)
            self._to_disk_or_forget(sid, state, keys, values)

    def _restore(self, stream_id: str, state: PagedStream, keep: set[str]) -> None:
        if state.tier == HOST:
            keys, values = state.host
            self._host_bytes -= _nbytes(keys, values)
        else:
            keys, values = self.disk.read(state.disk)
            self.disk.release(state.disk)
        state.host, state.disk = None, None
        self._move(stream_id, state, POOL)
        pages = self._take(keys.shape[1], keep)  # every position is written below, no zeroing
        index = torch.tensor(pages, device=self.device, dtype=torch.long)
        self.keys.index_copy_(1, index, keys.to(self.device, non_blocking=True))
        self.values.index_copy_(1, index, values.to(self.device, non_blocking=True))
        state.pages = pages
        self._counters["restores"] += 1

    def _forget(self, stream_id: str) -> None:
        self.drop(stream_id)
        self._counters["forgotten"] += 1
        self._forgotten_ids[stream_id] = True
        while len(self._forgotten_ids) > self._forgotten_memory:
            self._forgotten_ids.popitem(last=False)

    def drop(self, stream_id: str) -> bool:
        """Forget a stream (ended, or its partition moved to another worker)."""
        state = self.streams.pop(stream_id, None)
        if state is None:
            return False
        del self._tier[state.tier][stream_id]
        self._shrinkable.pop(stream_id, None)
        if state.tier == POOL:
            self._free.extend(state.pages)
        elif state.tier == HOST:
            self._host_bytes -= _nbytes(*state.host)
        else:
            self.disk.release(state.disk)
        return True

    # --- reading ------------------------------------------------------------------------------

    def nbytes(self) -> int:
        return (self.keys.numel() + self.values.numel()) * self.keys.element_size()

    def tensors(self) -> tuple[Tensor, Tensor]:
        return self.keys, self.values

    def stats(self) -> PoolStats:
        tiers = {tier: len(streams) for tier, streams in self._tier.items()}
        disk_pages = 0 if self.disk is None else self.disk.data.shape[0] - self.disk.free_pages()
        return PoolStats(
            slots=self.capacity, slots_in_use=self.capacity - len(self._free), streams_resident=tiers[POOL],
            streams_on_host=tiers[HOST], device_bytes=self.page_bytes * (self.capacity - len(self._free)),
            host_bytes=self._host_bytes, streams_on_disk=tiers[DISK],
            disk_bytes=disk_pages * (self.disk.page_bytes if self.disk else 0), page_tokens=self.page_tokens,
            **self._counters)


def _oldest(order: OrderedDict, keep: set[str], step: int = 64):
    """The entries of an LRU order, oldest first, but ``keep``: a few at a time, so that making room in
    a pool of 100,000 streams costs what it frees, not a copy of the whole order (which the caller
    changes while it goes: what it moves out is not met again)."""
    passed: set[str] = set()
    while True:
        batch = list(itertools.islice((s for s in order if s not in keep and s not in passed), step))
        if not batch:
            return
        for sid in batch:
            if sid in order:
                passed.add(sid)
                yield sid


def _nbytes(*tensors: Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)

