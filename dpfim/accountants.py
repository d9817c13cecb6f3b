"""The accountants as objects behind one interface (dpfim.accounting.Accountant) and their one
table: `ACCOUNTANTS` (name -> accountant) and `get_accountant(name)`.

- `BASIC`: sequential composition, exact rationals; any adaptively chosen sequence (a privacy
  filter); splits a run of K rounds as (eps/K, delta/K) (docs/privacy.md §19.1).
- `TIGHT`: the minimum over the valid bounds (dpfim.tight, through the optional dp-accounting,
  which dpfim.tight imports only when it computes); splits a run by the largest per-round eps
  whose K-fold adaptive composition fits (§20.4); costs fixed before the first run (§20.3).

The layers: dpfim.accounting (types, exact sums, Split) <- dpfim.tight <- this module. Nothing
outside this table compares an accountant's name: callers look the object up once, when they
validate, and ask it.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from dpfim import tight
from dpfim.accounting import (
    SLACK_SHARES,
    Accountant,
    Cost,
    InfeasibleError,
    RoundCost,
    Split,
    Total,
    basic,
    largest,
    relation,
)
from dpfim.errors import ParameterError

__all__ = ["ACCOUNTANTS", "BASIC", "TIGHT", "Accountant", "get_accountant"]


class _Named:
    """One instance per accountant: it pickles as its name and unpickles as the table's object."""

    name: str

    def __repr__(self) -> str:
        return f"<{self.name} accountant>"

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return get_accountant, (self.name,)


class BasicAccountant(_Named):
    """Sequential composition in exact rationals: sums of eps and of delta."""

    name = "basic"
    exact = True
    requires_extra = False
    needs_fixed_costs = False

    def compose(self, costs: Iterable[Cost], *, delta: Fraction | None = None) -> Total:
        """Exact sums (delta is not read)."""
        costs = list(costs)
        relation(costs)
        return basic(costs)

    def fits(self, costs: Iterable[Cost], budget_eps: Fraction, budget_delta: Fraction) -> bool:
        total = basic(costs)
        return total.eps <= budget_eps and total.delta <= budget_delta

    def delta_fits(self, spent: Fraction, budget: Fraction) -> bool:
        """The deltas add up: up to the budget's delta itself."""
        return spent <= budget

    def split(
        self,
        round_cost: RoundCost,
        rounds: int,
        eps_sel: Fraction,
        eps_support: Fraction,
        delta: Fraction,
    ) -> Split:
        """(eps_sel/K, delta/K), exact (docs/privacy.md §19.1)."""
        return Split(
            self, rounds, eps_sel / rounds, delta / rounds, eps_support, "basic: eps/K, delta/K"
        )

    def composition(self, total: Total, rounds: int) -> str:
        return "basic sequential composition, exact rationals"

    def round_hint(self, top: int) -> str:
        return f" (with --top {top} each round gets eps/{top}, delta/{top})"


class TightAccountant(_Named):
    """The minimum over the valid composition bounds at a given delta (dpfim.tight)."""

    name = "tight"
    exact = False
    requires_extra = True
    needs_fixed_costs = True

    def compose(self, costs: Iterable[Cost], *, delta: Fraction | None = None) -> Total:
        """The smallest eps at `delta` over the valid bounds (basic included when its delta
        fits); InfeasibleError when no bound reaches `delta` (e.g. the costs' own deltas
        already exceed it)."""
        costs = list(costs)
        relation(costs)
        if delta is None:
            raise ValueError("the tight accountant answers eps at a given delta")
        return tight.compose(costs, delta)

    def fits(self, costs: Iterable[Cost], budget_eps: Fraction, budget_delta: Fraction) -> bool:
        try:
            total = self.compose(costs, delta=budget_delta)
        except InfeasibleError:
            return False
        return total.eps <= budget_eps and total.delta <= budget_delta

    def delta_fits(self, spent: Fraction, budget: Fraction) -> bool:
        """The composition needs some of the budget's delta beyond the runs' own: strictly less."""
        return spent < budget

    def split(
        self,
        round_cost: RoundCost,
        rounds: int,
        eps_sel: Fraction,
        eps_support: Fraction,
        delta: Fraction,
    ) -> Split:
        """(§20.4) The largest eps0 (an exact decimal, rounded down, re-checked) such that K
        rounds of round_cost(eps0, delta0) and the supports compose, under this accountant
        (every bound of which holds for adaptive composition of costs fixed in advance), to
        within (eps_sel + eps_support, delta); pure and bounded-range rounds keep delta0 =
        delta/K (unused by them); generic rounds get delta0 = (1 - s) delta / K for the share s
        of SLACK_SHARES that gives the largest eps0. Where that is not larger than eps_sel/K,
        the basic split's numbers are returned."""
        base = BASIC.split(round_cost, rounds, eps_sel, eps_support, delta)
        if rounds == 1 and eps_support == 0:
            return Split(self, 1, eps_sel, delta, eps_support, "tight: one round, nothing to split")
        eps = eps_sel + eps_support
        probe = round_cost(base.eps0, base.delta0)
        generic = basic([probe]).delta > 0
        shares: tuple[Fraction | None, ...] = SLACK_SHARES if generic else (None,)
        best: Split | None = None
        for share in shares:
            delta0 = base.delta0 if share is None else (1 - share) * delta / rounds

            def feasible(e0: Fraction, delta0: Fraction = delta0) -> bool:
                trial = Split(self, rounds, e0, delta0, eps_support, "")
                return self.fits([trial.cost(round_cost)], eps, delta)

            e0 = largest(feasible, base.eps0, eps_sel)
            if e0 is not None and (best is None or e0 > best.eps0):
                how = (
                    "tight: K-fold adaptive composition within (eps, delta)"
                    if share is None
                    else f"tight: K-fold adaptive composition, delta0 = (1 - {share}) delta / K, "
                    f"the composition's slack {share} delta"
                )
                best = Split(self, rounds, e0, delta0, eps_support, how)
        if best is None:
            return Split(
                self, rounds, base.eps0, base.delta0, eps_support, "tight: basic is not beaten"
            )
        return best

    def composition(self, total: Total, rounds: int) -> str:
        return (
            f"{total.accountant}: the {rounds} rounds' adaptive composition (plus the supports) "
            "at the run's delta (docs/privacy.md §20.4); the exact typed cost is in `cost`"
        )

    def round_hint(self, top: int) -> str:
        return f" (with --top {top} and --accountant tight each round gets that eps)"


BASIC: Accountant = BasicAccountant()
TIGHT: Accountant = TightAccountant()
# the names are dpfim.choices.ACCOUNTANTS, in that order (the CLI's choices; tested)
ACCOUNTANTS: dict[str, Accountant] = {a.name: a for a in (BASIC, TIGHT)}


def get_accountant(name: str) -> Accountant:
    """The accountant of that name; ParameterError (a usage error) for an unknown one."""
    try:
        return ACCOUNTANTS[name]
    except (KeyError, TypeError):
        raise ParameterError(
            f"--accountant must be {' or '.join(ACCOUNTANTS)}, got {name!r}"
        ) from None
