"""The compiled half of dpfim/readers/recordkey.py (numba): SipHash-2-4 and the per-record
selection of the --max-record-items sample. Imported lazily (numba costs ~0.5 s to import),
only when some record is longer than the cap. Every uint64 operand is typed as such: numba
turns mixed int64/uint64 arithmetic into floats."""

from __future__ import annotations

import numpy as np
from numba import njit

_C0 = np.uint64(0x736F6D6570736575)
_C1 = np.uint64(0x646F72616E646F6D)
_C2 = np.uint64(0x6C7967656E657261)
_C3 = np.uint64(0x7465646279746573)
_FF = np.uint64(0xFF)


@njit(cache=True, nogil=True, inline="always")
def _rotl(x: np.uint64, b: int) -> np.uint64:
    return (x << np.uint64(b)) | (x >> np.uint64(64 - b))


@njit(cache=True, nogil=True, inline="always")
def _round(
    v0: np.uint64, v1: np.uint64, v2: np.uint64, v3: np.uint64
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64]:
    v0 = v0 + v1
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = v2 + v3
    v3 = _rotl(v3, 16) ^ v2
    v0 = v0 + v3
    v3 = _rotl(v3, 21) ^ v0
    v2 = v2 + v1
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


@njit(cache=True, nogil=True)
def siphash24(k0: np.uint64, k1: np.uint64, data: np.ndarray, s: int, e: int) -> np.uint64:
    """SipHash-2-4 of the bytes data[s:e] (uint8) under the key (k0, k1)."""
    v0, v1, v2, v3 = k0 ^ _C0, k1 ^ _C1, k0 ^ _C2, k1 ^ _C3
    n = e - s
    whole = s + n - n % 8
    i = s
    while i < whole:
        m = np.uint64(0)
        for k in range(8):
            m |= np.uint64(data[i + k]) << np.uint64(8 * k)
        v3 ^= m
        v0, v1, v2, v3 = _round(v0, v1, v2, v3)
        v0, v1, v2, v3 = _round(v0, v1, v2, v3)
        v0 ^= m
        i += 8
    m = (np.uint64(n) & _FF) << np.uint64(56)
    for k in range(e - whole):
        m |= np.uint64(data[whole + k]) << np.uint64(8 * k)
    v3 ^= m
    v0, v1, v2, v3 = _round(v0, v1, v2, v3)
    v0, v1, v2, v3 = _round(v0, v1, v2, v3)
    v0 ^= m
    v2 ^= _FF
    for _ in range(4):
        v0, v1, v2, v3 = _round(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


@njit(cache=True, nogil=True)
def _priority(k0: np.uint64, k1: np.uint64, msg: np.ndarray) -> np.uint64:
    return siphash24(k0, k1, msg, 0, 32)


@njit(cache=True, nogil=True)
def _put(msg: np.ndarray, at: int, x: np.uint64) -> None:
    for k in range(8):
        msg[at + k] = np.uint8((x >> np.uint64(8 * k)) & _FF)


@njit(cache=True, nogil=True)
def keep_mask(
    arena: np.ndarray,
    starts: np.ndarray,
    ids: np.ndarray,
    bounds: np.ndarray,
    limit: int,
    keys: np.ndarray,
) -> np.ndarray:
    """See recordkey.keep_mask: per long record d, ρ, p and the `limit` smallest (p, d)."""
    mask = np.zeros(len(ids), dtype=np.bool_)
    msg = np.zeros(32, dtype=np.uint8)
    for j in range(len(bounds) - 1):
        lo, hi = bounds[j], bounds[j + 1]
        m = hi - lo
        d_lo = np.empty(m, dtype=np.uint64)
        d_hi = np.empty(m, dtype=np.uint64)
        r_lo = np.uint64(0)
        r_hi = np.uint64(0)
        for t in range(m):
            i = ids[lo + t]
            a, b = starts[i], starts[i + 1]
            x = siphash24(keys[0], keys[1], arena, a, b)
            y = siphash24(keys[2], keys[3], arena, a, b)
            d_lo[t], d_hi[t] = x, y
            s = r_lo + x  # ρ += d (mod 2^128): the low half's carry into the high half
            r_hi = r_hi + y + (np.uint64(1) if s < r_lo else np.uint64(0))
            r_lo = s
        _put(msg, 0, r_lo)
        _put(msg, 8, r_hi)
        p = np.empty(m, dtype=np.uint64)
        for t in range(m):
            _put(msg, 16, d_lo[t])
            _put(msg, 24, d_hi[t])
            p[t] = _priority(keys[4], keys[5], msg)
        if m <= limit:
            mask[lo:hi] = True
            continue
        order = np.argsort(p)
        cut = p[order[limit - 1]]
        taken = 0
        for t in range(m):
            if p[t] < cut:
                mask[lo + t] = True
                taken += 1
        # ties at the cut (a 2^-64 event a pair): the smallest (d_hi, d_lo) among them
        tied = np.flatnonzero(p == cut)
        while taken < limit:
            best = -1
            for t in tied.tolist():
                if mask[lo + t]:
                    continue
                if best < 0 or (d_hi[t], d_lo[t]) < (d_hi[best], d_lo[best]):
                    best = t
            mask[lo + best] = True
            taken += 1
    return mask
