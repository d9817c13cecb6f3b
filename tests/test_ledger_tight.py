"""The §20.3 rule for tight data sets in the persistent ledger (docs/privacy.md §20.3): the
per-run cost is fixed when the budget is created, other costs and raised budgets are refused
(exit 2), the budget check is "N + 1 identical runs fit under tight composition" (exit 4 when
not), and concurrent processes spend exactly the runs that fit. (§20.3 was reviewed by a second
reader before the rule was switched on.)"""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import ROUND_CEILING, Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

from dpfim import accounting, ledger
from dpfim.accountants import BASIC, TIGHT
from dpfim.accounting import ApproxDP, BoundedRange, Cost
from dpfim.errors import BudgetError, ParameterError

pytest.importorskip("dp_accounting")

RUN = Cost.of(ApproxDP(Fraction(1, 5), Fraction(1, 10**7)), "replace")  # lmm at (0.2, 1e-7)
B_DELTA = Fraction(1, 10**6)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "baskets.csv"
    path.write_text("milk,bread\n" * 3000 + "tea\n" * 20)  # clears tau at eps = 0.2
    return path


def budget_for(cost: Cost, k: int) -> str:
    """A decimal budget eps (6 significant digits, rounded up) that k runs of cost fit and
    k + 1 do not, at B_DELTA under tight composition."""
    exact = TIGHT.compose([cost.times(k)], delta=B_DELTA).eps
    dec = Decimal(exact.numerator) / Decimal(exact.denominator)
    text = format(dec.quantize(Decimal("0.000001"), rounding=ROUND_CEILING), "f")
    assert TIGHT.fits([cost.times(k)], Fraction(text), B_DELTA)
    assert not TIGHT.fits([cost.times(k + 1)], Fraction(text), B_DELTA)
    return text


def spend(path: Path, cost: Cost = RUN, **kw: Any) -> ledger.DatasetState:
    fields: dict[str, Any] = {
        "path": str(path),
        "dataset": "orders",
        "cost": cost,
        "mechanism": "lmm",
        "command": ["dpfim", "mine"],
        "budget_eps": Fraction(budget_for(RUN, 5)),
        "budget_delta": B_DELTA,
        "accountant": "tight",
    }
    fields.update(kw)
    return ledger.reserve(ledger.Spend(**fields))


def test_the_first_run_fixes_the_cost_and_exactly_the_runs_that_fit_are_spent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "l.jsonl"
    basic_runs = 0
    for n in range(1, 6):
        st = spend(path)
        assert st.runs == n and st.per_run == RUN
        assert st.runs_left() == 5 - n
        basic_runs += 1
    assert basic_runs * Fraction(1, 5) > Fraction(budget_for(RUN, 5))  # tight bought a run
    with pytest.raises(BudgetError, match=r"5 runs of approx eps=0\.2 delta=1e-7 .* do not fit"):
        spend(path)
    first = json.loads(path.read_text().splitlines()[0])
    assert first["accountant"] == "tight"
    assert first["per_run"] == {"neighbours": "replace", "cost": RUN.to_json()}
    st = ledger.load(str(path))["orders"]
    assert (st.runs, st.per_run, st.accountant) == (5, RUN, TIGHT)
    assert ledger.verify(str(path)) == 6


def test_a_run_with_another_cost_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    spend(path)
    others = [
        Cost.of(ApproxDP(Fraction(1, 10), Fraction(1, 10**7)), "replace"),  # another eps
        Cost.of(ApproxDP(Fraction(1, 5), Fraction(1, 10**8)), "replace"),  # another delta
        Cost.of(BoundedRange(Fraction(1, 5)), "replace"),  # another measure type
        RUN.times(2),  # another count (e.g. --top 2 at the same round cost)
        RUN.plus(Cost.of(accounting.PureDP(Fraction(1, 20)), "replace")),  # + supports
    ]
    for other in others:
        with pytest.raises(ParameterError, match="must cost what its first did"):
            spend(path, other)
    with pytest.raises(ParameterError, match="does not compose"):  # another relation
        spend(path, Cost.of(RUN.parts[0][0], "add-remove"))
    assert ledger.load(str(path))["orders"].runs == 1


def test_a_tight_budget_cannot_be_raised(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    spend(path)
    with pytest.raises(ParameterError, match="cannot be raised"):
        spend(path, budget_eps=Fraction(10), raise_budget=True)
    with pytest.raises(ParameterError, match="cannot be raised"):  # even to the same budget
        spend(path, raise_budget=True)
    with pytest.raises(ParameterError, match="cannot be raised"):  # or without --raise-budget
        spend(path, budget_eps=Fraction(10))
    spend(path)  # the same budget given again: accepted
    spend(path, budget_eps=None, budget_delta=None, accountant=None)  # the data set's own
    with pytest.raises(ParameterError, match="fixed when the data set's budget is created"):
        spend(path, accountant="basic")
    assert ledger.load(str(path))["orders"].runs == 3


def _mine(data: Path, path: Path, *extra: str) -> tuple[int, str, str]:
    args = ["mine", str(data), "--eps", "0.2", "--delta", "1e-7", "--ledger", str(path)]
    return run([*args, "--dataset", "orders", *extra])


def test_the_cli_spends_refuses_and_reports_runs_left(tmp_path: Path, data: Path) -> None:
    path = tmp_path / "l.jsonl"
    budget = ("--budget-eps", budget_for(RUN, 3), "--budget-delta", "1e-6")
    code, out, err = _mine(data, path, "--accountant", "tight", *budget)
    assert code == 0, err
    remaining = json.loads(out)["ledger"]["remaining"]
    assert remaining["accountant"] == "tight" and remaining["runs"] == 2
    assert "2 more runs of its fixed cost" in err
    code, out, err = _mine(data, path, "-q", "--eps", "0.3")
    assert code == 2 and out == "" and "must cost what its first did" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = _mine(data, path, "-q", "--raise-budget", "--budget-eps", "9", *budget[2:])
    assert code == 2 and out == "" and "cannot be raised" in err
    assert _mine(data, path, "-q")[0] == 0
    assert _mine(data, path, "-q", "--accountant", "tight")[0] == 0
    code, out, err = _mine(data, path, "-q")
    assert code == 4 and out == "" and "budget exhausted" in err
    assert ledger.load(str(path))["orders"].runs == 3
    code, out, err = run(["ledger", "show", str(path), "--json"])
    assert code == 0, err
    shown = json.loads(out)
    assert shown["accountant"] == "tight" and shown["remaining"]["runs"] == 0
    assert shown["spent"]["tight"]["eps"] <= float(budget[1])


# N processes against a tight ledger sized for exactly K runs: they spend exactly K.
_CHILD = "import sys; from dpfim.cli import main; main(sys.argv[1:])"


@pytest.mark.slow
def test_concurrent_processes_spend_exactly_the_runs_that_fit(tmp_path: Path, data: Path) -> None:
    path = tmp_path / "l.jsonl"
    k, n = 4, 10
    budget = budget_for(RUN, k)
    args = [
        *("mine", str(data), "--eps", "0.2", "--delta", "1e-7", "--accountant", "tight"),
        *("--ledger", str(path), "--dataset", "orders", "--quiet"),
        *("--budget-eps", budget, "--budget-delta", "1e-6"),
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        results.append((p.returncode, out, err))
    codes = sorted(code for code, _, _ in results)
    assert codes == [0] * k + [4] * (n - k), results
    for code, out, err in results:
        if code == 0:
            assert json.loads(out)["itemset"] == ["bread", "milk"]
        else:
            assert out == "" and "budget exhausted" in err
    st = ledger.load(str(path))["orders"]
    assert (st.runs, st.per_run, st.runs_left()) == (k, RUN, 0)
    assert st.spent().eps == k * Fraction(1, 5) > Fraction(budget)  # more than basic allows
    assert ledger.verify(str(path)) == k + 1


# --- ledger show --plot ----------------------------------------------------------------------


def test_show_plot_draws_cumulative_eps_and_never_writes_onto_a_ledger(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from dpfim import spendplot

    path = tmp_path / "l.jsonl"
    for _ in range(5):
        spend(path)
    png = tmp_path / "spend.png"
    code, out, err = run(["ledger", "show", str(path), "--plot", str(png)])
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "orders: 5 runs" in out  # the text is still printed
    st = ledger.load(str(path))["orders"]
    basic, tight = spendplot.cumulative(st)
    assert basic == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    assert tight is not None and [k for k, _ in tight] == [1, 2, 3, 4, 5]
    assert all(e <= b + 1e-9 for (_, e), b in zip(tight, basic, strict=True))
    assert tight[-1][1] <= float(st.budget_eps or 0)
    other = tmp_path / "other.jsonl"
    spend(other)
    for target in (path, Path(ledger.head_path(str(path))), other):
        before = target.read_bytes()
        code, out, err = run(["ledger", "show", str(path), "--plot", str(target)])
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert target.read_bytes() == before
    code, _, err = run(["ledger", "show", str(path), "--plot", str(tmp_path / "x.jpg")])
    assert code == 2 and "PNG" in err


@pytest.mark.slow
def test_the_plot_evaluates_the_tight_accountant_at_a_bounded_number_of_runs() -> None:
    from dpfim import spendplot

    st = ledger.DatasetState(Fraction(100), B_DELTA)
    for _ in range(365):
        st.add(Cost.of(BoundedRange(Fraction(1, 10)), "add-remove"))
    basic, tight = spendplot.cumulative(st)
    assert len(basic) == 365 and basic[-1] == pytest.approx(36.5)
    assert tight is not None and len(tight) <= spendplot.TIGHT_POINTS + 1
    assert tight[-1][0] == 365 and tight[-1][1] <= 5.5  # issue 20's target for em


# --- dpfim ledger create: the per-run cost given explicitly -----------------------------------


def test_ledger_create_fixes_the_cost_before_the_first_run(tmp_path: Path, data: Path) -> None:
    path = tmp_path / "l.jsonl"
    base = ["ledger", "create", str(path), "--dataset", "orders", "--budget-delta", "1e-6"]
    code, out, err = run([*base, "--budget-eps", budget_for(RUN, 3), "--accountant", "tight"])
    assert code == 2 and "--eps and --delta" in err and not path.exists()
    code, out, err = run(
        [*base, "--budget-eps", "0.1", "--accountant", "tight", "--eps", "0.2", "--delta", "1e-7"]
    )
    assert code == 4 and "budget exhausted" in err and not path.exists()  # one run must fit
    tight = ["--accountant", "tight", "--eps", "0.2", "--delta", "1e-7"]
    code, out, err = run([*base, "--budget-eps", budget_for(RUN, 3), *tight])
    assert code == 0, err
    assert "created data set 'orders'" in out and "3 more runs of its fixed cost fit" in out
    st = ledger.load(str(path))["orders"]
    assert (st.runs, st.per_run, st.accountant) == (0, RUN, TIGHT)
    code, out, err = run([*base, "--budget-eps", "5", *tight])
    assert code == 2 and "created once" in err
    assert _mine(data, path, "-q", "--eps", "0.3")[0] == 2  # not the fixed cost
    for _ in range(3):
        code, out, err = _mine(data, path, "-q")  # the data set's accountant and budget
        assert code == 0, err
    assert _mine(data, path, "-q")[0] == 4
    assert ledger.verify(str(path)) == 4


def test_ledger_create_of_a_basic_data_set_takes_no_run_options(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    base = ["ledger", "create", str(path), "--dataset", "orders", "--budget-eps", "1"]
    code, _, err = run([*base, "--budget-delta", "1e-6", "--eps", "0.1"])
    assert code == 2 and "basic data set has none" in err
    code, _, err = run([*base, "--budget-delta", "1e-6"])
    assert code == 0, err
    st = ledger.load(str(path))["orders"]
    assert (st.budget_eps, st.accountant, st.per_run, st.runs) == (1, BASIC, None, 0)


def test_create_budget_is_ledger_create_without_the_cli(tmp_path: Path) -> None:
    """The budget rules of `ledger create` live in the library: the same refusals, and the
    same budget line as the command writes."""
    by_cli, by_lib = tmp_path / "cli.jsonl", tmp_path / "lib.jsonl"
    b_eps = budget_for(RUN, 3)
    budget = ["--budget-eps", b_eps, "--budget-delta", "1e-6", "--accountant", "tight"]
    tight = [*budget, "--eps", "0.2", "--delta", "1e-7"]
    code, _, err = run(["ledger", "create", str(by_cli), "--dataset", "orders", *tight])
    assert code == 0, err
    kw: dict[str, Any] = {"dataset": "orders", "budget_eps": b_eps, "budget_delta": "1e-6"}
    with pytest.raises(ParameterError, match="give the runs' --eps and --delta"):
        ledger.create_budget(str(by_lib), accountant="tight", **kw)
    with pytest.raises(ParameterError, match="a basic data set has none"):
        ledger.create_budget(str(by_lib), run={"eps": "0.2"}, **kw)
    with pytest.raises(ParameterError, match="--dataset must not be empty"):
        ledger.create_budget(str(by_lib), **{**kw, "dataset": " "})
    assert not by_lib.exists()
    run_options = {"eps": "0.2", "delta": "1e-7"}
    st = ledger.create_budget(str(by_lib), accountant="tight", run=run_options, **kw)
    assert (st.runs, st.per_run, st.runs_left()) == (0, RUN, 3)

    def budget_line(path: Path) -> dict[str, Any]:
        line = json.loads(path.read_text())
        return {k: v for k, v in line.items() if k not in ("time", "command", "prev")}

    assert budget_line(by_lib) == budget_line(by_cli)
    assert ledger.verify(str(by_lib)) == 1


def test_show_of_a_tight_data_set_without_dp_accounting_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dpfim import tight

    path = tmp_path / "l.jsonl"
    spend(path)

    def missing() -> None:
        raise ParameterError(accounting.INSTALL_HINT)

    monkeypatch.setattr(tight, "_library", missing)
    # what was composed above is kept under the installed dp-accounting's version; uninstalled,
    # that version is gone from the cache's keys: here, with the library only patched out, the
    # cache is turned off instead
    monkeypatch.setenv("DPFIM_NO_CACHE", "1")
    code, out, err = run(["ledger", "show", str(path)])
    assert code == 0, err
    assert "orders: 1 run" in out and "needs dp-accounting" in out
    with pytest.raises(ParameterError, match="dpfim\\[accounting\\]"):
        spend(path)  # a run needs the accountant: a one-line usage error, nothing charged
    assert ledger.load(str(path))["orders"].runs == 1
