"""LMM with the sparse vector run directly on the gap queries (SPEC §2b, `--mechanism lmm-gap`).

Privacy
-------
Neighbours: add/remove-one record ONLY (under add/remove every order statistic moves by 0 or +1,
or by 0 or -1, so the gap c(1) - c(l+1) has sensitivity 1; under replace-one it can move by 2).
Cost: (eps, delta)-DP for the release (l, I) with eps = alpha_s + alpha_a and
delta = delta_s + beta * exp(alpha_s) (default: alpha_s = 2 eps/3, alpha_a = eps/3,
delta_s = delta/2). There is no noisy max and none is computed. n must not be released.
Proof: docs/privacy.md, section "lmm-gap".
"""

from __future__ import annotations

from dpfim.mechanisms.base import ADD_REMOVE, Mechanism, Outcome, RankedCounts
from dpfim.mechanisms.lmm import (
    _search_and_select,
    margin_cost,
    margin_extra,
    margin_hint,
    margin_ledger,
)
from dpfim.mechanisms.thresholds import MarginShares, gap_split
from dpfim.params import DEFAULT_ELL_MAX
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.rng import RandomSource

NAME = "lmm-gap"


def run(
    counts: RankedCounts,
    split: MarginShares,
    rng: RandomSource,
    *,
    ell_max: int = DEFAULT_ELL_MAX,
    universe_size: int | None = None,
) -> Outcome:
    """Search on c(1) - c(l+1) with thresholds tau'(l) (split.alpha_m must be 0), then select."""
    if split.alpha_m != 0:
        raise ValueError("lmm-gap has no max estimate: use thresholds.gap_split")
    counts.ensure(2)
    c1 = int(counts.counts[0]) if len(counts.counts) else counts.clipped_at
    offset = discrete_laplace(split.offset_scale, rng)
    return _search_and_select(c1 - offset, counts, split, rng, ell_max, universe_size, None)


MECHANISM = Mechanism(
    NAME,
    ADD_REMOVE,
    lambda c, p, rng: run(
        c, gap_split(p.eps, p.delta), rng, ell_max=p.ell_max, universe_size=p.universe_size
    ),
    lambda p: margin_cost(gap_split(p.eps, p.delta)),
    lambda p: margin_hint("lmm-gap", gap_split(p.eps, p.delta)),
    extra=lambda p: margin_extra(gap_split(p.eps, p.delta), p),
    ledger=lambda p: margin_ledger(gap_split(p.eps, p.delta), p.neighbours, with_max=False),
    releases=("ell",),
    parameters=("ell_max",),
)
