"""records → exact integer supports of r-itemsets, from the top down, in bounded memory.

No randomness, no privacy. The mechanism needs c(1), then c(2), c(3), … only as deep as its
search goes. SupportIndex keeps every r-itemset with support >= a threshold s (and nothing below
it), starting at an upper bound on the top support and lowering s only when asked for more ranks.

At a threshold s the r-itemsets are counted level-wise (Apriori over the records, exact): the
frequent items (support >= s), then pairs of frequent items, then triples whose first two items
form a frequent pair (and whose last two do too), and so on up to r. Every level is one pass over
the records in batches: each batch is restricted to the frequent items, the candidate keys
(frequent (k-1)-itemset id × width + next item) of each record are generated in slices of a fixed
number of keys, whatever the number or the length of the records, and the slices are counted into
an exact int64 accumulator: a dense array when the key space is small, else sorted (key, count)
runs merged as they grow. Scratch memory is therefore bounded by a constant (`scratch_bytes`,
default 256 MiB, at most an eighth of the memory budget).

Candidates cost time, never memory. The sparse accumulator has a fixed byte budget A
(`accumulator_bytes`: half of the room the budget leaves after the records and two scratch
budgets, `BYTES_PER_DISTINCT` bytes a distinct key; the other half is for the itemsets held).
When a level's distinct candidates outgrow A, the level is recounted in P = 2, 4, 8, … passes:
pass p counts only the keys of hash class p (the top log2 P bits of key x 0x9E3779B97F4A7C15
as uint64: keys = prefix x width + item cluster, so the key itself modulo P would not spread
them), keeps the keys counted at least s times, and the kept keys of all classes are merged,
ascending: exactly a one-pass count. A pass that overflows A is abandoned and its class split in
two (class p of P is classes 2p and 2p + 1 of 2P, so the finished classes stand). Whether a
count succeeds is thus never decided by the number of candidates (one record can move it without
bound: docs/privacy.md §1.2); only its time is.

What is held is the frequent k-itemsets of each level (k = 2..r) at the threshold, at most a
public row budget N of them a level (`row_budget`, from --max-memory alone). A level that has
more keeps the N or fewer with support above its (N + 1)-th largest support, found while its
classes are counted (a running floor: a class pass never keeps keys at or below it), and the
count is clipped at T, the largest such floor over the levels (`TopDown`, docs/privacy.md §1.2).
Every level counts true supports (the records with at least k frequent items; the cached
projection keeps the records with at least two of its items), so T is a function of the data
alone, whatever thresholds were counted before.

When the frequent items hold at most half of the occurrences, the records restricted to them are
cached as a projection (at a lower threshold s/8), so that later levels and the next lowerings
do not pass over all the data again. From 20 M item occurrences on (60 M at r = 2), numba
kernels (dpfim.engines._compiled, imported lazily) do the projection and, when the counts are
dense, the candidate counting in one loop per record on two threads; smaller inputs never
import numba.
The measurements behind these choices are in docs/performance.md.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpfim.counts import MAX_LISTED, Counts, record_weights
from dpfim.engines import Opened
from dpfim.engines.topdown import TopDown, next_threshold
from dpfim.inputs import FORMATS, EngineSpec, InputSpec, refuse_frame
from dpfim.progress import EXACT, Setting, progress_mode
from dpfim.readers import Records
from dpfim.samplers.rng import RandomSource

__all__ = ["ENGINE", "SupportIndex", "default_max_memory", "next_threshold"]

MiB = 1 << 20
GiB = 1 << 30
DEFAULT_SCRATCH = 256 * MiB
# Bytes of scratch per generated candidate key: a slice holds about eight int64 temporaries per
# key (parent, partner, offsets, keys, lookups, the unique's sort) and each level of the
# recursion one more slice; generous, tests/test_engine_bounded.py checks the bound.
BYTES_PER_KEY = 96
# A sparse accumulator holds (key, count) int64 pairs and needs ~3 copies while merging.
BYTES_PER_DISTINCT = 48
# The accumulator budget is never below this many distinct keys (a tiny --max-memory still
# progresses, in more passes).
MIN_DISTINCT = 1024
# Fibonacci hashing: the odd multiplier spreads clustered keys over the top bits.
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def row_bytes(size: int) -> int:
    """Bytes one held itemset of size r costs at most while it is kept and ranked: key and
    count (int64 each), its row of ids (int64 while built, int32 kept), the tie order and the
    previous threshold's copy."""
    return 64 + 16 * size


# The smallest row budget: C(4, 2), the most k-subsets of the r - 1 <= 4 items that can have a
# support above the r-th largest item support, so that no level below r can clip above the
# engine's starting threshold (which then only falls, as the contract says).
MIN_ROWS = 6
# The largest: a code constant whatever --max-memory says (choosing's threshold reads it).
MAX_ROWS = MAX_LISTED


def row_budget(max_memory: int, size: int, engines: int = 1) -> int:
    """N: how many itemsets of one level (2..size) an engine may hold, from public quantities
    only (--max-memory, the itemset size, how many sizes are counted): a quarter of the
    budget at row_bytes(size) a row, split evenly among the engines and their levels. When a
    lowering would need more, the engine clips (docs/privacy.md §1.2): never a function of the
    data, so the data decides how deep the counts go, never whether they exist."""
    n = (max_memory // 4) // (engines * max(1, size - 1) * row_bytes(size))
    return min(MAX_ROWS, max(MIN_ROWS, n))


# From this many item occurrences on, the compiled kernels (numba, imported lazily) count when
# their dense tables fit; below it numba's import (~0.5 s CPU) costs more than it saves
# (measured crossovers: ~10 M occurrences at r = 3, between 30 M and 100 M at r = 2).
COMPILED_MIN = {2: 60_000_000}
COMPILED_MIN_DEEP = 20_000_000


def _load_compiled() -> Any:
    try:
        from dpfim.engines import _compiled
    except ImportError:  # numba missing or unusable here: the numpy path is exact too
        return None
    return _compiled


def default_max_memory() -> int:
    """Half the machine's RAM, at most 8 GiB (the --max-memory default)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        total = 4 * GiB
    return int(min(8 * GiB, total // 2))


@dataclass(frozen=True)
class _Source:
    """Records to count: CSR over local ids; items[j] is the global id of local id j (None:
    local ids are global ids). Holds every item with support >= s."""

    indptr: np.ndarray
    indices: np.ndarray
    items: np.ndarray | None
    s: int


class SupportIndex(TopDown):
    """Exact supports of the r-itemsets with support >= threshold, in decreasing order.

    Invariant: `counts` holds the support of EVERY r-itemset with support >= `threshold` and
    of no other; `itemsets` (item ids, each row ascending) is aligned with it, ties in
    lexicographic order of the item ids. `complete` once the threshold is 1: then all L
    nonzero-support r-itemsets are known.

    max_memory: the budget in bytes (default: default_max_memory()); scratch_bytes: the bound on
    the per-slice scratch (default min(256 MiB, max_memory / 8)); tests make it tiny.
    compiled: use the numba kernels (None: from COMPILED_MIN occurrences on, if numba imports).
    accumulator_bytes: the sparse accumulator's budget A (default: half the room left, see the
    module docstring); tests make it tiny to force partitioned passes.

    rows: the row budget N a level (default: row_budget(max_memory, size)); tests make it tiny.
    partitions: the largest number of hash classes P a level of the last count needed (1: every
    level in one pass).
    """

    def __init__(
        self,
        records: Records,
        size: int,
        *,
        progress: Setting = False,
        max_memory: int | None = None,
        scratch_bytes: int | None = None,
        compiled: bool | None = None,
        accumulator_bytes: int | None = None,
        rows: int | None = None,
    ) -> None:
        self.n = records.n
        self.items = records.items  # ids are the records' ids: fixed (contract invariant 3)
        self._progress = progress_mode(progress)
        self._n_items = len(records.items)
        self._indptr = records.indptr
        self._indices = records.indices
        self.max_memory = default_max_memory() if max_memory is None else int(max_memory)
        rows = row_budget(self.max_memory, size) if rows is None else int(rows)
        self.row_budget = min(MAX_ROWS, max(MIN_ROWS, rows))
        scratch = min(DEFAULT_SCRATCH, self.max_memory // 8)
        if scratch_bytes is not None:
            scratch = scratch_bytes
        self._scratch = scratch
        self._slice = max(16, scratch // (BYTES_PER_KEY * size))
        data_bytes = records.indptr.nbytes + records.indices.nbytes
        self._room = max(scratch, self.max_memory - data_bytes - 2 * scratch)
        if accumulator_bytes is None:
            accumulator_bytes = max(self._room // 2, MIN_DISTINCT * BYTES_PER_DISTINCT)
        self.accumulator_bytes = max(int(accumulator_bytes), BYTES_PER_DISTINCT)  # one key
        self.partitions = 1
        t0 = time.perf_counter()  # the counting time includes numba's import
        big = len(records.indices) >= COMPILED_MIN.get(size, COMPILED_MIN_DEEP) and size > 1
        self._kernels: Any = _load_compiled() if (compiled or (compiled is None and big)) else None
        self._full = _Source(records.indptr, records.indices, None, 1)
        self._proj: _Source | None = None
        self._buffers: dict[str, np.ndarray] = {}
        self._postings_cache: tuple[np.ndarray, np.ndarray] | None = None
        self.seconds = 0.0  # time spent counting, for --verbose
        self.passes = 0
        self.size = size
        self.item_support = self._item_supports()
        self._begin(size, np.sort(self.item_support)[::-1])
        self.seconds += time.perf_counter() - t0

    def item_supports(self) -> np.ndarray:
        """The exact support of every item, by id (counted once, when the records were read)."""
        return self.item_support

    def weighted_item_supports(self, scale: int) -> np.ndarray:
        """By item id: the sum, over the records holding the item, of floor(scale / sqrt(the
        record's length)) (levelwise's item discovery, docs/privacy.md §23.2), in the bounded
        slices every pass uses. Exact: float64 sums of integers stay exact below 2^53 (fewer
        than 2^37 records of weight <= 2^16 each)."""
        out = np.zeros(self._n_items, dtype=np.int64)
        for r0, r1 in self._batches(self._full):
            base, end = int(self._indptr[r0]), int(self._indptr[r1])
            lengths = np.diff(self._indptr[r0 : r1 + 1])
            weights = np.repeat(record_weights(lengths, scale), lengths).astype(np.float64)
            part = np.bincount(self._indices[base:end], weights=weights, minlength=self._n_items)
            out += part.astype(np.int64)
        return out

    def supports(self, batch: Sequence[Sequence[int]]) -> list[int]:
        """Exact supports of a batch of itemsets (item ids)."""
        return [self.support(ids) for ids in batch]

    def support(self, itemset: Sequence[int]) -> int:
        """The exact support of one itemset (item ids): intersecting the items' record lists
        (built once, if they fit the memory budget), else one bounded pass over the records."""
        ids = np.unique(np.asarray(itemset, dtype=np.int32))
        if len(ids) == 0:
            return self.n
        postings = self._postings()
        if postings is not None:
            return _intersect_size(postings, ids)
        total = 0
        for r0, r1 in self._batches(self._full):
            base = int(self._indptr[r0])
            hit = np.isin(self._indices[base : int(self._indptr[r1])], ids)
            per_row = _per_row(hit, self._indptr[r0 : r1 + 1] - base)
            total += int(np.count_nonzero(per_row == len(ids)))
        return total

    def _postings(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(item_ptr, records): the ascending record numbers of item i are
        records[item_ptr[i]:item_ptr[i + 1]]. One int32 per item occurrence; None when that
        does not fit the room left in the memory budget."""
        if self._postings_cache is None:
            occurrences = len(self._indices)
            # the lists (int32) plus, while building, the record numbers and the int64 order
            if occurrences * 16 > self._room or self.n >= 2**31:
                return None
            t0 = time.perf_counter()
            rec = np.repeat(
                np.arange(self.n, dtype=np.int32), np.diff(self._indptr).astype(np.int64)
            )
            order = np.argsort(self._indices, kind="stable")  # stable: records stay ascending
            ptr = np.zeros(self._n_items + 1, dtype=np.int64)
            np.cumsum(self.item_support, out=ptr[1:])
            self._postings_cache = (ptr, rec[order])
            self.seconds += time.perf_counter() - t0
        return self._postings_cache

    # --- enumeration -------------------------------------------------------------------------

    def _item_supports(self) -> np.ndarray:
        out = np.zeros(self._n_items, dtype=np.int64)
        step = max(self._slice, self._n_items)
        for a in range(0, len(self._indices), step):
            out += np.bincount(self._indices[a : a + step], minlength=self._n_items)
        return out

    def _batches(self, src: _Source) -> Iterator[tuple[int, int]]:
        """Consecutive record ranges [r0, r1) of at most one slice of item occurrences each
        (or a single longer record)."""
        indptr = src.indptr
        n = len(indptr) - 1
        r0 = 0
        while r0 < n:
            r1 = int(np.searchsorted(indptr, indptr[r0] + self._slice, side="right")) - 1
            r1 = min(max(r1, r0 + 1), n)
            yield r0, r1
            r0 = r1

    def _count_at(self, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        counts, itemsets = self._enumerate(s)
        return counts, itemsets, itemsets  # ids are first-appearance positions: ties by them

    def _enumerate(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """All r-itemsets with support >= s: (supports, item ids); or, when a level's row
        budget ran out, those with support > T, with self._clip = T (docs/privacy.md §1.2)."""
        frequent = np.flatnonzero(self.item_support >= s)
        self.partitions = 1
        if self.size == 1:  # the items are held anyway; the rows listed keep the budget too
            keys, counts, floor = _within(frequent, self.item_support[frequent], self.row_budget, 0)
            if floor:
                self._clip = floor
            return counts, keys.reshape(-1, 1).astype(np.int32)
        empty = np.zeros(0, dtype=np.int64), np.zeros((0, self.size), dtype=np.int32)
        width = len(frequent)
        if width < 2:  # no pair: every level is empty (fewer than r items still hold pairs)
            return empty
        src = self._source_for(s)
        if src.items is None:
            remap = np.full(self._n_items, -1, dtype=np.int32)
            remap[frequent] = np.arange(width, dtype=np.int32)
        else:
            remap = np.full(len(src.items), -1, dtype=np.int32)
            remap[np.searchsorted(src.items, frequent)] = np.arange(width, dtype=np.int32)
        levels: list[_Lookup] = []  # frequent keys of sizes 2..k-1
        rows = np.arange(width, dtype=np.int64).reshape(-1, 1)  # local ids of the level's sets
        counts = np.zeros(0, dtype=np.int64)
        clip = 0  # the floor once a level's row budget ran out: max of the levels' c_(N+1)
        for k in range(2, self.size + 1):
            # every k-itemset with support > clip has all its (k-1)-subsets among the rows kept
            # (its rows: support > max(clip, its own floor) already)
            keys, counts, floor = self._count_level(src, remap, width, levels, k, max(s, clip + 1))
            clip = max(clip, floor)
            if clip:
                self._clip = clip
            if len(keys) == 0:
                return empty
            space = width * (width if k == 2 else len(levels[-1].keys))
            levels.append(_Lookup(keys, space, self._slice))
            rows = np.column_stack((rows[keys // width], keys % width))
        return counts, frequent[rows].astype(np.int32)

    def _source_for(self, s: int) -> _Source:
        """The records to count at threshold s: a cached projection onto the items with
        support >= some s_p <= s when that is at most half of the data (and fits the
        budget), so that lowering the threshold a few times and counting every level does not
        pass over all the data again; else the full data."""
        if self._proj is not None and s >= self._proj.s:
            return self._proj
        top = np.sort(self.item_support)[::-1]
        cum = np.cumsum(top)
        total = len(self._indices)
        cap = min(total // 2, self._room // 32)
        n_frequent = int(np.count_nonzero(top >= s))
        if n_frequent == 0 or cum[n_frequent - 1] > cap:
            return self._full
        m = int(np.searchsorted(cum, cap, side="right"))  # the m most frequent items fit
        s_p = int(top[m]) + 1 if m < len(top) else 1
        s_p = max(s_p, s // 8, 1)
        items = np.flatnonzero(self.item_support >= s_p)
        remap = np.full(self._n_items, -1, dtype=np.int32)
        remap[items] = np.arange(len(items), dtype=np.int32)
        # records with fewer than two of the items are dropped (no level counts them; not
        # fewer than r: the pair supports stay true supports, so the row budget's floor is)
        # written in place: the projection's ids are at most the projected items' supports
        # (a record keeps its projected items, or none), its records at most n; lengths go
        # straight into indptr[1:], summed at the end (untouched room is never resident)
        cols_out = np.empty(int(self.item_support[items].sum()), dtype=np.int32)
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        n_cols = n_rows = 0
        bar = self._bar(f"projecting (s={s_p})")
        for r0, r1 in self._batches(self._full):
            if self._kernels is not None:
                got_cols, got_rows = self._kernels.project(
                    self._indptr,
                    self._indices,
                    remap,
                    r0,
                    r1,
                    2,
                    cols_out[n_cols:],
                    indptr[1 + n_rows :],
                )
            else:
                cols, lens = self._project(self._full, remap, r0, r1, 2)
                got_cols, got_rows = len(cols), len(lens)
                cols_out[n_cols : n_cols + got_cols] = cols
                indptr[1 + n_rows : 1 + n_rows + got_rows] = lens
            n_cols += int(got_cols)
            n_rows += int(got_rows)
            if bar is not None:
                bar.update(r1 - r0)
        if bar is not None:
            bar.close()
        self.passes += 1
        indptr = indptr[: n_rows + 1]
        np.cumsum(indptr, out=indptr)
        self._proj = _Source(indptr, cols_out[:n_cols], items, s_p)
        return self._proj

    def _count_level(
        self,
        src: _Source,
        remap: np.ndarray,
        width: int,
        levels: list[_Lookup],
        k: int,
        s: int,
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """The k-itemsets with support >= s whose (k-1)-prefix is in levels[-1] (k > 2):
        (keys ascending, supports, floor). A key is (prefix id) * width + last item. Past the
        row budget N only the keys with support > floor are kept, floor being the level's
        (N + 1)-th largest support (0: the budget held them all)."""
        n_prefixes = width if k == 2 else len(levels[-1].keys)
        space = n_prefixes * width
        if space * 8 <= min(self._room // 2, self._scratch):  # dense: bounded by the scratch
            acc = _Accumulator(space, self._scratch, s, dense=True)
            self.passes += 1
            tables = self._flat_tables(levels)
            if self._kernels is not None and tables is not None:
                bar = self._bar(f"counting {k}-itemsets (s={s})")
                self._count_compiled(src, remap, width, tables, k, acc.out, bar)
            else:
                self._count_class(src, remap, width, levels, k, acc, 0, 0, "")
            return _within(*acc.result(), self.row_budget, 0)
        # sparse: hash classes 0..2**bits-1, each counted in one pass within the budget; the
        # kept keys never exceed the row budget (a running floor, raised as classes finish)
        bits, p, floor = 0, 0, 0
        keys = np.zeros(0, dtype=np.int64)
        counts = np.zeros(0, dtype=np.int64)
        while p < 1 << bits:
            acc = _Accumulator(
                space, self._scratch, max(s, floor + 1), budget=self.accumulator_bytes
            )
            self.passes += 1
            label = f" pass {p + 1}/{1 << bits}" if bits else ""
            try:
                self._count_class(src, remap, width, levels, k, acc, bits, p, label)
                got_keys, got_counts = acc.result()
            except _Overflow:
                bits, p = bits + 1, 2 * p  # class p of 2**bits is classes 2p, 2p + 1 of twice
                self.partitions = max(self.partitions, 1 << bits)
                continue
            keys = np.concatenate([keys, got_keys])
            counts = np.concatenate([counts, got_counts])
            keys, counts, floor = _within(keys, counts, self.row_budget, floor)
            p += 1
        order = np.argsort(keys)
        return keys[order], counts[order], floor

    def _count_class(
        self,
        src: _Source,
        remap: np.ndarray,
        width: int,
        levels: list[_Lookup],
        k: int,
        acc: _Accumulator,
        bits: int,
        p: int,
        label: str,
    ) -> None:
        """One pass over src: the candidate keys of level k of hash class p (of 2**bits; all
        of them when bits == 0) into acc."""
        bar = self._bar(f"counting {k}-itemsets (s={acc.s}){label}")
        keep = _hash_class(bits, p) if bits else None
        for r0, r1 in self._batches(src):
            if bar is not None:
                bar.update(r1 - r0)
            cols, lengths = self._project(src, remap, r0, r1, k)
            if len(cols) == 0:
                continue
            ends = np.repeat(np.cumsum(lengths), lengths)
            ids = cols.astype(np.int64)
            pos = np.arange(len(cols), dtype=np.int64)
            for keys in self._extend(ids, pos, cols, ends, width, levels, 2, k, keep):
                acc.add(keys)
        if bar is not None:
            bar.close()

    def _flat_tables(self, levels: list[_Lookup]) -> tuple[np.ndarray, np.ndarray] | None:
        """The dense lookup tables of levels 2..k-1 in one array, with offsets[j] the start of
        level j's table; None if one of them is not dense."""
        offsets = np.zeros(self.size + 1, dtype=np.int64)
        parts = [np.full(1, -1, dtype=np.int64)]
        start = 1
        for j, level in enumerate(levels, start=2):
            if level.table is None:
                return None
            offsets[j] = start
            parts.append(level.table)
            start += len(level.table)
        return np.concatenate(parts), offsets

    def _count_compiled(
        self,
        src: _Source,
        remap: np.ndarray,
        width: int,
        tables: tuple[np.ndarray, np.ndarray],
        k: int,
        out: np.ndarray,
        bar: Any,
    ) -> None:
        """Count into the dense `out` with the compiled kernel, on two threads (each with its
        own copy of `out`) when that copy fits the scratch budget."""
        kernel = self._kernels.count_dense
        batches = list(self._batches(src))
        flat, offsets = tables
        threads = 2 if (os.cpu_count() or 1) > 1 and out.nbytes <= self._scratch // 2 else 1

        def work(part: int, target: np.ndarray) -> None:
            for r0, r1 in batches[part::threads]:
                kernel(src.indptr, src.indices, remap, r0, r1, k, width, flat, offsets, target)
                if bar is not None:
                    bar.update(r1 - r0)

        if threads == 1:
            work(0, out)
        else:
            from concurrent.futures import ThreadPoolExecutor

            other = np.zeros_like(out)
            with ThreadPoolExecutor(2) as pool:
                done = [pool.submit(work, 0, out), pool.submit(work, 1, other)]
                for future in done:
                    future.result()
            out += other
        if bar is not None:
            bar.close()

    def _project(
        self, src: _Source, remap: np.ndarray, r0: int, r1: int, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Records r0..r1-1 of src restricted to the items remap sends to >= 0 (local ids),
        keeping only those with at least k of them: (cols, length of each kept record)."""
        base = int(src.indptr[r0])
        stop = int(src.indptr[r1])
        local = self._buffer("local", stop - base, np.int32)
        np.take(remap, src.indices[base:stop], out=local)
        keep = self._buffer("keep", stop - base, np.bool_)
        np.greater_equal(local, 0, out=keep)
        lengths = _per_row(keep, src.indptr[r0 : r1 + 1] - base)
        long_enough = lengths >= k
        cols = local[keep]
        if not long_enough.all():
            cols = cols[np.repeat(long_enough, lengths)]
            lengths = lengths[long_enough]
        return cols, lengths

    def _buffer(self, name: str, n: int, dtype: type) -> np.ndarray:
        """A reused scratch array of at least n elements (fresh pages fault in slowly)."""
        buf = self._buffers.get(name)
        if buf is None or len(buf) < n:
            buf = np.empty(max(n, self._slice), dtype=dtype)
            self._buffers[name] = buf
        return buf[:n]

    def _extend(
        self,
        ids: np.ndarray,
        pos: np.ndarray,
        cols: np.ndarray,
        ends: np.ndarray,
        width: int,
        levels: list[_Lookup],
        j: int,
        k: int,
        keep: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> Iterator[np.ndarray]:
        """Extend occurrences of frequent (j-1)-itemsets (id, last position) by one later item
        of the same record; at j == k yield the candidate keys (only those `keep` selects, if
        given: before the pair lookup, which then sees a class only), else recurse on the
        frequent ones. Each slice holds at most self._slice new occurrences."""
        for parent, partner in _partners(pos, ends, self._slice):
            keys = ids[parent] * width + cols[partner]
            if j == k and keep is not None:
                mine = keep(keys)
                keys, parent, partner = keys[mine], parent[mine], partner[mine]
            if j >= 3:  # the last two items must form a frequent pair too (Apriori)
                pair = cols[pos[parent]].astype(np.int64) * width + cols[partner]
                ok = levels[0].find(pair) >= 0
                keys, partner = keys[ok], partner[ok]
            if j == k:
                yield keys
                continue
            at = levels[j - 2].find(keys)
            ok = at >= 0
            yield from self._extend(at[ok], partner[ok], cols, ends, width, levels, j + 1, k, keep)

    def _bar(self, desc: str) -> Any:
        """A counting bar, with -v only (EXACT): its records, floor (s=) and passes are exact
        facts about the data; without -v counting draws nothing (dpfim/progress.py)."""
        if self._progress != EXACT:
            return None
        from tqdm import tqdm

        return tqdm(total=self.n, desc=desc, unit="rec", file=sys.stderr, leave=False, delay=1.0)


class _Lookup:
    """The frequent keys of one level (ascending): key -> its rank, or -1. A dense table when
    the key space is small, else binary search."""

    def __init__(self, keys: np.ndarray, space: int, dense_limit: int) -> None:
        self.keys = keys
        self.table: np.ndarray | None = None
        if space <= dense_limit:
            self.table = np.full(space, -1, dtype=np.int64)
            self.table[keys] = np.arange(len(keys))

    def find(self, keys: np.ndarray) -> np.ndarray:
        if self.table is not None:
            found: np.ndarray = self.table[keys]
            return found
        at = np.searchsorted(self.keys, keys)
        at[at == len(self.keys)] = 0
        return np.where(self.keys[at] == keys, at, -1)


def _intersect_size(postings: tuple[np.ndarray, np.ndarray], ids: np.ndarray) -> int:
    """How many records hold every item of `ids` (distinct item ids), from the record lists:
    the shortest list, filtered by binary search in each of the others."""
    ptr, records = postings
    lists = sorted((records[int(ptr[i]) : int(ptr[i + 1])] for i in ids.tolist()), key=len)
    common = lists[0]
    for other in lists[1:]:
        if len(common) == 0:
            break
        at = np.searchsorted(other, common)
        at[at == len(other)] = 0
        common = common[other[at] == common] if len(other) else common[:0]
    return len(common)


def _per_row(flags: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """How many flags are set in each row, rows given by their bounds (length rows + 1)."""
    cum = np.zeros(len(flags) + 1, dtype=np.int64)
    np.cumsum(flags, out=cum[1:])
    out: np.ndarray = cum[bounds[1:]] - cum[bounds[:-1]]
    return out


def _partners(
    pos: np.ndarray, ends: np.ndarray, limit: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every (occurrence index i, position q) with pos[i] < q < ends[pos[i]], in slices of at
    most `limit` pairs; a single occurrence with more partners is split across slices."""
    if len(pos) == 0:
        return
    after = ends[pos] - pos - 1
    cum = np.cumsum(after)
    total = int(cum[-1])
    start = 0
    while start < total:
        stop = min(start + limit, total)
        i0 = int(np.searchsorted(cum, start, side="right"))
        i1 = int(np.searchsorted(cum, stop - 1, side="right")) + 1
        cnt = after[i0:i1].copy()
        skip = start - (int(cum[i0]) - int(after[i0]))
        cnt[0] -= skip
        cnt[-1] -= int(cum[i1 - 1]) - stop
        parent = np.repeat(np.arange(i0, i1, dtype=np.int64), cnt)
        offset = np.arange(stop - start, dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        offset[: cnt[0]] += skip
        yield parent, pos[parent] + 1 + offset
        start = stop


def _hash_class(bits: int, p: int) -> Callable[[np.ndarray], np.ndarray]:
    """Keys (int64, >= 0) -> whether they are in hash class p of 2**bits: the top bits of
    key x GOLDEN (mod 2**64). Class p of 2**bits is classes 2p and 2p + 1 of 2**(bits + 1)."""
    shift, want = np.uint64(64 - bits), np.uint64(p)

    def keep(keys: np.ndarray) -> np.ndarray:
        mask: np.ndarray = (keys.view(np.uint64) * GOLDEN) >> shift == want
        return mask

    return keep


class _Overflow(Exception):
    """A sparse pass's distinct keys outgrew the accumulator budget: split its hash class."""


def _within(
    keys: np.ndarray, counts: np.ndarray, budget: int, floor: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """At most `budget` keys: if there are more, the floor rises to their (budget + 1)-th
    largest count and only the keys counted more than it stay. Every key above the floor is
    kept, so the final floor is the level's true (N + 1)-th largest support."""
    if len(keys) > budget:
        floor = max(floor, _order_statistic(counts, budget + 1))
        keep = counts > floor
        keys, counts = keys[keep], counts[keep]
    return keys, counts, floor


def _order_statistic(counts: np.ndarray, rank: int) -> int:
    """The rank-th largest of counts (1-based; rank <= len(counts))."""
    return int(np.partition(counts, len(counts) - rank)[len(counts) - rank])


class _Accumulator:
    """Exact int64 counts of candidate keys in [0, space): a dense array (dense=True), else
    sorted runs within `budget` bytes (past it: _Overflow)."""

    def __init__(
        self,
        space: int,
        scratch: int,
        s: int,
        *,
        dense: bool = False,
        budget: int = 0,
    ) -> None:
        self.s = s
        self.out = np.zeros(space if dense else 0, dtype=np.int64)
        self._dense = dense
        self._budget = budget
        self._slice = max(16, scratch // BYTES_PER_KEY)
        self._keys = np.zeros(0, dtype=np.int64)
        self._counts = np.zeros(0, dtype=np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending_len = 0

    def add(self, keys: np.ndarray) -> None:
        if len(keys) == 0:
            return
        if self._dense:
            np.add.at(self.out, keys, 1)
            return
        uniq, cnt = np.unique(keys, return_counts=True)
        self._pending.append((uniq, cnt.astype(np.int64)))
        self._pending_len += len(uniq)
        if self._pending_len >= max(len(self._keys), self._slice):
            self._merge()

    def _merge(self) -> None:
        if not self._pending:
            return
        keys = np.concatenate([self._keys, *(k for k, _ in self._pending)])
        counts = np.concatenate([self._counts, *(c for _, c in self._pending)])
        self._pending, self._pending_len = [], 0
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        self._keys = keys[first]
        self._counts = np.add.reduceat(counts, first) if len(first) else counts[:0]
        if len(self._keys) * BYTES_PER_DISTINCT > self._budget:
            raise _Overflow

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys ascending, counts) of the keys counted at least s times."""
        if self._dense:
            found = np.flatnonzero(self.out >= self.s)
            return found.astype(np.int64), self.out[found]
        self._merge()
        hit = self._counts >= self.s
        return self._keys[hit], self._counts[hit]


# --- the engine table's entry ---------------------------------------------------------------


def count_records(
    records: Records,
    sizes: Sequence[int],
    *,
    max_memory: int | None = None,
    progress: Setting = False,
) -> Opened:
    """Counts of records in memory, for every size in `sizes` (several: merged, one budget)."""
    from dpfim.views import Merged

    total = default_max_memory() if max_memory is None else max_memory
    share = _memory_share(records, total, len(sizes))
    engines = [
        SupportIndex(
            records,
            r,
            progress=progress,
            max_memory=share,
            rows=row_budget(total, r, len(sizes)),  # public: never the data's share
        )
        for r in sizes
    ]
    counts: Counts = engines[0] if len(engines) == 1 else Merged(engines)

    def facts() -> dict[str, Any]:
        return {
            "memory budget (MiB)": total >> 20,
            "counting passes over the records": sum(e.passes for e in engines),
        }

    # both now: the record lengths (8 bytes a record) are not kept while counting
    lengths = np.diff(records.indptr)
    usable = int((lengths >= min(sizes)).sum())
    longest = int(lengths.max()) if len(lengths) else 0
    del lengths
    return Opened(
        counts,
        usable=usable,
        facts=facts,
        counting_seconds=lambda: sum(e.seconds for e in engines),
        distinct_items=lambda: len(records.items),
        longest_record=lambda: longest,
    )


def _memory_share(records: Records, total: int, engines: int) -> int:
    """Each size's counting engine's part of the one --max-memory budget: the records are held
    once and shared, the rest is split evenly (with --sizes 1-3 three engines count at once)."""
    if engines == 1:
        return total
    data_bytes = records.indptr.nbytes + records.indices.nbytes
    return data_bytes + max(0, total - data_bytes) // engines


class _LocalEngine:
    """Reads with dpfim.readers on this machine, counts with SupportIndex."""

    name = "local"
    formats = frozenset(FORMATS)  # dpfim.readers reads every format of the table

    def check(self, inp: InputSpec) -> None:
        from dpfim.readers import check_source

        refuse_frame(inp, self.name)
        check_source(inp.source)

    def open(
        self,
        inp: InputSpec,
        sizes: Sequence[int],
        spec: EngineSpec,
        warn: Callable[[str], None],
        rng: RandomSource,
    ) -> Opened:
        from dpfim.errors import memory_phase
        from dpfim.readers import read_records
        from dpfim.readers.records import truncation_key

        refuse_frame(inp, self.name)
        t0 = time.perf_counter()
        read_paths: list[str] = []
        with memory_phase("reading"):
            records = read_records(
                inp.source,
                fmt=inp.fmt,  # as given: an explicit --format basket silences the long warning
                sep=inp.sep,
                record_col=inp.record_col,
                item_col=inp.item_col,
                compression=inp.compression,
                max_record_items=inp.max_record_items,
                universe=inp.universe,
                key=truncation_key(seed=inp.seed),  # as every engine derives it
                progress=spec.progress,
                warn=warn,
                paths=read_paths.append,
            )
        read = time.perf_counter() - t0
        with memory_phase("counting"):
            opened = count_records(
                records, sizes, max_memory=spec.max_memory, progress=spec.progress
            )
        opened.timings["read"] = read
        if read_paths:  # which reader paths read the input: curator-only, like every fact
            counted = opened.facts
            opened.facts = lambda: {"read by": "; ".join(read_paths), **counted()}
        return opened


ENGINE = _LocalEngine()
