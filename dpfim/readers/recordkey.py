"""The --max-record-items sample's keyed hashes: which B items a long record keeps.

For a run's secret key K (records.truncation_key) and a record R (a set of item strings,
|R| > B), docs/privacy.md §1.1:

    d(x)  = 2^64 SipHash-2-4(K_b, x) + SipHash-2-4(K_a, x)    128 bits, x the item's UTF-8 bytes
    ρ(R)  = Σ_{x ∈ R} d(x)  mod 2^128                          the record key
    p(x)  = SipHash-2-4(K_p, ρ(R) ‖ d(x))                       64 bits, 32-byte message

and R keeps its B items of smallest (p(x), d(x)). K_a, K_b, K_p are 128-bit keys derived from K
by keyed BLAKE2b with distinct personalisation strings.

Why this shape: ρ is a sum over the item set, so it is order-free, needs no separator between
names (the old key hashed the names joined with NUL, which made ["a\\0b"] and ["a", "b"] one
record) and, d being a PRF, two different item sets collide with probability 2^-128. The
compiled selection makes two passes over a long record (ρ, then p into a max-heap of B
entries), so it holds no array and no Python object per item.

Why we write SipHash ourselves: the per-item hash must run compiled (a 2-million-item record
took 26 s through hashlib's BLAKE2b, one Python call an item) and numba has no BLAKE2b. SipHash-2-4
(Aumasson and Bernstein, INDOCRYPT 2012) is a short keyed PRF designed for exactly this (short
inputs, secret key); `siphash24` here is the reference definition in Python integers, checked
against the paper's test vectors (tests/test_record_key.py), and the compiled kernels are
checked against it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

_MASK = (1 << 64) - 1
_C0, _C1, _C2, _C3 = 0x736F6D6570736575, 0x646F72616E646F6D, 0x6C7967656E657261, 0x7465646279746573


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def _rounds(v0: int, v1: int, v2: int, v3: int, n: int) -> tuple[int, int, int, int]:
    for _ in range(n):
        v0 = (v0 + v1) & _MASK
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _MASK
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _MASK
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _MASK
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash24(k0: int, k1: int, data: bytes) -> int:
    """SipHash-2-4 of `data` under the key (k0, k1) (the key's two little-endian halves)."""
    v0, v1, v2, v3 = k0 ^ _C0, k1 ^ _C1, k0 ^ _C2, k1 ^ _C3
    whole = len(data) - len(data) % 8
    for i in range(0, whole, 8):
        m = int.from_bytes(data[i : i + 8], "little")
        v3 ^= m
        v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    m = int.from_bytes(data[whole:], "little") | ((len(data) & 0xFF) << 56)
    v3 ^= m
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
    v0 ^= m
    v2 ^= 0xFF
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


def subkeys(secret: bytes) -> tuple[int, int, int, int, int, int]:
    """(K_a, K_b, K_p) as three (k0, k1) pairs, from the run's secret key."""
    out: list[int] = []
    for person in (b"dpfim d_a", b"dpfim d_b", b"dpfim p"):
        raw = hashlib.blake2b(b"", key=secret, person=person, digest_size=16).digest()
        out += [int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")]
    k0, k1, k2, k3, k4, k5 = out
    return k0, k1, k2, k3, k4, k5


def digest(keys: Sequence[int], name: str) -> tuple[int, int]:
    """d(name) as (low, high) 64-bit halves (reference, Python)."""
    raw = name.encode("utf-8")
    return siphash24(keys[0], keys[1], raw), siphash24(keys[2], keys[3], raw)


def kept(keys: Sequence[int], names: Sequence[str], limit: int) -> set[str]:
    """The items a record of these (distinct) names keeps (reference, Python): the definition
    the compiled `dropped` is tested against."""
    ds = {x: digest(keys, x) for x in names}
    rho = sum(lo | (hi << 64) for lo, hi in ds.values()) % (1 << 128)
    prefix = rho.to_bytes(16, "little")

    def order(x: str) -> tuple[int, int, int]:
        lo, hi = ds[x]
        msg = prefix + lo.to_bytes(8, "little") + hi.to_bytes(8, "little")
        return siphash24(keys[4], keys[5], msg), hi, lo

    return set(sorted(ds, key=order)[:limit])


def dropped(
    arena: np.ndarray,
    starts: np.ndarray,
    ids: np.ndarray,
    row_starts: np.ndarray,
    row_stops: np.ndarray,
    limit: int,
    keys: Sequence[int],
) -> np.ndarray:
    """The positions of `ids` that the cap drops, ascending: ids[row_starts[j]:row_stops[j]] is
    the j-th long record (distinct item ids, rows in order), item i's UTF-8 name is
    arena[starts[i]:starts[i + 1]]. Compiled when numba is there (O(limit) scratch: two passes
    over each record), else the Python reference (exact, slow)."""
    if limit < 1:
        raise ValueError(f"a record keeps at least 1 item, got limit {limit}")
    try:
        from dpfim.readers import _recordkey_compiled as compiled
    except ImportError:  # numba missing: the same sample, in Python
        return _dropped_python(arena, starts, ids, row_starts, row_stops, limit, keys)
    k = np.asarray(keys, dtype=np.uint64)
    got: np.ndarray = compiled.dropped(arena, starts, ids, row_starts, row_stops, limit, k)
    return got


def _dropped_python(
    arena: np.ndarray,
    starts: np.ndarray,
    ids: np.ndarray,
    row_starts: np.ndarray,
    row_stops: np.ndarray,
    limit: int,
    keys: Sequence[int],
) -> np.ndarray:
    out: list[int] = []
    for lo, hi in zip(row_starts.tolist(), row_stops.tolist(), strict=True):
        names = [
            arena[int(starts[i]) : int(starts[i + 1])].tobytes().decode("utf-8")
            for i in ids[lo:hi].tolist()
        ]
        keep = kept(keys, names, limit)
        out += [lo + t for t, x in enumerate(names) if x not in keep]
    return np.asarray(out, dtype=np.int64)
