"""--min-support / --min-count (dpfim/mechanisms/threshold.py, docs/privacy.md §25): the utility
by hand, its sensitivity by brute force over neighbouring data sets, the exact ranks, the
certifiable threshold, and the command line and library answers."""

from __future__ import annotations

import itertools
import json
import math
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

from dpfim import api
from dpfim.counts import Counts
from dpfim.engines.local import count_records
from dpfim.mechanisms import levelwise as lw
from dpfim.mechanisms import threshold as th
from dpfim.readers.frames import from_baskets


def test_the_utility_by_hand() -> None:
    """c = 10, 8, 8, 5, 3 and t = 8: three itemsets clear it. u(0) = -(10 - 8 + 1) = -3;
    u(1) = -(8 - 8 + 1) = -1 (the 2nd has 8 >= t); u(2) = -1 likewise; u(3) = 0; u(4) =
    -(8 - 5) = -3 (the 4th lacks 3 records)."""
    u = th.utilities(iter([10, 8, 8, 5, 3]), 8, 4)
    assert u.tolist() == [-3, -1, -1, 0, -3]


def _orders(baskets: list[frozenset[str]], universe: list[str], s: int) -> list[int]:
    """Every itemset of sizes 1..s over the universe, its support, sorted decreasing."""
    out = []
    for r in range(1, s + 1):
        for x in itertools.combinations(universe, r):
            out.append(sum(1 for b in baskets if set(x) <= b))
    return sorted(out, reverse=True)


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
def test_the_utility_moves_by_at_most_one_between_neighbours(relation: str) -> None:
    """Brute force over 300 random data sets on 4 items (sizes 1-3) and one neighbour each:
    |u_D(k) - u_D'(k)| <= 1 for every k = 0..cap, with t = ceil(theta n) (n moves too under
    add/remove): §25.2's sensitivity. The bound is attained."""
    rng = random.Random(5)
    universe = list("abcd")
    worst = 0
    for _ in range(300):
        d = [frozenset(x for x in universe if rng.random() < 0.5) for _ in range(rng.randint(3, 9))]
        extra = frozenset(x for x in universe if rng.random() < 0.6)
        dp = [*d, extra] if relation == "add-remove" else [*d[:-1], extra]
        theta = Fraction(rng.randint(1, 9), 10)
        cap = 16
        u = th.utilities(iter(_orders(d, universe, 3) + [0] * 20), math.ceil(theta * len(d)), cap)
        v = th.utilities(iter(_orders(dp, universe, 3) + [0] * 20), math.ceil(theta * len(dp)), cap)
        worst = max(worst, int(np.max(np.abs(u - v))))
    assert worst == 1


def _baskets(seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    items = [f"i{j}" for j in range(9)]
    return [[x for x in items if rng.random() < 0.15 + 0.05 * int(x[1:]) % 3] for _ in range(120)]


def test_the_ranks_are_the_sorted_supports_of_every_itemset() -> None:
    """ranked_supports pops the lattice by support: the first 60 values are the 60 largest
    supports over every itemset of sizes 1-3 (brute force), then zeros."""
    baskets = _baskets(2)
    records = from_baskets(baskets)
    counts: Counts = count_records(records, (1, 2, 3)).counts
    ids, sup = lw.item_supports(counts, None)
    got = list(itertools.islice(th.ranked_supports(counts, ids, sup, 3), 200))
    names = sorted({x for b in baskets for x in b})
    truth = [c for c in _orders([frozenset(b) for b in baskets], names, 3) if c > 0]
    assert got[: len(truth)] == truth
    assert set(got[len(truth) :]) <= {0}


def test_the_smallest_certifiable_count_by_hand() -> None:
    """2 ln(40 (cap + 1)) / eps_t: eps_t = 0.1, cap = 500: 2 * ln(20,040) / 0.1 = 198.11...:
    199 records."""
    assert th.smallest_count(Fraction(1, 10), 500) == 199
    assert 2 * math.log(40 * 501) / 0.1 == pytest.approx(198.11, abs=0.01)


def test_the_choice_draws_from_the_stated_law() -> None:
    """Seeded, 3,000 draws on c = 10, 8, 8, 5, 3, 0 (t = 8, cap = 5) at eps_t = 2: the
    frequencies against exp(eps_t u / 2) normalised, chi-square with 5 degrees of freedom
    below 25 (false alarm about 1.4e-4)."""
    from dpfim.samplers.rng import seeded_source

    rng = seeded_source(3)
    u = th.utilities(iter([10, 8, 8, 5, 3, 0]), 8, 5)
    w = np.exp(2 * u / 2)
    p = w / w.sum()
    draws = [th.choose_k(iter([10, 8, 8, 5, 3, 0]), 8, Fraction(2), 5, rng) for _ in range(3000)]
    obs = np.bincount(draws, minlength=6)
    chi2 = float(((obs - 3000 * p) ** 2 / (3000 * p)).sum())
    assert chi2 < 25, (obs, 3000 * p)


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "t.dat"
    rng = random.Random(9)
    lines = []
    for _ in range(6000):
        basket = [
            x for x in "12345678" if rng.random() < {"1": 0.6, "2": 0.5, "3": 0.4}.get(x, 0.1)
        ]
        lines.append(" ".join(basket))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_min_support_releases_the_itemsets_above_it_with_their_supports(tmp_path: Path) -> None:
    """6,000 records (FIMI items 1-8); 1 at 0.6, 2 at 0.5, 3 at 0.4 (12 0.3, 13 0.24, 23 0.2,
    123 0.12), the rest 0.1 each: at theta = 0.15 and eps = 2 the frequent itemsets are 1, 2,
    3, 12, 13, 23. Every
    released consistent support clears theta n, the release is downward closed, supports come
    with their sd and interval, and the params say what was asked."""
    path = _file(tmp_path)
    code, out, err = run(
        ["mine", str(path), "--eps", "2", "--delta", "1e-6", "--min-support", "0.15", "--seed", "4"]
    )
    assert code == 0, err
    res = json.loads(out)
    got = {tuple(e["items"]) for e in res["itemsets"]}
    assert got == {("1",), ("2",), ("3",), ("1", "2"), ("1", "3"), ("2", "3")}
    for e in res["itemsets"]:
        assert e["consistent_support"] >= 0.15 * res["n"]
        assert e["support_sd"] > 0 and e["support_interval"][0] <= e["noisy_support"]
    assert res["params"]["min_support"] == "3/20" and res["params"]["top"] == 500
    assert res["params"]["sizes"] == [1, 2, 3, 4, 5] and res["params"]["mechanism"] == "levelwise"


def test_a_count_threshold_below_what_eps_can_certify_is_refused_before_reading(
    tmp_path: Path,
) -> None:
    code, out, err = run(
        ["mine", str(tmp_path / "absent.dat"), "--eps", "1", "--delta", "1e-6", "--min-count", "5"]
    )
    assert code == 2 and out == "" and "can tell from zero" in err and "Traceback" not in err


def test_frequent_itemsets_takes_mlxtends_min_support_and_max_len(tmp_path: Path) -> None:
    path = _file(tmp_path)
    baskets = [line.split() for line in path.read_text().splitlines()]
    frame = api.frequent_itemsets(baskets, eps=2, delta=1e-6, min_support=0.15, max_len=2, rng=4)
    assert (frame["support"] >= 0.15).all()
    assert {len(x) for x in frame["itemsets"]} <= {1, 2}
    assert frozenset({"1", "2"}) in set(frame["itemsets"])
    assert frame.attrs["result"]["params"]["sizes"] == [1, 2]


def test_the_choice_draws_from_the_stated_law_by_inversion_too() -> None:
    """A steep profile over 201 ranks at eps_t = 1 takes the sampler's inversion branch (its
    rejection would need more than MAX_EXPECTED_ROUNDS rounds): 4,000 seeded draws, the
    frequency of the exact crossing rank and of the ranks below it against the exact law,
    each within 4.5 standard errors (false alarm about 1e-5 each)."""
    from dpfim.mechanisms import selection
    from dpfim.samplers.rng import seeded_source

    ranks = [1000 - 4 * k for k in range(202)] + [0] * 10
    u = th.utilities(iter(ranks), 600, 200)
    scores = u - int(u.min()) + 1
    values, mult = selection.groups(np.sort(scores)[::-1], len(scores), 0)
    assert selection.expected_rounds(values, mult, Fraction(1)) > selection.MAX_EXPECTED_ROUNDS
    w = np.exp(1.0 * (u - u.max()) / 2)
    p = w / w.sum()
    best = int(np.argmax(u))
    rng = seeded_source(8)
    draws = np.array([th.choose_k(iter(ranks), 600, Fraction(1), 200, rng) for _ in range(4000)])
    for event, want in ((draws == best, p[best]), (draws < best, p[:best].sum())):
        got = float(event.mean())
        assert abs(got - want) < 4.5 * math.sqrt(want * (1 - want) / 4000), (got, want)


def test_an_added_record_with_a_new_item_moves_the_utility_by_at_most_one() -> None:
    """The open universe: D' adds a record holding an item D never saw (its itemsets enter the
    ranks at support 1) and n moves: still |u_D(k) - u_D'(k)| <= 1 for every k."""
    rng = random.Random(11)
    for _ in range(200):
        d = [frozenset(x for x in "abc" if rng.random() < 0.5) for _ in range(rng.randint(2, 6))]
        new = frozenset({"z", *(x for x in "abc" if rng.random() < 0.5)})
        theta = Fraction(rng.randint(1, 10), 10)
        cu = _orders(d, list("abcz"), 2) + [0] * 20
        cv = _orders([*d, new], list("abcz"), 2) + [0] * 20
        u = th.utilities(iter(cu), math.ceil(theta * len(d)), 12)
        v = th.utilities(iter(cv), math.ceil(theta * (len(d) + 1)), 12)
        assert int(np.max(np.abs(u - v))) <= 1


def test_the_filter_keeps_a_downward_closed_set_under_add_remove(tmp_path: Path) -> None:
    """add/remove: the bar is theta times the released noisy n (never the exact n); what is
    kept is downward closed and every kept consistent support clears it."""
    path = _file(tmp_path)
    for seed in range(3):
        code, out, err = run(
            [
                "mine",
                str(path),
                "--eps",
                "1",
                "--delta",
                "1e-6",
                "--min-support",
                "0.2",
                "--neighbours",
                "add-remove",
                "--seed",
                str(seed),
            ]
        )
        assert code == 0, err
        res = json.loads(out)
        assert "n" not in res and res["noisy_n"] > 0
        kept = {tuple(e["items"]) for e in res["itemsets"]}
        for e in res["itemsets"]:
            assert e["consistent_support"] >= 0.2 * res["noisy_n"]
            items = tuple(e["items"])
            for r in range(1, len(items)):
                assert all(sub in kept for sub in itertools.combinations(items, r))


def test_rules_with_min_support_come_from_the_itemsets_that_clear_it(tmp_path: Path) -> None:
    """dpfim rules --min-support: every rule's itemset (and so its antecedent and consequent)
    has a released support of at least theta (mlxtend's frequent itemsets, then rules); the
    whole closure is still in the result."""
    path = _file(tmp_path)
    args = ["rules", str(path), "--eps", "4", "--delta", "1e-6", "--min-support", "0.2"]
    code, out, err = run([*args, "--min-threshold", "0", "--seed", "2"])
    assert code == 0, err
    res = json.loads(out)
    assert res["rules"], res
    for rule in res["rules"]:
        assert rule["support"] >= 0.2 - 1e-9
        assert min(rule["antecedent_support"], rule["consequent_support"]) >= 0.2 - 1e-9
    assert res["params"]["min_support"] == "1/5"


def test_the_cli_says_when_a_threshold_release_is_near_its_cap_or_empty(tmp_path: Path) -> None:
    """Public notes on stderr: a release of >= 90 % of the cap says the cap may bind; an empty
    one says nothing cleared (not the rounds' 'answered none')."""
    path = _file(tmp_path)
    base = ["mine", str(path), "--eps", "2", "--delta", "1e-6", "--seed", "4"]
    code, out, err = run([*base, "--min-support", "0.15", "--top", "6"])
    assert code == 0 and len(json.loads(out)["itemsets"]) == 6 and "near the cap --top 6" in err
    code, out, err = run([*base, "--min-support", "0.95"])
    assert code == 0 and json.loads(out)["itemsets"] == []
    assert "no itemset cleared the threshold" in err and "answered none" not in err
