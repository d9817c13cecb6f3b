"""benchmarks/tight_exact.py describes the shipped mechanisms: its exact laws against seeded runs.

The calculator (an evaluation tool, docs/evaluation.md) computes lmm-tight's law of
(l, top itemset or not) and limited-domain's P(top) in closed form; here the production code
(`lmm_tight.run`, `baselines.run_limited_domain`) is run on small count vectors and its
frequencies are tested against those numbers: a chi-square goodness-of-fit test on the joint
law of (l, top or not, "inf") and an exact binomial test on P(top), each at level 1e-4. With 8
such tests the false-alarm rate for fresh seeds is at most 8e-4 (Bonferroni); the seeds are
fixed. The last test shows the comparison has power: the law for a wrong epsilon is rejected.
"""

from __future__ import annotations

import functools
import math
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import tight_exact as te

from dpfim.mechanisms import lmm_tight as lt
from dpfim.mechanisms.base import VectorCounts
from dpfim.mechanisms.baselines import run_limited_domain
from dpfim.samplers.rng import seeded_source

LEVEL = 1e-4
RUNS = 2000

CASES = [
    # (counts, eps, delta): several l, tops and non-tops, "inf" all occur
    ([70, 45, 40, 20, 5], "1", "1e-3"),
    ([60, 60, 58, 30, 30, 2], "0.5", "1e-2"),
    ([40, 38, 37, 36, 1], "2", "1e-2"),
]


@functools.cache
def _tally(counts: tuple[int, ...], eps: str, delta: str, seed: int) -> Counter[object]:
    """Seeded runs of the shipped lmm-tight: (l, top?) or "inf" per run."""
    rng = seeded_source(seed)
    c1 = max(counts)
    out: Counter[object] = Counter()
    for _ in range(RUNS):
        vec = VectorCounts(counts)
        o = lt.run(vec, Fraction(eps), Fraction(delta), rng)
        if o.ell is None:
            out["inf"] += 1
        else:
            top = o.index is not None and int(vec.counts[o.index]) == c1
            out[(o.ell, top)] += 1
    return out


def _expected(counts: list[int], eps: Fraction, delta: Fraction) -> dict[object, float]:
    ex = te.tight_exact(te.Profile.of(counts), te.TightParams.shipped(eps, delta))
    assert ex.err < 1e-12
    law: dict[object, float] = {"inf": ex.law.get("inf", 0.0)}
    for rank, p in ex.law.items():
        if rank != "inf":
            law[(rank, True)] = ex.top.get(int(rank), 0.0)
            law[(rank, False)] = p - law[(rank, True)]
    assert math.isclose(sum(law.values()), 1.0, abs_tol=1e-12)
    return law


def _gof_pvalue(seen: Counter[object], law: dict[object, float]) -> float:
    """Chi-square goodness of fit; cells with expected count < 5 are pooled."""
    obs, exp, pool_o, pool_e = [], [], 0, 0.0
    for key, p in law.items():
        if p * RUNS >= 5:
            obs.append(seen[key])
            exp.append(p * RUNS)
        else:
            pool_o += seen[key]
            pool_e += p * RUNS
    # outcomes the law gives no mass go to the pooled cell
    pool_o += sum(v for k, v in seen.items() if k not in law)
    if pool_e > 0 or pool_o > 0:
        obs.append(pool_o)
        exp.append(max(pool_e, 1e-12))
    return float(stats.chisquare(np.array(obs), np.array(exp)).pvalue)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]} eps={c[1]}" for c in CASES])
@pytest.mark.slow
def test_lmm_tight_law_matches_the_shipped_mechanism(case: tuple[list[int], str, str]) -> None:
    counts, eps, delta = case
    law = _expected(counts, Fraction(eps), Fraction(delta))
    assert sum(p > 0.02 for p in law.values()) >= 3  # a non-trivial law
    seen = _tally(tuple(counts), eps, delta, seed=41)
    assert _gof_pvalue(seen, law) > LEVEL
    tops = sum(v for k, v in seen.items() if isinstance(k, tuple) and k[1])
    p_top = sum(p for k, p in law.items() if isinstance(k, tuple) and k[1])
    assert stats.binomtest(tops, RUNS, p_top).pvalue > LEVEL


@pytest.mark.parametrize(
    ("counts", "eps", "k"),
    [([30, 29, 27, 5, 3], "0.3", 3), ([12, 12, 11, 10, 4, 3, 1], "1", 4)],
)
@pytest.mark.slow
def test_limited_domain_p_top_matches_the_shipped_mechanism(
    counts: list[int], eps: str, k: int
) -> None:
    delta = Fraction(1, 100)
    p_top = te.p_top_selection(te.Profile.of(counts), k, float(eps), -math.log(float(delta)))
    assert 0.1 < p_top < 0.9
    rng = seeded_source(43)
    tops = 0
    for _ in range(RUNS):
        vec = VectorCounts(counts)
        o = run_limited_domain(vec, Fraction(eps), delta, k, rng)
        tops += o.index is not None and int(vec.counts[o.index]) == max(counts)
    assert stats.binomtest(tops, RUNS, p_top).pvalue > LEVEL


def test_the_comparison_rejects_a_wrong_law() -> None:
    """Power: the law computed for eps = 1.5 is rejected on runs of the mechanism at eps = 1."""
    counts, delta = CASES[0][0], CASES[0][2]
    wrong = _expected(counts, Fraction(3, 2), Fraction(delta))
    assert _gof_pvalue(_tally(tuple(counts), "1", delta, seed=41), wrong) < 1e-8


def test_the_calculator_agrees_with_an_independent_brute_force_sum() -> None:
    """P(l = 2) and P(l = 1) by a direct double sum over (G, nu) on a tiny case."""
    counts, eps, delta = [9, 4, 3], Fraction(2), Fraction(1, 10)
    par = te.TightParams.shipped(eps, delta)
    ex = te.tight_exact(te.Profile.of(counts), par)
    q1, q2 = math.exp(-float(par.eps1)), math.exp(-float(par.eps2))

    def pmf(q: float, x: int) -> float:
        return (1 - q) / (1 + q) * q ** abs(x)

    f0, f1 = 9 - 4, 9 - 3  # c(1) - c(2), c(1) - c(3)
    p1 = sum(pmf(q1, g) for g in range(-3000, 3001) if f0 - g > par.thresholds[0])
    p2 = sum(
        pmf(q1, g) * pmf(q2, v)
        for g in range(-400, 401)
        if f0 - g <= par.thresholds[0]
        for v in range(-400, 401)
        if f1 + v - g > par.thresholds[1]
    )
    assert math.isclose(ex.law[1], p1, rel_tol=1e-9)
    assert math.isclose(ex.law[2], p2, rel_tol=1e-6)
