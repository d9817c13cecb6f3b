"""Spending from the persistent ledger (docs/ledger.md, "Order, fail closed"): the read-only
pre-check before the data is read (check), the reservation under the exclusive lock before
anything is released (reserve), a data set's budget created without a spend (create,
create_budget), and one `dpfim mine` run's way through them (LedgerRun). The rules come from
dpfim.ledger.budgets, the bytes and the locks from dpfim.ledger.store."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpfim.accountants import get_accountant
from dpfim.accounting import Cost
from dpfim.choices import DEFAULT_MECHANISM
from dpfim.errors import DpfimError, Interrupted, ParameterError
from dpfim.ledger import store
from dpfim.ledger.budgets import DatasetState, Spend, admit, per_run_cost
from dpfim.ledger.store import LedgerWriteError
from dpfim.params import Number, check_delta, check_eps, format_amount


def check(spend: Spend) -> None:
    """Read-only pre-check before any data is read: would reserve(spend) be refused?

    Under a shared lock; writes nothing. The budget can still run out between this check and
    the reservation (another process may spend in between): reserve() checks again.
    """
    store.peek(spend.path, lambda entries: admit(spend, entries))


def reserve(spend: Spend) -> DatasetState:
    """Under an exclusive lock: verify the ledger, check the budget, append and fsync the spend.

    Called before anything is released. Raises BudgetError (exit 4) when basic composition
    would exceed the budget, ParameterError for budget mismatches, LedgerError for a damaged
    ledger, LedgerWriteError when it cannot be written. Returns the state after the spend.
    The head file is then replaced atomically under the same lock.
    """
    after: list[DatasetState] = []

    def lines(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        st, new_lines = admit(spend, entries)
        after.append(st)
        return [_line(spend, st, kind, eps, delta) for kind, eps, delta in new_lines]

    store.append(spend.path, lines)
    st = after[0]
    if not spend.budget_only:
        st.add(spend.cost)
    return st


def _line(
    spend: Spend, st: DatasetState, kind: str, eps: Fraction, delta: Fraction
) -> dict[str, Any]:
    """One line's fields after the chain's (docs/ledger.md, "Format"), in their order."""
    entry: dict[str, Any] = {
        "dataset": spend.dataset,
        "kind": kind,
        "eps": str(eps),
        "delta": str(delta),
    }
    if kind == "spend":
        entry["neighbours"] = str(spend.cost.neighbours)
        entry["cost"] = spend.cost.to_json()
        entry["mechanism"] = spend.mechanism
    if kind == "budget":
        entry["accountant"] = st.accountant.name
        if st.per_run is not None:
            entry["per_run"] = {
                "neighbours": str(st.per_run.neighbours),
                "cost": st.per_run.to_json(),
            }
    entry["command"] = spend.command
    entry["dpfim_version"] = _version()
    entry["note"] = spend.note
    return entry


def create(spend: Spend) -> DatasetState:
    """Create a data set's budget without spending (`dpfim ledger create`): the budget line,
    with a tight data set's fixed per-run cost `spend.cost` (docs/privacy.md §20.3). Refused
    (exit 2) when the data set has a budget already, exit 4 when one run of the cost does not
    fit the budget."""
    spend = dataclasses.replace(spend, budget_only=True)
    check(spend)  # read-only first: a refused creation leaves no file behind
    return reserve(spend)


def create_budget(
    path: str,
    *,
    dataset: str,
    budget_eps: Number,
    budget_delta: Number,
    accountant: str = "basic",
    neighbours: str = "replace",
    note: str | None = None,
    command: Sequence[str] = (),
    run: Mapping[str, Any] | None = None,
) -> DatasetState:
    """`dpfim ledger create` as a library call: validate the budget and the data set's name,
    fix the per-run cost under the accountant's rule (budgets.per_run_cost: `run` holds the
    runs' options, required for tight and refused for basic), then create the budget line.

    Example: create_budget("ledger.jsonl", dataset="orders", budget_eps="2",
    budget_delta="1e-6", accountant="tight", neighbours="add-remove",
    run={"mechanism": "em", "eps": "0.04", "delta": "1e-6"}).
    Returns the data set's state; raises ParameterError (exit 2), BudgetError (exit 4),
    LedgerError (exit 3) or LedgerWriteError (exit 5) as `dpfim ledger create` exits.
    """
    acct = get_accountant(accountant)
    if not dataset.strip():
        raise ParameterError("--dataset must not be empty")
    cost = per_run_cost(acct, neighbours, run)
    spend = Spend(
        path=path,
        dataset=dataset,
        cost=cost,
        mechanism=str((run or {}).get("mechanism", DEFAULT_MECHANISM)),
        command=list(command),
        budget_eps=check_eps(budget_eps),
        budget_delta=check_delta(budget_delta),
        note=note,
        accountant=acct.name,
    )
    return create(spend)


@dataclass
class LedgerRun:
    """One `dpfim mine` run against a ledger: the read-only pre-check before the data is read,
    the reservation before anything is released, and what an error after it must say."""

    path: str
    dataset: str
    mechanism: str
    command: list[str]
    budget_eps: Fraction | None = None
    budget_delta: Fraction | None = None
    raise_budget: bool = False
    note: str | None = None
    accountant: str | None = None
    reserved: str = "no"  # "no", "pending" (being written), "yes"
    spent: tuple[Fraction, Fraction] = (Fraction(0), Fraction(0))
    after: DatasetState | None = None  # the data set's state after the reservation

    def spend(self, cost: Cost) -> Spend:
        return Spend(
            path=self.path,
            dataset=self.dataset,
            cost=cost,
            accountant=self.accountant,
            mechanism=self.mechanism,
            command=self.command,
            budget_eps=self.budget_eps,
            budget_delta=self.budget_delta,
            raise_budget=self.raise_budget,
            note=self.note,
        )

    def check(self, cost: Cost) -> None:
        check(self.spend(cost))

    def reserve(self, cost: Cost) -> None:
        self.reserved = "pending"  # an interrupt now may come before or after the append
        spend = self.spend(cost)
        try:
            self.after = reserve(spend)
        except Interrupted:
            raise
        except DpfimError:
            self.reserved = "no"  # refused or not writable: nothing was recorded
            raise
        self.reserved, self.spent = "yes", (spend.eps, spend.delta)

    def annotate(self, exc: DpfimError) -> DpfimError:
        """The same error, saying whether the spend stays counted in the ledger."""
        if isinstance(exc, Interrupted) and self.reserved == "no":
            note = f"nothing was charged to {self.path}"
        elif self.reserved == "no" or isinstance(exc, LedgerWriteError):
            return exc
        elif self.reserved == "pending":
            note = f"the spend may have been recorded: check with dpfim ledger show {self.path}"
        else:
            eps, delta = self.spent
            note = (
                f"the spend of eps={format_amount(eps)}, delta={format_amount(delta)} stays "
                f"counted in {self.path}"
            )
        out = type(exc)(f"{exc}; {note}")
        out.exit_code = exc.exit_code
        return out


def _version() -> str:
    from dpfim import __version__

    return __version__
