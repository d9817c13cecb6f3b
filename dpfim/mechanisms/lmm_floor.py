"""lmm-floor: lmm-tight's search and selection, limited-domain's answer when no rank passes.

1. Search the ranks l_1 < l_2 < ... (the powers of two above the default rank l_d = --candidates,
   at most 4096, below a declared universe's size and at most ell_max), shallowest first, with one
   sparse-vector pass on the gaps F_j = c(1) - c(l_j + 1): a shared ONE-SIDED offset
   G ~ Geometric(1/eps1) on {0, 1, ...}, per-rank noise nu_j ~ DLap(1/eps2); stop at the first j
   with F_j + nu_j - G > T_j.
2. Select with the thresholded exponential mechanism (limited-domain with k-bar = l): each of the
   top l with weight exp(a c(I)), "none" with weight (l/delta) exp(a (c(l+1) + 1)). After a pass
   at l_j: l = l_j, a = alpha = eps - eps1 - eps2. No pass: l = l_d and a = eps - eps1 (the
   search spent only the offset's share). Open universe: a zero-count pick is none.

So where no deeper rank shows a large gap the answer is limited-domain's at k-bar = l_d with
eps - eps1 (a few percent less than limited-domain's eps), and where one does (a tied top wider
than l_d, a wall of ties) the selection moves past it, as lmm-tight's does.

Privacy
-------
Neighbours: the steps above are proved under add/remove-one (every count, hence every order
statistic, moves by 0 or +1, or by 0 or -1). Under replace-one they run at (eps/2, delta') with
delta' (1 + e^(eps/2)) <= delta, which is (eps, delta)-DP under replace by group privacy (a
replacement is a removal and an addition: docs/privacy.md §22.8).
Cost: (eps, delta)-DP for the release (l, I), with eps = eps1 + eps2 + alpha.
The search is pure DP: eps1 for "no pass" (the offset alone), eps1 + eps2 for a pass at l_j,
whatever the thresholds (docs/privacy.md §22, Lemma S'; the offset only ever needs shifting up by
0 or 1 between neighbours, so a one-sided law with P(g) <= e^eps1 P(g + 1) suffices); the
selection is (a, delta)-DP for every fixed l (§18.4, Lemma T); every output spends
eps1 + eps2 + alpha = eps1 + (eps - eps1) = eps, and delta is the selection's alone (§22.5).
The split, the ranks and the thresholds are functions of the public parameters only
(eps, delta, ell_max, candidates, a declared universe size).
Preconditions: counts exact; exact discrete noise from the injected RandomSource; exact
(certified) sampling of the selection; n never read (the result states it under replace
only, where it is public).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from dpfim.accounting import ApproxDP, Neighbours, decimal_down
from dpfim.errors import ParameterError
from dpfim.mechanisms.base import (
    BOTH,
    Mechanism,
    Outcome,
    Public,
    RankedCounts,
    Steps,
    count_at,
    count_below,
)
from dpfim.mechanisms.baselines import round_up, run_limited_domain
from dpfim.params import DEFAULT_ELL_MAX, log_fraction
from dpfim.samplers import interval as iv
from dpfim.samplers.laplace import discrete_laplace, geometric
from dpfim.samplers.rng import RandomSource

NAME = "lmm-floor"
DEFAULT_RANK = 10  # l_d when --candidates is not given (limited-domain's k-bar)

# The data-independent parameters (utility only: docs/privacy.md §22 holds for every split
# eps1 + eps2 + alpha = eps with eps1, eps2, alpha > 0 and every data-independent T_j, chosen from
# the public parameters). Chosen on exact P(top) of the grid of benchmarks/select_grid.py and of
# the shared data (docs/evaluation.md, "lmm-floor (issue 24)").
# eps1 = min(eps/50, 1/100): the offset's scale is 100 records from eps = 1/2 on. A pass needs
# c(1) - c(l+1) above T_j + G, so a tie or wall of width l is passed with probability about
# 1 - e^(-eps1 (gap - T_j)): that wants eps1 large in records; the answer where nothing passes
# (limited-domain at l_d with eps - eps1) loses about 4 eps1/eps in P(top) at its steepest: that
# wants eps1 small relative to eps (docs/evaluation.md, "lmm-floor (issue 24)": the trade-off).
EPS1_CAP = Fraction(1, 100)
EPS1_SHARE = Fraction(1, 50)
EPS2_SHARE = Fraction(1, 50)  # nu_j ~ DLap(1/eps2): eps2 = eps/50
# T_j = ceil(1 + (ln(l_j/delta) + ln ODDS)/alpha + kappa/eps2): at F_j = T_j the selection's
# "none" weighs at most 1/ODDS of the top itemset's; the kappa/eps2 term keeps a pass by nu's tail
# alone below e^(-kappa)/2 a rank (G >= 0 never helps a pass), at every eps.
ODDS = 9
KAPPA = Fraction(11, 2)
# The deepest tested rank (a power of two): deeper ranks would only add ln(l) to the "none" margin
# and make the engine count more itemsets.
TOP_RANK = 1 << 12


@dataclass(frozen=True)
class FloorShares:
    """One round's eps shared among lmm-floor's steps: eps = eps1 + eps2 + alpha (exact
    rationals); delta: the selection's leak. (A run's division among rounds: accounting.Split.)"""

    eps1: Fraction
    eps2: Fraction
    alpha: Fraction
    delta: Fraction

    def __post_init__(self) -> None:
        if min(self.eps1, self.eps2, self.alpha) <= 0 or not 0 < self.delta < 1:
            raise ValueError("lmm-floor split: every eps share must be > 0, delta in (0, 1)")

    @property
    def eps(self) -> Fraction:
        return self.eps1 + self.eps2 + self.alpha

    @property
    def alpha_default(self) -> Fraction:
        """The selection's eps at the default rank: eps - eps1 = alpha + eps2."""
        return self.alpha + self.eps2

    @property
    def kappa(self) -> Fraction:
        """kappa = KAPPA (utility only; a property so that a rule in eps can replace it)."""
        return KAPPA


def make_split(
    eps: Fraction,
    delta: Fraction,
    eps1: Fraction | None = None,
    eps2: Fraction | None = None,
) -> FloorShares:
    """eps1 = min(eps/50, 1/100), eps2 = eps/50 (or as given), alpha = the rest."""
    e1 = min(EPS1_SHARE * eps, EPS1_CAP) if eps1 is None else eps1
    e2 = EPS2_SHARE * eps if eps2 is None else eps2
    return FloorShares(e1, e2, eps - e1 - e2, delta)


def ranks(default_rank: int, last_rank: int) -> list[int]:
    """The tested ranks in the order tested: the powers of two above default_rank and at most
    min(last_rank, TOP_RANK), shallowest first (at most 12 of them)."""
    last = min(last_rank, TOP_RANK)
    return [1 << j for j in range(last.bit_length()) if (1 << j) > default_rank]


@functools.lru_cache(maxsize=4096)
def threshold(rank: int, split: FloorShares, kappa: Fraction | None = None) -> int:
    """T(l) = ceil(1 + (ln(l/delta) + ln ODDS)/alpha + kappa/eps2), kappa = split.kappa unless
    given, rounded up with the margin of docs/privacy.md §4. Utility only (§22.1)."""
    k = split.kappa if kappa is None else kappa
    a = float(split.alpha)
    none_gap = 1 + (math.log(rank) - log_fraction(split.delta) + math.log(ODDS)) / a
    return round_up(none_gap + float(k / split.eps2))


# --- the mechanism ------------------------------------------------------------------------------


def run(
    counts: RankedCounts,
    eps: Fraction,
    delta: Fraction,
    rng: RandomSource,
    *,
    default_rank: int = DEFAULT_RANK,
    ell_max: int = DEFAULT_ELL_MAX,
    universe_size: int | None = None,
) -> Outcome:
    """lmm-floor on ranked counts with the default split (see run_split)."""
    return run_split(
        counts,
        make_split(eps, delta),
        rng,
        default_rank=default_rank,
        ell_max=ell_max,
        universe_size=universe_size,
    )


def run_split(
    counts: RankedCounts,
    split: FloorShares,
    rng: RandomSource,
    *,
    default_rank: int = DEFAULT_RANK,
    ell_max: int = DEFAULT_ELL_MAX,
    universe_size: int | None = None,
    kappa: Fraction | None = None,
) -> Outcome:
    """Search the ranks above default_rank, then select. Outcome.ell: the selection's rank.

    universe_size K: a declared finite universe (tested ranks stay below K, the default rank is
    min(default_rank, K)); a zero-count pick is reported as zero_pick only then, and is the
    answer none in the open universe. kappa: see threshold (utility only).
    """
    declared = universe_size is not None
    home = default_rank if universe_size is None else min(default_rank, universe_size)
    last = ell_max if universe_size is None else min(ell_max, universe_size - 1)
    counts.ensure(2)
    c1 = count_at(counts, 1)
    offset = geometric(1 / split.eps1, rng)  # one-sided: G >= 0
    rank, a = home, split.alpha_default
    for tested in ranks(home, last):
        nu = discrete_laplace(1 / split.eps2, rng)
        # pass iff c(1) - c(l+1) + nu - G > T(l)  iff  c(l+1) < c(1) + nu - G - T(l)
        if count_below(counts, tested + 1, c1 + nu - offset - threshold(tested, split, kappa)):
            rank, a = tested, split.alpha
            break
    out = run_limited_domain(counts, a, split.delta, rank, rng)
    return Outcome(None, rank, out.index, zero_pick=out.zero_pick and declared)


# --- registry facts -----------------------------------------------------------------------------


GROUP_PREC = 96  # bits of the certified e^(eps/2) (only how tightly delta' is rounded down)


def exp_upper(x: Fraction) -> Fraction:
    """A rational >= e^x: the upper end of a certified interval."""
    _, man, exp, _ = iv.exp(iv.exact(x, GROUP_PREC), GROUP_PREC)[1]
    return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)


def add_remove_pair(eps: Fraction, delta: Fraction) -> tuple[Fraction, Fraction]:
    """The add/remove (eps', delta') whose guarantee is (eps, delta) under replace-one by group
    privacy (§22.8): eps' = eps/2 and delta' = delta / (1 + e^(eps/2)), rounded down to six
    significant digits (so delta' (1 + e^eps') <= delta)."""
    half = eps / 2
    return half, decimal_down(delta / (1 + exp_upper(half)))


def inner(p: Public) -> Public:
    """The add/remove parameters the steps run at: p itself under add/remove, the group-privacy
    pair under replace."""
    if p.relation is Neighbours.REPLACE:
        return p.scaled(*add_remove_pair(p.eps, p.delta))
    return p


def cost(eps: Fraction, delta: Fraction) -> ApproxDP:
    """The run-level pair: one generic (eps, delta) cost (never its per-step rows)."""
    return ApproxDP(eps, delta)


def check(p: Public) -> None:
    """The default rank is a public count of candidates >= 1 (limited-domain's k-bar)."""
    if p.candidates < 1:
        raise ParameterError("--mechanism lmm-floor needs --candidates >= 1")


def steps(eps: Fraction, delta: Fraction, default_rank: int) -> Steps:
    sp = make_split(eps, delta)
    return Steps(
        (
            (
                f"sparse vector on the gaps c(1) - c(l+1), l = the powers of two above "
                f"{default_rank} up to {TOP_RANK}: offset Geometric({1 / sp.eps1}) >= 0, "
                f"per-rank DLap({1 / sp.eps2})",
                "ell",
                sp.eps1 + sp.eps2,
                Fraction(0),
            ),
            (
                f"limited-domain over the top l: weights exp(a c) and none (l/delta) "
                f"exp(a (c(l+1) + 1)); a = {sp.alpha} after a pass, {sp.alpha_default} at "
                f"l = {default_rank} when no rank passes",
                "itemset",
                sp.alpha,
                delta,
            ),
        ),
        "(eps, delta)-DP for (ell, itemset) under add/remove neighbours. When no rank passes "
        "the search has spent only the offset's share, and the selection at the default rank "
        "gets the per-rank share as well; delta is what the selection may leak about the top-l "
        "set.",
    )


def _steps(p: Public) -> Steps:
    q = inner(p)
    rows = steps(q.eps, q.delta, p.candidates)
    if q is p:
        return rows
    return Steps(
        rows.rows,
        rows.note + f" Under replace-one neighbours the steps run at eps' = {q.eps}, delta' = "
        f"{q.delta} (add/remove); a replacement is a removal and an addition, so the run is "
        f"(2 eps', (1 + e^eps') delta') <= ({p.eps}, {p.delta})-DP under replace by group "
        "privacy (docs/privacy.md §22.8).",
    )


def _extra(p: Public) -> dict[str, object]:
    q = inner(p)
    out: dict[str, object] = {
        "ell_max": p.ell_max,
        "default_rank": p.candidates,
        "split": split_params(make_split(q.eps, q.delta)),
    }
    if q is not p:
        out["group_privacy"] = {"eps_add_remove": str(q.eps), "delta_add_remove": str(q.delta)}
    return out


def split_params(split: FloorShares) -> dict[str, str]:
    """The split as exact rationals, for the result's params."""
    return {
        "eps1_offset": str(split.eps1),
        "eps2_rank_noise": str(split.eps2),
        "alpha_selection": str(split.alpha),
        "alpha_selection_at_default_rank": str(split.alpha_default),
        "delta_selection": str(split.delta),
    }


def _hint(p: Public) -> str:
    """From public parameters only: limited-domain's margin at the default rank, and the
    threshold of the first tested rank (the offset and the rank noise come on top)."""
    sp = make_split(p.eps, p.delta)
    margin = 1 + (log_fraction(Fraction(p.candidates) / p.delta)) / float(sp.alpha_default)
    tested = ranks(p.candidates, p.ell_max)
    deeper = (
        f", or, past a tie wider than {p.candidates}, when it leads the {tested[0] + 1}-th by "
        f"more than {threshold(tested[0], sp)} records (plus noise)"
        if tested
        else ""
    )
    return (
        f"lmm-floor answers when the top support leads the {p.candidates + 1}-th by about "
        f"{margin:.0f} records or more{deeper}"
    )


MECHANISM = Mechanism(
    NAME,
    BOTH,  # replace-one through group privacy (§22.8)
    lambda c, p, rng: run(
        c,
        inner(p).eps,
        inner(p).delta,
        rng,
        default_rank=p.candidates,
        ell_max=p.ell_max,
        universe_size=p.universe_size,
    ),
    lambda p: cost(p.eps, p.delta),  # the pair under p's own relation
    lambda p: _hint(inner(p)),
    extra=_extra,
    steps=_steps,
    releases=("ell",),
    parameters=("ell_max", "candidates"),
    check=check,
)
