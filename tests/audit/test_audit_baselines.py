"""The statistical privacy audit of the SPEC §6 baselines (docs/testing-privacy.md, "Baselines").

Each baseline runs through its real `run_*` function on count vectors (a finite universe of K
itemsets where the mechanism needs one), N outputs per side of each neighbouring pair with fixed
seeds. For every released event with enough mass the DP inequality
P[M(D) in S] <= e^eps P[M(D') in S] + delta is checked in both directions with one-sided
Clopper-Pearson bounds, Bonferroni over every bound of this file: false-alarm rate <= 1e-4 with
fresh seeds. A deliberately broken em (the monotone scale 1/eps used under replace-one) must fail
the same check.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import dpaudit as A
import pytest

from dpfim.mechanisms import baselines as B
from dpfim.mechanisms import registry
from dpfim.mechanisms.base import Outcome, VectorCounts
from dpfim.samplers.rng import seeded_source

N = int(os.environ.get("DPFIM_AUDIT_N_BASELINES", 20_000))
K = 8  # universe size for the mechanisms that need one
EPS = Fraction(1)
DELTA = Fraction(1, 10**6)
GROWTH = 3  # choosing: every add/remove pair below raises at most 3 counts


@dataclass(frozen=True)
class Case:
    mechanism: str
    neighbours: str
    d: tuple[int, ...]
    d_prime: tuple[int, ...]
    why: str
    delta: Fraction = DELTA


def _run(name: str, neighbours: str, counts: Sequence[int], rng: Any) -> Outcome:
    """The registry's run function, the one `dpfim mine` calls (dpfim/mechanisms/registry.py)."""
    vec = VectorCounts(counts)
    if name == "em-broken":  # the monotone weight exp(eps c) under replace-one: not private
        return B.run_em(vec, EPS, "add-remove", K, rng)
    spec = registry.get(name)
    public = registry.Public(
        EPS,
        DELTA,
        neighbours=neighbours,
        candidates=2,
        max_record_items=3,  # choosing's growth bound C(3, 2) = GROWTH
        universe_size=K if spec.needs_vocabulary else None,
    )
    assert not spec.needs_record_bound or public.growth == GROWTH
    return spec.run(vec, public, rng)


def _chunk(args: tuple[str, str, tuple[int, ...], int, int]) -> list[A.Output]:
    name, neighbours, counts, seed, n = args
    rng = seeded_source(seed)
    vec = VectorCounts(counts)
    out: list[A.Output] = []
    for _ in range(n):
        o = _run(name, neighbours, counts, rng)
        if o.index is not None:
            idx: int | None = vec.position(o.index)
        else:
            idx = -1 if o.zero_pick else None  # -1: a zero-count itemset of the universe
        out.append((0, 1, idx))  # only the itemset (or none) is released
    return out


def sample(name: str, neighbours: str, counts: Sequence[int], seed: int) -> list[A.Output]:
    jobs = [(name, neighbours, tuple(counts), seed * 1000 + k, N // 2) for k in range(2)]
    with ProcessPoolExecutor(2) as pool:
        return [o for part in pool.map(_chunk, jobs) for o in part]


CASES = [
    Case("em", "replace", (5, 5), (6, 4), "replace-one raises one count and lowers another"),
    Case("em", "add-remove", (5, 5), (6, 5), "monotone form at its tight edge"),
    Case("noisy-max-laplace", "replace", (5, 5), (6, 4), "as for em"),
    Case("noisy-max-laplace", "add-remove", (4, 4, 4), (5, 5, 5), "all counts rise together"),
    Case("permute-and-flip", "replace", (5, 5), (6, 4), "as for em"),
    Case("permute-and-flip", "add-remove", (5, 5), (6, 5), "monotone form at its tight edge"),
    Case("stability", "replace", (60, 3), (59, 4), "gap 57 against 55, threshold T = 57"),
    Case("stability", "replace", (10, 10), (11, 9), "the top changes: release only at delta"),
    Case("choosing", "add-remove", (131, 50), (132, 51), "c(1) at the threshold T = 131"),
    Case("choosing", "add-remove", (140, 0), (140, 1), "a new itemset enters the support"),
    Case("limited-domain", "add-remove", (20, 5, 5), (20, 5, 6), "h_3 moves the threshold"),
    Case("limited-domain", "add-remove", (20, 19, 5), (21, 20, 5), "the top two rise together"),
]
BROKEN = Case("em-broken", "replace", (5, 5), (6, 4), "monotone weight under replace-one")


def _check(
    cases: list[Case], samples: dict[int, tuple[list[A.Output], list[A.Output]]]
) -> list[A.Check]:
    total = sum(A.n_bounds(side, "full") for k in samples for side in samples[k])
    alpha_each = A.FAMILY_ALPHA / total
    checks = []
    for k, case in enumerate(cases):
        d, dp = samples[k]
        delta = 0.0 if case.mechanism in B_PURE else float(case.delta)
        for left, right, direction in ((d, dp, "D vs D'"), (dp, d, "D' vs D")):
            checks.append(
                A.check_pair(
                    f"{case.mechanism} {case.d}/{case.d_prime}",
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


B_PURE = ("em", "em-broken", "noisy-max-laplace", "permute-and-flip")


@pytest.mark.slow
def test_every_baseline_satisfies_its_claim() -> None:
    samples = {
        k: (
            sample(c.mechanism, c.neighbours, c.d, 700 + 2 * k),
            sample(c.mechanism, c.neighbours, c.d_prime, 701 + 2 * k),
        )
        for k, c in enumerate(CASES)
    }
    checks = _check(CASES, samples)
    bad = [v for c in checks for v in c.violations]
    assert not bad, bad
    assert all(c.n_events > 0 for c in checks)  # every pair was actually tested
    # the stability pair at the threshold releases an itemset on one side about half the time
    released = sum(1 for o in samples[6][0] if o[2] is not None) / N
    assert 0.2 < released < 0.8


@pytest.mark.slow
def test_the_baseline_audit_catches_a_broken_em() -> None:
    samples = {
        0: (
            sample(BROKEN.mechanism, "replace", BROKEN.d, 900),
            sample(BROKEN.mechanism, "replace", BROKEN.d_prime, 901),
        )
    }
    checks = _check([BROKEN], samples)
    assert any(c.violations for c in checks), [c.eps_lower_bound for c in checks]
