"""The LMM mechanism on count vectors: behaviour that must hold, and exact selection laws.

Statistical tests use fixed seeds (deterministic); with fresh seeds each has a false-alarm
probability of at most 1e-6 (the p-value cut-off). The privacy audit proper is tests/audit/.
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpfim.errors import ParameterError
from dpfim.mechanisms import lmm, selection
from dpfim.mechanisms.base import VectorCounts
from dpfim.mechanisms.search import first_pass
from dpfim.mechanisms.thresholds import paper_split, threshold
from dpfim.samplers.rng import seeded_source

P_CUT = 1e-6
SPLIT = paper_split(Fraction(1), Fraction(1, 10**6))


def test_clear_winner_is_certified_at_rank_one() -> None:
    for seed in range(200):
        m, ell, idx = lmm.select([11414, 29142, 9000], "1", "1e-6", rng=seed)
        assert (ell, idx) == (1, 1)  # position in the input vector
        assert abs(m - 29142) < 60  # DLap(3): |Z| >= 60 has probability ~2e-9


def test_no_data_answers_none() -> None:
    results = [lmm.select([], "1", "1e-6", rng=s) for s in range(300)]
    assert all(ell is None and idx is None for _, ell, idx in results)


def test_small_counts_answer_none_without_reading_deep() -> None:
    """Far below the threshold the tail bound ends the search: counts are never deepened."""

    class Shallow:
        def __init__(self) -> None:
            self.depths: list[int] = []
            self._counts = np.array([40, 39, 38], dtype=np.int64)

        @property
        def counts(self) -> np.ndarray:
            return self._counts

        @property
        def complete(self) -> bool:
            return False

        def ensure(self, depth: int) -> None:
            self.depths.append(depth)

    for seed in range(50):
        shallow = Shallow()
        assert first_pass(40, SPLIT, shallow, 2**40, seeded_source(seed)) is None
        assert shallow.depths == []


def test_ell_max_caps_the_search() -> None:
    # Counts zero after rank 1 with a top count near tau(1): passes are spread over many ranks.
    ells = [lmm.select([430], "1", "1e-6", rng=s, ell_max=2)[1] for s in range(400)]
    assert set(ells) <= {1, 2, None}
    assert None in ells and 1 in ells


def test_declared_universe_ends_the_search_at_k() -> None:
    # K = 6 candidates, all counts tiny: no rank below K passes, so l = K and the selection
    # is the exponential mechanism over the whole universe (zero-count picks included).
    out = [
        lmm.run(VectorCounts([3, 2]), SPLIT, seeded_source(s), universe_size=6) for s in range(300)
    ]
    assert all(o.ell == 6 for o in out)
    zero = sum(o.zero_pick for o in out)
    # Weights exp(c/6): P(zero-count pick) = 4 / (e^0.5 + e^(1/3) + 4) ~ 0.549.
    p = 4 / (math.exp(0.5) + math.exp(1 / 3) + 4)
    assert stats.binomtest(zero, 300, p).pvalue > P_CUT


def test_ties_at_the_top_are_broken_uniformly() -> None:
    counts = [1000, 1000, 1000, 1000, 5]
    picks = Counter(lmm.select(counts, "1", "1e-6", rng=s)[2] for s in range(2000))
    assert set(picks) == {0, 1, 2, 3}
    assert stats.chisquare([picks[i] for i in range(4)]).pvalue > P_CUT


def test_groups_use_boundary_multiplicity_inside_the_top_ell() -> None:
    counts = np.array([9, 7, 7, 7, 3], dtype=np.int64)
    values, mult = selection.groups(counts, 2)
    assert values.tolist() == [9, 7] and mult.tolist() == [1, 1]
    values, mult = selection.groups(counts, 7)
    assert values.tolist() == [9, 7, 3, 0] and mult.tolist() == [1, 3, 1, 2]


def _em_law(counts: list[int], ell: int, alpha_a: float) -> dict[int, float]:
    """P(selected count) for the restricted exponential mechanism, from the SPEC formula."""
    top = (counts + [0] * ell)[:ell]
    w = Counter()
    for c in top:
        w[c] += math.exp(alpha_a * c / 2)
    total = sum(w.values())
    return {c: v / total for c, v in w.items()}


@pytest.mark.slow
@pytest.mark.parametrize("path", ["rejection", "inversion"])
def test_selection_samplers_follow_the_exponential_law(path: str) -> None:
    counts = [20, 18, 18, 15, 11, 11, 11, 4]
    ell = 10  # two zero-count candidates
    alpha_a = Fraction(1, 2)
    arr = np.array(counts, dtype=np.int64)
    rng = seeded_source(21)
    n = 30_000
    if path == "rejection":
        draws = Counter(selection._by_rejection(arr, ell, alpha_a, rng) for _ in range(n))
    else:
        values, mult = selection.groups(arr, ell)
        draws = Counter(selection._by_inversion(values, mult, alpha_a, rng) for _ in range(n))
    law = _em_law(counts, ell, float(alpha_a))
    keys = sorted(law)
    assert stats.chisquare([draws[k] for k in keys], [n * law[k] for k in keys]).pvalue > P_CUT


@pytest.mark.slow
def test_the_selection_check_can_fail() -> None:
    """Draws made at alpha_a = 1 are rejected as alpha_a = 1/2 by the same check."""
    counts = [20, 18, 18, 15, 11, 11, 11, 4]
    arr = np.array(counts, dtype=np.int64)
    rng = seeded_source(21)
    n = 30_000
    draws = Counter(selection._by_rejection(arr, 10, Fraction(1), rng) for _ in range(n))
    law = _em_law(counts, 10, 0.5)
    keys = sorted(law)
    assert stats.chisquare([draws[k] for k in keys], [n * law[k] for k in keys]).pvalue < P_CUT


def test_inversion_handles_a_large_top_ell_quickly() -> None:
    """10^6 candidates with spread-out counts: rejection would need ~e^80 rounds."""
    rng = seeded_source(4)
    counts = np.sort(np.random.default_rng(0).integers(1, 500, 10**6))[::-1].astype(np.int64)
    counts[0] = 1000
    c = selection.select_count(counts, 10**6, Fraction(1, 3), rng)
    # Every other candidate weighs at most e^(-501/6) ~ 6e-37 against the top's 1.
    assert c == 1000


def test_threshold_is_integer_and_rounded_up() -> None:
    assert threshold(1, SPLIT) == 429  # tau_discrete(1) = 429.48 -> floor of the nudged value


def test_select_validates_parameters() -> None:
    with pytest.raises(ParameterError):
        lmm.select([1, 2], "0", "1e-6", rng=1)
    with pytest.raises(ParameterError):
        lmm.select([1, 2], "1", "1", rng=1)
    with pytest.raises(ValueError):
        VectorCounts([-1, 2])
