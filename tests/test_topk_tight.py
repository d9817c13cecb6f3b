"""`dpfim mine --accountant tight`: how --top K splits one run's (eps, delta) among its adaptive
rounds (docs/privacy.md §20.4), checked against closed forms computed here independently:
zCDP for em (the standard conversion below, the continuous RDP conversion above), Kairouz-Oh-
Viswanath's exact optimal composition for pure and generic (eps0, delta0) rounds; broken
splitters (one round's rho instead of K, delta0 dropped) are caught by the same checks."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from cli_run import run
from test_accounting import kov_delta

from dpfim import accounting, ledger, tight
from dpfim.accountants import BASIC, TIGHT
from dpfim.mechanisms import registry
from dpfim.request import check_options

pytest.importorskip("dp_accounting")

F = Fraction
D6 = F(1, 10**6)


def split_of(mechanism: str, top: int, eps: str = "1", delta: str = "1e-6", **kw: object):
    neighbours = "add-remove" if mechanism in ("choosing", "limited-domain") else "replace"
    neighbours = str(kw.pop("neighbours", neighbours))
    opts = check_options(
        size=2,
        eps=eps,
        delta=delta,
        mechanism=mechanism,
        neighbours=neighbours,
        universe_given=True,
        top=top,
        accountant="tight",
        **kw,
    )
    return opts, opts.split(opts.max_record_items)


def rdp_continuous(rho: float, delta: float) -> float:
    """min over a > 1 of a rho + (ln(1/delta) + (a-1) ln(1-1/a) - ln a)/(a-1) (Canonne, Kamath,
    Steinke 2020, Prop. 12) on a fine grid: below any finite set of orders, so an upper limit
    for what a valid zCDP-based split can give."""
    a = 1 + np.arange(1, 400_000) / 2000
    v = a * rho + (math.log(1 / delta) + (a - 1) * np.log(1 - 1 / a) - np.log(a)) / (a - 1)
    return float(v.min())


def em_limits(k: int, eps: float, delta: float) -> tuple[float, float]:
    """(standard-conversion eps0, continuous-RDP eps0) for K rounds of eps0-BR (rho = eps0^2/8):
    sqrt(rho*) = sqrt(L + eps) - sqrt(L) with L = ln(1/delta) solves rho + 2 sqrt(rho L) = eps;
    the RDP one by bisection on rdp_continuous."""
    big_l = math.log(1 / delta)
    rho_std = (math.sqrt(big_l + eps) - math.sqrt(big_l)) ** 2
    lo, hi = 0.0, eps
    for _ in range(50):
        mid = (lo + hi) / 2
        if rdp_continuous(k * mid * mid / 8, delta) <= eps:
            lo = mid
        else:
            hi = mid
    return math.sqrt(8 * rho_std / k), hi


def test_em_top_50_meets_the_issue_target_between_its_closed_forms() -> None:
    opts, sp = split_of("em", 50, neighbours="add-remove")
    low, high = em_limits(50, 1.0, 1e-6)
    assert low == pytest.approx(0.05293, abs=1e-4)  # issue 20's 0.0529 (standard conversion)
    assert sp.accountant is TIGHT and 0.052 <= low <= float(sp.eps0) <= high
    assert float(sp.eps0) >= 0.9999 * high  # the library's finite orders cost nothing here
    assert sp.eps0 == F(accounting.exact_text(sp.eps0))  # an exact decimal
    assert len(accounting.exact_text(sp.eps0).lstrip("0.")) <= accounting.SIGNIFICANT
    # re-checked after rounding: the run's cost fits (eps, delta), one more unit does not
    assert TIGHT.fits([opts.cost()], F(1), D6)
    bigger = accounting.Split("tight", 50, sp.eps0 + accounting.unit(sp.eps0), sp.delta0, F(0), "")
    rc = registry.get("em").charge
    p = opts.public(None, None)
    assert not TIGHT.fits([bigger.cost(lambda e, d: rc(p.scaled(e, d)))], F(1), D6)


def test_em_under_replace_neighbours_is_the_same_split() -> None:
    """em is eps-BR under both relations (§20.1), so the split does not depend on it."""
    assert split_of("em", 50)[1].eps0 == split_of("em", 50, neighbours="add-remove")[1].eps0


def test_a_splitter_that_charges_one_round_of_rho_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Composing the rounds' rho as a max (a non-composed, 'one round' formula) gives a
    per-round eps above the continuous RDP limit: the check above fails."""
    _, high = em_limits(10, 1.0, 1e-6)
    monkeypatch.setattr(tight, "rho_of", lambda ms: max(m.eps**2 / 8 for m in ms))
    sp = TIGHT.split(
        lambda e, d: accounting.Cost.of(accounting.BoundedRange(e), "replace"), 10, F(1), F(0), D6
    )
    assert float(sp.eps0) > high


def test_pure_rounds_spend_delta_and_match_the_optimal_composition() -> None:
    """noisy-max-laplace (pure eps0, §14) under tight: K rounds by PLD, exactly KOV's optimal
    composition of K eps0-DP rounds (valid for adaptive composition), which spends delta."""
    k = 10
    opts, sp = split_of("noisy-max-laplace", k)
    e0 = float(sp.eps0)
    assert e0 > 0.1  # basic: 1/10
    assert kov_delta(k, e0, 0.0, 1.0) <= 1e-6
    assert kov_delta(k, e0 * 1.001, 0.0, 1.0) > 1e-6  # the largest, to the PLD grid's slack
    total = TIGHT.compose([opts.cost()], delta=D6)
    assert total.eps <= 1 and total.delta == D6  # the run is charged delta


@pytest.mark.slow
def test_generic_rounds_split_delta_and_match_the_optimal_composition() -> None:
    """stability, a generic (eps0, delta0) pair: delta0 = (1 - s) delta / K for the stated
    share s, and KOV's exact optimal composition of K (eps0, delta0) pairs fits (eps, delta)."""
    k = 10
    _, sp = split_of("stability", k)
    e0, d0 = float(sp.eps0), float(sp.delta0)
    share = 1 - sp.delta0 * k / D6
    assert share in accounting.SLACK_SHARES and str(share) in sp.how
    assert e0 > 0.1
    assert float(kov_delta(k, e0, d0, 1.0)) <= 1e-6
    assert float(kov_delta(k, e0 * 1.001, d0, 1.0)) > 1e-6


@pytest.mark.slow
def test_a_splitter_that_drops_delta0_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    k = 10
    monkeypatch.setattr(tight, "_pair", lambda m: (m.eps, F(0)))
    sp = TIGHT.split(
        lambda e, d: accounting.Cost.of(accounting.ApproxDP(e, d), "replace"), k, F(1), F(0), D6
    )
    assert float(kov_delta(k, float(sp.eps0), float(sp.delta0), 1.0)) > 1e-6


def test_basic_is_kept_where_tight_is_not_better_and_one_round_is_not_split() -> None:
    round_cost = lambda e, d: accounting.Cost.of(accounting.PureDP(e), "replace")  # noqa: E731
    one = TIGHT.split(round_cost, 1, F(1), F(0), D6)
    assert (one.eps0, one.delta0) == (F(1), D6)
    two = TIGHT.split(round_cost, 2, F(1), F(0), F(1, 10**12))
    assert two.eps0 >= F(1, 2)  # never below basic
    basic = BASIC.split(round_cost, 7, F(1), F(0), D6)
    assert (basic.eps0, basic.delta0, basic.accountant) == (F(1, 7), D6 / 7, BASIC)


def test_supports_are_composed_with_the_rounds() -> None:
    opts, sp = split_of("em", 10, supports=True)
    assert sp.eps_support == F(1, 4) and sp.eps0 > F(3, 40)
    total = TIGHT.compose([opts.cost()], delta=D6)
    assert total.eps <= 1
    parts = dict((type(m).__name__, c) for m, c in opts.cost().parts)
    assert parts == {"BoundedRange": 10, "PureDP": 1}


def test_choosing_s_proof_conditions_are_checked_at_the_tight_round() -> None:
    _, sp = split_of("choosing", 5, max_record_items=8)
    assert sp.accountant is TIGHT and sp.eps0 > F(1, 5)


# --- the CLI ---------------------------------------------------------------------------------


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "baskets.csv"
    rows = [f"a{i},b{i}\n" * (400 - 5 * i) for i in range(40)]
    path.write_text("".join(rows))
    return path


def _vocab(tmp_path: Path) -> Path:
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"a{i}\nb{i}\n" for i in range(40)))
    return vocab


def test_mine_tight_shows_the_per_round_eps_and_the_composed_total(
    tmp_path: Path, data: Path
) -> None:
    args = ["mine", str(data), "--eps", "1", "--delta", "1e-6", "--top", "20"]
    args += ["--mechanism", "em", "--universe-items", str(_vocab(tmp_path)), "-q"]
    out = {}
    for accountant in ("basic", "tight"):
        code, text, err = run([*args, "--accountant", accountant])
        assert code == 0, err
        out[accountant] = json.loads(text)["ledger"]
    b, t = out["basic"], out["tight"]
    assert (b["accountant"], b["per_round_eps"], b["per_round_eps_exact"]) == (
        "basic",
        0.05,
        "0.05",
    )
    assert b["eps"]["exact"] == "1" and b["delta"]["exact"] == "0"
    assert t["accountant"] == "tight" and t["per_round_eps"] > 0.09  # basic: 0.05
    assert F(t["per_round_eps_exact"]) == F(t["round"]["eps"]["exact"])  # the samplers' eps
    assert isinstance(t["per_round_eps"], float)
    assert t["eps"]["value"] <= 1 and t["delta"]["exact"] == "1/1000000"
    assert t["cost"]["parts"] == [
        {"measure": "bounded-range", "eps": str(F(t["per_round_eps_exact"])), "count": 20}
    ]


def test_mine_tight_with_a_basic_ledger_is_refused(tmp_path: Path, data: Path) -> None:
    path = tmp_path / "l.jsonl"
    args = ["mine", str(data), "--eps", "0.5", "--delta", "1e-6", "--top", "5", "-q"]
    args += ["--mechanism", "em", "--universe-items", str(_vocab(tmp_path))]
    args += ["--ledger", str(path), "--dataset", "d"]
    assert run([*args, "--budget-eps", "5", "--budget-delta", "1e-5"])[0] == 0
    code, out, _ = run([*args, "--accountant", "tight"])
    assert code == 2 and out == ""
    assert len(path.read_text().splitlines()) == 2


def test_a_tight_data_set_splits_tight_without_being_told(
    tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "l.jsonl"
    args = ["mine", str(data), "--eps", "0.5", "--delta", "1e-6", "--top", "5", "-q"]
    args += ["--mechanism", "em", "--universe-items", str(_vocab(tmp_path))]
    args += ["--ledger", str(path), "--dataset", "d"]
    code, out, err = run(
        [*args, "--accountant", "tight", "--budget-eps", "2", "--budget-delta", "1e-5"]
    )
    assert code == 0, err
    first = json.loads(out)["ledger"]
    code, out, err = run(args)  # no --accountant: the data set's (tight), so the same cost
    assert code == 0, err
    again = json.loads(out)["ledger"]
    assert again["per_round_eps_exact"] == first["per_round_eps_exact"]
    assert F(first["per_round_eps_exact"]) > F(1, 10)
    code, out, err = run([*args, "--accountant", "basic"])
    assert code == 2 and "fixed when the data set's budget is created" in err
    st = ledger.load(str(path))["d"]
    assert st.runs == 2 and st.per_run is not None
    assert st.per_run.parts[0] == (accounting.BoundedRange(F(first["per_round_eps_exact"])), 5)


def test_rules_refuses_a_tight_split(tmp_path: Path, data: Path) -> None:
    code, out, err = run(
        ["rules", str(data), "--eps", "1", "--delta", "1e-6", "--accountant", "tight"]
    )
    assert code == 2 and out == "" and "basic composition" in err


@pytest.mark.slow
def test_a_tight_plan_splits_top_k_as_the_runs_will() -> None:
    """ledger plan --accountant tight: each run's --top K is split by tight composition, as
    `mine` on a tight data set splits it; the planned runs fit, with rounds above eps/K."""
    from dpfim.plan import plan

    out = plan(
        budget_eps="2",
        budget_delta="1e-6",
        runs=20,
        mechanism="em",
        delta="1e-6",
        neighbours="add-remove",
        accountant="tight",
        top=5,
    )
    per_run = F(out["per_run_eps_exact"])
    opts, sp = split_of("em", 5, eps=out["per_run_eps_exact"], neighbours="add-remove")
    assert sp.accountant is TIGHT and sp.eps0 > per_run / 5
    assert TIGHT.fits([opts.cost().times(20)], F(2), D6)
