"""Top-k: the views (shared counting), peeling, several sizes, noisy supports, the ledger."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from cli_run import run

from dpfim import api
from dpfim import release as topk
from dpfim.engines.local import SupportIndex
from dpfim.mechanisms import registry
from dpfim.mechanisms.base import Outcome, VectorCounts
from dpfim.readers import from_transactions
from dpfim.samplers.rng import seeded_source
from dpfim.views import Merged, Without, ids_of


def _ladder(k: int = 6, top: int = 3000, step: int = 400) -> list[list[str]]:
    """Pairs (xj, yj) with counts top - j*step: a clear ranking, each gap far above tau."""
    out: list[list[str]] = []
    for j in range(k):
        out += [[f"x{j}", f"y{j}"]] * (top - j * step)
    return out


def _brute(records: list[list[str]], sizes: tuple[int, ...]) -> Counter[tuple[str, ...]]:
    c: Counter[tuple[str, ...]] = Counter()
    for rec in records:
        items = sorted(set(rec))
        for r in sizes:
            c.update(itertools.combinations(items, r))
    return c


# --- views ------------------------------------------------------------------------------------


def test_without_hides_removed_rows_even_after_the_engine_lowers_its_threshold() -> None:
    recs = [["a", "b", "c"]] * 50 + [["a", "b"]] * 30 + [["c", "d"]] * 5 + [["e", "f"]]
    rs = from_transactions(recs)
    index = SupportIndex(rs, 2)
    view = Without(index)
    view.ensure(1)
    top = view.key(0)
    assert int(view.counts[0]) == 80
    view.remove(top, 80)
    assert len(view.counts) == 0 or int(view.counts[0]) <= 50
    view.ensure(10**9)  # to completion: the engine re-sorts; the removal holds
    assert index.complete and view.complete
    names = {tuple(sorted(rs.items[i] for i in row)) for row in view.itemsets}
    assert ("a", "b") not in names and len(view.counts) == len(index.counts) - 1
    assert list(view.counts) == sorted(view.counts, reverse=True)
    assert view.threshold == index.threshold == 1


def test_without_keeps_the_threshold_invariant_on_every_depth() -> None:
    rng = np.random.default_rng(5)
    recs = [list(rng.choice(list("abcdefgh"), size=rng.integers(1, 6))) for _ in range(300)]
    rs = from_transactions(recs)
    truth = _brute(recs, (2,))
    index = SupportIndex(rs, 2)
    view = Without(index)
    removed: set[tuple[str, ...]] = set()
    for depth in (1, 2, 3, 5, 8, 13, 40, 10**6):
        view.ensure(depth)
        names = [tuple(sorted(rs.items[i] for i in row)) for row in view.itemsets]
        expect = {s for s, c in truth.items() if c >= view.threshold and s not in removed}
        assert set(names) == expect and len(names) == len(expect)
        if len(names):  # remove the current top before going deeper
            removed.add(names[0])
            view.remove(view.key(0), int(view.counts[0]))


@pytest.mark.parametrize("sizes", [(1, 2), (2, 3), (1, 2, 3)])
def test_merged_is_every_size_ranked_together_with_a_consistent_threshold(
    sizes: tuple[int, ...],
) -> None:
    rng = np.random.default_rng(sum(sizes))
    recs = [list(rng.choice(list("abcdefg"), size=rng.integers(1, 6))) for _ in range(200)]
    rs = from_transactions(recs)
    truth = _brute(recs, sizes)
    merged = Merged([SupportIndex(rs, r) for r in sizes])
    for depth in (1, 3, 10, 50, 10**6):
        merged.ensure(depth)
        got = [tuple(sorted(rs.items[i] for i in ids_of(row))) for row in merged.itemsets]
        expect = {s for s, c in truth.items() if c >= merged.threshold}
        assert set(got) == expect and len(got) == len(expect)
        assert [truth[s] for s in got] == [int(c) for c in merged.counts]
        assert list(merged.counts) == sorted(merged.counts, reverse=True)
    assert merged.complete


# --- peeling ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", registry.NAMES)
def test_peeling_releases_the_true_ranking_when_gaps_are_huge(mechanism: str) -> None:
    spec = registry.get(mechanism)
    if spec.whole_run is not None:
        pytest.skip("levelwise ranks sizes 1..s together: its ranking test is in test_levelwise")
    neighbours = "replace" if "replace" in spec.neighbours else "add-remove"
    recs = _ladder(k=6, top=40000, step=5000)
    result = api.mine(
        recs,
        eps="4",
        delta="1e-6",
        mechanism=mechanism,
        neighbours=neighbours,
        top=4,
        rng=7,
        max_record_items=2 if spec.needs_record_bound else None,
        universe=sorted({i for r in recs for i in r}) if spec.needs_vocabulary else None,
    )
    assert "itemset" not in result
    assert [e["rank"] for e in result["itemsets"]] == [1, 2, 3, 4]
    assert [e["items"] for e in result["itemsets"]] == [[f"x{j}", f"y{j}"] for j in range(4)]
    assert result["ledger"]["eps"]["exact"] == "4"
    assert result["ledger"]["delta"]["exact"] == ("0" if spec.pure else "1/1000000")
    assert result["params"]["top"] == 4


def test_peeling_stops_at_the_first_none_and_still_charges_everything() -> None:
    recs = [["a", "b"]] * 30000 + [["c", "d"]] * 20  # one clear winner, then nothing certifiable
    result = api.mine(recs, eps="1", delta="1e-6", top=5, rng=3)
    assert [e["items"] for e in result["itemsets"]] == [["a", "b"]]
    assert result["ledger"]["eps"]["exact"] == "1"
    assert result["ledger"]["delta"]["exact"] == "1/1000000"
    assert "planned" in result["ledger"]["note"]
    assert result["ledger"]["round"]["eps"]["exact"] == "1/5"


def test_peeling_runs_each_round_at_eps_over_k_on_the_shrunk_counts() -> None:
    seen: list[tuple[Fraction, Fraction, tuple[int, ...]]] = []

    def spy(counts: object, p: registry.Public, rng: object) -> Outcome:
        c = counts.counts  # type: ignore[attr-defined]
        seen.append((p.eps, p.delta, tuple(int(x) for x in c)))
        return Outcome(None, None, 0)

    lmm = registry.get("lmm")
    spec = registry.Mechanism("spy", registry.BOTH, spy, lmm.cost, lmm.none_hint)
    vec = VectorCounts([5, 9, 7, 1])
    picks, last, _ = topk.peel(
        vec, spec, registry.Public(Fraction(3), Fraction(1, 100)), 3, seeded_source(1)
    )
    assert last is None
    assert [q.count for q in picks] == [9, 7, 5]
    assert [q.ids for q in picks] == [(1,), (2,), (0,)]  # input positions of VectorCounts
    assert seen == [
        (Fraction(1), Fraction(1, 300), (9, 7, 5, 1)),
        (Fraction(1), Fraction(1, 300), (7, 5, 1)),
        (Fraction(1), Fraction(1, 300), (5, 1)),
    ]


def test_declared_universe_names_distinct_zero_count_itemsets_of_every_size() -> None:
    recs = [["a", "b"]] * 3
    result = api.mine(
        recs,
        eps="2",
        delta="1e-6",
        mechanism="em",
        universe=["a", "b", "c", "d"],
        sizes="1-2",
        top=10,
        rng=11,
    )
    got = [tuple(e["items"]) for e in result["itemsets"]]
    assert len(got) == 10 and len(set(got)) == 10  # the universe has 4 + 6 = 10 itemsets
    assert set(got) == {s for r in (1, 2) for s in itertools.combinations("abcd", r)}
    assert result["params"]["universe"]["size"] == 10 and result["params"]["sizes"] == [1, 2]


def test_open_universe_with_several_sizes_never_names_a_zero_count_itemset() -> None:
    recs = [["a", "b"]] * 2  # far below every threshold: every round answers none or stops
    for seed in range(5):
        result = api.mine(
            recs, eps="0.5", delta="0.5", mechanism="lmm", sizes="1-3", top=4, rng=seed
        )
        for e in result["itemsets"]:
            assert set(e["items"]) <= {"a", "b"}  # only itemsets that occur can be named


# --- supports ---------------------------------------------------------------------------------


def test_supports_are_noisy_with_scale_m_over_eps_support() -> None:
    """Mean |noise| of DLap(b) is 2q/(1 - q^2) with q = e^(-1/b); 4000 draws, b = 3/(1/4) = 12:
    mean 12.0, sd of the mean ~0.19: the +-1.5 band has a false-alarm rate below 1e-12 and
    excludes scale 4 (sensitivity 1 instead of m = 3, mean 4.0)."""
    outcome = Outcome(None, None, 0)
    picks = [topk.Pick(j + 1, (j,), 1000 * (3 - j), outcome) for j in range(3)]
    rng = seeded_source(21)
    devs = []
    for _ in range(4000 // 3 + 1):
        for q in topk.add_supports(picks, Fraction(1, 4), rng):
            assert q.noisy_support is not None
            devs.append(abs(q.noisy_support - q.count))
    b = 12
    qq = math.exp(-1 / b)
    assert abs(float(np.mean(devs)) - 2 * qq / (1 - qq * qq)) < 1.5


def test_cli_top_k_with_supports(tmp_path: Path) -> None:
    data = tmp_path / "l.csv"
    data.write_text("\n".join(",".join(r) for r in _ladder(k=5, top=6000, step=1000)) + "\n")
    code, out, err = run(
        [
            "mine",
            str(data),
            "--eps",
            "2",
            "--delta",
            "1e-6",
            "--top",
            "3",
            "--supports",
            "--mechanism",
            "lmm",
        ]
    )
    assert code == 0, err
    result = json.loads(out)
    entries = result["itemsets"]
    assert [e["rank"] for e in entries] == [1, 2, 3]
    assert [e["items"] for e in entries] == [["x0", "y0"], ["x1", "y1"], ["x2", "y2"]]
    exact = [6000, 5000, 4000]
    for e, c in zip(entries, exact, strict=True):
        assert abs(e["noisy_support"] - c) < 200  # scale 3/0.5 = 6: 200 is > 30 scales
    assert {"noisy_max", "ell"} <= set(entries[0])  # lmm's per-round releases
    steps = result["ledger"]["steps"]
    assert [s["eps"]["exact"] for s in steps] == ["3/2", "1/2"]
    assert result["ledger"]["eps"]["exact"] == "2"


def test_cli_supports_are_never_the_exact_count(tmp_path: Path) -> None:
    data = tmp_path / "l.csv"
    data.write_text("a,b\n" * 3000)
    values = set()
    for _ in range(6):  # secure source: P(all six noises are 0) = ((1-q)/(1+q))^6 < 1e-4
        code, out, err = run(
            ["mine", str(data), "--eps", "1", "--delta", "1e-6", "--supports", "-q"]
        )
        assert code == 0, err
        result = json.loads(out)
        assert result["itemset"] == ["a", "b"] and "itemsets" not in result
        values.add(result["noisy_support"])
    assert values != {3000} and len(values) > 1


def test_k_equal_1_keeps_todays_result_schema(tmp_path: Path) -> None:
    data = tmp_path / "l.csv"
    data.write_text("a,b\n" * 3000)
    _code, out, _ = run(
        ["mine", str(data), "--eps", "1", "--delta", "1e-6", "--seed", "1", "--mechanism", "lmm"]
    )
    result = json.loads(out)
    assert set(result) == {
        "schema",
        "itemset",
        "noisy_max",
        "ell",
        "n",
        "n_note",
        "params",
        "ledger",
        "private",
        "dpfim_version",
        "created",
    }
    assert "top" not in result["params"] and "composition" not in result["ledger"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--top", "0"], "--top"),
        (["--top", "1001"], "--top"),
        (["--size", "2", "--sizes", "1,2"], "not both"),
        (["--sizes", "3-1"], "--sizes"),
        (["--sizes", "1,x"], "--sizes"),
        (["--sizes", "1-6"], "--size"),
        (["--support-share", "0.5"], "--support-share needs --supports"),
        (["--supports", "--support-share", "1"], "--support-share"),
    ],
)
def test_bad_top_k_options_are_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    data = tmp_path / "l.csv"
    data.write_text("a,b\n")
    code, out, err = run(["mine", str(data), "--eps", "1", "--delta", "1e-6", *args])
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_the_persistent_ledger_charges_the_total(tmp_path: Path) -> None:
    data = tmp_path / "l.csv"
    data.write_text("a,b\n" * 10)
    ledger = tmp_path / "ledger.jsonl"
    base = ["mine", str(data), "--delta", "1e-6", "--ledger", str(ledger)]
    code, _, err = run(
        [
            *base,
            "--eps",
            "1",
            "--top",
            "5",
            "--supports",
            "--budget-eps",
            "3",
            "--budget-delta",
            "1e-5",
            "-q",
        ]
    )
    assert code == 0, err
    code, out, _ = run(["ledger", "show", str(ledger), "--json"])
    state = json.loads(out)  # one data set: one object (issue 20 #4)
    assert state["dataset"] == str(data)
    assert state["spent"]["basic"] == {"eps": 1.0, "delta": 1e-6}
    line = json.loads(ledger.read_text().splitlines()[-1])
    assert (line["eps"], line["delta"]) == ("1", "1/1000000")
    assert line["cost"] == [  # the 5 rounds at (3/4)/5 and the supports at 1/4, typed
        {"measure": "approx", "eps": "3/20", "delta": "1/5000000", "count": 5},
        {"measure": "pure", "eps": "1/4", "count": 1},
    ]


def test_evaluate_top_k_reports_fnr_precision_rank_and_support_error(tmp_path: Path) -> None:
    from dpfim import evaluate as ev

    table = ev.evaluate(
        from_transactions(_ladder(k=8, top=8000, step=700)),
        size=2,
        eps_values=["1"],
        delta="1e-6",
        mechanisms=["lmm", "stability"],
        trials=5,
        rng=4,
        top=5,
        supports=True,
    )
    assert list(table.columns) == list(ev.TOPK_COLUMNS)
    lmm = table[table.mechanism == "lmm"].iloc[0]
    assert lmm.fnr_at_k == 0 and lmm.precision == 1 and lmm.mean_rank_error == 0
    assert 0 < lmm.median_rel_support_error < 0.01  # scale 5/0.25 = 20 against >= 5200


def test_fnr_counts_ties_at_rank_k_as_members() -> None:
    """Counts 10, 9, 9, 9 with K = 2: every one of the three 9s is a true top-2 member."""
    from dpfim import evaluate as ev

    recs = [["a", "b"]] * 9000 + [["c", "d"]] * 8000 + [["e", "f"]] * 8000 + [["g", "h"]] * 8000
    table = ev.evaluate(
        from_transactions(recs),
        size=2,
        eps_values=["2"],
        delta="1e-6",
        mechanisms=["lmm"],
        trials=10,
        rng=2,
        top=2,
    )
    row = table.iloc[0]
    assert row.fnr_at_k == 0 and row.precision == 1
    assert row.mean_rank_error <= 0.5  # the second pick has true (competition) rank 2
