"""records → exact integer supports of r-itemsets, from the top down. No randomness, no privacy.

The mechanism needs c(1), then c(2), c(3), … only as deep as its search goes. SupportIndex keeps
every r-itemset with support >= a threshold s (and nothing below it), starting at an upper bound
on the top support and lowering s only when asked for more ranks. Enumeration is Eclat-like on
the records restricted to items with support >= s (anti-monotonicity): prefixes are extended one
item at a time, and the last two items of every itemset are counted at once, by generating every
pair inside each record that contains the prefix (numpy index arithmetic) and counting the pair keys
with bincount. Plain numpy: a scipy.sparse product X^T X measured no faster overall (slower on
retail r = 2 to completion: 4.2 s against 3.0 s) and scipy.sparse costs ~0.2 s to import.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence

import numpy as np

from dpfim.readers import Records


class SupportIndex:
    """Exact supports of the r-itemsets with support >= threshold, in decreasing order.

    Invariant: `counts` holds the support of EVERY r-itemset with support >= `threshold` and
    of no other; `itemsets` (item ids, each row ascending) is aligned with it. `complete` once
    the threshold is 1: then all L nonzero-support r-itemsets are known.
    """

    def __init__(self, records: Records, size: int, *, progress: bool = False) -> None:
        if not 1 <= size <= 5:
            raise ValueError(f"itemset size must be 1..5, got {size}")
        self.n = records.n
        self.size = size
        self._progress = progress
        self._n_items = len(records.items)
        self._indptr = records.indptr
        self._indices = records.indices
        self._by_item: tuple[np.ndarray, np.ndarray] | None = None
        self.item_support = np.bincount(records.indices, minlength=self._n_items).astype(np.int64)
        self.counts = np.zeros(0, dtype=np.int64)
        self.itemsets = np.zeros((0, size), dtype=np.int32)
        top = np.sort(self.item_support)[::-1]
        # The r-th largest item support bounds every r-itemset's support from above.
        bound = int(top[size - 1]) if len(top) >= size else 0
        self.threshold = bound + 1 if bound > 0 else 1
        self._next = bound if bound > 0 else 1

    @property
    def complete(self) -> bool:
        return self.threshold <= 1

    def ensure(self, depth: int) -> None:
        """Lower the threshold until at least `depth` itemsets are known, or all are."""
        while len(self.counts) < depth and not self.complete:
            self._lower_to(self._next)
            self._next = max(1, self.threshold // 2)

    def support(self, itemset: Sequence[int]) -> int:
        """The exact support of one itemset (item ids), by intersecting record lists."""
        if self._by_item is None:
            row_of = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self._indptr))
            order = np.argsort(self._indices, kind="stable")
            starts = np.searchsorted(self._indices[order], np.arange(self._n_items + 1))
            self._by_item = (row_of[order], starts)
        rows_by_item, starts = self._by_item
        rows: np.ndarray | None = None
        for item in itemset:
            col = rows_by_item[starts[item] : starts[item + 1]]
            rows = col if rows is None else np.intersect1d(rows, col, assume_unique=True)
        return self.n if rows is None else len(rows)

    # --- enumeration -------------------------------------------------------------------------

    def _lower_to(self, s: int) -> None:
        counts, itemsets = self._enumerate(s)
        order = np.lexsort((*itemsets.T[::-1], -counts)) if len(counts) else np.zeros(0, int)
        self.counts = counts[order]
        self.itemsets = itemsets[order]
        self.threshold = s

    def _enumerate(self, s: int) -> tuple[np.ndarray, np.ndarray]:
        """All r-itemsets with support >= s: (supports, item ids)."""
        frequent = np.flatnonzero(self.item_support >= s)
        if self.size == 1:
            return self.item_support[frequent], frequent.reshape(-1, 1).astype(np.int32)
        parts_c: list[np.ndarray] = []
        parts_i: list[np.ndarray] = []
        if len(frequent) >= self.size:
            indptr, cols = self._project(frequent, self.size)
            for c, items in self._extend(indptr, cols, frequent, [], self.size, s):
                parts_c.append(c)
                parts_i.append(items)
        if not parts_c:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.size), dtype=np.int32)
        return np.concatenate(parts_c), np.concatenate(parts_i).astype(np.int32)

    def _project(self, columns: np.ndarray, min_items: int) -> tuple[np.ndarray, np.ndarray]:
        """The records restricted to `columns` (item ids, ascending), relabelled 0..len-1,
        keeping only records with at least `min_items` of them: CSR (indptr, cols)."""
        remap = np.full(self._n_items, -1, dtype=np.int64)
        remap[columns] = np.arange(len(columns))
        cols = remap[self._indices]
        row_of = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self._indptr))
        keep = cols >= 0
        return _compact(row_of[keep], cols[keep], self.n, min_items)

    def _extend(
        self,
        indptr: np.ndarray,
        cols: np.ndarray,
        items: np.ndarray,
        prefix: list[int],
        k: int,
        s: int,
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Itemsets prefix + (k items from `items`, the local columns) with support >= s."""
        width = len(items)
        if k == 2:
            keys = _pair_keys(indptr, cols, width)
            if width * width <= 1 << 24:
                counts = np.bincount(keys, minlength=width * width)
                found = np.flatnonzero(counts >= s)
                support = counts[found]
            else:
                uniq, support = np.unique(keys, return_counts=True)
                hit = support >= s
                found, support = uniq[hit], support[hit]
            if len(found):
                block = np.empty((len(found), len(prefix) + 2), dtype=np.int64)
                block[:, : len(prefix)] = prefix
                block[:, -2] = items[found // width]
                block[:, -1] = items[found % width]
                yield support.astype(np.int64), block
            return
        row_of = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        by_col = np.argsort(cols, kind="stable")
        col_start = np.searchsorted(cols[by_col], np.arange(width + 1))
        todo = np.flatnonzero(np.diff(col_start) >= s)
        bar = None
        if self._progress and not prefix:
            from tqdm import tqdm

            bar = tqdm(total=len(todo), desc=f"counting (s={s})", file=sys.stderr, leave=False)
        for a in todo.tolist():
            if bar is not None:
                bar.update(1)
            rows = row_of[by_col[col_start[a] : col_start[a + 1]]]
            # the elements of those rows after item a (rows are sorted, so "after" is "> a")
            lengths = indptr[rows + 1] - indptr[rows]
            elems = np.repeat(indptr[rows] - np.cumsum(lengths) + lengths, lengths) + np.arange(
                int(lengths.sum())
            )
            sub_cols = cols[elems]
            sub_rows = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
            after = sub_cols > a
            sub_cols, sub_rows = sub_cols[after], sub_rows[after]
            support = np.bincount(sub_cols, minlength=width)
            keep = np.flatnonzero(support >= s)
            if len(keep) < k - 1:
                continue
            remap = np.full(width, -1, dtype=np.int64)
            remap[keep] = np.arange(len(keep))
            local = remap[sub_cols]
            ok = local >= 0
            sub_indptr, sub_local = _compact(sub_rows[ok], local[ok], len(rows), k - 1)
            yield from self._extend(
                sub_indptr, sub_local, items[keep], [*prefix, int(items[a])], k - 1, s
            )
        if bar is not None:
            bar.close()


def _compact(
    row_of: np.ndarray, cols: np.ndarray, n_rows: int, min_items: int
) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the rows with at least min_items entries (row_of non-decreasing, cols sorted
    within each row), renumbered consecutively."""
    per_row = np.bincount(row_of, minlength=n_rows)
    useful = per_row >= min_items  # a shorter record holds no such itemset
    sel = useful[row_of]
    kept = per_row[useful]
    indptr = np.concatenate(([0], np.cumsum(kept))).astype(np.int64)
    return indptr, cols[sel]


def _pair_keys(indptr: np.ndarray, cols: np.ndarray, width: int) -> np.ndarray:
    """a * width + b for every pair a < b of columns inside each row (rows sorted)."""
    lengths = np.diff(indptr)
    offset = np.arange(len(cols)) - np.repeat(indptr[:-1], lengths)
    after = np.repeat(lengths, lengths) - offset - 1  # partners to the right of each element
    total = int(after.sum())
    left = np.repeat(np.arange(len(cols)), after)
    first = np.cumsum(after) - after
    right = left + 1 + (np.arange(total) - np.repeat(first, after))
    keys: np.ndarray = cols[left] * width + cols[right]
    return keys
