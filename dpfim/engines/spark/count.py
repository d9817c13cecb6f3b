"""What the executors run to count: cached blocks -> partial supports. Exact, no randomness.

One pass over the blocks (`summary`, merged by `add_summary`) gives the item supports, kept on
the cluster, and the record counts; `heads` hands the driver the largest item supports (values
only). For each threshold the driver broadcasts the frequent items, and every partition counts
the r-itemsets of its records restricted to them (`partial_counts`): with the local engine's
compiled kernel into a dense array when the key space is small (`dense_counts`, else numpy),
emitted in hash buckets for reduceByKey (`merge_pair`). `block_supports` answers a batch of
exact supports in one job. Every function here is module-level, so that functools.partial ships
it to the executors by reference.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from dpfim.counts import record_weights
from dpfim.engines.spark.read import Block
from dpfim.readers.records import Records

_COMBOS_AT_ONCE = 1 << 22  # itemset occurrences generated per numpy step (bounds worker memory)
DENSE_KEYS = 1 << 23  # r-itemset keys counted in a dense array per partition (64 MiB) at most


def support_at_least(s: int, kv: tuple[str, tuple[int, Any]]) -> bool:
    return kv[1][0] >= s


SIZES = 5  # itemset sizes 1..SIZES: records with at least r items, for each


PATHS = ("paths",)  # the summary's key of the reader paths' chunk counts (neither item nor None)


def summary(blocks: Iterable[Block]) -> Iterator[tuple[Any, tuple[int, Any]]]:
    """One pass over a partition: (item, (support, first seen)) for every item present,
    (None, (records, records with >= r items for r = 1..5)), and (PATHS, (0, {reader path:
    chunks})) for `dpfim mine -v` (curator-only)."""
    n = 0
    usable = [0] * SIZES
    paths: dict[str, int] = {}
    for block in blocks:
        recs = block.records
        counts = np.bincount(recs.indices, minlength=len(recs.items)).tolist()
        for item, count, seen in zip(recs.items, counts, block.first_seen, strict=True):
            if count:
                yield item, (count, seen)
        lengths = np.diff(recs.indptr)
        n += recs.n
        for r in range(SIZES):
            usable[r] += int(np.count_nonzero(lengths > r))
        for path, chunks in block.paths.items():
            paths[path] = paths.get(path, 0) + chunks
    yield None, (n, tuple(usable))
    yield PATHS, (0, paths)


def add_summary(a: tuple[int, Any], b: tuple[int, Any]) -> tuple[int, Any]:
    """Merge two summary values: supports add, the first-seen position is the least one; the
    stats entry (its second part a tuple of ints, not a position) adds element-wise, as do
    the reader paths' chunk counts."""
    if isinstance(a[1], dict):
        paths = dict(a[1])
        for path, chunks in b[1].items():
            paths[path] = paths.get(path, 0) + chunks
        return 0, paths
    if a[1] and isinstance(a[1][0], int):
        return a[0] + b[0], tuple(x + y for x, y in zip(a[1], b[1], strict=True))
    return a[0] + b[0], min(a[1], b[1])


TOP_KNOWN = 4096  # the driver learns this many of the largest item supports (values only)


def heads(kvs: Iterable[tuple[Any, tuple[int, Any]]]) -> Iterator[Any]:
    """A merged summary partition's stats entry, its reader paths' entry and its TOP_KNOWN
    largest item supports (each item is in one partition, so together they hold the global
    TOP_KNOWN largest)."""
    top: list[int] = []
    for key, value in kvs:
        if key is None:
            yield ("stats", value)
        elif key == PATHS:
            yield ("paths", value[1])
        else:
            top.append(value[0])
    top.sort(reverse=True)
    yield ("top", top[:TOP_KNOWN])


def is_item(kv: tuple[Any, Any]) -> bool:
    return isinstance(kv[0], str)


@functools.lru_cache(maxsize=256)
def _combinations(length: int, size: int) -> np.ndarray:
    """All `size`-subsets of range(length) as rows of ascending positions."""
    if size == 1:
        return np.arange(length, dtype=np.int64).reshape(-1, 1)
    parts = []
    for first in range(length - size + 1):
        rest = _combinations(length - first - 1, size - 1) + first + 1
        parts.append(np.column_stack((np.full(len(rest), first, dtype=np.int64), rest)))
    if not parts:
        return np.zeros((0, size), dtype=np.int64)
    return np.concatenate(parts)


def _encode(ids: np.ndarray, width: int, size: int) -> np.ndarray:
    """Itemsets (rows of ascending global ids) as sortable keys: int64 when they fit."""
    if width**size < 1 << 62:
        weights = np.array([width ** (size - 1 - k) for k in range(size)], dtype=np.int64)
        return ids @ weights
    rows = np.ascontiguousarray(ids.astype(np.int32))
    return rows.view(np.dtype((np.void, 4 * size))).ravel()


def decode_keys(keys: np.ndarray, width: int, size: int) -> np.ndarray:
    if keys.dtype.kind == "V":
        return np.frombuffer(keys.tobytes(), dtype=np.int32).reshape(-1, size).astype(np.int64)
    out = np.empty((len(keys), size), dtype=np.int64)
    rest = keys.copy()
    for k in range(size - 1, -1, -1):
        rest, out[:, k] = np.divmod(rest, width)
    return out


def _itemset_keys(recs: Records, lut: np.ndarray, width: int, size: int) -> Iterator[np.ndarray]:
    """The keys of every r-itemset of frequent items inside each record (lut: local -> global
    id of the frequent items, -1 for the others)."""
    if not len(recs.indices):
        return
    rows = np.repeat(np.arange(recs.n, dtype=np.int64), np.diff(recs.indptr))
    cols = lut[recs.indices]
    keep = cols >= 0
    key = rows[keep] * width + cols[keep]
    key.sort()
    rows, cols = np.divmod(key, width)  # global ids ascending inside each record
    per_row = np.bincount(rows, minlength=recs.n)
    starts = np.zeros(recs.n, dtype=np.int64)
    np.cumsum(per_row[:-1], out=starts[1:])
    for length in np.unique(per_row[per_row >= size]).tolist():
        at = starts[per_row == length]
        template = _combinations(length, size)
        step = max(1, _COMBOS_AT_ONCE // len(template))
        for i in range(0, len(at), step):
            picks = (at[i : i + step, None, None] + template[None]).reshape(-1, size)
            yield _encode(cols[picks], width, size)


def _merge(keys: list[np.ndarray], counts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Partial counts summed per key."""
    k = np.concatenate(keys)
    c = np.concatenate(counts)
    if not len(k):
        return k, c
    order = np.argsort(k, kind="stable")
    k, c = k[order], c[order]
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    return k[starts], np.add.reduceat(c, starts)


def merge_pair(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    return _merge([a[0], b[0]], [a[1], b[1]])


def _bucket(keys: np.ndarray, buckets: int, size: int) -> np.ndarray:
    if keys.dtype.kind == "V":
        ids = np.frombuffer(keys.tobytes(), dtype=np.int32).reshape(-1, size).astype(np.int64)
        mix = np.array([1000003 ** (k + 1) % (1 << 31) for k in range(size)], dtype=np.int64)
        return (ids @ mix) % buckets
    return keys % buckets


def _kernels() -> Any:
    try:
        from dpfim.engines import _compiled
    except ImportError:  # numba missing or unusable: numpy counts exactly too
        return None
    return _compiled


def _dense_counts(
    index: Mapping[str, int], width: int, size: int, blocks: Iterable[Block]
) -> tuple[np.ndarray, np.ndarray]:
    """(keys, partial counts) of a partition when width**size keys fit in a dense array: the
    local engine's compiled counting kernel (numba) per block, or numpy without it."""
    out = np.zeros(width**size, dtype=np.int64)
    kernels = _kernels()
    # level tables for the kernel: every (j)-subset of frequent items counts as a prefix, its id
    # its own key, so that a key is the itemset's base-`width` number (what _encode gives)
    offsets = np.zeros(size + 1, dtype=np.int64)
    parts = [np.full(1, -1, dtype=np.int64)]
    start = 1
    for j in range(2, size):
        offsets[j] = start
        parts.append(np.arange(width**j, dtype=np.int64))
        start += width**j
    tables = np.concatenate(parts)
    for block in blocks:
        recs = block.records
        lut = np.fromiter((index.get(t, -1) for t in recs.items), np.int64, len(recs.items))
        if not (lut >= 0).any():
            continue
        if kernels is not None:
            kernels.count_dense(
                recs.indptr, recs.indices, lut, 0, recs.n, size, width, tables, offsets, out, True
            )
            continue
        for part in _itemset_keys(recs, lut, width, size):
            out += np.bincount(part, minlength=len(out))
    keys = np.flatnonzero(out)
    return keys.astype(np.int64), out[keys]


def partial_counts(
    bc: Any, width: int, size: int, buckets: int, blocks: Iterable[Block]
) -> Iterator[tuple[int, tuple[np.ndarray, np.ndarray]]]:
    """One partition's counts of the r-itemsets of frequent items, by hash bucket."""
    index: dict[str, int] = bc.value
    if width**size <= DENSE_KEYS:
        k, c = _dense_counts(index, width, size, blocks)
        where = _bucket(k, buckets, size)
        for b in range(buckets):
            sel = where == b
            if sel.any():
                yield b, (k[sel], c[sel])
        return
    keys: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    for block in blocks:
        items = block.records.items
        lut = np.fromiter((index.get(s, -1) for s in items), dtype=np.int64, count=len(items))
        if not (lut >= 0).any():
            continue
        for part in _itemset_keys(block.records, lut, width, size):
            u, c = np.unique(part, return_counts=True)
            keys.append(u)
            counts.append(c.astype(np.int64))
            if len(keys) >= 16:
                merged = _merge(keys, counts)
                keys, counts = [merged[0]], [merged[1]]
    if not keys:
        return
    k, c = _merge(keys, counts)
    where = _bucket(k, buckets, size)
    for b in range(buckets):
        sel = where == b
        if sel.any():
            yield b, (k[sel], c[sel])


def at_least(s: int, kc: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    keep = kc[1] >= s
    return kc[0][keep], kc[1][keep]


def block_supports(batch: Sequence[Sequence[str]], block: Block) -> list[int]:
    """For each itemset of `batch` (item names), the records of `block` that hold it all."""
    recs = block.records
    where = {s: i for i, s in enumerate(recs.items)}
    rows = np.repeat(np.arange(recs.n), np.diff(recs.indptr))
    out = []
    for names in batch:
        if any(s not in where for s in names):
            out.append(0)
            continue
        hit = np.zeros(recs.n, dtype=np.int64)
        for s in names:
            hit[rows[recs.indices == where[s]]] += 1
        out.append(int((hit == len(names)).sum()))
    return out


def add_lists(a: list[int], b: list[int]) -> list[int]:
    return [x + y for x, y in zip(a, b, strict=True)]


def longest(block: Block) -> int:
    lengths = np.diff(block.records.indptr)
    return int(lengths.max()) if len(lengths) else 0


def weighted_items(scale: int, block: Block) -> list[tuple[str, int]]:
    """(item, sum over the block's records holding it of floor(scale / sqrt(record length)))."""
    recs = block.records
    lengths = np.diff(recs.indptr)
    weights = np.repeat(record_weights(lengths, scale), lengths)
    sums = np.bincount(recs.indices, weights=weights.astype(np.float64), minlength=len(recs.items))
    return [(item, int(w)) for item, w in zip(recs.items, sums.tolist(), strict=True) if w]
