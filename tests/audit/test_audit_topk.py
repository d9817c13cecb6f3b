"""The statistical privacy audit of top-k (docs/testing-privacy.md, "Top-k").

Peeling (dpfim.topk.peel, the code `dpfim mine --top K` runs) with noisy supports
(dpfim.topk.add_supports) through the registry's real run functions, on count vectors. The
released view is the ordered tuple of selected positions plus, with supports, one bit: whether
every noisy support is at least its D-count + 1 (a fixed output event for both sides; it is where
a support noise scaled for sensitivity 1 instead of m shows: a record in all m released itemsets
moves all m supports together). Every event with >= 30 hits is checked in both directions,
P[M(D) in S] <= e^eps P[M(D') in S] + delta, with Clopper-Pearson bounds, Bonferroni over the
whole file: false-alarm rate <= 1e-4 with fresh seeds (fixed seeds here: deterministic).

A broken variant (supports with DLap(1/eps_sup), sensitivity 1) must fail the same check, and a
peeling that forgets to remove released itemsets must be caught by the distinctness check.

Tight rounds (docs/privacy.md §20.4, `mine --accountant tight`): the same peeling at the per-round
eps0 that dpfim.accounting.split gives, checked against the run's (eps, delta) (pure rounds then
spend delta); a split that gives every round the whole selection eps (no composition) is caught.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from typing import Any
from unittest import mock

import dpaudit as A
import pytest

from dpfim import accounting
from dpfim import release as topk
from dpfim.accountants import TIGHT, get_accountant
from dpfim.mechanisms import registry
from dpfim.mechanisms.base import VectorCounts
from dpfim.samplers.rng import seeded_source
from dpfim.views import Without

SCALE = float(os.environ.get("DPFIM_AUDIT_TOPK_SCALE", 1))  # more runs per side: a larger value
EPS = Fraction(1)
DELTA = Fraction(1, 10**6)
UNIVERSE = 6


@dataclass(frozen=True)
class Case:
    mechanism: str
    neighbours: str
    k: int
    d: tuple[int, ...]
    d_prime: tuple[int, ...]
    why: str
    supports: bool = True
    share: Fraction = Fraction(1, 2)  # of EPS to the supports (the rest selects)
    n: int = 5000  # outputs per side
    accountant: str = "basic"  # how the K rounds split (EPS, delta): basic or tight (§20.4)
    delta: Fraction = DELTA
    as_set: bool = False  # release view: the set of selected positions (a post-processing)


@functools.cache
def _split(case: Case) -> accounting.Split:
    """The case's split of (EPS, delta) among its K rounds (computed once per case: the tight
    one is a search)."""
    spec = registry.get(case.mechanism)
    eps_sel, eps_sup = topk.shares(EPS, case.supports, case.share)
    public = registry.Public(eps_sel, case.delta, neighbours=case.neighbours, candidates=3)
    return get_accountant(case.accountant).split(
        topk.round_cost(spec, public), case.k, eps_sel, eps_sup, case.delta
    )


def _release(case: Case, counts: Sequence[int], rng: Any, variant: str) -> A.Output:
    spec = registry.get(case.mechanism)
    vec = VectorCounts(counts)
    eps_sel, eps_sup = topk.shares(EPS, case.supports, case.share)
    public = registry.Public(
        eps_sel,
        case.delta,
        neighbours=case.neighbours,
        candidates=3,
        universe_size=UNIVERSE if spec.needs_vocabulary else None,
    )
    split = _split(case)
    round_p = public.scaled(split.eps0, split.delta0)
    if variant == "tight without composition":  # every round gets the whole selection eps
        round_p = public.scaled(eps_sel, split.delta0)

    def zero(view: Without, source: Any) -> tuple[int, ...]:
        return (-2 - view.removed_zero,)  # a zero-count itemset of the universe (not named)

    namer = zero if spec.needs_vocabulary else None
    if variant == "no removal":  # released itemsets stay in the counts of later rounds
        with mock.patch.object(Without, "remove", lambda self, key, count: None):
            picks, _, _ = topk.peel(vec, spec, public, case.k, rng, namer, round_p=round_p)
    else:
        picks, _, _ = topk.peel(vec, spec, public, case.k, rng, namer, round_p=round_p)
    if case.supports:
        eps_noise = eps_sup * len(picks) if variant == "supports at sensitivity 1" else eps_sup
        picks = topk.add_supports(picks, eps_noise, rng)
    sel = tuple(q.ids[0] if q.ids[0] >= 0 else -1 for q in picks)
    if case.as_set:
        sel = tuple(sorted(sel))
    ref = dict(enumerate(case.d))  # D's counts: the same fixed event on both sides
    above = all(
        q.noisy_support is not None and q.noisy_support >= ref.get(q.ids[0], 0) + 1 for q in picks
    )
    return (3 * int(case.supports and bool(picks) and above), 1, sel)


def _chunk(args: tuple[Case, tuple[int, ...], int, int, str]) -> list[A.Output]:
    case, counts, seed, n, variant = args
    rng = seeded_source(seed)
    return [_release(case, counts, rng, variant) for _ in range(n)]


def sample(case: Case, counts: Sequence[int], seed: int, variant: str = "") -> list[A.Output]:
    per = int(case.n * SCALE) // 2
    jobs = [(case, tuple(counts), seed * 1000 + j, per, variant) for j in range(2)]
    with ProcessPoolExecutor(2) as pool:
        return [o for part in pool.map(_chunk, jobs) for o in part]


# A record in all K released itemsets: stability rounds with gaps far above its threshold, so
# the selection is the same on both sides and the supports carry the whole loss. 90 % of EPS
# goes to the supports: correct, their loss is 0.9 <= 1; scaled for sensitivity 1 it is
# 3 * 0.9 = 2.7, and the event "every noisy support >= its D-count + 1" has probability 0.024
# on D against 0.0016 on D' (ratio e^2.7): 16,000 runs per side separate them at any Bonferroni
# level used here.
ALL_K = Case(
    "stability",
    "replace",
    3,
    (10000, 7000, 4000, 1000),
    (9999, 6999, 3999, 1000),
    "a record in all K = 3 released itemsets is replaced by one in none: every released "
    "support moves by 1 at once (L1 change K)",
    share=Fraction(9, 10),
    n=16000,
)
CASES = [
    ALL_K,
    Case(
        "em",
        "replace",
        3,
        (400, 300, 30, 30, 0, 0),
        (400, 300, 31, 29, 0, 0),
        "a tie at rank K = 3: one replaced record decides which of the tied pair is released",
    ),
    Case(
        "limited-domain",
        "add-remove",
        2,
        (400, 300, 100, 5),
        (401, 301, 100, 5),
        "open universe, add/remove: a record in both released itemsets",
    ),
    Case(
        "lmm",
        "replace",
        3,
        (5000, 3000, 1200, 1200),
        (5000, 3000, 1201, 1199),
        "lmm rounds: two clear winners, then a tie that only the zero tail can certify "
        "(none or one of the tied pair)",
        supports=False,
    ),
]
BROKEN = ALL_K

# Tight rounds. em under add/remove, K = 3 of 6 equal counts, a record in three of them: the
# release's set of picks carries the loss of all three rounds. At (1, 1e-3) the tight split
# gives eps0 = 0.39796 (basic 1/3); the largest log-ratio of a set is then 0.79 (exact, by
# enumeration), within eps = 1. Giving each round the whole eps (no composition) makes it 2.16
# ({3, 4, 5}: probability 0.05 on D against 0.0058 on D'): caught with 10,000 runs per side.
TIGHT_EM = Case(
    "em",
    "add-remove",
    3,
    (10, 10, 10, 10, 10, 10),
    (11, 11, 11, 10, 10, 10),
    "tight em rounds: a record in three of six equally frequent pairs",
    supports=False,
    n=10000,
    accountant="tight",
    delta=Fraction(1, 1000),
    as_set=True,
)
TIGHT_CASES = [
    TIGHT_EM,
    dataclasses.replace(CASES[1], accountant="tight", delta=Fraction(1, 1000)),  # em + supports
    dataclasses.replace(CASES[2], accountant="tight", delta=Fraction(1, 1000)),  # limited-domain
    dataclasses.replace(CASES[3], accountant="tight"),  # lmm
    Case(
        "permute-and-flip",
        "add-remove",
        4,
        (10, 10, 10, 10, 10, 10),
        (11, 11, 11, 11, 10, 10),
        "tight pure rounds (they spend delta): a record in four of six equal pairs",
        supports=False,
        accountant="tight",
        delta=Fraction(1, 1000),
        as_set=True,
    ),
]


def _check(cases: list[Case], samples: dict[int, tuple[list[A.Output], list[A.Output]]]) -> Any:
    total = sum(A.n_bounds(side, "full") for k in samples for side in samples[k])
    alpha_each = A.FAMILY_ALPHA / total
    checks = []
    for k, case in enumerate(cases):
        d, dp = samples[k]
        pure = registry.get(case.mechanism).pure and case.accountant == "basic"
        delta = 0.0 if pure else float(case.delta)  # under tight, pure rounds spend delta
        for left, right, direction in ((d, dp, "D vs D'"), (dp, d, "D' vs D")):
            checks.append(
                A.check_pair(
                    f"{case.mechanism} top-{case.k} {case.d}/{case.d_prime}",
                    left,
                    right,
                    "full",
                    float(EPS),
                    delta,
                    alpha_each,
                    direction,
                )
            )
    return checks


@pytest.mark.slow
def test_top_k_peeling_with_supports_satisfies_its_ledger() -> None:
    samples = {
        k: (sample(c, c.d, 500 + 2 * k), sample(c, c.d_prime, 501 + 2 * k))
        for k, c in enumerate(CASES)
    }
    checks = _check(CASES, samples)
    bad = [v for c in checks for v in c.violations]
    assert not bad, bad
    assert all(c.n_events > 0 for c in checks)
    for k, case in enumerate(CASES):  # released itemsets are distinct, in every run
        assert all(len(set(o[2])) == len(o[2]) for o in samples[k][0] + samples[k][1]), case
    # the tie at rank 3 is really decided by the noise: both of the tied pair are released
    thirds = {o[2][2] for o in samples[1][0] if len(o[2]) == 3}
    assert {2, 3} <= thirds
    # the all-K pair: the supports event has mass on both sides (the check had power)
    assert sum(o[0] for o in samples[0][1]) > 0


@pytest.mark.slow
def test_the_top_k_audit_catches_supports_scaled_for_sensitivity_1() -> None:
    samples = {
        0: (
            sample(BROKEN, BROKEN.d, 900, "supports at sensitivity 1"),
            sample(BROKEN, BROKEN.d_prime, 901, "supports at sensitivity 1"),
        )
    }
    checks = _check([BROKEN], samples)
    assert any(c.violations for c in checks), [c.eps_lower_bound for c in checks]


@pytest.mark.slow
def test_the_top_k_audit_catches_peeling_that_forgets_to_remove() -> None:
    case = CASES[0]
    outs = sample(dataclasses.replace(case, n=400), case.d, 950, "no removal")
    assert any(len(set(o[2])) < len(o[2]) for o in outs)  # a released itemset came back


def test_the_tight_cases_really_get_a_larger_eps0() -> None:
    """The tight audit is about something: its rounds run above basic's eps_sel / K."""
    spec = registry.get("em")
    public = registry.Public(EPS, TIGHT_EM.delta, neighbours="add-remove")
    sp = TIGHT.split(topk.round_cost(spec, public), 3, EPS, Fraction(0), TIGHT_EM.delta)
    assert sp.eps0 == Fraction("0.39796")


@pytest.mark.slow
def test_top_k_rounds_at_the_tight_eps0_satisfy_the_run_s_budget() -> None:
    samples = {
        k: (sample(c, c.d, 700 + 2 * k), sample(c, c.d_prime, 701 + 2 * k))
        for k, c in enumerate(TIGHT_CASES)
    }
    checks = _check(TIGHT_CASES, samples)
    bad = [v for c in checks for v in c.violations]
    assert not bad, bad
    assert all(c.n_events > 0 for c in checks)
    for k, case in enumerate(TIGHT_CASES):  # released itemsets are distinct, in every run
        assert all(len(set(o[2])) == len(o[2]) for o in samples[k][0] + samples[k][1]), case


@pytest.mark.slow
def test_the_top_k_audit_catches_a_tight_split_without_composition() -> None:
    variant = "tight without composition"
    samples = {
        0: (
            sample(TIGHT_EM, TIGHT_EM.d, 990, variant),
            sample(TIGHT_EM, TIGHT_EM.d_prime, 991, variant),
        )
    }
    checks = _check([TIGHT_EM], samples)
    assert any(c.violations for c in checks), [c.eps_lower_bound for c in checks]
