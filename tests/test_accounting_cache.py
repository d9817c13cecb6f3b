"""What the tight accountant composed is kept (dpfim.accounting_cache): a kept result is exactly
the computed one (every eps, every --top K split, a ledger's growing prefix), a damaged entry is
recomputed, a hit does not load dp-accounting, and runs_left, read off a kept capacity, is what
probing every further run gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from fractions import Fraction as F
from pathlib import Path

import pytest

from dpfim import accounting, accounting_cache, ledger, tight
from dpfim.accountants import TIGHT
from dpfim.accounting import ApproxDP, BoundedRange, Cost, InfeasibleError, PureDP
from dpfim.ledger import budgets

pytest.importorskip("dp_accounting")

AR = "add-remove"
D6 = F(1, 10**6)
LMM = Cost.of(ApproxDP(F(1, 20), F(1, 10**9)), AR)  # a nightly lmm run at (0.05, 1e-9)
COST_LISTS = [
    [Cost.of(PureDP(F(1, 10)), AR, 5)],
    [Cost.of(BoundedRange(F(1, 10)), AR, 40)],
    [Cost.of(ApproxDP(F(1, 5), F(1, 10**7)), AR, 3)],
    [Cost.of(BoundedRange(F(1, 20)), AR, 10), Cost.of(PureDP(F(1, 4)), AR)],
    [Cost.of(PureDP(F(1, 4)), AR), Cost.of(BoundedRange(F(1, 20)), AR, 10)],  # order kept
    [Cost.of(ApproxDP(F(1, 3), F(1, 10**8)), AR, 2), Cost.of(BoundedRange(F(1, 7)), AR, 6)],
    [LMM.times(1000)],  # its own deltas reach the budget's: basic only
    [Cost.of(ApproxDP(F(1, 10), F(1, 10**6)), AR, 2)],  # infeasible at 1e-6
]


def computed(costs: list[Cost], delta: F) -> accounting.Total | str:
    """The uncached computation: a Total, or the infeasibility's message."""
    measures: Counter[accounting.Measure] = Counter()
    for cost in costs:
        measures.update(cost.measures())
    try:
        return tight._compose(measures, delta)
    except InfeasibleError as exc:
        return str(exc)


def composed(costs: list[Cost], delta: F) -> accounting.Total | str:
    try:
        return TIGHT.compose(costs, delta=delta)
    except InfeasibleError as exc:
        return str(exc)


def assert_identical(a: accounting.Total | str, b: accounting.Total | str) -> None:
    assert a == b
    if isinstance(a, accounting.Total) and isinstance(b, accounting.Total):
        # the same exact rationals, not merely equal floats
        assert (a.eps.numerator, a.eps.denominator) == (b.eps.numerator, b.eps.denominator)
        assert (a.delta, a.accountant) == (b.delta, b.accountant)


def test_a_kept_composition_is_the_computed_one() -> None:
    lists = [*COST_LISTS, *([LMM] * k for k in (1, 2, 3, 50, 365, 366))]  # a ledger growing
    expected = [computed(costs, D6) for costs in lists]
    first = [composed(costs, D6) for costs in lists]  # computed and kept
    from_memory = [composed(costs, D6) for costs in lists]
    accounting_cache.clear_memory()
    from_disk = [composed(costs, D6) for costs in lists]
    for want, *got in zip(expected, first, from_memory, from_disk, strict=True):
        for one in got:
            assert_identical(one, want)
    assert len(list(accounting_cache.directory().iterdir())) == len(lists)
    # a prefix and its extension are two keys, the same cost spelt in parts one
    assert composed([LMM.times(366)], D6) == expected[-1]
    assert len(list(accounting_cache.directory().iterdir())) == len(lists)


def test_every_top_k_split_is_the_computed_one(monkeypatch: pytest.MonkeyPatch) -> None:
    def per_round(eps: F, delta: F) -> Cost:
        return Cost.of(ApproxDP(eps, delta), AR)

    def bounded(eps: F, delta: F) -> Cost:
        return Cost.of(BoundedRange(eps), AR)

    cases = [(per_round, 5, F(1), F(0)), (per_round, 3, F(1), F(1, 4)), (bounded, 10, F(1), F(0))]
    monkeypatch.setenv("DPFIM_NO_CACHE", "1")
    expected = [TIGHT.split(rc, k, e, s, D6) for rc, k, e, s in cases]
    monkeypatch.delenv("DPFIM_NO_CACHE")
    for _ in range(2):
        assert [TIGHT.split(rc, k, e, s, D6) for rc, k, e, s in cases] == expected
        accounting_cache.clear_memory()


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: "",  # an empty file (a crash before the data reached the disk)
        lambda text: text[: len(text) // 2],  # torn
        lambda text: "not json \x00",
        lambda text: json.dumps([1, 2]),
        lambda text: text.replace('"eps":"', '"eps":"1', 1),  # edited: the checksum fails
        lambda text: json.dumps({**json.loads(text), "key": "another key"}),
    ],
)
def test_a_damaged_entry_is_recomputed(damage: object) -> None:
    costs = [LMM] * 30
    want = composed(costs, D6)
    (entry,) = accounting_cache.directory().iterdir()
    assert callable(damage)
    entry.write_text(damage(entry.read_text()))
    accounting_cache.clear_memory()
    assert_identical(composed(costs, D6), want)
    accounting_cache.clear_memory()
    assert_identical(composed(costs, D6), want)  # and written again, whole
    assert json.loads(entry.read_text())["value"]["eps"] == str(want.eps)  # type: ignore[union-attr]


def test_a_damaged_value_that_checks_is_still_not_trusted_blindly() -> None:
    costs = [LMM] * 7
    want = composed(costs, D6)
    (entry,) = accounting_cache.directory().iterdir()
    obj = json.loads(entry.read_text())
    obj["value"] = {"eps": "-1", "delta": "0", "accountant": "basic"}  # not a total at all
    obj["sha256"] = accounting_cache._checksum(obj["key"], obj["value"])
    entry.write_text(json.dumps(obj))
    accounting_cache.clear_memory()
    assert_identical(composed(costs, D6), want)


def test_an_unwritable_cache_only_costs_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("DPFIM_CACHE_DIR", str(blocker))  # a file: no directory can be made
    want = computed([LMM] * 3, D6)
    assert_identical(composed([LMM] * 3, D6), want)


def test_where_the_cache_lives(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DPFIM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert accounting_cache.directory() == tmp_path / "xdg" / "dpfim" / "tight"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # ignored, as the XDG spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert accounting_cache.directory() == tmp_path / "home" / ".cache" / "dpfim" / "tight"
    monkeypatch.setenv("DPFIM_CACHE_DIR", str(tmp_path / "mine"))
    assert accounting_cache.directory() == tmp_path / "mine" / "tight"


def test_the_key_changes_with_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    installed = accounting_cache.fingerprint()
    real = metadata.version

    def without(name: str) -> str:
        if name == "dp-accounting":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", without)
    accounting_cache.clear_memory()
    assert accounting_cache.fingerprint() != installed
    assert "dp-accounting=absent" in accounting_cache.fingerprint()


SCRIPT = """
import json, sys
from fractions import Fraction as F
from dpfim import accounting, ledger
from dpfim.accountants import TIGHT
from dpfim.accounting import ApproxDP, Cost
cost = Cost.of(ApproxDP(F(1, 20), F(1, 10**9)), "add-remove")
total = TIGHT.compose([cost] * 40, delta=F(1, 10**6))
st = ledger.DatasetState(F(3), F(1, 10**6), TIGHT, costs=[cost] * 40, per_run=cost)
left = st.runs_left()
print(json.dumps([str(total.eps), total.accountant, left, "dp_accounting" in sys.modules]))
"""


def test_a_hit_does_not_load_dp_accounting(tmp_path: Path) -> None:
    env = {**os.environ, "DPFIM_CACHE_DIR": str(tmp_path / "c")}
    env.pop("DPFIM_NO_CACHE", None)

    def once() -> list[object]:
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        return list(json.loads(out.stdout))

    first, second = once(), once()
    assert first[3] is True  # computed: the library was loaded
    assert second == [*first[:3], False]


def _probing(st: ledger.DatasetState) -> int:
    """runs_left as it was computed before the capacity was kept: fits(runs + m) probed."""
    return budgets._most(lambda m: st.fits(st.runs + m))


@pytest.mark.parametrize(
    ("per_run", "budget", "runs"),
    [
        (LMM, F(1), 0),
        (LMM, F(1), 17),
        (LMM, F(1), 60),  # spent beyond what fits: none left
        (Cost.of(BoundedRange(F(1, 10)), AR, 3), F(2), 5),
        (Cost.of(PureDP(F(1, 10)), AR), F(1, 2), 2),
        (Cost.of(ApproxDP(F(1, 5), F(1, 10**7)), AR), F(1), 4),
    ],
)
def test_runs_left_from_the_kept_capacity_is_what_probing_gives(
    per_run: Cost, budget: F, runs: int
) -> None:
    st = ledger.DatasetState(budget, D6, TIGHT, costs=[per_run] * runs, per_run=per_run)
    assert st.runs_left() == _probing(st)
