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

import numpy as np

from dpfim.mechanisms.base import Outcome, RankedCounts, VectorCounts
from dpfim.mechanisms.search import first_pass
from dpfim.mechanisms.selection import pick_member, select_count
from dpfim.mechanisms.thresholds import Split, paper_split
from dpfim.params import DEFAULT_ELL_MAX, check_delta, check_ell_max, check_eps
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.rng import RandomSource, resolve

NAME = "lmm"


def run(
    counts: RankedCounts,
    split: Split,
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
    c1 = int(counts.counts[0]) if len(counts.counts) else 0
    noisy_max = c1 + discrete_laplace(split.max_scale, rng)
    offset = discrete_laplace(split.offset_scale, rng)
    return _search_and_select(
        noisy_max - offset, counts, split, rng, ell_max, universe_size, noisy_max
    )


def _search_and_select(
    base: int,
    counts: RankedCounts,
    split: Split,
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
    c = select_count(counts.counts, ell, split.alpha_a, rng)
    if c == 0:
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
