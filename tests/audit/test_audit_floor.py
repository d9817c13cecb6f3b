"""The statistical privacy audit of lmm-floor (docs/privacy.md §22, docs/testing-privacy.md).

Two levels, like the audits of lmm-tight (test_audit_tight.py) and of the file pipeline
(test_audit_files.py):

1. **Files.** Neighbouring files (D' = D plus one basket) through `dpfim.mine_file` with
   `mechanism="lmm-floor"`, add/remove neighbours and the shipped constants: the distribution of
   the released JSON (timestamp dropped) must satisfy (eps, delta) in both directions. The files
   sit on the mechanism's edges: a tie wider than the default rank whose deep rank passes about
   half the time, and a lone top at the default rank's "none" boundary.
2. **Count vectors.** The real `run_split` on add/remove pairs with thresholds lowered (any
   data-independent thresholds keep the guarantee, §22.1), so that passes, "no pass" and ties at
   the boundary all carry mass; two views: the released l alone, (eps1 + eps2, 0) (Lemma S'), and
   the full release (l, itemset), (eps, delta) (§22.5).
3. **Replace-one** (§22.8: the add/remove steps at eps/2, delta/(1 + e^(eps/2)) by group
   privacy): the registry's `MECHANISM.run` under `neighbours="replace"` on replace pairs whose
   counts move in opposite directions, at the replace form's "none" boundary, and the same
   through `mine_file(neighbours="replace")` (one pair replaces a record past the length cap);
   broken variant: the replace form without the halving, caught on its own boundary pair.

One-sided Clopper-Pearson bounds, Bonferroni over every bound of one test function: each function
raises a false alarm with probability <= 1e-4 for fresh seeds (the seeds are fixed).

Broken variants the audit must catch: a noiseless search (G = nu = 0: l becomes a deterministic
function of the data), and the default rank's "none" weight without its 1/delta (the selection's
delta is then not paid). The first is caught at file level, both at count-vector level. Both are
gross; the subtle mistakes -- not charging eps1 on "no pass" (the default rank given the full eps)
and an offset of the wrong direction (G <= 0) -- move the law by far less than these sample sizes
resolve and are covered only by the exact tests of tests/test_lmm_floor.py.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any
from unittest import mock

import dpaudit as A
import pytest

from dpfim.api import mine_file
from dpfim.mechanisms import baselines
from dpfim.mechanisms import lmm_floor as lf
from dpfim.mechanisms.base import Outcome, Public, VectorCounts
from dpfim.samplers.rng import seeded_source

N = int(os.environ.get("DPFIM_AUDIT_N_FLOOR", 3000))  # per side, count vectors
RUNS = int(os.environ.get("DPFIM_AUDIT_RUNS_FLOOR", 800))  # per side, files
EPS = Fraction(1)
DELTA = Fraction(1, 1000)
SPLIT = lf.make_split(EPS, DELTA)  # eps1 = 1/100, eps2 = 1/50, alpha = 97/100
CLAIMS = {"ell": (float(SPLIT.eps1 + SPLIT.eps2), 0.0), "full": (float(EPS), float(DELTA))}


# --- 1. files ---------------------------------------------------------------------------------


def basket(groups: Sequence[tuple[str, int]]) -> str:
    """A basket file: each (line, times) repeated."""
    return "".join(line + "\n" for line, times in groups for _ in range(times))


@dataclass(frozen=True)
class FilePair:
    name: str
    d: str
    d_prime: str
    options: dict[str, Any]


# At eps = 1, delta = 1e-3, candidates = 2: tested ranks 4, 8, ...; T(4) = ceil(1 + (ln 4 +
# ln 1000 + ln 9)/0.97 + 275) = 287, and a pass at 4 needs c(1) - c(5) + nu - G > 287 with
# G >= 0 of mean ~99: with c(1) - c(5) = 339 rank 4 passes in about a third of the runs, a
# deeper rank in some, and the rest fall back to the default rank 2 (inside the 4-way tie: none).
TOP = 340
WIDE = [(f"a{i},b{i}", TOP) for i in range(4)] + [("c,d", 1)]
# Nothing passes (c(1) - c(5) = 12): limited-domain at the default rank 2 with a_d = 0.99, "none"
# weighing (2/delta) e^(0.99 (c(3) + 1)) against 2 e^(0.99 c(1)): about half at c(1) - c(3) = 8.
LONE = [("x,y", 12), ("x,z", 12), ("u,v", 4), ("w,t", 1)]
FILE_PAIRS = [
    FilePair(
        "a record adds to every pair of a wide tie",
        basket(WIDE),
        basket([*WIDE, ("a0,b0,a1,b1,a2,b2,a3,b3", 1)]),
        {},
    ),
    FilePair(
        "a record adds to the tie's runner-up at rank 5",
        basket(WIDE),
        basket([*WIDE, ("c,d", 1)]),
        {},
    ),
    FilePair("the default rank's none boundary", basket(LONE), basket([*LONE, ("u,v", 1)]), {}),
    FilePair("a record breaks the lone tie", basket(LONE), basket([*LONE, ("x,y", 1)]), {}),
]
FILE_OPTIONS = {"mechanism": "lmm-floor", "neighbours": "add-remove", "size": 2, "candidates": 2}


def _released(args: tuple[str, str, int, int, str, dict[str, Any]]) -> list[str]:
    text, path, first, n, variant, options = args
    Path(path).write_text(text)
    out = []
    for seed in range(first, first + n):
        with _variant(variant):
            result = mine_file(path, eps=str(EPS), delta=str(DELTA), seed=seed, **options)
        result.pop("created")  # the only field allowed to differ between identical releases
        out.append(json.dumps(result, sort_keys=True))  # the whole released JSON is the event
    return out


def released(
    text: str,
    tmp: Path,
    seed: int,
    variant: str = "real",
    options: dict[str, Any] = FILE_OPTIONS,
    runs: int = RUNS,
) -> list[str]:
    jobs = [
        (text, str(tmp / f"f{seed}-{k}.csv"), seed * 100000 + k * runs, runs // 2, variant, options)
        for k in range(2)
    ]
    with ProcessPoolExecutor(2) as pool:
        return [o for part in pool.map(_released, jobs) for o in part]


def file_violations(
    left: list[str], right: list[str], eps: float, delta: float, alpha_each: float
) -> list[str]:
    found = []
    lc, rc = Counter(left), Counter(right)
    for key, kl in lc.items():
        if kl < A.MIN_MASS:
            continue
        lo = A._cp_lower(kl, len(left), alpha_each)
        hi = A._cp_upper(rc[key], len(right), alpha_each)
        if lo > math.exp(eps) * hi + delta:
            found.append(f"{lo:.3g} > e^{eps:g}*{hi:.3g}+{delta:g} for {key}")
    return found


def _file_audit(samples: list[tuple[str, list[str], list[str]]], runs: int = RUNS) -> list[str]:
    # Bonferroni over at most runs // MIN_MASS checked events per side and direction, two bounds
    # each: an upper bound on the number of bounds whatever the events are (whole JSONs or not)
    total = sum(2 * 2 * (runs // A.MIN_MASS) for _ in samples)
    alpha_each = A.FAMILY_ALPHA / total
    bad = []
    for name, d, dp in samples:
        for left, right in ((d, dp), (dp, d)):
            bad += [
                f"{name}: {v}" for v in file_violations(left, right, 1.0, float(DELTA), alpha_each)
            ]
    return bad


@pytest.mark.slow
def test_neighbouring_files_release_close_distributions(tmp_path: Path) -> None:
    samples = [
        (p.name, released(p.d, tmp_path, 10 + 2 * k), released(p.d_prime, tmp_path, 11 + 2 * k))
        for k, p in enumerate(FILE_PAIRS)
    ]
    assert not _file_audit(samples)
    # the whole result is the event: its other fields (params, ledger, ...) are there, and the
    # same in every run of a side, so the events are not split by anything but itemset and ell
    for _, d, dp in samples:
        for side in (d, dp):
            assert {"params", "ledger", "private"} <= set(json.loads(side[0]))
            rest = {json.dumps({**json.loads(o), "itemset": 0, "ell": 0}) for o in side}
            assert len(rest) == 1
    # the edges are reached: rank 4 passes and fails on the wide tie, the default rank answers
    # and says none on the lone top
    ells = Counter(json.loads(o)["ell"] for o in samples[0][1])
    assert ells[4] > 0.1 * RUNS and sum(v for k, v in ells.items() if k != 4) > 0.1 * RUNS
    lone = Counter(json.loads(o)["itemset"] is None for o in samples[2][1])
    assert lone[True] > 0.1 * RUNS and lone[False] > 0.1 * RUNS


@pytest.mark.slow
def test_the_file_audit_catches_a_noiseless_search(tmp_path: Path) -> None:
    # c(5) rises by one: without noise the passing rank flips from 4 (F = T(4) + 1) to 8
    c5 = TOP - lf.threshold(4, SPLIT) - 1
    pair = FilePair(
        "noiseless", basket([*WIDE[:-1], ("c,d", c5)]), basket([*WIDE[:-1], ("c,d", c5 + 1)]), {}
    )
    samples = [
        (
            "noiseless search",
            released(pair.d, tmp_path, 30, "noiseless"),
            released(pair.d_prime, tmp_path, 31, "noiseless"),
        )
    ]
    assert _file_audit(samples)


# --- 2. count vectors -------------------------------------------------------------------------


class _variant:
    """Patch lmm_floor for a broken variant inside `with` (no-op for "real")."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.patches: list[Any] = []

    def __enter__(self) -> None:
        if self.name == "noiseless":
            self.patches = [
                mock.patch.object(lf, "geometric", lambda b, r: 0),
                mock.patch.object(lf, "discrete_laplace", lambda b, r: 0),
            ]
        elif self.name == "no group privacy":
            # the replace form without its halving: the add/remove steps at the full (eps, delta)
            self.patches = [mock.patch.object(lf, "inner", lambda p: p)]
        elif self.name == "none without 1/delta":
            original = baselines.run_limited_domain
            self.patches = [
                mock.patch.object(
                    lf,
                    "run_limited_domain",
                    lambda c, a, d, k, r: original(c, a, Fraction(1), k, r),
                )
            ]
        for p in self.patches:
            p.start()

    def __exit__(self, *exc: object) -> None:
        for p in self.patches:
            p.stop()


@dataclass(frozen=True)
class Pair:
    d: tuple[int, ...]
    d_prime: tuple[int, ...]
    why: str
    # kappa/eps2 = -112 records: T(4) = ceil(11.82 - 112) = -100, against G >= 0 of mean ~99, so
    # that rank 4 passes in a fair share of runs (any data-independent threshold is valid)
    kappa: Fraction = Fraction(-112, 50)
    default_rank: int = 2


NEVER = Fraction(10**6)  # thresholds no gap reaches: the default rank always
PAIRS = [
    Pair((30, 30, 30, 30, 5, 5), (31, 31, 31, 31, 5, 5), "a wide tie rises: rank 4 passes more"),
    Pair((30, 30, 30, 30, 25, 5), (30, 30, 30, 30, 26, 5), "c(5) rises: rank 4 passes less"),
    Pair((30, 30, 22, 5), (30, 30, 23, 5), "the default rank's none boundary", NEVER),
    Pair((30, 30, 5), (31, 30, 5), "a tie at default rank 1 that one record breaks", NEVER, 1),
    Pair((25,), (25, 1), "zero-count tail: D' lifts a zero into the ranked counts"),
]
# kappa/eps2 = -7 records: T(4) = ceil(11.82 - 7) = 5; without noise rank 4 passes on D (F = 6)
# and not on D' (F = 5, then rank 8 passes)
NOISELESS = Pair((30, 30, 30, 30, 24, 5), (30, 30, 30, 30, 25, 5), "noiseless", Fraction(-7, 50))


def _chunk(args: tuple[str, tuple[int, ...], Fraction, int, int, int]) -> list[A.Output]:
    variant, counts, kappa, default_rank, seed, n = args
    rng = seeded_source(seed)
    out: list[A.Output] = []
    with _variant(variant):
        for _ in range(n):
            vec = VectorCounts(counts)
            o: Outcome = lf.run_split(vec, SPLIT, rng, default_rank=default_rank, kappa=kappa)
            idx = None if o.index is None else vec.position(o.index)
            out.append((0, o.ell, idx))  # no noisy value is released: a constant in its place
    return out


def sample(variant: str, counts: Sequence[int], seed: int, pair: Pair) -> list[A.Output]:
    jobs = [
        (variant, tuple(counts), pair.kappa, pair.default_rank, seed * 1000 + k, N // 2)
        for k in range(2)
    ]
    with ProcessPoolExecutor(2) as pool:
        return [o for part in pool.map(_chunk, jobs) for o in part]


def audit(samples: list[tuple[str, list[A.Output], list[A.Output]]]) -> list[A.Check]:
    total = sum(A.n_bounds(side, v) for _, d, dp in samples for side in (d, dp) for v in CLAIMS)
    alpha_each = A.FAMILY_ALPHA / total
    checks = []
    for name, d, dp in samples:
        for view, (eps, delta) in CLAIMS.items():
            for left, right, direction in ((d, dp, "D vs D'"), (dp, d, "D' vs D")):
                checks.append(
                    A.check_pair(name, left, right, view, eps, delta, alpha_each, direction)
                )
    return checks


@pytest.mark.slow
def test_lmm_floor_satisfies_its_claims_on_edge_pairs() -> None:
    samples = [
        (p.why, sample("real", p.d, 700 + 2 * k, p), sample("real", p.d_prime, 701 + 2 * k, p))
        for k, p in enumerate(PAIRS)
    ]
    checks = audit(samples)
    bad = [f"{c.pair}: {v}" for c in checks for v in c.violations]
    assert not bad, bad
    assert all(c.n_events > 0 for c in checks)
    # edges reached: rank 4 passes and fails in the first two pairs; the default rank answers
    # and says none in the third
    for k in (0, 1):
        at4 = sum(o[1] == 4 for o in samples[k][1])
        assert 0.1 * N < at4 < 0.9 * N
    nones = sum(o[2] is None for o in samples[2][1])
    assert 0.1 * N < nones < 0.9 * N


BROKEN = [("noiseless", NOISELESS), ("none without 1/delta", PAIRS[3])]


@pytest.mark.slow
@pytest.mark.parametrize("variant,pair", BROKEN, ids=[b[0] for b in BROKEN])
def test_the_floor_audit_catches_a_broken_variant(variant: str, pair: Pair) -> None:
    samples = [
        (variant, sample(variant, pair.d, 900, pair), sample(variant, pair.d_prime, 901, pair))
    ]
    checks = audit(samples)
    assert any(c.violations for c in checks), [(c.view, c.eps_lower_bound) for c in checks]


# --- 3. replace-one neighbours (group privacy, docs/privacy.md §22.8) ------------------------
#
# Under replace lmm-floor runs the add/remove steps at eps' = 1/2, delta' = decimal_down(1e-3 /
# (1 + e^(1/2))) = 3.77540e-4 (at the default rank: a_d = eps' - eps1 = 49/100). A replacement
# can lower the top while it raises c(l+1), so "none" against the top moves by e^(2 a_d) = e^0.98
# at most: the claim (eps, delta) = (1, 1e-3) is nearly tight in the tails. The pairs sit at the
# default rank's "none" boundary of the replace form: none weighs (l/delta') e^(a_d (c(l+1) + 1))
# against e^(a_d c(1)), even odds at c(1) - c(l+1) = 1 + ln(2649)/0.49 = 17.1; with the shipped
# thresholds (T(4) >= 570) a rank passes in about 1 % of the runs only (mass on l = 4, 8, ...
# that the audit sees but does not test). Claims: the full release (eps, delta), and l alone
# (2 (eps1' + eps2'), 0) = (1/25, 0) (Lemma S' at eps', twice).
#
# The broken variant: the replace form WITHOUT the halving (lmm_floor.inner patched to the
# identity: the add/remove steps at the full (1, 1e-3) on replace pairs; a_d = 0.99, a replace
# pair then moves none against the top by e^1.98). Its own "none" boundary is at c(1) - c(2) =
# 1 + ln(1000)/0.99 = 8: the pair (12, 5) vs (11, 6) at default rank 1, P(top) 0.275 vs 0.050
# (ratio e^1.70 > e^1). At the real form's boundary pairs it leaks nothing the audit could see
# (its P(none) is ~0 there), so it is checked on its own edge pair, as the other broken variants.

N_REPLACE = int(os.environ.get("DPFIM_AUDIT_N_FLOOR_REPLACE", 10000))  # per side, count vectors
RUNS_REPLACE = int(os.environ.get("DPFIM_AUDIT_RUNS_FLOOR_REPLACE", 4000))  # per side, files
REPLACE_INNER = lf.add_remove_pair(EPS, DELTA)  # (1/2, 18877/50000000)
REPLACE_SPLIT = lf.make_split(*REPLACE_INNER)
REPLACE_CLAIMS = {
    "ell": (float(2 * (REPLACE_SPLIT.eps1 + REPLACE_SPLIT.eps2)), 0.0),
    "full": (float(EPS), float(DELTA)),
}


@dataclass(frozen=True)
class ReplacePair:
    """Count vectors by itemset (position = identity) of D and D' = D with one record replaced:
    counts may move in opposite directions."""

    d: tuple[int, ...]
    d_prime: tuple[int, ...]
    why: str
    default_rank: int = 2


REPLACE_PAIRS = [
    # records x,y,z (once), x,y (21), x,z (21), u,v (5); D' replaces x,y,z by u,v:
    # xy, xz, yz, uv = (22, 22, 1, 5) -> (21, 21, 0, 6): the top two fall while c(3) rises
    ReplacePair(
        (22, 22, 1, 5), (21, 21, 0, 6), "the top two fall, c(3) rises: none boundary at rank 2"
    ),
    ReplacePair((22, 5), (21, 6), "the lone top falls, c(2) rises: none boundary at rank 1", 1),
    ReplacePair((22, 21, 5), (21, 22, 5), "the top two swap at the none boundary"),
]
REPLACE_BROKEN = ReplacePair((12, 5), (11, 6), "no group privacy: its own none boundary", 1)


def _replace_chunk(args: tuple[str, tuple[int, ...], int, int, int]) -> list[A.Output]:
    variant, counts, default_rank, seed, n = args
    rng = seeded_source(seed)
    # the registry's entry point (what mine_file runs): inner() is applied there, once
    p = Public(EPS, DELTA, (2,), "replace", candidates=default_rank)
    out: list[A.Output] = []
    with _variant(variant):
        for _ in range(n):
            vec = VectorCounts(counts)
            o: Outcome = lf.MECHANISM.run(vec, p, rng)
            idx = None if o.index is None else vec.position(o.index)
            out.append((0, o.ell, idx))
    return out


def replace_sample(
    variant: str, counts: Sequence[int], seed: int, pair: ReplacePair
) -> list[A.Output]:
    jobs = [
        (variant, tuple(counts), pair.default_rank, seed * 1000 + k, N_REPLACE // 2)
        for k in range(2)
    ]
    with ProcessPoolExecutor(2) as pool:
        return [o for part in pool.map(_replace_chunk, jobs) for o in part]


def replace_audit(samples: list[tuple[str, list[A.Output], list[A.Output]]]) -> list[A.Check]:
    total = sum(
        A.n_bounds(side, v) for _, d, dp in samples for side in (d, dp) for v in REPLACE_CLAIMS
    )
    alpha_each = A.FAMILY_ALPHA / total
    checks = []
    for name, d, dp in samples:
        for view, (eps, delta) in REPLACE_CLAIMS.items():
            for left, right, direction in ((d, dp, "D vs D'"), (dp, d, "D' vs D")):
                checks.append(
                    A.check_pair(name, left, right, view, eps, delta, alpha_each, direction)
                )
    return checks


@pytest.mark.slow
def test_lmm_floor_satisfies_its_replace_one_claim_on_edge_pairs() -> None:
    samples = [
        (
            p.why,
            replace_sample("real", p.d, 1100 + 2 * k, p),
            replace_sample("real", p.d_prime, 1101 + 2 * k, p),
        )
        for k, p in enumerate(REPLACE_PAIRS)
    ]
    checks = replace_audit(samples)
    bad = [f"{c.pair}: {v}" for c in checks for v in c.violations]
    assert not bad, bad
    assert all(c.n_events > 0 for c in checks)
    print(
        "replace audit, N =",
        N_REPLACE,
        [(c.pair[:24], c.view, c.direction, round(c.eps_lower_bound, 3)) for c in checks],
    )
    # the edge is reached: at the default rank the answer is none and each of the top in a
    # fair share of the runs on both sides
    for pair, (_, d, dp) in zip(REPLACE_PAIRS, samples, strict=True):
        for side in (d, dp):
            picks = Counter(o[2] for o in side)
            assert 0.1 * N_REPLACE < picks[None] < 0.9 * N_REPLACE
            assert all(picks[i] > 0.05 * N_REPLACE for i in range(pair.default_rank))


@pytest.mark.slow
def test_the_floor_audit_catches_replace_one_without_the_halving() -> None:
    pair = REPLACE_BROKEN
    samples = [
        (
            pair.why,
            replace_sample("no group privacy", pair.d, 1200, pair),
            replace_sample("no group privacy", pair.d_prime, 1201, pair),
        )
    ]
    checks = replace_audit(samples)
    assert any(c.violations for c in checks), [(c.view, c.eps_lower_bound) for c in checks]
    print(
        "broken replace form:", [(c.view, c.direction, round(c.eps_lower_bound, 3)) for c in checks]
    )
    # and the real replace form on the same pair satisfies the claim
    real = [
        (
            "real on the broken one's pair",
            replace_sample("real", pair.d, 1202, pair),
            replace_sample("real", pair.d_prime, 1203, pair),
        )
    ]
    assert not [v for c in replace_audit(real) for v in c.violations]


# Files: the first pair above as baskets through mine_file(neighbours="replace"): the whole
# released JSON (n included: the same on both sides) but its timestamp. The second pair replaces
# a record longer than the record-length cap (B = 3: a keyed sample of 3 of its 6 items, §1.1).
REPLACE_OPTIONS = {**FILE_OPTIONS, "neighbours": "replace"}
EDGE_REST = [("x,y", 21), ("x,z", 21), ("u,v", 5)]
REPLACE_FILE_PAIRS = [
    FilePair(
        "a replacement lowers the top two and raises c(3)",
        basket([("x,y,z", 1), *EDGE_REST]),
        basket([("u,v", 1), *EDGE_REST]),
        REPLACE_OPTIONS,
    ),
    FilePair(
        "a record past the cap is replaced",
        basket([("x,y,z,p,q,s", 1), *EDGE_REST]),
        basket([("u,v", 1), *EDGE_REST]),
        {**REPLACE_OPTIONS, "max_record_items": 3},
    ),
]


@pytest.mark.slow
def test_replace_one_files_release_close_distributions(tmp_path: Path) -> None:
    samples = [
        (
            p.name,
            released(p.d, tmp_path, 50 + 2 * k, "real", p.options, RUNS_REPLACE),
            released(p.d_prime, tmp_path, 51 + 2 * k, "real", p.options, RUNS_REPLACE),
        )
        for k, p in enumerate(REPLACE_FILE_PAIRS)
    ]
    assert not _file_audit(samples, RUNS_REPLACE)
    for _, d, dp in samples:
        first = json.loads(d[0])
        assert first["n"] == json.loads(dp[0])["n"] == 48  # n released, the same on both
        assert first["params"]["group_privacy"]["eps_add_remove"] == "1/2"
        assert first["ledger"]["neighbours"] == "replace" and first["ledger"]["eps"]["exact"] == "1"
        nones = sum(json.loads(o)["itemset"] is None for o in d)
        assert 0.1 * RUNS_REPLACE < nones < 0.9 * RUNS_REPLACE
