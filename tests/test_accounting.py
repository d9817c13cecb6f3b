"""dpfim.accounting: typed costs, one BASIC.compose(), the basic and tight accountants (issue 20).

The tight accountant is checked against closed forms computed here independently in mpmath:
the optimal composition of k identical (eps, delta) mechanisms (Kairouz, Oh, Viswanath 2015)
and the zCDP -> (eps, delta) conversions; and against the table of issue 20. Deliberately
broken accountants (one that drops delta, composes rho as a max, or charges LMM's per-step
entries) are shown to fail the same checks.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

from dpfim import accounting
from dpfim.accountants import BASIC, TIGHT
from dpfim.accounting import ApproxDP, BoundedRange, Cost, Neighbours, PureDP
from dpfim.errors import ParameterError
from dpfim.mechanisms import registry
from dpfim.mechanisms.thresholds import paper_split

pytest.importorskip("dp_accounting")
from dpfim import tight

F = Fraction
D6 = F(1, 10**6)
AR = Neighbours.ADD_REMOVE


def kov_delta(k: int, eps: float, delta: float, eps_total: float) -> mpmath.mpf:
    """delta(eps_total) of the k-fold composition of the optimal (eps, delta) pair, exactly:
    1 - (1-delta)^k + (1-delta)^k sum_l C(k,l) [p^(k-l) q^l - e^eps_total p^l q^(k-l)]_+ with
    p = e^eps/(1+e^eps), q = 1 - p (KOV 2015, the hockey-stick of randomised response)."""
    mpmath.mp.dps = 40
    e, d, t = mpmath.mpf(eps), mpmath.mpf(delta), mpmath.mpf(eps_total)
    p = mpmath.exp(e) / (1 + mpmath.exp(e))
    q = 1 - p
    s = mpmath.mpf(0)
    for ell in range(k + 1):
        term = mpmath.binomial(k, ell) * (
            p ** (k - ell) * q**ell - mpmath.exp(t) * p**ell * q ** (k - ell)
        )
        if term > 0:
            s += term
    return 1 - (1 - d) ** k + (1 - d) ** k * s


def kov_point(k: int, eps: float, delta: float, i: int) -> mpmath.mpf:
    """KOV 2015 Theorem 3.3 at eps_total = (k - 2i) eps: 1 - (1-delta)^k (1 - delta_i)."""
    e = mpmath.mpf(eps)
    di = (
        sum(
            mpmath.binomial(k, ell)
            * (mpmath.exp((k - ell) * e) - mpmath.exp((k - 2 * i + ell) * e))
            for ell in range(i)
        )
        / (1 + mpmath.exp(e)) ** k
    )
    return 1 - (1 - mpmath.mpf(delta)) ** k * (1 - di)


def kov_eps(k: int, eps: float, delta: float, target: float) -> float:
    """The exact optimal eps_total at target delta, by bisection on kov_delta."""
    lo, hi = 0.0, k * eps
    for _ in range(60):
        mid = (lo + hi) / 2
        if kov_delta(k, eps, delta, mid) > target:
            lo = mid
        else:
            hi = mid
    return hi


def test_the_kov_reference_agrees_with_theorem_3_3() -> None:
    for i in (0, 3, 40):
        got = kov_delta(365, 0.1, 1e-9, (365 - 2 * i) * 0.1)
        assert abs(got - kov_point(365, 0.1, 1e-9, i)) <= 1e-12 * got


@pytest.mark.parametrize(
    "k,eps,delta,target",
    [(365, "1/10", "1e-9", "1e-6"), (10, "1/2", "1e-5", "1e-3"), (50, "1/50", "0", "1e-6")],
)
@pytest.mark.slow
def test_tight_is_the_optimal_composition_and_never_below_it(
    k: int, eps: str, delta: str, target: str
) -> None:
    cost = Cost.of(ApproxDP(F(eps), F(delta)), AR, k)
    got = TIGHT.compose([cost], delta=F(target))
    exact = kov_eps(k, float(F(eps)), float(F(delta)), float(F(target)))
    assert exact <= float(got.eps) <= exact * 1.002 + 2e-6
    assert got.eps <= BASIC.compose([cost]).eps  # never above basic


def test_the_issue_table() -> None:
    lmm_like = Cost.of(ApproxDP(F(1, 10), F(1, 10**9)), AR, 365)
    em = Cost.of(BoundedRange(F(1, 10)), AR, 365)
    assert BASIC.compose([lmm_like]).eps == F(73, 2)
    t = TIGHT.compose([lmm_like], delta=D6)
    assert 10.48 <= float(t.eps) <= 10.5
    t = TIGHT.compose([em], delta=D6)
    assert 4.95 <= float(t.eps) <= 5.5
    # the standard conversion alone: rho = 365 * 0.01/8, rho + 2 sqrt(rho ln 1e6) = 5.4775...
    standard = dict((how, e) for e, how in tight.zcdp_epsilons(F(365, 800), D6))
    assert float(standard["standard conversion"]) == pytest.approx(5.477535370130 + 1e-6, abs=1e-9)
    mixed = [
        Cost.of(BoundedRange(F(1, 10)), AR, 182),
        Cost.of(ApproxDP(F(1, 10), F(1, 10**9)), AR, 183),
    ]
    m = TIGHT.compose(mixed, delta=D6)
    assert float(m.eps) < float(TIGHT.compose([lmm_like], delta=D6).eps)
    assert m.eps < BASIC.compose(mixed).eps


def rdp_reference(rho: float, delta: float) -> float:
    """min over a > 1 of a rho + (ln(1/delta) + (a-1) ln(1-1/a) - ln a)/(a-1)
    (Canonne, Kamath, Steinke 2020, Prop. 12 / Asoodeh et al.), on a fine grid."""
    best = float("inf")
    for j in range(1, 20000):
        a = mpmath.mpf(1) + mpmath.mpf(j) / 1000
        v = a * rho + (
            mpmath.log(1 / mpmath.mpf(delta)) + (a - 1) * mpmath.log(1 - 1 / a) - mpmath.log(a)
        ) / (a - 1)
        best = min(best, float(v))
    return best


def test_zcdp_conversion_against_its_closed_form() -> None:
    rho = F(365, 800)
    ref = rdp_reference(float(rho), 1e-6)
    got = min(e for e, _ in tight.zcdp_epsilons(rho, D6))
    assert ref - 1e-6 <= float(got) <= ref + 0.01  # the library's orders are a finite grid


def test_the_floats_are_rounded_up() -> None:
    x = F(1, 3)
    assert F(accounting.up(x)) >= x and F(accounting.down(x)) <= x
    assert F(accounting.up(x)) - F(accounting.down(x)) < F(1, 2**50)


# --- broken accountants are caught by the same checks ---------------------------------------


def _sound(got: Fraction, k: int, eps: float, delta: float, target: float) -> bool:
    return float(got) >= kov_eps(k, eps, delta, target)


@pytest.mark.slow
def test_an_accountant_that_drops_delta_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    cost = Cost.of(ApproxDP(F(1, 10), F(2, 10**9)), AR, 365)
    assert _sound(TIGHT.compose([cost], delta=D6).eps, 365, 0.1, 2e-9, 1e-6)
    monkeypatch.setattr(tight, "_pair", lambda m: (m.eps, F(0)))
    monkeypatch.setenv("DPFIM_NO_CACHE", "1")  # patched code: the kept result is not its own
    assert not _sound(TIGHT.compose([cost], delta=D6).eps, 365, 0.1, 2e-9, 1e-6)


def test_an_accountant_that_composes_rho_as_a_max_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    em = Cost.of(BoundedRange(F(1, 10)), AR, 365)
    ref = rdp_reference(365 * 0.01 / 8, 1e-6)
    assert float(TIGHT.compose([em], delta=D6).eps) >= ref - 1e-6
    monkeypatch.setattr(tight, "rho_of", lambda ms: max(m.eps**2 / 8 for m in ms))
    monkeypatch.setenv("DPFIM_NO_CACHE", "1")  # patched code: the kept result is not its own
    assert float(TIGHT.compose([em], delta=D6).eps) < ref - 1e-6


@pytest.mark.slow
def test_per_step_lmm_entries_would_under_report() -> None:
    """The run-level pair is charged (ApproxDP(eps, delta)); composing the steps of its
    ledger (noisy max, search, selection with the whole delta) would give far less."""
    p = registry.Public(F(1, 10), F(1, 10**9), neighbours="add-remove")
    lmm = registry.get("lmm")
    charged = TIGHT.compose([lmm.charge(p).times(365)], delta=D6)
    assert 10.48 <= float(charged.eps) <= 10.5
    sp = paper_split(p.eps, p.delta)
    steps = [
        Cost.of(PureDP(sp.alpha_m), AR, 365),
        Cost.of(PureDP(sp.alpha_s), AR, 365),
        Cost.of(ApproxDP(sp.alpha_a, sp.delta), AR, 365),
    ]
    per_step = TIGHT.compose(steps, delta=D6)
    assert not _sound(per_step.eps, 365, 0.1, 1e-9, 1e-6)
    assert _sound(charged.eps, 365, 0.1, 1e-9, 1e-6)


def test_relations_do_not_mix_and_basic_is_exact() -> None:
    a = Cost.of(PureDP(F(1, 3)), "replace")
    b = Cost.of(ApproxDP(F(1, 7), F(1, 10**6)), "add-remove", 2)
    with pytest.raises(ParameterError, match="do not compose"):
        BASIC.compose([a, b])
    total = BASIC.compose([a, Cost.of(ApproxDP(F(1, 7), F(1, 10**6)), "replace", 2)])
    assert (total.eps, total.delta) == (F(1, 3) + F(2, 7), F(2, 10**6))


def test_infeasible_delta_is_refused() -> None:
    cost = Cost.of(ApproxDP(F(1, 10), F(1, 10**8)), AR, 365)
    with pytest.raises(accounting.InfeasibleError):
        TIGHT.compose([cost], delta=F(1, 10**6))
    assert not TIGHT.fits([cost], F(100), F(1, 10**6))


def test_a_cost_survives_json() -> None:
    cost = Cost.of(BoundedRange(F(1, 7)), AR, 3).plus(Cost.of(PureDP(F(1, 11)), AR))
    assert Cost.from_json("add-remove", cost.to_json()) == cost
