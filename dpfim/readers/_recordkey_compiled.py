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
def _digest(
    arena: np.ndarray, starts: np.ndarray, i: int, keys: np.ndarray
) -> tuple[np.uint64, np.uint64]:
    a, b = starts[i], starts[i + 1]
    return siphash24(keys[0], keys[1], arena, a, b), siphash24(keys[2], keys[3], arena, a, b)


@njit(cache=True, nogil=True, inline="always")
def _above(p: np.ndarray, hi: np.ndarray, lo: np.ndarray, x: int, y: int) -> bool:
    """Entry x orders after entry y by (p, d_hi, d_lo)."""
    if p[x] != p[y]:
        return bool(p[x] > p[y])
    if hi[x] != hi[y]:
        return bool(hi[x] > hi[y])
    return bool(lo[x] > lo[y])


@njit(cache=True, nogil=True, inline="always")
def _swap(p: np.ndarray, hi: np.ndarray, lo: np.ndarray, at: np.ndarray, x: int, y: int) -> None:
    """Swap heap entries x and y (the three keys and the position)."""
    for arr in (p, hi, lo):
        arr[x], arr[y] = arr[y], arr[x]
    at[x], at[y] = at[y], at[x]


@njit(cache=True, nogil=True)
def _sift_down(p: np.ndarray, hi: np.ndarray, lo: np.ndarray, at: np.ndarray, size: int) -> None:
    """Restore the max-heap (by (p, d_hi, d_lo)) of `size` entries after its root changed."""
    k = 0
    while True:
        big = k
        for c in (2 * k + 1, 2 * k + 2):
            if c < size and _above(p, hi, lo, c, big):
                big = c
        if big == k:
            return
        _swap(p, hi, lo, at, k, big)
        k = big


@njit(cache=True, nogil=True)
def _sift_up(p: np.ndarray, hi: np.ndarray, lo: np.ndarray, at: np.ndarray, k: int) -> None:
    while k > 0:
        up = (k - 1) // 2
        if not _above(p, hi, lo, k, up):
            return
        _swap(p, hi, lo, at, k, up)
        k = up


@njit(cache=True, nogil=True)
def dropped(
    arena: np.ndarray,
    starts: np.ndarray,
    ids: np.ndarray,
    row_starts: np.ndarray,
    row_stops: np.ndarray,
    limit: int,
    keys: np.ndarray,
) -> np.ndarray:
    """See recordkey.dropped: per long record two passes over its items, the first summing ρ,
    the second keeping the `limit` smallest (p, d_hi, d_lo) in a max-heap: O(limit) scratch."""
    total = 0
    for j in range(len(row_starts)):
        total += max(row_stops[j] - row_starts[j] - limit, 0)
    out = np.empty(total, dtype=np.int64)
    hp = np.empty(limit, dtype=np.uint64)
    hh = np.empty(limit, dtype=np.uint64)
    hl = np.empty(limit, dtype=np.uint64)
    at = np.empty(limit, dtype=np.int64)
    msg = np.zeros(32, dtype=np.uint8)
    w = 0
    for j in range(len(row_starts)):
        lo, hi = row_starts[j], row_stops[j]
        if hi - lo <= limit:
            continue
        r_lo = np.uint64(0)
        r_hi = np.uint64(0)
        for t in range(lo, hi):
            x, y = _digest(arena, starts, ids[t], keys)
            s = r_lo + x  # ρ += d (mod 2^128): the low half's carry into the high half
            r_hi = r_hi + y + (np.uint64(1) if s < r_lo else np.uint64(0))
            r_lo = s
        _put(msg, 0, r_lo)
        _put(msg, 8, r_hi)
        size = 0
        for t in range(lo, hi):
            x, y = _digest(arena, starts, ids[t], keys)
            _put(msg, 16, x)
            _put(msg, 24, y)
            pr = _priority(keys[4], keys[5], msg)
            if size < limit:
                hp[size], hh[size], hl[size], at[size] = pr, y, x, t
                _sift_up(hp, hh, hl, at, size)
                size += 1
            elif pr < hp[0] or (pr == hp[0] and (y < hh[0] or (y == hh[0] and x < hl[0]))):
                hp[0], hh[0], hl[0], at[0] = pr, y, x, t
                _sift_down(hp, hh, hl, at, size)
        kept = np.sort(at[:size])
        q = 0
        for t in range(lo, hi):
            if q < size and kept[q] == t:
                q += 1
            else:
                out[w] = t
                w += 1
    return out
