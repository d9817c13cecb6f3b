"""The Large Margin Mechanism (Chaudhuri, Hsu, Song, NIPS 2014), in count space (SPEC §2).

Privacy
-------
Neighbours: replace-one or add/remove-one record (every count moves by at most 1; n is never
used). Cost: (eps, delta)-DP for the release (M, l, I), with eps = alpha_m + alpha_s + alpha_a and
delta = delta_m + delta_s + beta * exp(alpha_m + alpha_s) (paper split: thirds). M = c(1) + Z is
(alpha_m, 0)-DP, the search (alpha_s, 0)-DP, the selection alpha_a-DP when the margin holds; the
delta is the margin-certification failure plus the selection's leak, not a sum of per-step deltas.
Preconditions: counts exact; noise exact discrete Laplace from a secure source; thresholds
rounded up. Proof: docs/privacy.md, sections "Thresholds" to "Selection".
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpfim.accounting import ApproxDP, amount
from dpfim.mechanisms.base import BOTH, Mechanism, Outcome, Public, RankedCounts, VectorCounts
from dpfim.mechanisms.search import first_pass
from dpfim.mechanisms.selection import pick_member, select_count
from dpfim.mechanisms.thresholds import MarginShares, paper_split, threshold
from dpfim.params import DEFAULT_ELL_MAX, check_delta, check_ell_max, check_eps
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.rng import RandomSource, resolve

NAME = "lmm"


def run(
    counts: RankedCounts,
    split: MarginShares,
    rng: RandomSource,
    *,
    ell_max: int = DEFAULT_ELL_MAX,
    universe_size: int | None = None,
) -> Outcome:
    """Run LMM on ranked counts. universe_size K: a declared finite universe (None: open).

    Open universe: ranks past the last nonzero count have count 0 and the search runs to ell_max;
    no pass -> ell None ("inf") and no itemset. Declared universe: the search ends at K; no pass
    below K -> l = K. A zero-count pick returns index None with zero_pick set.
    """
    counts.ensure(2)
    c1 = int(counts.counts[0]) if len(counts.counts) else counts.clipped_at
    noisy_max = c1 + discrete_laplace(split.max_scale, rng)
    offset = discrete_laplace(split.offset_scale, rng)
    return _search_and_select(
        noisy_max - offset, counts, split, rng, ell_max, universe_size, noisy_max
    )


def _search_and_select(
    base: int,
    counts: RankedCounts,
    split: MarginShares,
    rng: RandomSource,
    ell_max: int,
    universe_size: int | None,
    noisy_max: int | None,
) -> Outcome:
    """Steps 2 and 3, shared with lmm-gap (which passes base = c(1) - G and no noisy max)."""
    last_rank = ell_max if universe_size is None else min(ell_max, universe_size - 1)
    ell = first_pass(base, split, counts, last_rank, rng)
    if ell is None:
        if universe_size is None:
            return Outcome(noisy_max, None, None)
        ell = universe_size
        counts.ensure(ell + 1)
    rest = counts.clipped_at  # the count past the listed rows (0 unless clipped)
    c = select_count(counts.counts, ell, split.alpha_a, rng, rest)
    if c == rest:
        return Outcome(noisy_max, ell, None, zero_pick=True)
    return Outcome(noisy_max, ell, pick_member(counts.counts, c, rng))


def select(
    counts: Sequence[int] | np.ndarray,
    eps: str | int | Fraction,
    delta: str | int | Fraction,
    rng: RandomSource | int | None = None,
    *,
    ell_max: int = DEFAULT_ELL_MAX,
    universe_size: int | None = None,
) -> tuple[int, int | None, int | None]:
    """LMM on a plain vector of counts: returns (M, l or None for "inf", selected position).

    The selected position indexes the input vector (ties: a uniformly random one of the tied
    entries); None is the answer "none". rng: a RandomSource, an int seed, or None (secure).
    """
    source, _ = resolve(rng)
    split = paper_split(check_eps(eps), check_delta(delta))
    vec = VectorCounts(counts)
    out = run(vec, split, source, ell_max=check_ell_max(ell_max), universe_size=universe_size)
    index = None if out.index is None else vec.position(out.index)
    assert out.noisy_max is not None
    return out.noisy_max, out.ell, index


# --- the mechanism object (lmm-gap reuses the ledger, extra parameters and hint) --------------


def margin_ledger(split: MarginShares, neighbours: str, *, with_max: bool) -> dict[str, Any]:
    """The ledger of lmm (with_max) or lmm-gap: per-step epsilons and where delta comes from.

    Descriptive: the run is charged its one (eps, delta) pair (ApproxDP), never the per-step
    entries (composing those would under-report: the selection's step has no delta of its own).
    """
    steps: list[dict[str, Any]] = []
    if with_max:
        steps.append(
            {
                "step": "noisy max M = c(1) + DLap(1/alpha_m)",
                "releases": "noisy_max",
                "eps": amount(split.alpha_m),
                "delta": amount(Fraction(0)),
            }
        )
    steps.append(
        {
            "step": "margin search (sparse vector, G ~ DLap(2/alpha_s), Z_l ~ DLap(4/alpha_s))",
            "releases": "ell",
            "eps": amount(split.alpha_s),
            "delta": amount(Fraction(0)),
        }
    )
    steps.append(
        {
            "step": "restricted exponential mechanism over the top ell",
            "releases": "itemset",
            "eps": amount(split.alpha_a),
            "delta": "see delta_sources: e^alpha_a multiplicative only when the margin holds",
        }
    )
    sources = {}
    if with_max:
        sources["max_certification_failure"] = amount(split.delta_m)
    sources["search_certification_failure"] = amount(split.delta_s)
    sources["selection_leak"] = amount(split.delta_leak)
    return {
        "neighbours": neighbours,
        "eps": amount(split.eps),
        "delta": amount(split.delta),
        "steps": steps,
        "delta_sources": sources,
        "note": (
            "The run as a whole is (eps, delta)-DP. The total delta is not a sum of per-step "
            "deltas: it is the chance that the margin is certified wrongly plus what the "
            "selection can leak (beta * e^(alpha_m + alpha_s)). Each run spends (eps, delta); "
            "repeated runs on the same data compose."
        ),
    }


def margin_extra(split: MarginShares, p: Public) -> dict[str, Any]:
    return {
        "ell_max": p.ell_max,
        "split": {
            "alpha_m": str(split.alpha_m),
            "alpha_s": str(split.alpha_s),
            "alpha_a": str(split.alpha_a),
            "delta_m": str(split.delta_m),
            "delta_s": str(split.delta_s),
            "beta_times_e^(alpha_m+alpha_s)": str(split.delta_leak),
        },
    }


def margin_hint(name: str, split: MarginShares) -> str:
    return (
        f"{name} certifies a winner only when its support leads the runner-up's by more than "
        f"about {threshold(1, split)} records (plus noise)"
    )


def margin_cost(split: MarginShares) -> ApproxDP:
    """The run-level pair (split.eps, split.delta): one generic (eps, delta) cost."""
    return ApproxDP(split.eps, split.delta)


MECHANISM = Mechanism(
    NAME,
    BOTH,
    lambda c, p, rng: run(
        c, paper_split(p.eps, p.delta), rng, ell_max=p.ell_max, universe_size=p.universe_size
    ),
    lambda p: margin_cost(paper_split(p.eps, p.delta)),
    lambda p: margin_hint("LMM", paper_split(p.eps, p.delta)),
    extra=lambda p: margin_extra(paper_split(p.eps, p.delta), p),
    ledger=lambda p: margin_ledger(paper_split(p.eps, p.delta), p.neighbours, with_max=True),
    releases=("noisy_max", "ell"),
    parameters=("ell_max",),
)
