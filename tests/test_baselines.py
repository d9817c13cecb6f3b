"""The SPEC §6 baselines: exact output laws against closed forms, constants against hand
computation, and the CLI's refusals. Seeded sources; each frequency check is a two-sided binomial
test at level 1e-6 (false alarm <= 1e-6 per check with fresh seeds)."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from cli_run import run as run_cli
from scipy import stats

from dpfim.engines.local import SupportIndex
from dpfim.mechanisms import baselines as B
from dpfim.mechanisms.base import VectorCounts
from dpfim.mechanisms.noisy_max import Groups, Noise, argmax_group
from dpfim.readers import from_transactions
from dpfim.samplers.rng import seeded_source

P_TEST = 1e-6


def _agrees(hits: int, n: int, p: float) -> bool:
    return bool(stats.binomtest(hits, n, p).pvalue > P_TEST)


def _em_law(counts: list[int], universe: int, a: float) -> dict[int, float]:
    """P(selected count) for weights exp(a c) over a universe of `universe` itemsets."""
    full = counts + [0] * (universe - len(counts))
    w = np.exp(a * np.array(full, dtype=float))
    law: dict[int, float] = {}
    for c, wi in zip(full, w / w.sum(), strict=True):
        law[c] = law.get(c, 0.0) + float(wi)
    return law


def _selected_counts(run, counts: list[int], n: int, seed: int) -> list[int]:  # type: ignore[no-untyped-def]
    rng = seeded_source(seed)
    out = []
    for _ in range(n):
        vec = VectorCounts(counts)
        o = run(vec, rng)
        out.append(0 if o.index is None else int(vec.counts[o.index]))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("neighbours,a", [("replace", 0.5), ("add-remove", 1.0)])
def test_em_has_the_exponential_mechanism_law(neighbours: str, a: float) -> None:
    counts, universe, n = [6, 4, 4, 3, 1], 40, 20_000
    got = _selected_counts(
        lambda v, r: B.run_em(v, Fraction(1), neighbours, universe, r), counts, n, 11
    )
    for c, p in _em_law(counts, universe, a).items():
        assert _agrees(got.count(c), n, p), (c, got.count(c) / n, p)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["laplace", "exponential"])
def test_noisy_max_matches_a_brute_force_simulation(kind: str) -> None:
    """Against numpy's own noise over the whole (small) universe: an independent route."""
    counts, universe, n = [6, 4, 4, 3, 1], 30, 20_000
    run = B.run_noisy_max_laplace if kind == "laplace" else B.run_permute_and_flip
    got = _selected_counts(
        lambda v, r: run(v, Fraction(2, 3), "replace", universe, r), counts, n, 12
    )
    gen = np.random.default_rng(5)
    full = np.array(counts + [0] * (universe - len(counts)), dtype=float)
    m = 200_000
    noise = (
        gen.laplace(0, 3, (m, universe)) if kind == "laplace" else gen.exponential(3, (m, universe))
    )
    ref = full[np.argmax(full + noise, axis=1)]
    for c in set(full.tolist()):
        p_ref = float(np.mean(ref == c))
        # both are estimates: a two-sample z-test at 1e-6
        p_got = got.count(int(c)) / n
        se = math.sqrt(p_ref * (1 - p_ref) / m + p_got * (1 - p_got) / n)
        assert abs(p_got - p_ref) < 5 * se + 1e-9, (kind, c, p_got, p_ref)


@pytest.mark.slow
def test_group_walk_reads_deeper_counts_only_as_needed_and_keeps_the_law() -> None:
    """The tail bound must not change the law: incomplete counts (a SupportIndex that deepens
    on demand) give the same selection frequencies as the complete vector."""
    records = [["a", "b"]] * 30 + [["c", "d"]] * 29 + [[f"x{i}", f"y{i}"] for i in range(40)]
    recs = from_transactions(records)
    universe = math.comb(len(recs.items), 2)
    n = 4000
    rng = seeded_source(3)
    hits = 0
    depths = []
    for _ in range(n):
        index = SupportIndex(recs, 2)
        g = argmax_group(Groups(index, universe), Noise("gumbel", Fraction(2)), rng)
        hits += g is not None and index.counts[0] == 30 and g == 0
        depths.append(index.complete)
    w = _em_law([30, 29] + [1] * 40, universe, 0.5)
    assert _agrees(hits, n, w[30])
    assert not all(depths)  # the low counts were not always needed


def test_hand_computed_thresholds() -> None:
    # stability: 1 + ceil(4 ln 1e6) = 1 + ceil(55.2620) = 57
    assert B.stability_threshold(Fraction(1), Fraction(1, 10**6)) == 57
    # eps = 0.1: 1 + ceil(40 ln 1e6) = 1 + ceil(552.620) = 554
    assert B.stability_threshold(Fraction(1, 10), Fraction(1, 10**6)) == 554
    # choosing, k = 190 (B = 20, r = 2): ceil(8 ln(760e6)) = ceil(8 * 20.44874) = 164
    assert B.choosing_threshold(Fraction(1), Fraction(1, 10**6), 190) == 164
    # k = 3: ceil(8 ln(1.2e7)) = ceil(130.4033) = 131
    assert B.choosing_threshold(Fraction(1), Fraction(1, 10**6), 3) == 131
    # under the row budget m = max(k, M) with M = 2^25 rows listed (one size): ln(4 * 2^25 *
    # 1e6) = ln(1.34217728) + 14 ln 10 = 0.294300 + 32.236191 = 32.530491; 8x = 260.2439 -> 261
    p = B.Public(Fraction(1), Fraction(1, 10**6), (2,), "add-remove", max_record_items=20)
    assert B.choosing_m(p) == 1 << 25
    assert B.choosing_threshold(p.eps, p.delta, B.choosing_m(p)) == 261
    # two sizes: M = 2^26; k = C(20, 2) + C(20, 3) = 1330 stays below it
    p2 = B.Public(Fraction(1), Fraction(1, 10**6), (2, 3), "add-remove", max_record_items=20)
    assert B.choosing_m(p2) == 1 << 26


@pytest.mark.slow
def test_stability_releases_with_the_discrete_laplace_probability() -> None:
    # gap 57 = T: released iff DLap(4) > 0, probability q / (1 + q) with q = e^(-1/4)
    q = math.exp(-0.25)
    n = 20_000
    got = _selected_counts(
        lambda v, r: B.run_stability(v, Fraction(1), Fraction(1, 10**6), r), [60, 3], n, 13
    )
    assert _agrees(got.count(60), n, q / (1 + q))


@pytest.mark.slow
def test_limited_domain_says_none_with_the_gumbel_threshold_probability() -> None:
    # top 2 = (20, 19), h_3 = 5: P(none) = w / (w + e^0 + e^-1), w = (2/delta) e^(5 + 1 - 20)
    delta = Fraction(1, 10**6)
    w = 2e6 * math.exp(6 - 20)
    p_none = w / (w + 1 + math.exp(-1))
    n = 20_000
    rng = seeded_source(14)
    nones = sum(
        B.run_limited_domain(VectorCounts([20, 19, 5]), Fraction(1), delta, 2, rng).index is None
        for _ in range(n)
    )
    assert _agrees(nones, n, p_none)


def _baskets(tmp_path: Path) -> Path:
    path = tmp_path / "b.csv"
    path.write_text("a,b\n" * 50 + "c,d\n" * 5 + "a,c\n")
    return path


@pytest.mark.parametrize(
    "args,message",
    [
        (["--mechanism", "em"], "needs a finite universe"),
        (["--mechanism", "permute-and-flip"], "needs a finite universe"),
        (
            ["--mechanism", "choosing", "--neighbours", "add-remove", "--max-record-items", "none"],
            "record-length cap",
        ),
        (["--mechanism", "choosing", "--max-record-items", "5"], "add/remove"),
        (["--mechanism", "limited-domain"], "add/remove"),
        (
            ["--mechanism", "limited-domain", "--neighbours", "add-remove", "--candidates", "0"],
            "--candidates",
        ),
    ],
)
def test_refusals_are_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = run_cli(
        ["mine", str(_baskets(tmp_path)), "--eps", "1", "--delta", "1e-6", *args]
    )
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["--mechanism", "em", "--universe-items", "VOCAB"],
        ["--mechanism", "noisy-max-laplace", "--universe-items", "VOCAB"],
        ["--mechanism", "permute-and-flip", "--universe-items", "VOCAB"],
        ["--mechanism", "stability"],
        ["--mechanism", "choosing", "--neighbours", "add-remove", "--max-record-items", "3"],
        ["--mechanism", "limited-domain", "--neighbours", "add-remove"],
    ],
)
def test_every_baseline_runs_end_to_end(tmp_path: Path, args: list[str]) -> None:
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("a\nb\nc\nd\ne\n")
    args = [str(vocab) if a == "VOCAB" else a for a in args]
    code, stdout, err = run_cli(
        ["mine", str(_baskets(tmp_path)), "--eps", "2", "--delta", "1e-6", "--seed", "1", *args]
    )
    assert code == 0, err
    out = json.loads(stdout)
    assert out["itemset"] in (["a", "b"], None)
    assert out["params"]["mechanism"] == args[1]
    assert "ell" not in out and "noisy_max" not in out
    pure = args[1] in ("em", "noisy-max-laplace", "permute-and-flip")
    assert out["ledger"]["delta"]["exact"] == ("0" if pure else "1/1000000")
    assert out["private"] is False
