"""`dpfim ledger plan` (issue 20 #5): the largest per-run eps for N runs inside a budget."""

from __future__ import annotations

import builtins
import json
from fractions import Fraction
from typing import Any

import pytest
from cli_run import run

from dpfim import accounting, plan
from dpfim.accountants import get_accountant

BUDGET = ["--budget-eps", "2", "--budget-delta", "1e-6", "--runs", "365"]


def _plan(*args: str) -> dict[str, Any]:
    code, out, err = run(["ledger", "plan", *BUDGET, *args])
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def _rechecked(result: dict[str, Any], **kw: Any) -> None:
    """The exact answer fits; one more unit in its last decimal place does not."""
    opts = plan.check_options(
        size=None,
        eps="1",
        delta=kw.pop("delta", "1/2"),
        universe_given=True,
        **kw,
    )
    best = Fraction(result["per_run_eps_exact"])
    budget = (Fraction(2), Fraction(1, 10**6))
    acct = get_accountant(result["accountant"])
    assert plan._fits(opts, best, 365, acct, budget)
    assert not plan._fits(opts, best + accounting.unit(best), 365, acct, budget)


def test_basic_is_the_budget_over_n_rounded_down() -> None:
    r = _plan("--mechanism", "lmm", "--delta", "1e-9")
    assert r["per_run_eps_exact"] == "0.00547945"  # 2/365 = 0.0054794520...
    assert r["per_run_eps"] == 0.00547945 and r["per_run_delta"] == 1e-9
    _rechecked(r, mechanism="lmm", delta="1e-9")


@pytest.mark.slow
def test_the_issue_targets_under_tight() -> None:
    pytest.importorskip("dp_accounting")
    lmm = _plan("--mechanism", "lmm", "--delta", "1e-9", "--accountant", "tight")
    assert lmm["per_run_eps"] >= 0.023  # basic: 0.00548
    _rechecked(lmm, mechanism="lmm", delta="1e-9")
    em = _plan("--mechanism", "em", "--neighbours", "add-remove", "--accountant", "tight")
    assert em["per_run_eps"] >= 0.038
    _rechecked(em, mechanism="em", neighbours="add-remove")
    assert em["spent"]["eps"] <= 2


def test_top_k_runs_compose_their_rounds() -> None:
    r = _plan("--mechanism", "lmm", "--delta", "1e-9", "--top", "5", "--supports")
    assert r["per_run_eps_exact"] == "0.00547945"  # basic: the run's total, however split
    assert r["per_run_delta"] == 1e-9


def test_infeasible_is_exit_4_with_one_line() -> None:
    code, out, err = run(["ledger", "plan", *BUDGET, "--mechanism", "lmm", "--delta", "1e-8"])
    assert code == 4 and out == ""
    assert "infeasible" in err and err.count("\n") == 1


def test_a_mechanism_with_a_delta_needs_one() -> None:
    code, _, err = run(["ledger", "plan", *BUDGET, "--mechanism", "stability"])
    assert code == 2 and "--delta" in err


def test_without_dp_accounting_a_one_line_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def no_dp(name: str, *args: Any, **kw: Any) -> Any:
        if name.startswith("dp_accounting"):
            raise ImportError(name)
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_dp)
    code, _, err = run(["ledger", "plan", *BUDGET, "--mechanism", "em", "--accountant", "tight"])
    assert code == 2
    assert accounting.INSTALL_HINT in err and err.count("\n") == 1
