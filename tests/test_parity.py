"""Supports through parity coefficients (dpfim/mechanisms/parity.py, docs/privacy.md §24): the
constants against a hand computation, the exact inversion, and the privacy invariant (one
record's move costs exactly rho_s) by brute force over every record of a small universe."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from unittest import mock

import pytest

from dpfim.mechanisms import parity

# D = {a}, {b}, {a, b} over items a = 0, b = 1
D = [(0,), (1,), (0, 1)]
# records: {a, b} x 3, {a} x 2, {b} x 1, {} x 4: n = 10, c(a) = 5, c(b) = 4, c(ab) = 3
N, EXACT = 10, [5, 4, 3]


def test_the_coefficients_by_hand() -> None:
    """f(S) = sum over records of (-1)^{|x & S|}: f({}) = 10, f(a) = 10 - 2*5 = 0,
    f(b) = 10 - 2*4 = 2, f(ab) = 3 - 2 - 1 + 4 = 4 (= n - 2 c(a) - 2 c(b) + 4 c(ab))."""
    support = {(): N, (0,): 5, (1,): 4, (0, 1): 3}
    got = [parity.exact_coefficient(s, support) for s in [(), (0,), (1,), (0, 1)]]
    assert got == [10, 0, 2, 4]


def test_the_shares_and_variances_by_hand() -> None:
    """a_S = sum over X in D containing S of 4^-|X|: a({}) = 1/4 + 1/4 + 1/16 = 9/16,
    a(a) = a(b) = 1/4 + 1/16 = 5/16, a(ab) = 1/16; p_S proportional to sqrt(a_S), i.e. to
    (3, sqrt 5, sqrt 5, 1); sigma_S^2 = 1 / (2 rho_s p_S) (add/remove); Var c^(a) =
    (sigma_{}^2 + sigma_a^2) / 4, Var c^(ab) = (sum of the four) / 16."""
    rho = Fraction(1, 100)
    plan = parity.plan(D, rho, replace=False)
    assert plan.coefficients == ((), (0,), (1,), (0, 1))
    r5 = math.sqrt(5)
    shares = [3 / (4 + 2 * r5), r5 / (4 + 2 * r5), r5 / (4 + 2 * r5), 1 / (4 + 2 * r5)]
    for s2, p in zip(plan.sigma2, shares, strict=True):
        assert float(s2) == pytest.approx(1 / (2 * 0.01 * p), rel=1e-6)
    s = [float(v) for v in plan.sigma2]
    assert [float(v) for v in plan.variances] == pytest.approx(
        [(s[0] + s[1]) / 4, (s[0] + s[2]) / 4, sum(s) / 16], rel=1e-12
    )
    assert float(plan.n_variance or 0) == pytest.approx(s[0])
    # against direct noise on each of the 3 supports (sigma^2 = 3 / (2 rho) = 150): smaller
    assert max(float(v) for v in plan.variances) < 150


def test_replace_one_measures_no_n_and_pays_four_times() -> None:
    plan = parity.plan(D, Fraction(1, 100), replace=True)
    assert plan.coefficients == ((0,), (1,), (0, 1)) and plan.n_variance is None
    # r = (sqrt(5), sqrt(5), 1)/4 normalised; sigma^2 = 4 / (2 rho p)
    r5 = math.sqrt(5)
    p_ab = 1 / (1 + 2 * r5)
    assert float(plan.sigma2[2]) == pytest.approx(4 / (2 * 0.01 * p_ab), rel=1e-6)


@pytest.mark.parametrize("replace", [False, True])
def test_one_record_costs_exactly_rho_s(replace: bool) -> None:
    """The privacy invariant (§24.2), exact: for every record x over the released items (and a
    record outside them), sum_S d_S(x)^2 / (2 sigma_S^2) <= rho_s; d_S = chi_S(x) (add/remove:
    present or absent; then every record costs exactly rho_s) or chi_S(x) - chi_S(x')
    (replace-one, |d_S| <= 2)."""
    keys = [(0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]
    rho = Fraction(3, 1000)
    plan = parity.plan(keys, rho, replace)
    records = [frozenset(c) for r in range(4) for c in itertools.combinations(range(3), r)]

    def chi(s: tuple[int, ...], x: frozenset[int]) -> int:
        return -1 if len(x & set(s)) % 2 else 1

    costs = []
    pairs = itertools.product(records, records) if replace else ((x, None) for x in records)
    for x, y in pairs:
        cost = Fraction(0)
        for s, s2 in zip(plan.coefficients, plan.sigma2, strict=True):
            d = chi(s, x) - (chi(s, y) if y is not None else 0)
            cost += Fraction(d * d) / (2 * s2)
        costs.append(cost)
    if replace:  # a pair flips chi_S only where |S & (x ^ y)| is odd: never all S at once here
        assert max(costs) <= rho
    else:
        assert max(costs) == rho  # every chi_S is +-1: each record costs exactly rho_s


def test_the_inversion_is_exact_and_each_coefficient_moves_what_it_should() -> None:
    """No noise: the estimates are the exact supports. Noise +8 on f(ab) alone moves c^(ab) by
    8/4 = 2 and nothing else; +4 on f({}) moves c^(a), c^(b) by 2 and c^(ab) by 1."""

    def run(noise: dict[tuple[int, ...], int]) -> parity.Estimates:
        order = iter([(), (0,), (1,), (0, 1)])
        with mock.patch.object(
            parity, "discrete_gaussian", lambda s2, rng: noise.get(next(order), 0)
        ):
            return parity.release(D, EXACT, N, Fraction(1, 100), False, rng=None)  # type: ignore[arg-type]

    assert run({}).supports == (5, 4, 3) and run({}).noisy_n == 10
    assert run({(0, 1): 8}).supports == (5, 4, 5)
    assert run({(): 4}).supports == (7, 6, 4) and run({(): 4}).noisy_n == 14


def test_a_set_that_is_not_downward_closed_is_refused() -> None:
    with pytest.raises(ValueError, match="not downward closed"):
        parity.plan([(0,), (0, 1)], Fraction(1, 10), replace=False)


@pytest.mark.slow
def test_the_estimates_are_unbiased_with_the_stated_variance() -> None:
    """Seeded, 4,000 draws of the add/remove release of D: each estimate's mean error within 4
    standard errors of 0 and its variance within 10 % of the plan's (a sample variance of
    4,000 has a relative sd of 2.2 %: 10 % is 4.5 sd); false alarm below 1e-4 per check."""
    from dpfim.samplers.rng import seeded_source

    rng = seeded_source(11)
    plan = parity.plan(D, Fraction(1, 100), False)
    draws = [
        parity.release(D, EXACT, N, Fraction(1, 100), False, rng).supports for _ in range(4000)
    ]
    for j, var in enumerate(plan.variances):
        errs = [float(d[j]) - EXACT[j] for d in draws]
        mean = sum(errs) / len(errs)
        sample = sum((e - mean) ** 2 for e in errs) / (len(errs) - 1)
        assert abs(mean) < 4 * math.sqrt(float(var) / len(errs))
        assert sample == pytest.approx(float(var), rel=0.10)
