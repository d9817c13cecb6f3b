"""The file-level privacy audit (issue 9; docs/testing-privacy.md, "Files in, JSON out").

The count-vector audit (test_audit.py) cannot see a leak where bytes become records or where
counts become names. These tests start from whole neighbouring FILES and end at the released JSON:

1. Neighbouring files through `dpfim.mine_file` (what `dpfim mine` runs): the distribution of the
   released JSON (minus the timestamp; the noisy max in bins of 3) on D and D' must satisfy the
   claimed (eps, delta), checked with one-sided Clopper-Pearson bounds in both directions,
   Bonferroni over every bound of this module (family false-alarm rate <= 1e-4; seeds fixed, so
   the outcome is deterministic). Where D' is malformed, the only acceptable outcome is a
   one-line data error (exit 3) and no output.
2. An open-universe run never names an itemset whose support is 0, for every mechanism that can
   run in the open universe.

On the readers and naming before issue 9, (1) fails on the long-format pairs (D' was read as a
different data set: n = 1 or 4 against 601) and (2) fails for lmm, lmm-gap, stability and
limited-domain (zero-support pairs named, or an internal error for r = 1).
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dpaudit as A
import pytest
from click.testing import CliRunner

from dpfim.api import mine_file
from dpfim.cli import cli
from dpfim.errors import InputError

FAMILY_ALPHA = 1e-4


def long_file(first_row: str) -> str:
    """600 customers buying x and y, customer c1 buying `first_row`'s item, u999 buying w."""
    rows = ["cust,item", first_row]
    for i in range(2, 601):
        rows += [f"c{i},x", f"c{i},y"]
    rows.append('u999,"w"')
    return "\n".join(rows) + "\n"


@dataclass(frozen=True)
class FilePair:
    name: str
    suffix: str
    d: str
    d_prime: str
    eps: str
    delta: str
    options: dict[str, Any] = field(default_factory=dict)
    runs: int = 600


LONG = {"record_col": "cust", "item_col": "item"}
PAIRS = [
    # the three reproductions of issue 9 §1: D' is malformed, so it must be a data error
    FilePair(
        "long: c1's row swallows the rest",
        ".csv",
        long_file("c1,a"),
        long_file('c1"z,"a'),
        "1",
        "1e-6",
        LONG,
    ),
    FilePair(
        "long: an extra field in the first row",
        ".csv",
        long_file("c1,a"),
        long_file("c1,a,b"),
        "1",
        "1e-6",
        LONG,
    ),
    FilePair(
        "long: a lone CR inside a row",
        ".csv",
        long_file("c1,a"),
        long_file("c1,a\rc2,b"),
        "1",
        "1e-6",
        LONG,
    ),
    # well-formed but adversarial neighbours: the releases must be (eps, delta)-close
    FilePair(
        "long: a quoted id with the separator",
        ".csv",
        long_file("c1,a"),
        long_file('"c1,x",a'),
        "1",
        "1e-6",
        LONG,
    ),
    FilePair(
        "long: a quote inside an unquoted id",
        ".csv",
        long_file("c1,a"),
        long_file('c1"z,a'),
        "1",
        "1e-6",
        LONG,
    ),
    FilePair(
        "xy / xz (issue 9 §2), r = 2", ".csv", "x\ny\n", "x\nz\n", "0.01", "0.99", {"size": 2}
    ),
    FilePair(
        "xy / xz, stability",
        ".csv",
        "x\ny\n",
        "x\nz\n",
        "1",
        "0.5",
        {"size": 2, "mechanism": "stability"},
    ),
    FilePair(
        "basket: a record that looks compressed",
        ".csv",
        "milk,bread\n" * 300 + "tea\n",
        "milk,bread\n" * 300 + "BZh91AY,tea\n",
        "1",
        "1e-6",
    ),
]


def released(path: Path, pair: FilePair, seeds: range) -> list[str] | str:
    """Canonical released JSON per seed (timestamp dropped, M in bins of 3), or the data
    error's message."""
    out = []
    for seed in seeds:
        try:
            result = mine_file(str(path), eps=pair.eps, delta=pair.delta, seed=seed, **pair.options)
        except InputError as exc:
            return str(exc)
        result.pop("created")
        result["private"] = True  # the seeded runs stand in for secure ones
        if "noisy_max" in result:
            result["noisy_max"] = result["noisy_max"] // 3
        out.append(json.dumps(result, sort_keys=True))
    return out


def dp_violations(
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
            found.append(f"{lo:.3g} > e^{eps:g}*{hi:.3g}+{delta:g} for {key[:160]}")
    return found


def n_bounds() -> int:
    # at most (runs / MIN_MASS) checked events per side and direction, two bounds each
    return sum(2 * 2 * (p.runs // A.MIN_MASS) for p in PAIRS)


@pytest.mark.slow
@pytest.mark.parametrize("pair", PAIRS, ids=[p.name for p in PAIRS])
def test_neighbouring_files_release_close_distributions(tmp_path: Path, pair: FilePair) -> None:
    d, d2 = tmp_path / f"d{pair.suffix}", tmp_path / f"d2{pair.suffix}"
    d.write_text(pair.d)
    d2.write_text(pair.d_prime)
    seeds = range(1, pair.runs + 1)
    left = released(d, pair, seeds)
    assert not isinstance(left, str), left
    right = released(d2, pair, range(10**6, 10**6 + pair.runs))
    if isinstance(right, str):  # malformed D': one line, exit 3, nothing on stdout
        result = CliRunner().invoke(
            cli,
            [
                "mine",
                str(d2),
                "--eps",
                pair.eps,
                "--delta",
                pair.delta,
                *itertools.chain.from_iterable(
                    (f"--{k.replace('_', '-')}", str(v)) for k, v in pair.options.items()
                ),
            ],
            catch_exceptions=True,
        )
        assert isinstance(result.exception, InputError), result.output
        assert result.exception.exit_code == 3
        assert "\n" not in str(result.exception) and ":" in str(result.exception)
        return
    alpha_each = FAMILY_ALPHA / n_bounds()
    eps, delta = float(pair.eps), float(pair.delta)
    bad = dp_violations(left, right, eps, delta, alpha_each)
    bad += dp_violations(right, left, eps, delta, alpha_each)
    assert not bad, f"{pair.name}: " + "; ".join(bad[:3])


# --- an open-universe run never names a zero-support itemset ----------------------------------

OPEN_UNIVERSE = [  # (mechanism, neighbours, extra options, eps, delta): zero picks are frequent
    ("lmm", "replace", {}, "0.01", "0.99"),
    ("lmm-gap", "add-remove", {}, "0.01", "0.99"),
    ("stability", "replace", {}, "1", "0.5"),
    ("limited-domain", "add-remove", {}, "1", "0.5"),
    ("choosing", "add-remove", {"max_record_items": 3}, "0.01", "0.99"),
]
ZERO_DATA = "a,b\na,b\nc\nd\ne\n"  # one pair with support 2; C(5,2) - 1 = 9 pairs with support 0


def supports(text: str, size: int) -> Counter[tuple[str, ...]]:
    count: Counter[tuple[str, ...]] = Counter()
    for line in text.splitlines():
        items = sorted({s.strip() for s in line.split(",") if s.strip()})
        count.update(itertools.combinations(items, size))
    return count


@pytest.mark.slow
@pytest.mark.parametrize(("mechanism", "neighbours", "extra", "eps", "delta"), OPEN_UNIVERSE)
@pytest.mark.parametrize("size", [1, 2, 3])
def test_open_universe_never_names_a_zero_support_itemset(
    tmp_path: Path,
    mechanism: str,
    neighbours: str,
    extra: dict[str, Any],
    eps: str,
    delta: str,
    size: int,
) -> None:
    path = tmp_path / "z.csv"
    path.write_text(ZERO_DATA)
    support = supports(ZERO_DATA, size)
    named: Counter[tuple[str, ...]] = Counter()
    for seed in range(400):
        result = mine_file(
            str(path),
            size=size,
            eps=eps,
            delta=delta,
            mechanism=mechanism,
            neighbours=neighbours,
            seed=seed,
            **extra,
        )
        if result["itemset"] is not None:
            items = tuple(result["itemset"])
            named[items] += 1
            assert support[items] > 0, f"seed {seed}: named {items}, whose support is 0"


def test_a_declared_vocabulary_still_names_zero_count_itemsets(tmp_path: Path) -> None:
    """With --universe-items the universe is finite and public: a zero-count pick is named."""
    data, vocab = tmp_path / "z.csv", tmp_path / "v.txt"
    data.write_text(ZERO_DATA)
    vocab.write_text("a\nb\nc\nd\ne\nf\n")
    zero_named = 0
    for seed in range(200):
        result = mine_file(
            str(data),
            size=2,
            eps="0.01",
            delta="0.99",
            seed=seed,
            universe_items=str(vocab),
            mechanism="lmm",
        )
        assert result["itemset"] is not None  # a declared universe never answers none
        zero_named += tuple(result["itemset"]) != ("a", "b")
    assert zero_named > 0
