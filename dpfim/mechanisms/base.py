"""What every mechanism shares: the view of the data it may read, and its outcome."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpfim.counts import RankedCounts, Unlisted

__all__ = ["Outcome", "RankedCounts", "VectorCounts"]


class VectorCounts:
    """A plain vector of counts as a RankedCounts: for the Python API and statistical tests.

    Zero entries are dropped (ranks past the vector have count 0); the order of the input does
    not matter.
    """

    def __init__(self, counts: Sequence[int] | np.ndarray) -> None:
        arr = np.asarray(counts, dtype=np.int64)
        if arr.ndim != 1:
            raise ValueError("counts must be one-dimensional")
        if arr.size and arr.min() < 0:
            raise ValueError("counts must be >= 0")
        order = np.argsort(-arr, kind="stable")
        self._order = order[arr[order] > 0]
        self._counts = arr[self._order]

    @property
    def counts(self) -> np.ndarray:
        return self._counts

    @property
    def itemsets(self) -> np.ndarray:
        """Each sorted entry's input position, as a one-column row (its identity)."""
        return self._order.reshape(-1, 1)

    @property
    def complete(self) -> bool:
        return True

    @property
    def threshold(self) -> int:
        return 1

    @property
    def unlisted(self) -> Unlisted | None:
        return None

    def ensure(self, depth: int) -> None:
        """Everything is known already."""

    def lower_to(self, s: int) -> None:
        """Everything is known already."""

    def position(self, index: int) -> int:
        """The input position of the sorted entry `index`."""
        return int(self._order[index])


@dataclass(frozen=True)
class Outcome:
    """What a selection mechanism decided, before it is turned into a released result.

    noisy_max: the released noisy top count (lmm), or None; ell: the stopping rank, or None
    for "inf"; index: position of the selected itemset in `counts`, or None for none;
    zero_pick: the selection chose a zero-count candidate (in a declared universe the caller
    then names a uniformly random zero-count r-subset); named: the selected itemset itself (item
    ids, padded with -1 like the counts' rows) when the mechanism drew it from a declared
    universe rather than from `counts` (report-noisy-max below its floor), with its exact
    count named_count (internal, like every count: never released).
    """

    noisy_max: int | None
    ell: int | None
    index: int | None
    zero_pick: bool = False
    named: tuple[int, ...] | None = None
    named_count: int | None = None
