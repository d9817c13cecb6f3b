"""lmm-tight: a large-margin mechanism with its constants derived for add/remove neighbours.

1. Search a geometric grid of ranks l = 1, 2, 4, ..., 2^J (<= ell_max) with one sparse-vector
   pass on the gaps c(1) - c(l+1): a shared offset G ~ DLap(1/eps1), per-rank noise
   nu_l ~ DLap(1/eps2) for l >= 2 and none at l = 1; stop at the first l with
   c(1) - c(l+1) + nu_l - G > T(l). No pass: the answer is none (l = "inf").
2. Select among the top l with a thresholded exponential mechanism: each of the top l with
   weight exp(a c(I)), "none" with weight (l/delta) exp(a (c(l+1) + 1)); a = alpha_a, or
   alpha_a + eps2 at l = 1 (whose search spends no eps2). Open universe: a zero-count pick is none
   (named only with a declared vocabulary).

Privacy
-------
Neighbours: add/remove-one record ONLY (every count, hence every order statistic, then moves by 0
or +1, or by 0 or -1; both steps use that direction). Sensitivity 1 for c(1) and every c(l+1).
Cost: (eps, delta)-DP for the release (l, I), eps = eps1 + eps2 + alpha_a. The search is pure
DP (eps1 for l = 1 and for "none", eps1 + eps2 for l >= 2) whatever its thresholds; the selection
is (a, delta)-DP for every fixed l: an itemset that leaves the top l between neighbours has count
<= c(l+1) + 1, so its probability is <= delta/l against the weight of "none". Every output that
reaches the selection spends eps; delta is the selection's alone. The thresholds T(l) are
data-independent and affect only utility. Preconditions: counts exact; exact discrete noise
from the injected RandomSource; exact (certified) sampling of the selection; n never released.
Proof: docs/privacy.md, section 18 "lmm-tight"; design: docs/lmm-tight-design.md.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from dpfim.accounting import ApproxDP
from dpfim.mechanisms.base import (
    ADD_REMOVE,
    Mechanism,
    Outcome,
    Public,
    RankedCounts,
    Steps,
    count_at,
    count_below,
)
from dpfim.mechanisms.baselines import round_up, run_limited_domain
from dpfim.mechanisms.selection import pick_member, select_count
from dpfim.params import DEFAULT_ELL_MAX, log_fraction
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.rng import RandomSource

NAME = "lmm-tight"
NEIGHBOURS = ("add-remove",)  # the relation of MECHANISM (base.ADD_REMOVE)

# The data-independent parameters (docs/lmm-tight-design.md, "Retuning on exact P(top)"; chosen
# with benchmarks/tight_exact.py). Utility only: the guarantee holds for every split
# eps1 + eps2 + alpha = eps chosen from the public (eps, delta) and every data-independent T_j
# (docs/privacy.md §18.3, §18.5). The search's shares shrink linearly below a knee: at small eps
# the selection needs almost all of eps (near-ties in units of 1/eps), at eps >= 1 the search can
# afford precise noise. The selection gets the rest.
EPS1_SHARE = (
    Fraction(3, 20),
    Fraction(1, 4),
)  # offset G ~ DLap(1/eps1): eps1 = min(3/20, eps/4) eps
EPS2_SHARE = (
    Fraction(1, 10),
    Fraction(1, 10),
)  # nu_l ~ DLap(1/eps2), l >= 2: min(1/10, eps/10) eps
# T_j: the gap at which "none" weighs at most 1/ODDS of the top itemset in the selection, plus
# kappa_j times the search's noise scale, so that a pass rarely comes at a rank where the
# selection would then say none. kappa_j = KAPPA[min(j, len(KAPPA) - 1)]: 5 at rank 1 (the
# margin target), then 8 at rank 2 falling by one a rank to 0 from rank 2^9 on: shallow ranks
# hold the near-ties of real data, deep ranks the large gaps (utility only).
ODDS = 9
KAPPA: tuple[int, ...] = (5, 8, 7, 6, 5, 4, 3, 2, 1, 0)


def share(rule: tuple[Fraction, Fraction], eps: Fraction) -> Fraction:
    """min(cap, slope * eps) for rule = (cap, slope): a share of eps from the public eps only."""
    cap, slope = rule
    return min(cap, slope * eps)


@dataclass(frozen=True)
class TightShares:
    """One round's eps shared among lmm-tight's steps: eps = eps1 + eps2 + alpha_a (exact
    rationals); delta: the selection's leak. (A run's division among rounds: accounting.Split.)"""

    eps1: Fraction
    eps2: Fraction
    alpha_a: Fraction
    delta: Fraction

    def __post_init__(self) -> None:
        if min(self.eps1, self.eps2, self.alpha_a) <= 0 or not 0 < self.delta < 1:
            raise ValueError("lmm-tight split: every eps share must be > 0, delta in (0, 1)")

    @property
    def eps(self) -> Fraction:
        return self.eps1 + self.eps2 + self.alpha_a

    def alpha_at(self, j: int) -> Fraction:
        """The selection's eps at l = 2^j: l = 1 also gets eps2, which its search does not use."""
        return self.alpha_a + self.eps2 if j == 0 else self.alpha_a


def make_split(
    eps: Fraction,
    delta: Fraction,
    eps1_share: Fraction | None = None,
    eps2_share: Fraction | None = None,
) -> TightShares:
    """eps1 = eps1_share * eps, eps2 = eps2_share * eps (default: the rules EPS1_SHARE and
    EPS2_SHARE at this eps), alpha = the rest."""
    x1 = share(EPS1_SHARE, eps) if eps1_share is None else eps1_share
    x2 = share(EPS2_SHARE, eps) if eps2_share is None else eps2_share
    return TightShares(x1 * eps, x2 * eps, (1 - x1 - x2) * eps, delta)


def default_split(eps: Fraction, delta: Fraction) -> TightShares:
    return make_split(eps, delta)


def grid(last_rank: int) -> list[int]:
    """The tested ranks 1, 2, 4, ..., 2^J <= last_rank (at most 63 of them)."""
    return [1 << j for j in range(last_rank.bit_length())] if last_rank >= 1 else []


def kappa_at(j: int, kappa: tuple[int, ...] = KAPPA) -> int:
    """kappa_j: the last entry repeats."""
    return kappa[min(j, len(kappa) - 1)]


@functools.lru_cache(maxsize=4096)
def threshold(j: int, split: TightShares, kappa: tuple[int, ...] = KAPPA) -> int:
    """T_j = ceil(1 + (ln(2^j / delta) + ln ODDS) / a_j + kappa_j s_j), a_j = split.alpha_at(j),
    s_0 = 1/eps1 and s_j = 1/eps1 + 1/eps2 (the search noise scales at rank 2^j),
    kappa_j = kappa_at(j, kappa).

    At c(1) - c(l+1) = T_j the selection's "none" weight is below 1/ODDS of the top itemset's
    (the kappa term only adds to the gap). Utility only: the privacy proof holds for every
    data-independent integer T_j (docs/privacy.md §18.3)."""
    a = float(split.alpha_at(j))
    scale = float(1 / split.eps1) + (0.0 if j == 0 else float(1 / split.eps2))
    none_gap = 1 + (j * math.log(2) - log_fraction(split.delta) + math.log(ODDS)) / a
    return round_up(none_gap + kappa_at(j, kappa) * scale)


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
    split: TightShares,
    rng: RandomSource,
    *,
    ell_max: int = DEFAULT_ELL_MAX,
    universe_size: int | None = None,
    kappa: tuple[int, ...] = KAPPA,
) -> Outcome:
    """Search the grid, then select. Outcome.ell: the rank found, or None for "inf".

    universe_size K: a declared finite universe (the grid stops below K; no pass -> l = K and
    the exponential mechanism exp(alpha_a c) over all K itemsets). A zero-count pick is reported
    as zero_pick only then; in the open universe it is the answer none. kappa: see threshold
    (utility only; the audit lowers it to put more mass on edge events).
    """
    declared = universe_size is not None
    counts.ensure(2)
    c1 = count_at(counts, 1)
    offset = discrete_laplace(1 / split.eps1, rng)
    last = ell_max if universe_size is None else min(ell_max, universe_size - 1)
    for j, rank in enumerate(grid(last)):
        nu = 0 if j == 0 else discrete_laplace(1 / split.eps2, rng)
        # pass iff c(1) - c(rank+1) + nu - G > T_j  iff  c(rank+1) < c(1) + nu - G - T_j
        if count_below(counts, rank + 1, c1 + nu - offset - threshold(j, split, kappa)):
            out = run_limited_domain(counts, split.alpha_at(j), split.delta, rank, rng)
            return Outcome(None, rank, out.index, zero_pick=out.zero_pick and declared)
    if universe_size is None:
        return Outcome(None, None, None)
    counts.ensure(universe_size + 1)
    rest = counts.clipped_at
    c = select_count(counts.counts, universe_size, 2 * split.alpha_a, rng, rest)  # exp(alpha_a c)
    if c == rest:
        return Outcome(None, universe_size, None, zero_pick=True)
    return Outcome(None, universe_size, pick_member(counts.counts, c, rng))


# --- registry facts -----------------------------------------------------------------------------


def cost(eps: Fraction, delta: Fraction) -> ApproxDP:
    """The run-level pair: one generic (eps, delta) cost (never its per-step rows)."""
    return ApproxDP(eps, delta)


def steps(eps: Fraction, delta: Fraction) -> Steps:
    sp = default_split(eps, delta)
    return Steps(
        (
            (
                "sparse vector on the gaps c(1) - c(l+1), l = 1, 2, 4, ...: offset "
                f"DLap({1 / sp.eps1}), per-rank DLap({1 / sp.eps2}) (none at l = 1)",
                "ell",
                sp.eps1 + sp.eps2,
                Fraction(0),
            ),
            (
                f"exponential mechanism exp(a c) over the top l and none with weight "
                f"(l/delta) exp(a (c(l+1) + 1)); a = {sp.alpha_a} ({sp.alpha_a + sp.eps2} at "
                "l = 1)",
                "itemset",
                sp.alpha_a,
                delta,
            ),
        ),
        "(eps, delta)-DP for (ell, itemset) under add/remove neighbours. The search is pure DP "
        "(at l = 1 it spends only the offset's share, and the selection gets the per-rank "
        "share); delta is what the selection may leak about the top-l set.",
    )


def none_hint(eps: Fraction, delta: Fraction, size: int) -> str:
    """Computed from public parameters only."""
    sp = default_split(eps, delta)
    t1, t16 = threshold(0, sp), threshold(4, sp)
    return (
        f"no {size}-itemset was found (answer: none). At eps={float(eps):g}, "
        f"delta={float(delta):g} lmm-tight answers when the top support leads the runner-up's "
        f"by more than about {t1} records, or the 17th by about {t16} (plus noise); a larger "
        "--eps or --delta lowers these margins."
    )


def split_params(split: TightShares) -> dict[str, str]:
    """The split as exact rationals, for the result's params."""
    return {
        "eps1_offset": str(split.eps1),
        "eps2_rank_noise": str(split.eps2),
        "alpha_a_selection": str(split.alpha_a),
        "alpha_a_selection_at_l1": str(split.alpha_at(0)),
        "delta_selection": str(split.delta),
    }


def _hint(p: Public) -> str:
    sp = default_split(p.eps, p.delta)
    return (
        f"lmm-tight answers when the top support leads the runner-up's by more than about "
        f"{threshold(0, sp)} records, or the 17th by about {threshold(4, sp)} (plus noise)"
    )


MECHANISM = Mechanism(
    NAME,
    ADD_REMOVE,
    lambda c, p, rng: run(c, p.eps, p.delta, rng, ell_max=p.ell_max, universe_size=p.universe_size),
    lambda p: cost(p.eps, p.delta),
    _hint,
    extra=lambda p: {"ell_max": p.ell_max, "split": split_params(default_split(p.eps, p.delta))},
    steps=lambda p: steps(p.eps, p.delta),
    releases=("ell",),
    parameters=("ell_max",),
)
