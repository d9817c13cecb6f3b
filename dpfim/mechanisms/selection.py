"""The restricted exponential mechanism over the top l (SPEC §2 step 3), sampled exactly.

P(I) is proportional to exp(alpha_a * c(I) / 2) over the l candidates of highest count, ties at
the boundary count entering with their multiplicity inside the top l, and the chosen count's
member drawn uniformly from its full tie set. Two exact samplers with the same output
distribution; which one runs affects run time only. Proof: docs/privacy.md, "Selection".
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from dpfim.samplers import interval as iv
from dpfim.samplers.bernoulli import bernoulli_exp_neg
from dpfim.samplers.lazy import LazyUniform
from dpfim.samplers.rng import RandomSource

# Rejection sampling is used while its expected number of rounds stays below this.
MAX_EXPECTED_ROUNDS = 32.0


def groups(counts: np.ndarray, ell: int, rest: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Distinct counts among the top l (descending; `rest` for ranks past the listed ones: 0,
    or the clip floor t of clipped counts) and how many of the l candidates have each. The
    boundary count enters with its multiplicity inside the top l, not its full tie-set size."""
    top = counts[: min(ell, len(counts))]
    values, mult = np.unique(top, return_counts=True)
    values, mult = values[::-1].astype(np.int64), mult[::-1].astype(np.int64)
    if ell > len(top):
        values = np.append(values, rest)
        mult = np.append(mult, ell - len(top))
    return values, mult


def expected_rounds(values: np.ndarray, mult: np.ndarray, alpha_a: Fraction) -> float:
    """l / sum exp(-alpha_a (c(1) - c)/2): the rejection sampler's mean number of rounds."""
    a = float(alpha_a) / 2
    with np.errstate(under="ignore"):
        weight = float(np.sum(mult * np.exp(-a * (values[0] - values).astype(np.float64))))
    return math.inf if weight == 0 else float(mult.sum()) / weight


def select_count(
    counts: np.ndarray, ell: int, alpha_a: Fraction, rng: RandomSource, rest: int = 0
) -> int:
    """The count of the selected candidate (`rest`: a candidate past the listed rows, of count
    0 or, clipped, t; listed rows count more)."""
    values, mult = groups(counts, ell, rest)
    if expected_rounds(values, mult, alpha_a) <= MAX_EXPECTED_ROUNDS:
        return _by_rejection(counts, ell, alpha_a, rng, rest)
    return _by_inversion(values, mult, alpha_a, rng)


def pick_member(counts: np.ndarray, c: int, rng: RandomSource) -> int:
    """A uniformly random position among all known entries with count c (c >= 1)."""
    neg = -counts
    lo = int(np.searchsorted(neg, -c, side="left"))
    hi = int(np.searchsorted(neg, -c, side="right"))
    if hi <= lo:
        raise AssertionError("selection: the chosen count has no known itemset")
    return lo + rng.randbelow(hi - lo)


def _by_rejection(
    counts: np.ndarray, ell: int, alpha_a: Fraction, rng: RandomSource, rest: int = 0
) -> int:
    """Propose a rank uniformly in the top l, accept with exp(-alpha_a (c(1) - c)/2)."""
    c1 = int(counts[0]) if len(counts) else rest
    while True:
        r = rng.randbelow(ell)
        c = int(counts[r]) if r < len(counts) else rest
        if bernoulli_exp_neg(alpha_a * (c1 - c) / 2, rng):
            return c


def _by_inversion(
    values: np.ndarray, mult: np.ndarray, alpha_a: Fraction, rng: RandomSource
) -> int:
    """Pick a group by inversion of its cumulative weight, certified against a lazy uniform."""
    u = LazyUniform(rng)
    while True:
        prec = u.precision()
        cum = []
        total = iv.ZERO
        for c, m in zip(values.tolist(), mult.tolist(), strict=True):
            # exp(alpha_a c / 2): the common factor exp(-alpha_a c(1) / 2) cancels in
            # target / total, and a weight per count is reused by every peeling round
            w = _weight(alpha_a, c, prec)
            total = iv.add(total, iv.mul(iv.exact(m, prec), w, prec), prec)
            cum.append(total)
        target = iv.mul(u.interval(prec), total, prec)
        # The first group whose cumulative weight certainly exceeds the target...
        g = _first_certainly_above(cum, target)
        # ...is the answer if the one before is certainly at most the target.
        if g is not None and (g == 0 or iv.certainly_at_most(cum[g - 1], target)):
            return int(values[g])
        u.refine()


@functools.lru_cache(maxsize=1 << 16)
def _weight(alpha_a: Fraction, c: int, prec: int) -> iv.Interval:
    """exp(alpha_a c / 2) as a certified interval."""
    return iv.exp(iv.exact(alpha_a * c / 2, prec), prec)


def _first_certainly_above(cum: list[iv.Interval], target: iv.Interval) -> int | None:
    lo, hi = 0, len(cum)
    while lo < hi:
        mid = (lo + hi) // 2
        if iv.certainly_less(target, cum[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo if lo < len(cum) else None
