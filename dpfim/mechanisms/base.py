"""What every mechanism shares: the view of the data it may read, its public parameters, its
outcome, and the `Mechanism` object each mechanism module exports (registry.py collects them).

A mechanism object carries its function AND its privacy map: `cost(public)` is a typed measure
(dpfim.accounting) with exact Fractions; composition happens in dpfim.accounting only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpfim.accounting import Cost, Measure, Neighbours, amount, approx, basic
from dpfim.counts import RankedCounts, Unlisted
from dpfim.params import DEFAULT_ELL_MAX
from dpfim.samplers.rng import RandomSource

__all__ = [
    "ADD_REMOVE",
    "BOTH",
    "Mechanism",
    "Outcome",
    "Public",
    "RankedCounts",
    "Steps",
    "VectorCounts",
    "steps_ledger",
]

BOTH = frozenset(Neighbours)
ADD_REMOVE = frozenset({Neighbours.ADD_REMOVE})


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

    @property
    def clipped_at(self) -> int:
        return 0

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


@dataclass(frozen=True)
class Public:
    """The public parameters one mechanism run may depend on.

    sizes: the itemset sizes ranked together (one size for --size r); universe_size: K of a
    declared finite universe, or None for the open universe; max_record_items: the record-length
    bound B, or None.
    """

    eps: Fraction
    delta: Fraction
    sizes: tuple[int, ...] = (2,)
    neighbours: str = "replace"
    ell_max: int = DEFAULT_ELL_MAX
    candidates: int = 10
    max_record_items: int | None = None
    universe_size: int | None = None
    # the share of the run's budget for noisy supports a whole-run mechanism adds itself
    # (levelwise: a share of its zCDP budget, docs/privacy.md §24); 0: no supports from it
    support_share: Fraction = Fraction(0)
    # a support threshold instead of a given K (levelwise, docs/privacy.md §25): a fraction of
    # the records (--min-support) or a count (--min-count); K is then chosen privately, at most
    # the run's --top (the cap)
    min_support: Fraction | None = None
    min_count: int | None = None

    @property
    def thresholded(self) -> bool:
        return self.min_support is not None or self.min_count is not None

    def scaled(self, eps: Fraction, delta: Fraction) -> Public:
        """The same parameters with another (eps, delta): one round of a composition."""
        return dataclasses.replace(self, eps=eps, delta=delta)

    def with_universe(self, universe_size: int | None) -> Public:
        return dataclasses.replace(self, universe_size=universe_size)

    @property
    def relation(self) -> Neighbours:
        return Neighbours(self.neighbours)

    @property
    def growth(self) -> int:
        """How many counted itemsets one record can hold: sum of C(B, r) (choosing's k)."""
        if self.max_record_items is None:
            raise ValueError("the growth bound needs max_record_items")
        return sum(math.comb(self.max_record_items, r) for r in self.sizes)


@dataclass(frozen=True)
class Steps:
    """How the result's ledger describes a run: (step, releases, eps, delta) rows and a note.

    Descriptive only: the amount charged is the mechanism's `cost`, never a sum of these rows.
    """

    rows: tuple[tuple[str, str, Fraction, Fraction], ...]
    note: str


def count_at(counts: RankedCounts, k: int) -> int:
    """c(k) (past the last row: 0, or the clip floor); deepens the counts as needed."""
    while len(counts.counts) < k and not counts.complete:
        counts.ensure(max(k, 2 * len(counts.counts)))
    return int(counts.counts[k - 1]) if len(counts.counts) >= k else counts.clipped_at


def count_below(counts: RankedCounts, k: int, bound: int) -> bool:
    """c(k) < bound; counts are >= 0, so a bound <= 0 is decided without reading any."""
    if bound <= 0:
        return False
    return count_at(counts, k) < bound


def steps_ledger(measure: Measure, neighbours: str, steps: Steps) -> dict[str, Any]:
    """The result's ledger of one run: its (eps, delta) from the typed measure, then the rows."""
    eps, delta = approx(measure)
    return {
        "neighbours": neighbours,
        "eps": amount(eps),
        "delta": amount(delta),
        "steps": [
            {"step": step, "releases": rel, "eps": amount(e), "delta": amount(d)}
            for step, rel, e, d in steps.rows
        ],
        "note": steps.note
        + " Each run spends (eps, delta); repeated runs on the same data compose.",
    }


@dataclass(frozen=True)
class Mechanism:
    """One mechanism as the rest of dpfim sees it; each mechanism module exports one.

    neighbours: the relations its guarantee holds under; run(counts, public, rng);
    cost(public) -> its typed measure (dpfim.accounting), what the mechanism really is;
    none_hint(public) -> one sentence; extra(public) -> extra public parameters for the result;
    steps(public) -> how the result's ledger describes the run (or ledger(public) for a ledger
    of its own shape); needs_vocabulary: it refuses the open universe (--universe-items);
    needs_record_bound: it needs --max-record-items; pure: its cost never has a delta;
    releases: result fields besides the itemset ("noisy_max", "ell"); check(public): raises
    ParameterError where its proof does not apply; whole_run: see the field; parameters: the
    parameters of its own it reads from Public (rows of dpfim/parameters.py whose `applies`
    names this mechanism: elsewhere the command line refuses them).
    """

    name: str
    neighbours: frozenset[Neighbours]
    run: Callable[[RankedCounts, Public, RandomSource], Outcome]
    cost: Callable[[Public], Measure]
    none_hint: Callable[[Public], str]
    extra: Callable[[Public], dict[str, Any]] = lambda p: {}
    steps: Callable[[Public], Steps] | None = None
    ledger: Callable[[Public], dict[str, Any]] | None = None
    needs_vocabulary: bool = False
    needs_record_bound: bool = False
    pure: bool = False
    releases: tuple[str, ...] = ()
    check: Callable[[Public], None] | None = None
    parameters: tuple[str, ...] = ()
    # whole_run(counts, public, K, rng) -> ([(sorted item ids, exact support, noisy support or
    # None)], the outcome that ended it early or None, the noisy n or None): a mechanism whose
    # K rounds are one mechanism with a run-level cost (levelwise): the release calls it once
    # with the run's whole (eps, delta) instead of peeling `run` K times, and accountants see
    # one round
    whole_run: Callable[..., tuple[list[tuple[tuple[int, ...], int, Any]], Any, Any]] | None = None

    def charge(self, p: Public) -> Cost:
        """The typed cost of one run under p's neighbouring relation."""
        return Cost.of(self.cost(p), p.relation)

    def spent(self, p: Public) -> tuple[Fraction, Fraction]:
        """The (eps, delta) one run spends under basic composition (pure: delta 0)."""
        total = basic([self.charge(p)])
        return total.eps, total.delta

    def ledger_of(self, p: Public) -> dict[str, Any]:
        """The per-run ledger printed in the result."""
        if self.ledger is not None:
            return self.ledger(p)
        steps = self.steps(p) if self.steps is not None else Steps((), "")
        return steps_ledger(self.cost(p), p.neighbours, steps)
