"""RankedCounts views for top-k: counts with released itemsets hidden, and several sizes merged.

No randomness and no privacy here: a view only re-presents exact counts that an engine (today
dpfim.engines.local.SupportIndex) computed, so counting is shared by every round of a top-k run.
Both views keep the RankedCounts contract (dpfim/mechanisms/base.py): `counts` holds every
support >= `threshold` of the itemsets in view, in decreasing order, `itemsets` is aligned with
it, and `complete` means every nonzero support is there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

Key = tuple[int, ...]


class Identified(Protocol):
    """RankedCounts whose rows carry an identity (`itemsets`, one row of ids per count)."""

    @property
    def counts(self) -> np.ndarray: ...

    @property
    def itemsets(self) -> np.ndarray: ...

    @property
    def complete(self) -> bool: ...

    def ensure(self, depth: int) -> None: ...


def _threshold(counts: object) -> int:
    return int(getattr(counts, "threshold", 1))


class Without:
    """`base` with some itemsets removed (the ones already released by earlier rounds).

    Removal is by identity (the itemset's row), so it survives the engine lowering its
    threshold and re-sorting. Itemsets of count 0 can be removed too (a named zero-count pick
    of a declared universe): they are not among the rows, but `removed_zero` counts them so the
    caller can shrink the universe.
    """

    def __init__(self, base: Identified) -> None:
        self._base = base
        self._removed: dict[Key, int] = {}  # key -> its count (0: a zero-count itemset)
        self._src: np.ndarray | None = None
        self._n_removed_seen = -1
        self._counts = np.zeros(0, dtype=np.int64)
        self._itemsets: np.ndarray | None = None
        self._drop: list[int] = []
        # A declared universe's itemsets by identity (topk.Unlisted), for report-noisy-max
        # below its floor; None: the mechanisms see the counts only.
        self.unlisted: object | None = None

    # --- the RankedCounts interface ---------------------------------------------------------

    @property
    def counts(self) -> np.ndarray:
        self._refresh()
        return self._counts

    @property
    def itemsets(self) -> np.ndarray:
        self._refresh()
        if self._itemsets is None:  # built on demand: most rounds never read the rows
            self._itemsets = _without_rows(self._base.itemsets, self._drop)
        return self._itemsets

    @property
    def threshold(self) -> int:
        return _threshold(self._base)

    @property
    def complete(self) -> bool:
        return self._base.complete

    def ensure(self, depth: int) -> None:
        """At most len(removed) rows are hidden, so asking the base for that many more suffices."""
        self._base.ensure(depth + self.removed_nonzero)

    def lower_to(self, s: int) -> None:
        """Every count >= s in view (the base jumps there in one pass if it can)."""
        lower_to(self._base, s)

    def support(self, ids: Sequence[int]) -> int:
        return int(self._base.support(ids))  # type: ignore[attr-defined]

    # --- removal ----------------------------------------------------------------------------

    @property
    def removed(self) -> dict[Key, int]:
        return dict(self._removed)

    @property
    def removed_nonzero(self) -> int:
        return sum(1 for c in self._removed.values() if c > 0)

    @property
    def removed_zero(self) -> int:
        return sum(1 for c in self._removed.values() if c == 0)

    def is_removed(self, key: Key) -> bool:
        return key in self._removed

    def key(self, index: int) -> Key:
        """The identity of the row at `index` of this view."""
        return tuple(int(x) for x in self.itemsets[index])

    def remove(self, key: Key, count: int) -> None:
        if key in self._removed:
            raise ValueError(f"itemset {key} was already removed")
        self._removed[key] = count

    def _refresh(self) -> None:
        counts = self._base.counts
        if counts is self._src and self._n_removed_seen == len(self._removed):
            return
        rows = self._base.itemsets
        drop = []
        threshold = _threshold(self._base) if not self._base.complete else 1
        for key, c in self._removed.items():
            if c <= 0 or c < threshold:  # not among the rows (a pick drawn from below them)
                continue
            # its tie range, found by binary search on the decreasing counts
            lo = len(counts) - int(np.searchsorted(counts[::-1], c, side="right"))
            hi = len(counts) - int(np.searchsorted(counts[::-1], c, side="left"))
            hit = np.flatnonzero((rows[lo:hi] == np.asarray(key)).all(axis=1))
            if len(hit) != 1:
                raise AssertionError(f"removed itemset {key} (count {c}) not found once")
            drop.append(lo + int(hit[0]))
        self._drop = sorted(drop)
        self._counts = _without_rows(counts, self._drop)  # one copy per change
        self._itemsets = None
        self._src = counts
        self._n_removed_seen = len(self._removed)


def _without_rows(arr: np.ndarray, drop: list[int]) -> np.ndarray:
    """arr without the rows at the sorted positions `drop` (contiguous slices: memcpy speed)."""
    if not drop:
        return arr
    parts, start = [], 0
    for d in drop:
        parts.append(arr[start:d])
        start = d + 1
    parts.append(arr[start:])
    return np.concatenate(parts)


class Merged:
    """Several engines (one per itemset size, same records) ranked together.

    Rows are padded to the largest size with -1. Every engine holds all its itemsets with
    support >= its own threshold; the merged view therefore shows, from each engine, the rows
    with support >= the LARGEST of the thresholds (below it some engine is incomplete), and
    `ensure` lowers the engines whose threshold is the binding one. Sensitivity is unchanged:
    each count is still a count of records, moved by at most 1 by one record.
    """

    def __init__(self, engines: Sequence[Identified]) -> None:
        if not engines:
            raise ValueError("no engines to merge")
        self._engines = list(engines)
        self._width = max(e.itemsets.shape[1] for e in self._engines)
        self._srcs: list[np.ndarray] | None = None
        self._counts = np.zeros(0, dtype=np.int64)
        self._itemsets = np.zeros((0, self._width), dtype=np.int32)

    @property
    def threshold(self) -> int:
        return max(_threshold(e) for e in self._engines)

    @property
    def complete(self) -> bool:
        return all(e.complete for e in self._engines)

    @property
    def counts(self) -> np.ndarray:
        self._refresh()
        return self._counts

    @property
    def itemsets(self) -> np.ndarray:
        self._refresh()
        return self._itemsets

    def ensure(self, depth: int) -> None:
        while len(self.counts) < depth and not self.complete:
            t = self.threshold
            for e in self._engines:
                if _threshold(e) == t and not e.complete:
                    e.ensure(len(e.counts) + 1)

    def lower_to(self, s: int) -> None:
        """Every count >= s of every size in view."""
        for e in self._engines:
            lower_to(e, s)

    def support(self, ids: Sequence[int]) -> int:
        return int(self._engines[0].support(ids))  # type: ignore[attr-defined]

    def _refresh(self) -> None:
        srcs = [e.counts for e in self._engines]
        if self._srcs is not None and all(a is b for a, b in zip(srcs, self._srcs, strict=True)):
            return
        t = self.threshold
        parts_c, parts_i = [], []
        for e, c in zip(self._engines, srcs, strict=True):
            keep = int(np.searchsorted(-c, -t, side="right"))  # rows with count >= t
            rows = np.full((keep, self._width), -1, dtype=np.int32)
            rows[:, : e.itemsets.shape[1]] = e.itemsets[:keep]
            parts_c.append(c[:keep])
            parts_i.append(rows)
        counts = np.concatenate(parts_c) if parts_c else np.zeros(0, dtype=np.int64)
        items = np.concatenate(parts_i)
        order = np.argsort(-counts, kind="stable")
        self._counts = counts[order].astype(np.int64)
        self._itemsets = items[order]
        self._srcs = srcs


def lower_to(counts: Any, s: int) -> None:
    """Lower `counts` until it holds every count >= s: in one pass if it has `lower_to`, else
    by asking for one more itemset at a time (each ask lowers the threshold at least once)."""
    lower = getattr(counts, "lower_to", None)
    if lower is not None:
        lower(s)
        return
    while _threshold(counts) > s and not counts.complete:
        counts.ensure(len(counts.counts) + 1)


def ids_of(row: Sequence[int] | np.ndarray) -> list[int]:
    """The item ids of a (possibly padded) row."""
    return [int(x) for x in row if int(x) >= 0]
