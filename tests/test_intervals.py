"""What a user plots: mine --csv, the supports' intervals, rules' confidence and lift intervals
(docs/privacy.md §21.5, §24.4)."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import random
from fractions import Fraction
from pathlib import Path

import pytest
from cli_run import run

from dpfim import api
from dpfim.rules import Closure, half_width


def _fimi(tmp_path: Path, rows: int = 4000, seed: int = 3) -> Path:
    rng = random.Random(seed)
    p = {"1": 0.6, "2": 0.5, "3": 0.4, "4": 0.3}
    lines = [" ".join(x for x in "1234567" if rng.random() < p.get(x, 0.1)) for _ in range(rows)]
    path = tmp_path / "d.dat"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_mine_csv_holds_what_the_json_released(tmp_path: Path) -> None:
    data, table = _fimi(tmp_path), tmp_path / "out.csv"
    args = ["mine", str(data), "--eps", "1", "--delta", "1e-6", "--top", "6", "--sizes", "1-2"]
    code, out, err = run([*args, "--supports", "--seed", "2", "--csv", str(table)])
    assert code == 0, err
    res = json.loads(out)
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    assert len(rows) == len(res["itemsets"]) == 6
    for row, e in zip(rows, res["itemsets"], strict=True):
        assert json.loads(row["items"]) == e["items"] and int(row["size"]) == len(e["items"])
        assert float(row["noisy_support"]) == e["noisy_support"]
        assert float(row["noisy_fraction"]) == pytest.approx(e["noisy_support"] / res["n"])
        assert [float(row["interval_low"]), float(row["interval_high"])] == e["support_interval"]
        assert "parity" in row["support_made_by"] and row["private"] == "false"


def test_mine_csv_without_supports_has_empty_support_columns(tmp_path: Path) -> None:
    data, table = _fimi(tmp_path), tmp_path / "out.csv"
    args = ["mine", str(data), "--eps", "1", "--delta", "1e-6", "--top", "3", "--sizes", "1-2"]
    code, _, err = run([*args, "--seed", "2", "--csv", str(table)])
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    assert len(rows) == 3 and all(r["noisy_support"] == "" == r["support_made_by"] for r in rows)


def test_mine_csv_refuses_to_overwrite_the_input(tmp_path: Path) -> None:
    data = _fimi(tmp_path)
    before = data.read_text()
    code, out, err = run(["mine", str(data), "--eps", "1", "--delta", "1e-6", "--csv", str(data)])
    assert code == 2 and out == "" and "--csv" in err and data.read_text() == before


def _closure(noise: str, scale: Fraction) -> Closure:
    return Closure([], [], [], [], 100.0, None, 1, scale, noise)


def test_half_widths_by_hand() -> None:
    """Laplace b = 10, alpha' = 0.025: ceil(10 ln(2 / (0.025 (1 + e^-0.1)))) - 1 = ceil(37.33)
    - 1 = 37, and the exact tail P(|Y| >= 38) = 2 e^-3.8 / (1 + e^-0.1) = 0.0235 <= 0.025.
    Gaussian sigma^2 = 100, alpha' = 0.025: ceil(10 sqrt(2 ln 80)) = ceil(29.60) = 30."""
    h = half_width(_closure("laplace", Fraction(10)), 0.025)
    assert h == 37
    assert 2 * math.exp(-(h + 1) / 10) / (1 + math.exp(-0.1)) <= 0.025
    assert 2 * math.exp(-h / 10) / (1 + math.exp(-0.1)) > 0.025  # the least such h
    assert half_width(_closure("gaussian", Fraction(100)), 0.025) == 30


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_rule_intervals_cover_the_exact_confidence_and_lift(tmp_path: Path, noise: str) -> None:
    """Seeded, 60 rules runs (add/remove) on 4,000 generated records: every released rule's
    exact confidence and lift (brute force) inside its stated interval in at least 95 % of the
    (rule, run) cases (the intervals hold at >= 95 % each by a union bound, so this fails only
    if they are too narrow: with >= 300 cases, a true coverage of 95 % falls below 0.93 with
    probability < 0.05, and the union bound makes the true coverage higher)."""
    baskets = [line.split() for line in _fimi(tmp_path).read_text().splitlines()]
    n = len(baskets)
    support = {}
    for r in (1, 2, 3):
        for x in itertools.combinations("1234567", r):
            support[frozenset(x)] = sum(1 for b in baskets if set(x) <= set(b))
    hits = cases = 0
    for seed in range(60):
        res = api.association_rules(
            baskets,
            eps="2",
            delta="1e-6",
            top=8,
            sizes="1-2",
            neighbours="add-remove",
            closure_noise=noise,
            min_threshold=0.0,
            rng=seed,
        ).attrs["result"]
        for rule in res["rules"]:
            a, c = frozenset(rule["antecedents"]), frozenset(rule["consequents"])
            conf = support[a | c] / support[a]
            lift = conf / (support[c] / n)
            for value, (lo, hi) in (
                (conf, rule["confidence_interval"]),
                (lift, rule["lift_interval"]),
            ):
                cases += 1
                hits += lo <= value and (hi is None or value <= hi)
    assert cases >= 300
    assert hits / cases >= 0.95, (hits, cases)
