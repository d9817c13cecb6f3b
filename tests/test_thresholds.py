"""The split, tau(l), the integer thresholds T(l) and their runs, against hand-computed values.

The literals were computed independently of dpfim's code, with mpmath at 50 digits, straight from
the formulas of SPEC §2 / §2b (derivation: docs/privacy.md §3). For alpha = 1, delta = 1e-6, paper
split (alpha_m = alpha_s = alpha_a = 1/3, delta_m = delta_s = delta/3, beta = (delta/3) e^(-2/3), so
ln(1/beta) = ln(3e6) + 2/3 = 14.914122846632 + 0.666666666667 = 15.580789513299), term by term:

  continuous tau(1)
    (1/a_m) ln(1/(2 d_m)) = 3 ln(1.5e6)  =  3 * 14.220975666072 =  42.662926998217
  + (2/a_s) ln(1/d_s)     = 6 ln(3e6)    =  6 * 14.914122846632 =  89.484737079794
  + (4/a_s) ln(1*2/d_s)   = 12 ln(6e6)   = 12 * 15.607270027192 = 187.287240326308
  + 2 (1 + ln(1/beta)/a_a) = 2 (1 + 3 * 15.580789513299)        =  95.484737079794
                                                                = 414.919641484114
  discrete tau(1)
    (1/a_m) ln(1/d_m)     = 3 ln(3e6)    =  3 * 14.914122846632 =  44.742368539897
  + (2/a_s) ln(2/d_s)     = 6 ln(6e6)    =  6 * 15.607270027192 =  93.643620163154
  + (4/a_s) ln(2*1*2/d_s) = 12 ln(1.2e7) = 12 * 16.300417207752 = 195.605006493027
  + 2 (1 + ln(1/beta)/a_a)                                      =  95.484737079794
                                                                = 429.475732275873
lmm-gap (alpha_s = 2/3, alpha_a = 1/3, delta_s = delta/2, beta = (delta/2) e^(-2/3), so
ln(1/beta) = ln(2e6) + 2/3 = 14.508657738524 + 0.666666666667 = 15.175324405191):
  continuous tau'(1) = 3 ln(2e6) + 6 ln(4e6) + 2 (1 + 3 * 15.175324405191)
                     = 43.525973215573 + 91.210829514505 + 93.051946431145 = 227.788749161223
  discrete tau'(1)   = 3 ln(4e6) + 6 ln(8e6) + 93.051946431145
                     = 45.605414757253 + 95.369712597865 + 93.051946431145 = 234.027073786262
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Callable
from fractions import Fraction

import mpmath
import pytest

from dpfim.mechanisms.thresholds import (
    MarginShares,
    gap_split,
    paper_split,
    tau,
    threshold,
    threshold_runs,
)

E1, E01, E2 = Fraction(1), Fraction(1, 10), Fraction(2)
D6, D9 = Fraction(1, 10**6), Fraction(1, 10**9)

# (split, l, continuous tau(l), discrete tau(l), T(l) = floor(discrete tau(l))); mpmath, 50 digits
HAND = [
    (paper_split(E1, D6), 1, 414.91964148411387, 429.47573227587272, 429),
    (paper_split(E1, D6), 2, 432.26187203149086, 446.81796282324971, 446),
    (paper_split(E1, D6), 10, 476.8231502648678, 491.37924105662665, 491),
    (paper_split(E1, D6), 10**6, 821.06720405631675, 835.6232948480756, 835),
    (paper_split(E1, D6), 2**40, 1238.3784919893398, 1252.9345827810987, 1252),
    (gap_split(E1, D6), 1, 227.78874916122296, 234.02707378626247, 234),
    (gap_split(E1, D6), 2, 238.53930597659129, 244.7776306016308, 244),
    (gap_split(E1, D6), 10, 265.64825883058206, 271.88658345562157, 271),
    (gap_split(E1, D6), 10**6, 472.30906212121723, 478.54738674625673, 478),
    (gap_split(E1, D6), 2**40, 722.69583608102937, 728.93416070606888, 728),
    (paper_split(E01, D9), 1, 5960.2903401663157, 6105.8512480839042, 6105),
    (paper_split(E01, D9), 10, 6579.325427973855, 6724.8863358914435, 6724),
    (paper_split(E01, D9), 1000, 7949.5592022337334, 8095.1201101513219, 8095),
    (paper_split(E01, D9), 2**40, 14194.878845218575, 14340.439753136164, 14340),
    (paper_split(E2, D9), 1, 303.71451700831579, 310.99256240419521, 310),
    (paper_split(E2, D9), 10, 334.66627139869275, 341.94431679457217, 341),
    (paper_split(E2, D9), 1000, 403.17796011168667, 410.4560055075661, 410),
    (paper_split(E2, D9), 2**40, 715.44394226092876, 722.72198765680818, 722),
    (gap_split(E01, D9), 1, 3260.0507834595502, 3322.4340297099453, 3322),
    (gap_split(E01, D9), 10, 3638.6458801531412, 3701.0291264035363, 3701),
    (gap_split(E01, D9), 1000, 4461.9178728627232, 4524.3011191131182, 4524),
    (gap_split(E01, D9), 2**40, 8209.1216526576143, 8271.5048989080093, 8271),
    (gap_split(E2, D9), 1, 168.70253917297751, 171.82170148549726, 171),
    (gap_split(E2, D9), 10, 187.63229400765706, 190.75145632017681, 190),
    (gap_split(E2, D9), 1000, 228.79589364313616, 231.91505595565591, 231),
    (gap_split(E2, D9), 2**40, 416.15608263288071, 419.27524494540047, 419),
]
HAND_IDS = [
    f"{'gap' if s.alpha_m == 0 else 'paper'}-eps{s.eps}-delta{s.delta}-l{ell}"
    for s, ell, *_ in HAND
]


def tau_reference(ell: int, split: MarginShares, *, discrete: bool = True) -> mpmath.mpf:
    """tau(l) from the SPEC formulas at 40 digits, from the split's exact rationals: an oracle
    independent of thresholds.tau (checked against the hand-computed literals below)."""
    with mpmath.workdps(40):

        def q(x: Fraction) -> mpmath.mpf:
            return mpmath.mpf(x.numerator) / x.denominator

        a_m, a_s, a_a = q(split.alpha_m), q(split.alpha_s), q(split.alpha_a)
        d_m, d_s = q(split.delta_m), q(split.delta_s)
        beta = q(split.delta_leak) * mpmath.exp(-(a_m + a_s))
        k = 2 if discrete else 1  # the discrete tail bound doubles each failure probability
        total = mpmath.mpf(0)
        if split.alpha_m > 0:
            total += mpmath.log(k / (2 * d_m)) / a_m
        total += (2 / a_s) * mpmath.log(k / d_s)
        total += (4 / a_s) * mpmath.log(k * mpmath.mpf(ell) * (ell + 1) / d_s)
        total += 2 * (1 + mpmath.log(mpmath.mpf(ell) / beta) / a_a)
        return +total


# ---------------------------------------------------------------------------------------------
# tau(l) against the hand-computed literals


def test_tau_one_term_by_term_matches_the_docstring_arithmetic() -> None:
    cont = [42.662926998217, 89.484737079794, 187.287240326308, 95.484737079794]
    disc = [44.742368539897, 93.643620163154, 195.605006493027, 95.484737079794]
    gap_cont = [43.525973215573, 91.210829514505, 93.051946431145]
    gap_disc = [45.605414757253, 95.369712597865, 93.051946431145]
    assert math.fsum(cont) == pytest.approx(414.919641484114, abs=1e-11)
    assert math.fsum(disc) == pytest.approx(429.475732275873, abs=1e-11)
    assert math.fsum(gap_cont) == pytest.approx(227.788749161223, abs=1e-11)
    assert math.fsum(gap_disc) == pytest.approx(234.027073786262, abs=1e-11)
    paper, gap = paper_split(E1, D6), gap_split(E1, D6)
    assert tau(1, paper, discrete=False) == pytest.approx(math.fsum(cont), rel=1e-12)
    assert tau(1, paper) == pytest.approx(math.fsum(disc), rel=1e-12)
    assert tau(1, gap, discrete=False) == pytest.approx(math.fsum(gap_cont), rel=1e-12)
    assert tau(1, gap) == pytest.approx(math.fsum(gap_disc), rel=1e-12)


@pytest.mark.parametrize(("split", "ell", "continuous", "discrete", "_t"), HAND, ids=HAND_IDS)
def test_tau_matches_hand_computed_values(
    split: MarginShares, ell: int, continuous: float, discrete: float, _t: int
) -> None:
    assert tau(ell, split, discrete=False) == pytest.approx(continuous, rel=1e-12)
    assert tau(ell, split, discrete=True) == pytest.approx(discrete, rel=1e-12)
    assert tau(ell, split) == tau(ell, split, discrete=True)  # dpfim runs the discrete one


@pytest.mark.parametrize(("split", "ell", "continuous", "discrete", "_t"), HAND, ids=HAND_IDS)
def test_reference_oracle_matches_the_literals(
    split: MarginShares, ell: int, continuous: float, discrete: float, _t: int
) -> None:
    assert float(tau_reference(ell, split, discrete=False)) == pytest.approx(continuous, rel=1e-15)
    assert float(tau_reference(ell, split)) == pytest.approx(discrete, rel=1e-15)


@pytest.mark.parametrize("ell", [1, 2, 10, 12345, 10**6, 2**40])
@pytest.mark.parametrize(("eps", "delta"), [(E1, D6), (E01, D9), (E2, D9)])
def test_paper_split_is_specs_closed_form(ell: int, eps: Fraction, delta: Fraction) -> None:
    """SPEC §2: (3/a)ln(3/(2d)) + (6/a)ln(3/d) + (12/a)ln(3l(l+1)/d) + 6(1 + ln(3l/d)/a)."""
    with mpmath.workdps(40):
        a = mpmath.mpf(eps.numerator) / eps.denominator
        d = mpmath.mpf(delta.numerator) / delta.denominator
        spec = (
            (3 / a) * mpmath.log(3 / (2 * d))
            + (6 / a) * mpmath.log(3 / d)
            + (12 / a) * mpmath.log(3 * mpmath.mpf(ell) * (ell + 1) / d)
            + 6 * (1 + mpmath.log(3 * mpmath.mpf(ell) / d) / a)
        )
    assert tau(ell, paper_split(eps, delta), discrete=False) == pytest.approx(
        float(spec), rel=1e-12
    )


@pytest.mark.parametrize("ell", [1, 7, 10**6, 2**40])
@pytest.mark.parametrize(("eps", "delta"), [(E1, D6), (E01, D9), (E2, D9)])
def test_discrete_costs_ln2_per_noise_scale(ell: int, eps: Fraction, delta: Fraction) -> None:
    """Halving each delta-term inside a log adds (1/a_m + 2/a_s + 4/a_s) ln 2: 21 ln2/eps for
    the paper split, (3 + 6) ln2/eps for lmm-gap."""
    for split, scales in [(paper_split(eps, delta), 21), (gap_split(eps, delta), 9)]:
        diff = tau(ell, split) - tau(ell, split, discrete=False)
        assert diff == pytest.approx(scales * math.log(2) / float(eps), rel=1e-9)


def test_tau_is_strictly_increasing_and_needs_a_positive_rank() -> None:
    for split in [paper_split(E1, D6), gap_split(E2, D9)]:
        values = [tau(ell, split) for ell in range(1, 3001)]
        assert all(a < b for a, b in itertools.pairwise(values))
        rng = random.Random(5)
        for ell in (rng.randrange(1, 2**40) for _ in range(200)):
            assert tau(ell, split) < tau(ell + 1, split)
        with pytest.raises(ValueError):
            tau(0, split)


# ---------------------------------------------------------------------------------------------
# The split


@pytest.mark.parametrize("make", [paper_split, gap_split])
@pytest.mark.parametrize(
    ("eps", "delta"),
    [(E1, D6), (E01, D9), (E2, D9), (Fraction(7, 3), D6), (Fraction(1, 1000), Fraction(99, 100))],
)
def test_split_sums_exactly_to_eps_and_delta(
    make: Callable[[Fraction, Fraction], MarginShares], eps: Fraction, delta: Fraction
) -> None:
    split = make(eps, delta)
    assert split.alpha_m + split.alpha_s + split.alpha_a == eps
    assert split.delta_m + split.delta_s + split.delta_leak == delta
    assert (split.eps, split.delta) == (eps, delta)
    for part in (split.alpha_m, split.alpha_s, split.alpha_a, split.delta_m, split.delta_s):
        assert isinstance(part, Fraction)


@pytest.mark.parametrize(("eps", "delta"), [(E1, D6), (E01, D9), (E2, D9)])
def test_split_parts_are_the_specs(eps: Fraction, delta: Fraction) -> None:
    p = paper_split(eps, delta)
    assert (p.alpha_m, p.alpha_s, p.alpha_a) == (eps / 3, eps / 3, eps / 3)
    assert (p.delta_m, p.delta_s, p.delta_leak) == (delta / 3, delta / 3, delta / 3)
    # beta = delta e^(-2 alpha/3) / 3
    assert p.log_beta == pytest.approx(math.log(float(delta) / 3) - 2 * float(eps) / 3, rel=1e-14)
    assert (p.max_scale, p.offset_scale, p.search_scale) == (3 / eps, 6 / eps, 12 / eps)
    g = gap_split(eps, delta)
    assert (g.alpha_m, g.alpha_s, g.alpha_a) == (Fraction(0), 2 * eps / 3, eps / 3)
    assert (g.delta_m, g.delta_s, g.delta_leak) == (Fraction(0), delta / 2, delta / 2)
    # beta = delta e^(-alpha_s) / 2
    assert g.log_beta == pytest.approx(math.log(float(delta) / 2) - 2 * float(eps) / 3, rel=1e-14)
    assert (g.offset_scale, g.search_scale) == (3 / eps, 6 / eps)


def test_split_refuses_inconsistent_parts() -> None:
    one, zero = Fraction(1), Fraction(0)
    with pytest.raises(ValueError):  # delta_m without a max estimate
        MarginShares(zero, one, one, Fraction(1, 10), one, one)
    with pytest.raises(ValueError):  # a max estimate without delta_m
        MarginShares(one, one, one, zero, one, one)
    with pytest.raises(ValueError):  # no search budget
        MarginShares(one, zero, one, one, one, one)
    with pytest.raises(ValueError):  # no selection budget
        MarginShares(one, one, zero, one, one, one)
    with pytest.raises(ValueError):  # no selection leak
        MarginShares(one, one, one, one, one, zero)


# ---------------------------------------------------------------------------------------------
# The integer thresholds T(l) = floor(tau(l)(1 + 2^-40) + 2^-40)


@pytest.mark.parametrize(("split", "ell", "_c", "discrete", "t"), HAND, ids=HAND_IDS)
def test_integer_threshold_at_hand_computed_points(
    split: MarginShares, ell: int, _c: float, discrete: float, t: int
) -> None:
    assert threshold(ell, split) == t
    # For integers x the test x > T(l) is the test x > tau(l): T(l) = floor(tau(l)) here (no
    # tau of the table is within 1e-6 of an integer, so the 2^-40 nudge never shows).
    for x in range(t - 3, t + 4):
        assert (x > threshold(ell, split)) == (x > discrete)


def _ranks(rng: random.Random) -> list[int]:
    return [*range(1, 2001), *(rng.randrange(1, 2**40 + 1) for _ in range(1000))]


@pytest.mark.parametrize(
    "split", [paper_split(E1, D6), gap_split(E1, D6), paper_split(E01, D9), gap_split(E2, D9)]
)
def test_integer_threshold_is_rounded_up_but_not_far(split: MarginShares) -> None:
    """Validity: T(l) + 1 > tau(l), i.e. an integer passing x > T(l) also passes x > tau(l)
    (T itself may sit below tau: T(1) = 429 < 429.48). Tightness: T(l) <= tau(l) + 1e-6."""
    for ell in _ranks(random.Random(1)):
        t = threshold(ell, split)
        ref = tau_reference(ell, split)
        assert t > ref - 1
        assert t <= ref + mpmath.mpf("1e-6")
        assert t <= tau(ell, split) + 1


# ---------------------------------------------------------------------------------------------
# Runs of ranks sharing one integer threshold


def _check_partition(runs: list[tuple[int, int, int]], start: int, stop: int) -> None:
    assert runs[0][0] == start and runs[-1][1] == stop
    for (_, last, t), (first, _, t_next) in itertools.pairwise(runs):
        assert first == last + 1  # consecutive, no gap, no overlap
        assert t_next > t  # one integer threshold per run: the next run's is higher
    assert all(first <= last for first, last, _ in runs)


@pytest.mark.parametrize("split", [paper_split(E1, D6), gap_split(E1, D6), gap_split(E01, D9)])
@pytest.mark.slow
def test_threshold_runs_partition_exhaustively_up_to_5000(split: MarginShares) -> None:
    runs = list(threshold_runs(split, 1, 5000))
    _check_partition(runs, 1, 5000)
    for first, last, t in runs:
        for ell in range(first, last + 1):
            assert t >= threshold(ell, split)
            assert t > tau_reference(ell, split) - 1  # valid for every rank it covers
        assert t == threshold(first, split) == threshold(last, split)


@pytest.mark.parametrize("split", [paper_split(E1, D6), gap_split(E1, D6), paper_split(E2, D9)])
def test_threshold_runs_cover_random_ranks_up_to_2_40(split: MarginShares) -> None:
    runs: list[tuple[int, int, int]] = []
    for run in threshold_runs(split):  # the cached, unbounded runs the search uses
        runs.append(run)
        if run[1] >= 2**40:
            break
    _check_partition(runs, 1, runs[-1][1])
    firsts = [first for first, _, _ in runs]
    rng = random.Random(2)
    for ell in [2**40, *(rng.randrange(1, 2**40) for _ in range(1000))]:
        first, last, t = runs[bisect.bisect_right(firsts, ell) - 1]
        assert first <= ell <= last
        assert t >= threshold(ell, split)
        assert t > tau_reference(ell, split) - 1
    # each run's own ends, checked against the oracle: the run threshold is valid at its last
    # rank, hence (tau increasing) at every rank of the run
    for _, last, t in runs:
        assert t > tau_reference(last, split) - 1


def test_threshold_runs_are_a_function_of_the_split_only() -> None:
    """Data independence: the runs depend on (eps, delta) through the split and nothing else;
    recomputing, from equal but distinct MarginShares, bounded or cached, gives the same."""
    a, b = gap_split(E1, D6), gap_split(Fraction(10, 10), Fraction(2, 2 * 10**6))
    assert a == b and a is not b
    cached = []
    for run in threshold_runs(a):
        cached.append(run)
        if len(cached) == 60:
            break
    stop = cached[-1][1]
    assert list(threshold_runs(b, 1, stop)) == cached
    assert list(threshold_runs(a, 1, stop)) == list(threshold_runs(a, 1, stop))
    assert list(threshold_runs(paper_split(E1, D6), 1, stop)) != cached  # depends on the split


@pytest.mark.parametrize(("start", "stop"), [(1, 1), (7, 7), (300, 4321), (2**40 - 5000, 2**40)])
def test_threshold_runs_from_any_start(start: int, stop: int) -> None:
    split = paper_split(E1, D6)
    runs = list(threshold_runs(split, start, stop))
    _check_partition(runs, start, stop)
    for first, last, t in runs:
        ranks = range(first, last + 1) if last - first < 3000 else (first, last)
        for ell in ranks:
            assert t >= threshold(ell, split)
