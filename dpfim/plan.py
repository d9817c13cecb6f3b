"""Planning a budget (`dpfim ledger plan`): the largest per-run eps that keeps N runs inside it.

Under tight, each run's --top K is split by tight composition as `dpfim mine` on a tight data
set splits it (docs/privacy.md §20.4), so the plan is the cost such a run will fix.

Reads no ledger and no data: the answer is a function of public parameters only. Each run's
cost is the typed cost the mechanism reports for the given options (K rounds of --top plus the
supports, `Options.cost`); N runs compose under the chosen accountant (dpfim.accountants).
The answer is an exact decimal with SIGNIFICANT significant digits, rounded down, and checked
again after rounding (the search itself runs on that decimal grid).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

from dpfim.accountants import get_accountant
from dpfim.accounting import SIGNIFICANT, Accountant, Cost, decimal_down, exact_text, unit
from dpfim.errors import BudgetError, ParameterError
from dpfim.params import MIN_EPS, check_delta, check_eps, format_amount
from dpfim.request import DEFAULT_CANDIDATES, Options, check_options

# a placeholder delta for mechanisms that spend none (their cost does not read it)
_UNUSED_DELTA = Fraction(1, 2)


def _cost_at(opts: Options, eps: Fraction) -> Cost:
    """The typed cost of one run of opts at per-run eps (Options.cost)."""
    return dataclasses.replace(opts, eps=eps).cost()


def _fits(
    opts: Options,
    eps: Fraction,
    runs: int,
    accountant: Accountant,
    budget: tuple[Fraction, Fraction],
) -> bool:
    return accountant.fits([_cost_at(opts, eps).times(runs)], *budget)


def plan(
    *,
    budget_eps: str | Fraction,
    budget_delta: str | Fraction,
    runs: int,
    mechanism: str | None = None,
    delta: str | Fraction | None = None,
    neighbours: str = "replace",
    accountant: str = "basic",
    top: int = 1,
    supports: bool = False,
    support_share: str | Fraction | None = None,
    size: int | None = None,
    sizes: str | None = None,
    candidates: int = DEFAULT_CANDIDATES,
) -> dict[str, Any]:
    """The largest per-run eps (rounded down to an exact decimal) for `runs` runs in the budget.

    Raises ParameterError for bad options and BudgetError (exit 4) when no eps is feasible
    (e.g. runs * delta >= budget delta).
    """
    b_eps, b_delta = check_eps(budget_eps), check_delta(budget_delta)
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ParameterError(f"--runs must be a positive integer, got {runs!r}")
    acct = get_accountant(accountant)
    opts = check_options(
        size=size,
        sizes=sizes,
        eps=b_eps,
        delta=_UNUSED_DELTA if delta is None else delta,
        mechanism=mechanism,
        neighbours=neighbours,
        candidates=candidates,
        universe_given=True,
        max_record_items=None,
        top=top,
        supports=supports,
        support_share=support_share,
        accountant=accountant,  # a tight data set's runs split --top K by tight too (§20.4)
    )
    per_delta = opts.spent_delta
    if delta is None and per_delta > 0:
        raise ParameterError(
            f"--mechanism {opts.mechanism} spends a delta: give each run's --delta"
        )
    budget = (b_eps, b_delta)
    if not acct.delta_fits(runs * per_delta, b_delta):
        raise BudgetError(
            f"infeasible: {runs} runs at delta={format_amount(per_delta)} spend delta "
            f"{format_amount(runs * per_delta)}, at least the budget's {format_amount(b_delta)}"
        )
    lo, hi = Fraction(0), b_eps  # one run alone at more than the budget never fits
    if _fits(opts, hi, runs, acct, budget):
        lo = hi
    else:
        while hi - lo > max(lo, MIN_EPS) / 10**SIGNIFICANT:
            mid = decimal_down((lo + hi) / 2) if lo > 0 else (lo + hi) / 2
            if mid <= lo:
                mid = (lo + hi) / 2
            if _fits(opts, mid, runs, acct, budget):
                lo = mid
            else:
                hi = mid
    best = decimal_down(lo) if lo > 0 else Fraction(0)
    while best >= MIN_EPS and not _fits(opts, best, runs, acct, budget):
        best = decimal_down(best - unit(best) / 2)  # re-checked after rounding
    if best < MIN_EPS:
        raise BudgetError(
            f"infeasible: no per-run eps >= {format_amount(MIN_EPS)} keeps {runs} runs within "
            f"eps={format_amount(b_eps)}, delta={format_amount(b_delta)} under {accountant}"
        )
    total = acct.compose([_cost_at(opts, best).times(runs)], delta=b_delta)
    return {
        "mechanism": opts.mechanism,  # the default resolved (--top K over sizes 1-s: levelwise)
        "neighbours": neighbours,
        "runs": runs,
        "accountant": accountant,
        "top": top,
        "budget": {"eps": float(b_eps), "delta": float(b_delta)},
        "per_run_delta": float(per_delta),
        "per_run_eps": float(best),
        "per_run_eps_exact": exact_text(best),  # a decimal of <= SIGNIFICANT digits
        "spent": {"eps": float(total.eps), "delta": float(total.delta), "bound": total.accountant},
    }
