"""records → exact integer supports of r-itemsets, from the top down. No randomness, no privacy.

The mechanism needs c(1), then c(2), c(3), … only as deep as its search goes. SupportIndex keeps
every r-itemset with support >= a threshold s (and nothing below it), starting at an upper bound
on the top support and lowering s only when asked for more ranks. Enumeration is Eclat-like on a
sparse 0/1 matrix restricted to items with support >= s (anti-monotonicity): prefixes are
extended one item at a time, and the last two items of every itemset are counted at once by a
sparse product X_P^T X_P over the records that contain the prefix P.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence

import numpy as np
from scipy import sparse

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
        self._csc: sparse.csc_matrix | None = None
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
        if self._csc is None:
            self._csc = self._matrix(np.arange(self._n_items), min_items=1).tocsc()
        csc = self._csc
        rows: np.ndarray | None = None
        for item in itemset:
            col = csc.indices[csc.indptr[item] : csc.indptr[item + 1]]
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
            x = self._matrix(frequent)
            for c, items in self._extend(x, frequent, [], self.size, s):
                parts_c.append(c)
                parts_i.append(items)
        if not parts_c:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.size), dtype=np.int32)
        return np.concatenate(parts_c), np.concatenate(parts_i).astype(np.int32)

    def _matrix(self, columns: np.ndarray, min_items: int | None = None) -> sparse.csr_matrix:
        """The records restricted to `columns` (item ids, ascending) as a 0/1 CSR matrix,
        keeping only records with at least `min_items` (default r) of those items."""
        remap = np.full(self._n_items, -1, dtype=np.int64)
        remap[columns] = np.arange(len(columns))
        cols = remap[self._indices]
        row_of = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self._indptr))
        keep = cols >= 0
        cols, row_of = cols[keep], row_of[keep]
        per_row = np.bincount(row_of, minlength=self.n)
        # A shorter record holds no r-itemset of these items.
        useful = per_row >= (self.size if min_items is None else min_items)
        sel = useful[row_of]
        cols, row_of = cols[sel], row_of[sel]
        _, row_ids = np.unique(row_of, return_inverse=True)
        data = np.ones(len(cols), dtype=np.int32)
        shape = (int(row_ids.max()) + 1 if len(row_ids) else 0, len(columns))
        return sparse.csr_matrix((data, (row_ids, cols)), shape=shape)

    def _extend(
        self,
        x: sparse.csr_matrix,
        items: np.ndarray,
        prefix: list[int],
        k: int,
        s: int,
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Itemsets prefix + (k items from `items`, the columns of x) with support >= s."""
        if k == 2:
            gram = (x.T @ x).tocoo()
            mask = (gram.row < gram.col) & (gram.data >= s)
            if mask.any():
                m = int(mask.sum())
                block = np.empty((m, len(prefix) + 2), dtype=np.int64)
                block[:, : len(prefix)] = prefix
                block[:, -2] = items[gram.row[mask]]
                block[:, -1] = items[gram.col[mask]]
                yield gram.data[mask].astype(np.int64), block
            return
        csc = x.tocsc()
        col_support = np.diff(csc.indptr)
        todo = np.flatnonzero(col_support >= s)
        bar = None
        if self._progress and not prefix:
            from tqdm import tqdm

            bar = tqdm(total=len(todo), desc=f"counting (s={s})", file=sys.stderr, leave=False)
        for a in todo.tolist():
            if bar is not None:
                bar.update(1)
            rows = csc.indices[csc.indptr[a] : csc.indptr[a + 1]]
            sub = x[rows][:, a + 1 :]
            sup = np.bincount(sub.indices, minlength=sub.shape[1])
            keep = np.flatnonzero(sup >= s)
            if len(keep) < k - 1:
                continue
            yield from self._extend(
                sub[:, keep], items[a + 1 :][keep], [*prefix, int(items[a])], k - 1, s
            )
        if bar is not None:
            bar.close()
