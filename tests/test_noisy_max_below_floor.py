"""Report-noisy-max below its floor (noisy_max.Groups with a declared universe, docs/privacy.md
§12 "Below the floor"): the itemsets of count < s* are drawn by identity instead of counted.

The engine side (one-pass lowering, supports from record lists) is checked against brute force;
the sampler's law against the closed-form exponential mechanism and against numpy's own noise.
Each law check is a chi-square goodness-of-fit test at level 1e-6 (false alarm <= 1e-6 per check
with fresh seeds; the seeds here are fixed, so the tests are deterministic), categories with an
expected count below 5 pooled.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from cli_run import run as run_cli
from scipy import stats

from dpfim import release as topk
from dpfim.engines.local import SupportIndex
from dpfim.mechanisms import registry
from dpfim.mechanisms.noisy_max import Noise, reveal_floor
from dpfim.readers import Records, from_transactions
from dpfim.samplers.rng import seeded_source

P_TEST = 1e-6
VOCAB = [f"i{j}" for j in range(9)]  # i7 and i8 never occur: zero-count pairs of the universe


def _records() -> list[list[str]]:
    """Pair counts spread over 0..14 on the first 7 items (several of them tied)."""
    out: list[list[str]] = []
    spec = {
        ("i0", "i1"): 14,
        ("i0", "i2"): 11,
        ("i1", "i2"): 9,
        ("i3", "i4"): 9,
        ("i2", "i3"): 7,
        ("i4", "i5"): 5,
        ("i5", "i6"): 5,
        ("i0", "i6"): 2,
        ("i1", "i5"): 1,
    }
    for pair, c in spec.items():
        out += [list(pair)] * c
    out += [["i3", "i5", "i6"]] * 2  # a record of three items: three pairs at once
    return out


def _brute_counts(records: list[list[str]], vocab: list[str]) -> dict[tuple[int, int], int]:
    pos = {s: j for j, s in enumerate(vocab)}
    c: Counter[tuple[int, int]] = Counter()
    for rec in records:
        ids = sorted({pos[s] for s in rec})
        c.update(itertools.combinations(ids, 2))
    return {pair: c.get(pair, 0) for pair in itertools.combinations(range(len(vocab)), 2)}


def _data() -> tuple[Records, dict[tuple[int, int], int]]:
    recs = _records()
    data = from_transactions(recs, universe=VOCAB)
    assert list(data.items) == VOCAB
    return data, _brute_counts(recs, VOCAB)


def _one_round(
    data: Records, mechanism: str, eps: Fraction, neighbours: str, n: int, seed: int
) -> Counter[tuple[int, ...]]:
    """n independent single rounds through peel (fresh engine each time: deepening from the
    top is exercised), tallied by the selected pair."""
    spec = registry.get(mechanism)
    universe = math.comb(len(VOCAB), 2)
    p = registry.Public(eps, Fraction(1, 10**6), neighbours=neighbours, universe_size=universe)
    rng = seeded_source(seed)
    got: Counter[tuple[int, ...]] = Counter()
    for _ in range(n):
        index = SupportIndex(data, 2)
        declared = topk.DeclaredUniverse(len(VOCAB), (2,), index)
        picks, _, _ = topk.peel(index, spec, p, 1, rng, None, declared)
        got[picks[0].ids] += 1
    return got


def _chi2_ok(got: Counter[tuple[int, ...]], law: dict[tuple[int, ...], float], n: int) -> float:
    """The chi-square p-value of the tallies against the law, small cells pooled."""
    keys = sorted(law, key=lambda k: law[k])
    obs, exp = [], []
    pool_o, pool_e = 0.0, 0.0
    for k in keys:
        e = law[k] * n
        if e < 5:
            pool_o += got.get(k, 0)
            pool_e += e
            continue
        obs.append(got.get(k, 0))
        exp.append(e)
    if pool_e > 0:
        obs.append(pool_o)
        exp.append(pool_e)
    assert sum(got.values()) == n and set(got) <= set(law)
    return float(stats.chisquare(obs, exp).pvalue)


def _em(counts: dict[tuple[int, int], int], a: float) -> dict[tuple[int, ...], float]:
    w = {k: math.exp(a * c) for k, c in counts.items()}
    total = sum(w.values())
    return {k: x / total for k, x in w.items()}


# --- the engine -------------------------------------------------------------------------------


def test_lower_to_gives_every_count_above_the_threshold_in_one_pass() -> None:
    data, brute = _data()
    for s in (12, 9, 5, 2, 1):
        index = SupportIndex(data, 2)
        index.lower_to(s)
        assert index.threshold == s and index.passes <= 2  # one counting level (+ projection)
        want = sorted((c for c in brute.values() if c >= s), reverse=True)
        assert index.counts.tolist() == want
        for row, c in zip(index.itemsets, index.counts, strict=True):
            assert brute[(int(row[0]), int(row[1]))] == int(c)
        index.lower_to(s + 3)  # never raises the threshold
        assert index.threshold == s


@pytest.mark.parametrize("lists", [True, False])
def test_support_from_record_lists_equals_brute_force(lists: bool) -> None:
    gen = np.random.default_rng(7)
    recs = [
        [f"v{x}" for x in gen.choice(30, size=int(gen.integers(1, 9)), replace=False)]
        for _ in range(400)
    ]
    data = from_transactions(recs)
    index = SupportIndex(data, 2)
    if not lists:
        index._room = 0  # the record lists do not fit: one bounded pass per support
    sets = [set(r) for r in recs]
    for size in (1, 2, 3):
        for ids in itertools.islice(itertools.combinations(range(len(data.items)), size), 300):
            names = {data.items[i] for i in ids}
            assert index.support(list(ids)) == sum(names <= s for s in sets)
    assert (index._postings_cache is not None) == lists


# --- the law ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps,neighbours,a",
    [
        (Fraction(1, 2), "replace", 0.25),  # b = 4, floor 9: counts 9..14 listed
        (Fraction(1, 2), "add-remove", 0.5),  # b = 2, floor 5
        (Fraction(1, 50), "replace", 0.01),  # b = 100, floor 201: every itemset drawn
    ],
)
@pytest.mark.slow
def test_em_below_its_floor_has_the_exponential_mechanism_law(
    eps: Fraction, neighbours: str, a: float
) -> None:
    data, brute = _data()
    n = 3000
    got = _one_round(data, "em", eps, neighbours, n, seed=21)
    assert _chi2_ok(got, _em(brute, a), n) > P_TEST
    floor = reveal_floor(Noise("gumbel", (2 if neighbours == "replace" else 1) / eps))
    below = [k for k in got if brute[k] < floor]  # type: ignore[index]
    assert below  # the drawn (unlisted) itemsets were picked too


@pytest.mark.slow
def test_peeling_below_the_floor_removes_drawn_itemsets() -> None:
    """Round 2's marginal law: sum over round 1's pick I of P(I) P(J | universe without I)."""
    data, brute = _data()
    spec = registry.get("em")
    universe = math.comb(len(VOCAB), 2)
    p = registry.Public(Fraction(1), Fraction(1, 10**6), universe_size=universe)  # 2 rounds
    a = 0.25  # each round at eps/2 = 1/2, replace-one: exp(c/4)
    law1 = _em(brute, a)
    law2: dict[tuple[int, ...], float] = dict.fromkeys(law1, 0.0)
    for first, p1 in law1.items():
        rest = {k: c for k, c in brute.items() if k != first}
        for k, q in _em(rest, a).items():
            law2[k] += p1 * q
    rng = seeded_source(5)
    n = 2500
    got: Counter[tuple[int, ...]] = Counter()
    for _ in range(n):
        index = SupportIndex(data, 2)
        declared = topk.DeclaredUniverse(len(VOCAB), (2,), index)
        picks, _, _ = topk.peel(index, spec, p, 2, rng, None, declared)
        assert len(picks) == 2 and picks[0].ids != picks[1].ids
        for q in picks:
            assert q.count == brute[q.ids]  # type: ignore[index]
        got[picks[1].ids] += 1
    assert _chi2_ok(got, law2, n) > P_TEST


@pytest.mark.slow
@pytest.mark.parametrize(
    "mechanism,kind", [("noisy-max-laplace", "laplace"), ("permute-and-flip", "exponential")]
)
def test_noisy_max_below_its_floor_matches_a_brute_force_simulation(
    mechanism: str, kind: str
) -> None:
    """Against numpy's own noise over the whole universe (an independent route): a two-sample
    chi-square test at 1e-6 (numpy's sample is 100 times larger)."""
    data, brute = _data()
    n = 5000
    got = _one_round(data, mechanism, Fraction(1, 2), "replace", n, seed=23)
    keys = list(brute)
    full = np.array([brute[k] for k in keys], dtype=float)
    gen = np.random.default_rng(8)
    m = 100 * n
    noise = (
        gen.laplace(0, 4, (m, len(keys)))
        if kind == "laplace"
        else gen.exponential(4, (m, len(keys)))
    )
    ref = Counter(np.argmax(full + noise, axis=1).tolist())
    table = np.array([[got.get(k, 0) for k in keys], [ref.get(j, 0) for j in range(len(keys))]])
    table = table[:, table.sum(axis=0) >= 20]
    assert float(stats.chi2_contingency(table).pvalue) > P_TEST


# --- through the CLI ----------------------------------------------------------------------------


def test_cli_top_k_over_a_declared_universe_names_distinct_declared_itemsets(
    tmp_path: Any,
) -> None:
    data = tmp_path / "d.csv"
    data.write_text("\n".join(",".join(r) for r in _records()) + "\n")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    for extra in ([], ["--supports"]):
        code, out, err = run_cli(
            [
                "mine",
                str(data),
                "--eps",
                "0.5",
                "--delta",
                "1e-6",
                "--mechanism",
                "em",
                "--universe-items",
                str(vocab),
                "--top",
                "20",
                "--seed",
                "3",
                *extra,
            ]
        )
        assert code == 0, err
        released = json.loads(out)["itemsets"]
        picked = [tuple(x["items"]) for x in released]
        assert len(picked) == 20 == len(set(picked))
        assert all(len(t) == 2 and set(t) <= set(VOCAB) for t in picked)
        assert ("noisy_support" in released[0]) == bool(extra)
