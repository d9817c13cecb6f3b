"""lmm-tight: the large-margin mechanism with constants derived for add/remove neighbours.

Search a geometric grid of ranks l = 1, 2, 4, ..., 2^J (<= ell_max) with one sparse-vector pass
on the gap queries c(1) - c(l+1): a shared offset G ~ DLap(1/eps1), per-rank noise
nu_l ~ DLap(1/eps2) for l >= 2 and none at l = 1; stop at the first l with
c(1) - c(l+1) + nu_l - G > T(l). Then pick among the top l with the monotone exponential
mechanism P(I) ~ exp(alpha_a c(I)) (at l = 1: the top itemset). Open universe: no pass -> "none";
a zero-count pick -> "none" (named only with a declared vocabulary).

Privacy
-------
Neighbours: add/remove-one record ONLY (every order statistic then moves by 0 or +1, or by 0 or
-1; the proof uses that direction). Sensitivity 1 for c(1) and for every c(l+1).
Cost: (eps, delta)-DP for the release (l, I): the output l = 1 costs eps1 (no selection budget is
needed: a certified gap >= 2 fixes the top itemset on both neighbours), l >= 2 costs
eps1 + eps2 + alpha_a = eps, "none" eps1; delta = sum_j delta_j (certification failure, a union
bound over the grid with the exact tail of nu_l - G) + beta (the selection's leak).
Preconditions: counts exact; noise exact discrete Laplace from the injected RandomSource;
thresholds certified with interval arithmetic (integer comparisons only); n never released.
Proof: docs/privacy.md, section 18 "lmm-tight"; design: docs/lmm-tight-design.md.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from dpfim.mechanisms.base import Outcome, RankedCounts
from dpfim.mechanisms.baselines import Cost, round_up
from dpfim.mechanisms.selection import pick_member, select_count
from dpfim.params import DEFAULT_ELL_MAX, log_fraction
from dpfim.samplers import interval as iv
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.rng import RandomSource

NAME = "lmm-tight"
NEIGHBOURS = ("add-remove",)

# The data-independent split (docs/lmm-tight-design.md: optimised numerically at eps = 1,
# delta = 1e-6 by benchmarks/tight_margins.py, rounded to simple rationals).
EPS1_SHARE = Fraction(1, 2)  # offset G ~ DLap(1/eps1); the whole cost of the output l = 1
EPS2_SHARE = Fraction(1, 4)  # per-rank noise nu_l ~ DLap(1/eps2), l >= 2
DELTA0_SHARE = Fraction(1, 4)  # certification failure at l = 1
GRID_DELTA_SHARE = Fraction(1, 2)  # certification failure at l = 2, 4, ..., weights 1/(j(j+1))

_PREC = 256


@dataclass(frozen=True)
class TightSplit:
    """eps = eps1 + eps2 + alpha_a; delta = delta0 + delta_grid + beta (all exact rationals).

    delta0: failure at l = 1; delta_grid * 1/(j(j+1)): failure at l = 2^j (j >= 1);
    beta: what the selection may leak at l >= 2.
    """

    eps1: Fraction
    eps2: Fraction
    alpha_a: Fraction
    delta0: Fraction
    delta_grid: Fraction
    beta: Fraction

    def __post_init__(self) -> None:
        parts = (self.eps1, self.eps2, self.alpha_a, self.delta0, self.delta_grid, self.beta)
        if min(parts) <= 0:
            raise ValueError("lmm-tight split: every share must be > 0")
        if self.delta >= Fraction(1, 2):
            raise ValueError("lmm-tight split: delta must be < 1/2")

    @property
    def eps(self) -> Fraction:
        return self.eps1 + self.eps2 + self.alpha_a

    @property
    def delta(self) -> Fraction:
        return self.delta0 + self.delta_grid + self.beta

    def delta_at(self, j: int) -> Fraction:
        """The certification-failure budget of grid rank 2^j."""
        return self.delta0 if j == 0 else self.delta_grid / (j * (j + 1))


def make_split(
    eps: Fraction,
    delta: Fraction,
    eps1_share: Fraction = EPS1_SHARE,
    eps2_share: Fraction = EPS2_SHARE,
    delta0_share: Fraction = DELTA0_SHARE,
    grid_share: Fraction = GRID_DELTA_SHARE,
) -> TightSplit:
    """A split with the given shares of eps and delta (the rest goes to the selection)."""
    return TightSplit(
        eps1_share * eps,
        eps2_share * eps,
        (1 - eps1_share - eps2_share) * eps,
        delta0_share * delta,
        grid_share * delta,
        (1 - delta0_share - grid_share) * delta,
    )


def default_split(eps: Fraction, delta: Fraction) -> TightSplit:
    return make_split(eps, delta)


def grid(last_rank: int) -> list[int]:
    """The tested ranks 1, 2, 4, ..., up to last_rank (at most 63 of them)."""
    return [1 << j for j in range(max(last_rank, 0).bit_length())] if last_rank >= 1 else []


# --- thresholds ---------------------------------------------------------------------------------


def _q(rate: Fraction, prec: int) -> iv.Interval:
    """q = exp(-rate): DLap(1/rate) has P(X = x) proportional to q^|x|."""
    return iv.exp(iv.exact(-rate, prec), prec)


def _pow(x: iv.Interval, k: int, prec: int) -> iv.Interval:
    return iv.exp(iv.mul(iv.exact(k, prec), iv.log(x, prec), prec), prec)


def tail_offset(eps1: Fraction, s: int, prec: int = _PREC) -> iv.Interval:
    """P(-G >= s) = q^s/(1 + q) for G ~ DLap(1/eps1) and an integer s >= 1 (certified)."""
    if s < 1:
        raise ValueError("s must be >= 1")
    q = _q(eps1, prec)
    return iv.div(_pow(q, s, prec), iv.add(iv.exact(1, prec), q, prec), prec)


def tail_difference(eps1: Fraction, eps2: Fraction, s: int, prec: int = _PREC) -> iv.Interval:
    """P(nu - G >= s) for independent G ~ DLap(1/eps1), nu ~ DLap(1/eps2), integer s >= 1.

    With A = -G (parameter a = e^-eps1), B = nu (b = e^-eps2), k_a = (1-a)/(1+a):
    sum over A <= s-1 of P(A) P(B >= s-A) + sum over A >= s of P(A) P(B >= s-A)
      = k_a/(1+b) (b^s ab/(1-ab) + b(b^s - a^s)/(b - a))  +  a^s/(1+a) (1 - ab^2)/((1+b)(1-ab))
    (docs/privacy.md §18.3; b(b^s - a^s)/(b - a) is s b^s when a = b).
    """
    if s < 1:
        raise ValueError("s must be >= 1")
    p = prec
    one = iv.exact(1, p)
    a, b = _q(eps1, p), _q(eps2, p)
    a_s, b_s = _pow(a, s, p), _pow(b, s, p)
    ab = iv.mul(a, b, p)
    one_ab = iv.sub(one, ab, p)
    one_a, one_b = iv.add(one, a, p), iv.add(one, b, p)
    k_a = iv.div(iv.sub(one, a, p), one_a, p)
    if eps1 == eps2:
        geo = iv.mul(iv.exact(s, p), b_s, p)
    else:
        geo = iv.div(iv.mul(b, iv.sub(b_s, a_s, p), p), iv.sub(b, a, p), p)
    below = iv.mul(
        iv.div(k_a, one_b, p), iv.add(iv.div(iv.mul(b_s, ab, p), one_ab, p), geo, p), p
    )
    above = iv.mul(
        iv.div(a_s, one_a, p),
        iv.div(iv.sub(one, iv.mul(ab, b, p), p), iv.mul(one_b, one_ab, p), p),
        p,
    )
    return iv.add(below, above, p)


def _smallest_s(tail: functools.partial[iv.Interval], budget: Fraction) -> int:
    """The smallest integer s >= 1 whose certified tail is <= budget (tail decreasing in s).

    Only an s whose upper bound is certainly <= budget is ever returned, so the result is valid
    even if a comparison were undecided (that would only make s larger)."""
    limit = iv.exact(budget, _PREC)

    def ok(s: int) -> bool:
        return iv.certainly_at_most(tail(s=s), limit)

    hi = 1
    while not ok(hi):
        hi *= 2
    lo = hi // 2  # ok(lo) is False, or lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mid >= 1 and ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


@functools.lru_cache(maxsize=4096)
def noise_bound(j: int, split: TightSplit) -> int:
    """s_j: P(nu_j - G >= s_j) <= delta_j (nu_0 = 0), certified."""
    if j == 0:
        return _smallest_s(functools.partial(tail_offset, split.eps1), split.delta0)
    return _smallest_s(
        functools.partial(tail_difference, split.eps1, split.eps2), split.delta_at(j)
    )


@functools.lru_cache(maxsize=4096)
def margin(j: int, split: TightSplit) -> int:
    """gamma_j: the integer margin c(1) - c(l+1) the selection at l = 2^j needs.

    l = 1: 2 (then the top itemset is unique and the same on every neighbour). l >= 2: the least
    integer gamma >= 2 with (l - 1) exp(-alpha_a (gamma - 1)) <= beta (certified)."""
    if j == 0:
        return 2
    ell = 1 << j
    est = 1 + (math.log(ell - 1) - log_fraction(split.beta)) / float(split.alpha_a)
    g = max(2, round_up(est))
    p = _PREC
    beta = iv.exact(split.beta, p)
    while True:
        leak = iv.mul(iv.exact(ell - 1, p), iv.exp(iv.exact(-split.alpha_a * (g - 1), p), p), p)
        if iv.certainly_at_most(leak, beta):
            return g
        g += 1


def threshold(j: int, split: TightSplit) -> int:
    """T_j = s_j + gamma_j - 2: a pass at l = 2^j, c(1) - c(l+1) + nu_l - G > T_j, certifies
    c(1) - c(l+1) >= gamma_j except with probability delta_j."""
    return noise_bound(j, split) + margin(j, split) - 2


# --- the mechanism ------------------------------------------------------------------------------


def run(
    counts: RankedCounts,
    eps: Fraction,
    delta: Fraction,
    rng: RandomSource,
    *,
    ell_max: int = DEFAULT_ELL_MAX,
    universe_size: int | None = None,
) -> Outcome:
    """lmm-tight on ranked counts with the default split (see run_split)."""
    return run_split(
        counts, default_split(eps, delta), rng, ell_max=ell_max, universe_size=universe_size
    )


def run_split(
    counts: RankedCounts,
    split: TightSplit,
    rng: RandomSource,
    *,
    ell_max: int = DEFAULT_ELL_MAX,
    universe_size: int | None = None,
) -> Outcome:
    """Search the grid, then select. Outcome.ell: the certified rank, or None for "inf".

    universe_size K: a declared finite universe (the grid stops below K; no pass -> l = K and
    the exponential mechanism over all K). A zero-count pick is reported (zero_pick) only then;
    in the open universe it is the answer none.
    """
    counts.ensure(2)
    c1 = _count(counts, 1)
    offset = discrete_laplace(1 / split.eps1, rng)
    last = ell_max if universe_size is None else min(ell_max, universe_size - 1)
    ell = None
    for j, rank in enumerate(grid(last)):
        nu = 0 if j == 0 else discrete_laplace(1 / split.eps2, rng)
        # pass iff c(1) - c(rank+1) + nu - G > T_j  iff  c(rank+1) < c(1) + nu - G - T_j
        if _count_below(counts, rank + 1, c1 + nu - offset - threshold(j, split)):
            ell = rank
            break
    if ell is None:
        if universe_size is None:
            return Outcome(None, None, None)
        ell = universe_size
    counts.ensure(ell + 1)
    c = select_count(counts.counts, ell, 2 * split.alpha_a, rng)  # weights exp(alpha_a c)
    if c == 0:
        return Outcome(None, ell, None, zero_pick=universe_size is not None)
    return Outcome(None, ell, pick_member(counts.counts, c, rng))


def _count(counts: RankedCounts, k: int) -> int:
    """c(k) (0 past the last nonzero count); deepens the counts as needed."""
    while len(counts.counts) < k and not counts.complete:
        counts.ensure(max(k, 2 * len(counts.counts)))
    return int(counts.counts[k - 1]) if len(counts.counts) >= k else 0


def _count_below(counts: RankedCounts, k: int, bound: int) -> bool:
    """c(k) < bound; counts are >= 0, so a bound <= 0 is decided without reading any."""
    if bound <= 0:
        return False
    return _count(counts, k) < bound


# --- registry facts -----------------------------------------------------------------------------


def cost(eps: Fraction, delta: Fraction) -> Cost:
    sp = default_split(eps, delta)
    return Cost(
        eps,
        delta,
        (
            (
                f"sparse vector on the gaps c(1) - c(l+1), l = 1, 2, 4, ...: offset DLap({1 / sp.eps1}),"
                f" per-rank DLap({1 / sp.eps2}) (none at l = 1)",
                "ell",
                sp.eps1 + sp.eps2,
                sp.delta0 + sp.delta_grid,
            ),
            (
                f"exponential mechanism exp({sp.alpha_a} c) over the top l (l = 1: the top)",
                "itemset",
                sp.alpha_a,
                sp.beta,
            ),
        ),
        "(eps, delta)-DP for (ell, itemset) under add/remove neighbours. The search's delta is "
        "the chance of certifying a margin that does not hold; the selection leaks at most beta "
        "when it holds. Output l = 1 spends only the offset's share.",
    )


def none_hint(eps: Fraction, delta: Fraction, size: int) -> str:
    """Computed from public parameters only."""
    t1 = threshold(0, default_split(eps, delta))
    return (
        f"no {size}-itemset was certified (answer: none). At eps={float(eps):g}, "
        f"delta={float(delta):g} lmm-tight certifies a winner when its support leads the "
        f"runner-up's by more than about {t1} records (plus noise), or a deeper rank "
        "l = 2, 4, 8, ... by a larger margin; a larger --eps or --delta lowers it."
    )


def split_params(split: TightSplit) -> dict[str, str]:
    """The split as exact rationals, for the result's params."""
    return {
        "eps1_offset": str(split.eps1),
        "eps2_rank_noise": str(split.eps2),
        "alpha_a_selection": str(split.alpha_a),
        "delta0_rank1": str(split.delta0),
        "delta_grid": str(split.delta_grid),
        "beta_selection": str(split.beta),
    }
