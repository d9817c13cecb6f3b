"""tau(l) and the integer thresholds against values computed by hand.

The literals below were computed independently of dpfim's code, with mpmath at 40 digits,
straight from the formulas in SPEC §2 and §2b (the derivation is in docs/privacy.md). For
alpha = 1, delta = 1e-6 (paper split, alpha_m = alpha_s = alpha_a = 1/3, delta_m = delta_s =
1e-6/3, beta = 1e-6 e^(-2/3) / 3), term by term:

  continuous tau(1) = 3 ln(1/(2 delta_m))        =  42.6629269982
                    + 6 ln(1/delta_s)            =  89.4847370798
                    + 12 ln(1*2/delta_s)         = 187.287240326
                    + 2 (1 + 3 ln(1/beta))       =  95.4847370798
                                                 = 414.919641484114
  discrete tau(1)   = 3 ln(1/delta_m)            =  44.7423685399
                    + 6 ln(2/delta_s)            =  93.6436201632
                    + 12 ln(2*1*2/delta_s)       = 195.605006493
                    + 2 (1 + 3 ln(1/beta))       =  95.4847370798
                                                 = 429.475732275873
lmm-gap (alpha_s = 2/3, alpha_a = 1/3, delta_s = 1e-6/2, beta = 1e-6 e^(-2/3) / 2):
  continuous tau'(1) = 3 ln(1/delta_s) + 6 ln(2/delta_s) + 2(1 + 3 ln(1/beta)) = 227.788749161223
  discrete tau'(1)   = 3 ln(2/delta_s) + 6 ln(4/delta_s) + 2(1 + 3 ln(1/beta)) = 234.027073786262
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from dpfim.mechanisms.thresholds import (
    Split,
    gap_split,
    paper_split,
    tau,
    threshold,
    threshold_runs,
)

E1, D6, D9 = Fraction(1), Fraction(1, 10**6), Fraction(1, 10**9)


@pytest.mark.parametrize(
    ("split", "ell", "discrete", "expected"),
    [
        (paper_split(E1, D6), 1, False, 414.919641484114),
        (paper_split(E1, D6), 1, True, 429.475732275873),
        (gap_split(E1, D6), 1, False, 227.788749161223),
        (gap_split(E1, D6), 1, True, 234.027073786262),
        (paper_split(E1, D6), 2, True, 446.81796282325),
        (paper_split(E1, D6), 10, True, 491.379241056627),
        (paper_split(E1, D6), 10**6, True, 835.623294848076),
        (paper_split(E1, D6), 2**40, True, 1252.9345827811),
        (gap_split(E1, D6), 2, True, 244.777630601631),
        (gap_split(E1, D6), 10, True, 271.886583455622),
        (gap_split(E1, D6), 10**6, True, 478.547386746257),
        (gap_split(E1, D6), 2**40, True, 728.934160706069),
        (paper_split(Fraction(1, 10), D9), 1, True, 6105.8512480839),
        (paper_split(Fraction(1, 10), D9), 1000, True, 8095.12011015132),
        (paper_split(Fraction(2), D9), 1, True, 310.992562404195),
        (paper_split(Fraction(2), D9), 1000, True, 410.456005507566),
    ],
)
def test_tau_matches_hand_computed_values(
    split: Split, ell: int, discrete: bool, expected: float
) -> None:
    assert tau(ell, split, discrete=discrete) == pytest.approx(expected, rel=1e-11)


@pytest.mark.parametrize("make", [paper_split, gap_split])
@pytest.mark.parametrize(
    ("eps", "delta"), [(E1, D6), (Fraction(1, 10), D9), (Fraction(2), D9), (Fraction(7, 3), D6)]
)
def test_split_sums_exactly_to_eps_and_delta(make: object, eps: Fraction, delta: Fraction) -> None:
    split = make(eps, delta)  # type: ignore[operator]
    assert split.eps == eps and split.delta == delta


def test_split_refuses_inconsistent_parts() -> None:
    with pytest.raises(ValueError):
        Split(Fraction(0), Fraction(1), Fraction(1), Fraction(1, 10), Fraction(1), Fraction(1))
    with pytest.raises(ValueError):
        Split(Fraction(1), Fraction(0), Fraction(1), Fraction(1), Fraction(1), Fraction(1))


@pytest.mark.parametrize("split", [paper_split(E1, D6), gap_split(Fraction(1, 10), D9)])
def test_integer_threshold_is_rounded_up_but_not_far(split: Split) -> None:
    rng = random.Random(1)
    for ell in [*range(1, 2000), *(rng.randrange(1, 2**40) for _ in range(2000))]:
        t = threshold(ell, split)
        assert tau(ell, split) <= t + 1  # the test "> T" is "> theta", theta >= tau
        assert t <= tau(ell, split) + 1e-6


def test_threshold_runs_partition_the_ranks_and_never_lower_a_threshold() -> None:
    split = paper_split(E1, D6)
    expected_first = 1
    for first, last, t in threshold_runs(split, 1, 5000):
        assert first == expected_first and first <= last
        for ell in range(first, last + 1):
            assert t >= threshold(ell, split)
        expected_first = last + 1
    assert expected_first == 5001


def test_threshold_runs_far_out_cover_random_ranks() -> None:
    split = gap_split(E1, D6)
    runs = []
    for run in threshold_runs(split):
        runs.append(run)
        if run[1] >= 2**40:
            break
    rng = random.Random(2)
    for ell in (rng.randrange(1, 2**40) for _ in range(300)):
        _, _, t = next(r for r in runs if r[0] <= ell <= r[1])
        assert t >= threshold(ell, split)
    # the runs depend on (eps, delta) only: the cached and uncached computations agree
    assert runs[:50] == list(threshold_runs(split, 1, runs[49][1]))
