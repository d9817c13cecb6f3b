"""The top-down threshold policy, written once for every engine (docs/architecture.md).

An engine knows every itemset with support >= a threshold s. It starts just above the r-th
largest item support (which bounds every r-itemset's support from above), and when a mechanism
asks for deeper ranks it lowers s: by half, or by a quarter or an eighth when the growth seen so
far predicts that one halving is not enough (`next_threshold`). An engine subclasses `TopDown`
and supplies `_count_at(s)`: every itemset with support >= s, as (supports, item ids, tie keys).
The order of the rows (decreasing support, ties by first appearance) is set here, once.

**Clipping at a public row budget** (docs/privacy.md §1.2). An engine may hold at most a
public number of itemsets per level (derived from --max-memory alone). When a lowering would
need more, `_count_at` sets `self._clip` to T, the largest of the levels' order statistics
c_(N+1) (the (N + 1)-th largest support of the level, N its public budget), and returns the
itemsets with support > T. From then on the counts are complete *at the floor t*: every itemset not
listed counts as t (`clipped_at`). That is the count function max(c(I), t(D)), which one record
still moves by at most 1 (a maximum of functions that each move by at most 1), so every
mechanism's guarantee holds on it; only how deep the mechanisms may look depends on the data,
never whether a result exists.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from dpfim.counts import Unlisted, tie_order


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
    clipped_at: int = 0  # the floor t once clipped (0: not clipped)
    _clip: int | None = None  # set by _count_at when the row budget ran out

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
        return self.threshold <= 1 or self.clipped_at > 0

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

    def impose_floor(self, t: int) -> None:
        """Clip at t (another engine of the same run clipped there: one floor per run, the
        largest): every itemset with support <= t leaves the rows and counts as t."""
        if t <= self.clipped_at:
            return
        self.lower_to(t + 1)
        if self.clipped_at >= t:  # lowering clipped this engine at t or above already
            return
        keep = int(np.count_nonzero(self.counts > t))
        self.counts, self.itemsets = self.counts[:keep], self.itemsets[:keep]
        self.clipped_at = t
        self.threshold = t + 1

    def _lower(self, s: int) -> None:
        if self.clipped_at:
            return  # complete at the floor: nothing lower is ever counted
        t0 = time.perf_counter()
        self._clip = None
        counts, itemsets, ties = self._count_at(s)
        order = tie_order(counts, ties)
        self.counts = counts[order]
        self.itemsets = itemsets[order].astype(np.int32, copy=False)
        self.threshold = s
        if self._clip is not None:  # the rows are those with support > t
            if self._clip < 1:
                raise AssertionError("a clip floor is at least 1")
            self.clipped_at = self._clip
            self.threshold = self._clip + 1
        self._next = max(1, s // 2)
        self.seconds += time.perf_counter() - t0

    def _count_at(self, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(supports, item-id rows, tie-key rows) of every itemset with support >= s; or, when
        the engine's row budget ran out, set self._clip = t and return those with support > t."""
        raise NotImplementedError
