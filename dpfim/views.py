"""RankedCounts views for top-k: counts with released itemsets hidden, and several sizes merged.

No randomness and no privacy here: a view only re-presents exact counts that an engine (today
dpfim.engines.local.SupportIndex) computed, so counting is shared by every round of a top-k run.
Both views keep the counting contract (dpfim/counts.py, `Counts`) whole: a view is itself
`Counts`, so a mechanism, another view or the release cannot tell it from an engine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpfim.counts import Counts, Key, Unlisted
from dpfim.samplers.rng import RandomSource


class Without:
    """`base` with some itemsets removed (the ones already released by earlier rounds).

    Removal is by identity (the itemset's row), so it survives the engine lowering its
    threshold and re-sorting. Itemsets of count 0 can be removed too (a named zero-count pick
    of a declared universe): they are not among the rows, but `removed_zero` counts them so the
    caller can shrink the universe.
    """

    def __init__(self, base: Counts, declared: DeclaredUniverse | None = None) -> None:
        self._base = base
        self._removed: dict[Key, int] = {}  # key -> its count (0: a zero-count itemset)
        self._src: np.ndarray | None = None
        self._n_removed_seen = -1
        self._counts = np.zeros(0, dtype=np.int64)
        self._itemsets: np.ndarray | None = None
        self._drop: list[int] = []
        # A declared universe's itemsets by identity, for report-noisy-max below its floor;
        # None: the mechanisms see the counts only.
        self._unlisted = None if declared is None else DeclaredUnlisted(declared, self)

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
        return self._base.threshold

    @property
    def complete(self) -> bool:
        return self._base.complete

    @property
    def unlisted(self) -> Unlisted | None:
        return self._unlisted

    @property
    def clipped_at(self) -> int:
        return self._base.clipped_at

    @property
    def items(self) -> Sequence[str]:
        return self._base.items

    @property
    def n(self) -> int:
        return self._base.n

    def ensure(self, depth: int) -> None:
        """At most len(removed) rows are hidden, so asking the base for that many more suffices."""
        self._base.ensure(depth + self.removed_nonzero)

    def lower_to(self, s: int) -> None:
        """Every count >= s in view (the base jumps there in one pass if it can)."""
        self._base.lower_to(s)

    def support(self, ids: Sequence[int]) -> int:
        return self._base.support(ids)

    def supports(self, batch: Sequence[Sequence[int]]) -> list[int]:
        return self._base.supports(batch)

    # --- removal ----------------------------------------------------------------------------

    @property
    def removed(self) -> dict[Key, int]:
        return dict(self._removed)

    @property
    def removed_nonzero(self) -> int:
        """Removed itemsets that are (or were) rows: count above the clip floor (or 0)."""
        return sum(1 for c in self._removed.values() if c > self._base.clipped_at)

    @property
    def removed_zero(self) -> int:
        return sum(1 for c in self._removed.values() if c <= self._base.clipped_at)

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
        threshold = self._base.threshold if not self._base.complete else 1
        clip = self._base.clipped_at
        for key, c in self._removed.items():
            if c <= clip or c < threshold:  # not among the rows (a pick drawn from below them)
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

    def __init__(self, engines: Sequence[Counts]) -> None:
        if not engines:
            raise ValueError("no engines to merge")
        self._engines = list(engines)
        self._width = max(e.itemsets.shape[1] for e in self._engines)
        self._srcs: list[np.ndarray] | None = None
        self._counts = np.zeros(0, dtype=np.int64)
        self._itemsets = np.zeros((0, self._width), dtype=np.int32)

    @property
    def threshold(self) -> int:
        return max(e.threshold for e in self._engines)

    @property
    def unlisted(self) -> Unlisted | None:
        return None

    @property
    def items(self) -> Sequence[str]:
        return self._engines[0].items  # one item table, shared by the sizes

    @property
    def n(self) -> int:
        return self._engines[0].n

    @property
    def complete(self) -> bool:
        return all(e.complete for e in self._engines)

    @property
    def clipped_at(self) -> int:
        """One floor for the run: the largest of the engines' (each clips at its own order
        statistic; their maximum still moves by at most 1 with one record)."""
        return max(e.clipped_at for e in self._engines)

    def _sync(self) -> None:
        """Once one engine clipped, clip every engine at the common floor (an engine lowered
        there may clip higher still: then again, until they agree)."""
        t = self.clipped_at
        while t > 0:
            for e in self._engines:
                e.impose_floor(t)  # type: ignore[attr-defined]
            if self.clipped_at == t:
                return
            t = self.clipped_at

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
                if e.threshold == t and not e.complete:
                    e.ensure(len(e.counts) + 1)
            self._sync()

    def lower_to(self, s: int) -> None:
        """Every count >= s of every size in view."""
        for e in self._engines:
            e.lower_to(s)
        self._sync()

    def item_supports(self) -> np.ndarray:
        return self._engines[0].item_supports()  # type: ignore[attr-defined]

    def weighted_item_supports(self, scale: int) -> np.ndarray:
        return self._engines[0].weighted_item_supports(scale)  # type: ignore[attr-defined]

    def support(self, ids: Sequence[int]) -> int:
        return self._engines[0].support(ids)

    def supports(self, batch: Sequence[Sequence[int]]) -> list[int]:
        return self._engines[0].supports(batch)

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


def ids_of(row: Sequence[int] | np.ndarray) -> list[int]:
    """The item ids of a (possibly padded) row."""
    return [int(x) for x in row if int(x) >= 0]


@dataclass(frozen=True)
class DeclaredUniverse:
    """Every r-subset (r in sizes) of a declared vocabulary of item ids 0..vocab-1, with the
    engine's exact supports: the release hands it to a peeling view when the engine answers
    single supports quickly (report-noisy-max then draws below its floor by identity)."""

    vocab: int
    sizes: tuple[int, ...]
    counts: Counts


class DeclaredUnlisted:
    """counts.Unlisted for one peeling run: draws over the universe minus the itemsets the
    view has removed (the round's universe), keys padded with -1 to the largest size."""

    def __init__(self, universe: DeclaredUniverse, view: Without) -> None:
        self._u = universe
        self._view = view
        self._width = max(universe.sizes)
        self._weights = [math.comb(universe.vocab, r) for r in universe.sizes]

    def draw(self, rng: RandomSource) -> Key:
        """A uniformly random itemset of the universe not yet released (by rejection: an
        r-size by its share of the universe, then r independent uniform ids until distinct)."""
        while True:
            r = self._size(rng.randbelow(sum(self._weights)))
            ids = {rng.randbelow(self._u.vocab) for _ in range(r)}
            if len(ids) < r:
                continue
            key = tuple(sorted(ids)) + (-1,) * (self._width - r)
            if not self._view.is_removed(key):
                return key

    def count(self, key: Key) -> int:
        """The count the mechanisms see: max(c, t) once the counts are clipped at t."""
        return max(self._u.counts.support(ids_of(key)), self._view.clipped_at)

    def _size(self, pick: int) -> int:
        """The size whose share of the universe holds position `pick`."""
        for r, w in zip(self._u.sizes, self._weights, strict=True):
            if pick < w:
                return r
            pick -= w
        raise AssertionError("pick beyond the universe")
