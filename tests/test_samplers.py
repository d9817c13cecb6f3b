"""Exact samplers against their closed-form distributions.

Each goodness-of-fit test uses a fixed seed, so it is deterministic; with fresh seeds each would
raise a false alarm with probability 1e-6 (the chi-square p-value cut-off).
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import pytest
from scipy import stats

from dpfim.samplers.bernoulli import bernoulli, bernoulli_exp_neg
from dpfim.samplers.gaussian import discrete_gaussian, floor_sqrt
from dpfim.samplers.laplace import discrete_laplace
from dpfim.samplers.lazy import LazyUniform
from dpfim.samplers.rng import resolve, seeded_source, system_source

P_CUT = 1e-6


def _chi2_pvalue(observed: Counter[int], pmf: dict[int, float], n: int) -> float:
    """Chi-square p-value with bins of expected count < 5 pooled into one tail bin."""
    obs, exp, tail_obs, tail_exp = [], [], 0, 0.0
    for k, p in pmf.items():
        if n * p >= 5:
            obs.append(observed.get(k, 0))
            exp.append(n * p)
        else:
            tail_obs += observed.get(k, 0)
            tail_exp += n * p
    tail_obs += sum(v for k, v in observed.items() if k not in pmf)
    tail_exp = n - sum(exp)
    obs.append(tail_obs)
    exp.append(tail_exp)
    return float(stats.chisquare(obs, exp).pvalue)


def dlap_pmf(scale: float, lo: int, hi: int) -> dict[int, float]:
    q = math.exp(-1 / scale)
    return {x: (1 - q) / (1 + q) * q ** abs(x) for x in range(lo, hi + 1)}


@pytest.mark.slow
@pytest.mark.parametrize("gamma", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 2)])
def test_bernoulli_exp_neg_matches_exp(gamma: Fraction) -> None:
    rng = seeded_source(11)
    n = 40_000
    hits = sum(bernoulli_exp_neg(gamma, rng) for _ in range(n))
    p = math.exp(-float(gamma))
    assert stats.binomtest(hits, n, p).pvalue > P_CUT


def test_bernoulli_rational_is_exact_at_the_ends() -> None:
    rng = seeded_source(3)
    assert not any(bernoulli(Fraction(0), rng) for _ in range(1000))
    assert all(bernoulli(Fraction(1), rng) for _ in range(1000))
    with pytest.raises(ValueError):
        bernoulli(Fraction(3, 2), rng)
    with pytest.raises(ValueError):
        bernoulli_exp_neg(Fraction(-1), rng)


@pytest.mark.slow
@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(3), Fraction(12), Fraction(30, 7)])
def test_discrete_laplace_goodness_of_fit(scale: Fraction) -> None:
    rng = seeded_source(5)
    n = 60_000
    draws = Counter(discrete_laplace(scale, rng) for _ in range(n))
    width = int(12 * float(scale)) + 5
    assert _chi2_pvalue(draws, dlap_pmf(float(scale), -width, width), n) > P_CUT


@pytest.mark.slow
def test_the_goodness_of_fit_test_rejects_a_wrong_scale() -> None:
    """The check above can fail: draws at scale 3 do not pass as scale 3.5."""
    rng = seeded_source(5)
    n = 60_000
    draws = Counter(discrete_laplace(Fraction(3), rng) for _ in range(n))
    assert _chi2_pvalue(draws, dlap_pmf(3.5, -45, 45), n) < P_CUT


def dgauss_pmf(sigma2: float, lo: int, hi: int) -> dict[int, float]:
    w = {x: math.exp(-x * x / (2 * sigma2)) for x in range(lo, hi + 1)}
    z = sum(w.values())  # the support beyond 12 sigma weighs < 1e-31
    return {x: v / z for x, v in w.items()}


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [Fraction(1, 3), Fraction(2), Fraction(9, 4), Fraction(400)])
def test_discrete_gaussian_goodness_of_fit(sigma2: Fraction) -> None:
    rng = seeded_source(7)
    n = 40_000
    draws = Counter(discrete_gaussian(sigma2, rng) for _ in range(n))
    width = int(12 * math.sqrt(float(sigma2))) + 5
    assert _chi2_pvalue(draws, dgauss_pmf(float(sigma2), -width, width), n) > P_CUT


@pytest.mark.slow
def test_the_goodness_of_fit_test_rejects_a_wrong_variance() -> None:
    """The check above can fail: draws at sigma^2 = 9 do not pass as sigma^2 = 10, nor as the
    discrete Laplace of the same variance."""
    rng = seeded_source(7)
    n = 40_000
    draws = Counter(discrete_gaussian(Fraction(9), rng) for _ in range(n))
    assert _chi2_pvalue(draws, dgauss_pmf(10.0, -45, 45), n) < P_CUT
    laplace = Counter(discrete_laplace(Fraction(2), rng) for _ in range(n))  # variance ~ 8
    assert _chi2_pvalue(laplace, dgauss_pmf(8.0, -45, 45), n) < P_CUT


def test_floor_sqrt_is_exact() -> None:
    """By hand: sqrt(4) = 2, sqrt(3.99) < 2, sqrt(4.01) > 2, sqrt(10^40 + 1) just above 10^20."""
    assert floor_sqrt(Fraction(4)) == 2
    assert floor_sqrt(Fraction(399, 100)) == 1
    assert floor_sqrt(Fraction(401, 100)) == 2
    assert floor_sqrt(Fraction(10**40 + 1)) == 10**20
    assert floor_sqrt(Fraction(10**40 - 1)) == 10**20 - 1
    assert floor_sqrt(Fraction(1, 10**6)) == 0
    with pytest.raises(ValueError):
        discrete_gaussian(Fraction(0), seeded_source(1))


def test_discrete_laplace_is_symmetric_and_integer() -> None:
    rng = seeded_source(8)
    draws = [discrete_laplace(Fraction(2), rng) for _ in range(20_000)]
    assert all(isinstance(x, int) for x in draws)
    pos, neg = sum(x > 0 for x in draws), sum(x < 0 for x in draws)
    assert stats.binomtest(pos, pos + neg, 0.5).pvalue > P_CUT


def test_seeded_sources_repeat_and_system_source_is_private() -> None:
    a, b = seeded_source(42), seeded_source(42)
    assert [a.randbelow(1000) for _ in range(50)] == [b.randbelow(1000) for _ in range(50)]
    src, private = resolve(None)
    assert private and 0 <= src.randbelow(10) < 10
    assert resolve(7)[1] is False
    assert resolve(system_source())[1] is True
    assert resolve(seeded_source(1))[1] is False


def test_lazy_uniform_exponential_is_exp1() -> None:
    """E = -ln(1 - U) from the lazy uniform: its interval midpoints follow Exp(1)."""
    from mpmath.libmp import to_float

    rng = seeded_source(9)
    values = []
    for _ in range(20_000):
        u = LazyUniform(rng)
        lo, hi = u.exponential(u.precision())
        assert to_float(lo) <= to_float(hi)
        values.append(to_float(lo))
    assert stats.kstest(values, "expon").pvalue > P_CUT


def test_lazy_uniform_refines_inside_its_interval() -> None:
    from mpmath.libmp import mpf_cmp

    u = LazyUniform(seeded_source(1))
    lo1, hi1 = u.interval(u.precision())
    u.refine()
    lo2, hi2 = u.interval(u.precision())
    assert mpf_cmp(lo1, lo2) <= 0 and mpf_cmp(hi2, hi1) <= 0 and u.bits == 128
