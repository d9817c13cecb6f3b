"""The top-down threshold policy, written once for every engine (docs/architecture.md).

An engine knows every itemset with support >= a threshold s. It starts just above the r-th
largest item support (which bounds every r-itemset's support from above), and when a mechanism
asks for deeper ranks it lowers s: by half, or by a quarter or an eighth when the growth seen so
far predicts that one halving is not enough (`next_threshold`). An engine subclasses `TopDown`
and supplies `_count_at(s)`: every itemset with support >= s, as (supports, item ids, tie keys).
The order of the rows (decreasing support, ties by first appearance) is set here, once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from dpfim.counts import Unlisted, tie_order


class HeldCap(Exception):
    """Raised by an engine's `_count_at` when the itemsets it would hold at a threshold exceed
    its `held_limit` (rows): the count stops before allocating more, and the engine keeps what
    it knew at its previous threshold. Not a user-facing error: the caller decides (the private
    memory floor, docs/privacy.md §1.1)."""


def next_threshold(threshold: int, counts: np.ndarray, planned: int, depth: int) -> int:
    """The next threshold: half the current one, or a quarter or an eighth of it when the
    growth seen so far (itemsets at s against at 2s) predicts that one halving gives fewer
    than max(depth, 4 x known) itemsets. Each pass then at least about quadruples the known
    itemsets, so a search that keeps asking for twice as many pays few passes. counts: the
    known counts (decreasing); planned: the halving the engine would take."""
    t, known = threshold, len(counts)
    if known == 0 or t <= 2 or planned != max(1, t // 2):
        return planned
    at_double = int(np.searchsorted(-counts, -2 * t, side="right"))  # counts >= 2t
    if at_double == 0:
        return planned
    growth = known / at_double
    target = max(depth, 4 * known)
    k = 1
    while k < 3 and known * growth**k < target:
        k += 1
    return max(1, t >> k)


class TopDown:
    """The policy part of an engine's `Counts`: threshold, complete, ensure, lower_to, the row
    order. Subclasses call `_begin(size, top)` and implement `_count_at` and `supports`."""

    size: int
    counts: np.ndarray
    itemsets: np.ndarray
    threshold: int
    seconds: float = 0.0  # time spent counting, for --verbose
    passes: int = 0  # lowerings that counted (curator-only)

    def _begin(self, size: int, top: Sequence[int] | np.ndarray) -> None:
        """Nothing known yet; `top`: the largest item supports, decreasing (at least `size` of
        them if there are that many items)."""
        if not 1 <= size <= 5:
            raise ValueError(f"itemset size must be 1..5, got {size}")
        self.size = size
        self.counts = np.zeros(0, dtype=np.int64)
        self.itemsets = np.zeros((0, size), dtype=np.int32)
        bound = int(top[size - 1]) if len(top) >= size else 0
        self.threshold = bound + 1 if bound > 0 else 1
        self._next = bound if bound > 0 else 1

    @property
    def complete(self) -> bool:
        return self.threshold <= 1

    @property
    def unlisted(self) -> Unlisted | None:
        return None  # an engine hands the mechanisms counts only (views add identities)

    def ensure(self, depth: int) -> None:
        """Lower the threshold until at least `depth` itemsets are known, or all are."""
        while len(self.counts) < depth and not self.complete:
            self._lower(next_threshold(self.threshold, self.counts, self._next, depth))

    def lower_to(self, s: int) -> None:
        """Lower the threshold to s (at least 1) in one pass, unless it is there already."""
        s = max(1, int(s))
        if self.threshold > s:
            self._lower(s)

    def support(self, ids: Sequence[int]) -> int:
        return self.supports([ids])[0]

    def supports(self, batch: Sequence[Sequence[int]]) -> list[int]:
        raise NotImplementedError

    def _lower(self, s: int) -> None:
        t0 = time.perf_counter()
        counts, itemsets, ties = self._count_at(s)
        order = tie_order(counts, ties)
        self.counts = counts[order]
        self.itemsets = itemsets[order].astype(np.int32, copy=False)
        self.threshold = s
        self._next = max(1, s // 2)
        self.seconds += time.perf_counter() - t0

    def _count_at(self, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(supports, item-id rows, tie-key rows) of every itemset with support >= s."""
        raise NotImplementedError
