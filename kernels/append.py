"""All streams' new keys and values into their pages, in one launch per layer, rotated on the way.

A pass's new tokens go to scattered pool slots (each stream's own pages). The torch path does it in
four ops a layer (rotate the keys, gather the real tokens out of the padded batch, two
``index_copy_``); this kernel does it in one: program ``n`` reads token ``source[n]`` of the padded
batch (``b * T + t``), rotates its key at its stable position (cos and the signed sin of
``Rotary.table``), casts key and value to the pool's dtype, and writes them at flat slot ``slot[n]``
(``page * P + offset``) of one layer's pages.

Sections in the order of Triton's tutorials: the kernel, the launcher, the torch reference. The test
is ``tests/test_kernels.py``, the benchmark ``benchmarks/kernel_bench.py``.
"""

from __future__ import annotations

import triton
import triton.language as tl
from torch import Tensor


@triton.jit
def _append_kernel(K, V, Cos, Sin, Source, Slot, KeysOut, ValuesOut,
                   stride_kb, stride_kh, stride_kt, stride_vb, stride_vh, stride_vt, stride_cb, stride_ct,
                   stride_slot, stride_head, T,
                   HKV: tl.constexpr, HKV_BLOCK: tl.constexpr, HD: tl.constexpr):
    n = tl.program_id(0)
    source = tl.load(Source + n)
    b, t = source // T, source % T
    slot = tl.load(Slot + n).to(tl.int64)
    heads = tl.arange(0, HKV_BLOCK)
    dims = tl.arange(0, HD)
    ok = (heads < HKV)[:, None]
    k_at = K + b * stride_kb + t * stride_kt + heads[:, None] * stride_kh
    k = tl.load(k_at + dims[None, :], mask=ok, other=0.0).to(tl.float32)
    # rotate_half(x) * sin == roll(x, HD / 2) * signed_sin: x at (d + HD / 2) mod HD
    k_rolled = tl.load(k_at + ((dims + HD // 2) % HD)[None, :], mask=ok, other=0.0).to(tl.float32)
    cos = tl.load(Cos + b * stride_cb + t * stride_ct + dims).to(tl.float32)
    sin = tl.load(Sin + b * stride_cb + t * stride_ct + dims).to(tl.float32)
    rotated = k * cos[None, :] + k_rolled * sin[None, :]
    v = tl.load(V + b * stride_vb + t * stride_vt + heads[:, None] * stride_vh + dims[None, :], mask=ok, other=0.0)
    out_at = slot * stride_slot + heads[:, None] * stride_head + dims[None, :]
    tl.store(KeysOut + out_at, rotated.to(KeysOut.dtype.element_ty), mask=ok)
    tl.store(ValuesOut + out_at, v.to(ValuesOut.dtype.element_ty), mask=ok)


def append_kv(k: Tensor, v: Tensor, cos: Tensor, signed_sin: Tensor, source: Tensor, slot: Tensor,
              keys: Tensor, values: Tensor) -> None:
    """Write a pass's new keys (rotated) and values into one layer's pages, in place.

    k, v: [B, Hkv, T, hd], k not rotated yet; cos, signed_sin: [B, T, hd] (the keys' stable
    positions); source: [N] tokens to write, as ``b * T + t``; slot: [N] their flat pool slots
    (``page * P + offset``); keys, values: one layer's pages [pages, P, Hkv, hd], contiguous.
    """
    _, Hkv, T, hd = k.shape
    if hd & (hd - 1) or k.stride(-1) != 1 or v.stride(-1) != 1 or cos.stride(-1) != 1 or signed_sin.stride() != cos.stride():
        raise ValueError("append_kv needs head_dim a power of two and every last dimension contiguous")
    if not (keys.is_contiguous() and values.is_contiguous()):
        raise ValueError("the pages must be contiguous")
    if source.numel() == 0:
        return
    _append_kernel[(source.numel(),)](
        k, v, cos, signed_sin, source, slot, keys, values,
        k.stride(0), k.stride(1), k.stride(2), v.stride(0), v.stride(1), v.stride(2), cos.stride(0), cos.stride(1),
        Hkv * hd, hd, T, HKV=Hkv, HKV_BLOCK=triton.next_power_of_2(Hkv), HD=hd,
    )


def append_kv_reference(k: Tensor, v: Tensor, cos: Tensor, signed_sin: Tensor, source: Tensor, slot: Tensor,
                        keys: Tensor, values: Tensor) -> None:
    """The same writes in plain torch."""
    _, Hkv, T, hd = k.shape
    rotated = k * cos[:, None] + k.roll(hd // 2, dims=-1) * signed_sin[:, None]  # [B, Hkv, T, hd]
    rows, cols = source // T, source % T
    keys.view(-1, Hkv, hd).index_copy_(0, slot, rotated[rows, :, cols].to(keys.dtype))
    values.view(-1, Hkv, hd).index_copy_(0, slot, v[rows, :, cols].to(values.dtype))
