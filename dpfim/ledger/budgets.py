"""The budget rules of the persistent ledger (docs/ledger.md, "Rules"; docs/privacy.md §20.3):
what a ledger's lines say about each data set (DatasetState, state, load), what a request may
add to them (Spend, admit: the first budget, a raised one, the accountant and the relation
fixed with it, the tight data sets' rule, the fit), and a tight data set's fixed per-run cost
from the runs' options (per_run_cost). No locks and no writes: dpfim.ledger.runs spends."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpfim import accounting
from dpfim.accountants import BASIC, TIGHT, get_accountant
from dpfim.accounting import Accountant, Cost, Neighbours, PureDP
from dpfim.errors import BudgetError, ParameterError
from dpfim.ledger import store
from dpfim.params import format_amount

# runs_left() stops counting here (a tight budget that lasts longer says "at least")
RUNS_LEFT_CAP = 1 << 20
# a tight data set's run totals composed ahead when the library is loaded (keep_ahead)
LOOKAHEAD = 8
# the options of `dpfim ledger create` that describe the runs (per_run_cost)
RUN_OPTIONS = (
    "eps",
    "delta",
    "top",
    "supports",
    "support_share",
    "size",
    "sizes",
    "mechanism",
    "candidates",
)


@dataclass
class DatasetState:
    """What the ledger says about one data set name: its budget, accountant, relation and the
    typed costs of its runs. Totals come from dpfim.accounting, never from sums here."""

    budget_eps: Fraction | None = None
    budget_delta: Fraction | None = None
    accountant: Accountant = BASIC
    neighbours: Neighbours | None = None
    costs: list[Cost] = field(default_factory=list)
    # tight data sets: the per-run cost fixed when the budget was created (docs/privacy.md §20.3)
    per_run: Cost | None = None

    @property
    def runs(self) -> int:
        return len(self.costs)

    def spent(self, accountant: Accountant = BASIC) -> accounting.Total:
        """The spend under an accountant; tight: eps at the budget's delta."""
        if accountant.exact or not self.costs:  # exact sums, whatever the lines hold
            return accounting.basic(self.costs)
        return accountant.compose(self.costs, delta=self.budget_delta)

    @property
    def spent_eps(self) -> Fraction:
        return self.spent().eps

    @property
    def spent_delta(self) -> Fraction:
        return self.spent().delta

    @property
    def remaining_eps(self) -> Fraction | None:
        """Never negative: a budget below the spend (a hand-edited ledger) leaves 0.

        basic: the budget's eps minus the sum. tight: the budget's eps minus the tight eps of
        the runs so far at the budget's delta (information: what a tight data set can still do
        is `runs_left`, since eps does not add up under tight composition)."""
        if self.budget_eps is None:
            return None
        spent = self.spent_eps
        if not self.accountant.exact and self.costs:
            bound = self.spent_or_none(self.accountant)
            if bound is None:  # dp-accounting is not installed: not known here
                return None
            # rounded up to 1e-9: a readable, conservative remainder (the bound is a float)
            spent = Fraction(math.ceil(bound.eps * 10**9), 10**9)
        return max(Fraction(0), self.budget_eps - spent)

    @property
    def remaining_delta(self) -> Fraction | None:
        """The budget's delta minus the runs' own deltas (under both accountants: under tight the
        runs' own deltas are committed, the rest is the composition's slack)."""
        if self.budget_delta is None:
            return None
        return max(Fraction(0), self.budget_delta - self.spent_delta)

    @property
    def over_budget(self) -> bool:
        """More was spent than the stored budget allows (only possible in an edited ledger)."""
        if self.budget_eps is None or self.budget_delta is None:
            return False
        try:
            return not self.accountant.fits(self.costs, self.budget_eps, self.budget_delta)
        except ParameterError:  # dp-accounting is not installed: not known here
            return False

    def fits(self, runs: int) -> bool:
        """Whether `runs` runs of a tight data set's fixed per-run cost fit its budget."""
        assert self.per_run is not None
        assert self.budget_eps is not None and self.budget_delta is not None
        if runs == 0:
            return True
        return self.accountant.fits([self.per_run.times(runs)], self.budget_eps, self.budget_delta)

    def keep_ahead(self, runs: int) -> None:
        """Compose the totals of the next LOOKAHEAD runs after `runs` of a tight data set's fixed
        cost (until one does not fit), so that they are kept (dpfim.accounting_cache) for the runs
        to come -- only when dp-accounting is loaded already: a run that had to compose anyway
        pays for a few more totals at a fraction of the library's import, which the next runs
        then skip."""
        if "dp_accounting" not in sys.modules:
            return
        for total in range(runs + 1, runs + 1 + LOOKAHEAD):
            if not self.fits(total):
                return

    def runs_left(self) -> int | None:
        """How many more runs of a tight data set's fixed cost fit its budget (None for a
        basic data set, or without dp-accounting; RUNS_LEFT_CAP when at least that many do):
        the largest M with runs + M identical runs within the budget under tight composition.
        A function of public parameters only (the cost, the budget and the number of runs)."""
        if not self.accountant.needs_fixed_costs or self.per_run is None:
            return None
        try:
            return self._runs_left()
        except ParameterError:  # dp-accounting is not installed: not known here
            return None

    def _runs_left(self) -> int:
        # The capacity (the most runs of the fixed cost that fit, in all) is searched over
        # totals, so its compositions are the same from one run to the next and are kept
        # (dpfim.accounting_cache); the runs left are then read off it by the same search over
        # further runs, which the bisection's monotonicity makes the same answer as probing
        # fits(runs + m) itself. A capacity of RUNS_LEFT_CAP or more is not known exactly:
        # then fits(runs + m) is probed.
        capacity = _most(self.fits)
        if capacity < RUNS_LEFT_CAP:
            return _most(lambda m: self.runs + m <= capacity)
        return _most(lambda m: self.fits(self.runs + m))

    def tight_spent(self) -> accounting.Total | None:
        """The spend under the tight accountant at the budget's delta, whichever the data set's
        accountant (information: None when dp-accounting is not installed or no bound reaches
        that delta)."""
        return self.spent_or_none(TIGHT)

    def spent_or_none(self, accountant: Accountant) -> accounting.Total | None:
        """The spend under an accountant at the budget's delta; None without runs or budget,
        when dp-accounting is not installed, or when no bound reaches that delta."""
        if not self.costs or self.budget_delta is None:
            return None
        try:
            return self.spent(accountant)
        except ParameterError:
            return None

    @property
    def tight_is_guarantee(self) -> bool:
        """Whether the tight spend is a privacy guarantee (docs/privacy.md §20.3): on a tight
        data set (every run's cost fixed in advance), or when every run so far had the same
        cost. On a free-form ledger whose runs had different costs it is information only:
        their parameters may have been chosen adaptively, and no tight filter covers that."""
        if self.accountant.needs_fixed_costs:
            return True
        first = self.costs[0] if self.costs else None
        return first is not None and all(c.same_as(first) for c in self.costs)

    def summary(self, name: str) -> dict[str, Any]:
        """`ledger show --json` for one data set: numbers as JSON numbers."""

        def pair(eps: Fraction | None, delta: Fraction | None) -> dict[str, float | None]:
            return {
                "eps": None if eps is None else float(eps),
                "delta": None if delta is None else float(delta),
            }

        basic, tight = self.spent(), self.tight_spent()
        out: dict[str, Any] = {
            "dataset": name,
            "runs": self.runs,
            "accountant": self.accountant.name,
            "budget": pair(self.budget_eps, self.budget_delta),
            "spent": {
                "basic": pair(basic.eps, basic.delta),
                "tight": None if tight is None else pair(tight.eps, tight.delta),
            },
            "remaining": pair(self.remaining_eps, self.remaining_delta),
            # false: the tight figure is information, not a guarantee (§20.3)
            "tight_is_guarantee": tight is not None and self.tight_is_guarantee,
        }
        if self.accountant.needs_fixed_costs:
            out["remaining"]["runs"] = self.runs_left()
            out["per_run"] = None if self.per_run is None else self.per_run.describe()
        return out

    def remaining_json(self) -> dict[str, Any]:
        """The remaining budget for a result's ledger: public (a function of public
        parameters: the budget and the costs of earlier runs). A tight data set also says how
        many more runs of its fixed cost fit (`runs`)."""
        assert self.remaining_eps is not None and self.remaining_delta is not None
        out: dict[str, Any] = {
            "accountant": self.accountant.name,
            "eps": accounting.amount(self.remaining_eps),
            "delta": accounting.amount(self.remaining_delta),
        }
        if self.accountant.needs_fixed_costs:
            out["runs"] = self.runs_left()
        return out

    def add(self, cost: Cost) -> None:
        self.costs.append(cost)
        if self.neighbours is None:
            self.neighbours = cost.neighbours


def _most(fits: Callable[[int], bool]) -> int:
    """The largest m >= 1 with fits(m), 0 when fits(1) fails, RUNS_LEFT_CAP when fits(m) for
    m = RUNS_LEFT_CAP (fits must be monotone: true up to some point): doubling, then bisection."""
    if not fits(1):
        return 0
    lo, hi = 1, 2  # lo fits; find hi that does not
    while fits(hi):
        lo, hi = hi, hi * 2
        if hi > RUNS_LEFT_CAP:
            return RUNS_LEFT_CAP
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def state(entries: list[dict[str, Any]]) -> dict[str, DatasetState]:
    """Budgets, accountants and the typed costs of the runs, per data set name.

    A v1 spend has no recorded relation: it takes the relation of the data set's v2 spends
    (replace when there are none), which changes nothing under basic composition.
    """
    out: dict[str, DatasetState] = {}
    pending: dict[str, list[Cost]] = {}
    for entry in entries:
        st = out.setdefault(entry["dataset"], DatasetState())
        if entry["kind"] == "spend":
            if entry["_relation"] is None:
                pending.setdefault(entry["dataset"], []).append(entry["_cost"])
            else:
                st.add(entry["_cost"])
        else:
            st.budget_eps, st.budget_delta = entry["_eps"], entry["_delta"]
            if entry["kind"] == "budget":
                st.accountant = entry["_accountant"]
                st.per_run = entry.get("_per_run")
                if st.per_run is not None and st.neighbours is None:
                    st.neighbours = st.per_run.neighbours
    for name, old in pending.items():
        st = out[name]
        relation = st.neighbours or Neighbours.REPLACE
        st.costs = [Cost(relation, c.parts) for c in old] + st.costs
        st.neighbours = relation
    return out


def load(path: str) -> dict[str, DatasetState]:
    """The per-data-set state of a ledger file (verified first)."""
    return state(store.read(path))


def per_run_cost(
    accountant: Accountant, neighbours: str, run: Mapping[str, Any] | None = None
) -> Cost:
    """The per-run cost a new data set's budget line fixes (docs/privacy.md §20.3).

    A tight data set fixes the whole typed cost of its runs: `run` holds the runs' options as
    dpfim.request.check_options takes them (RUN_OPTIONS: --eps and --delta are required, then
    --mechanism, --top, ... as the runs will give them). A basic data set fixes none: giving
    --eps or --delta is a usage error, and its cost is a zero pure one (only checked to fit).
    """
    run = dict(run or {})
    given = run.get("eps") is not None or run.get("delta") is not None
    if accountant.needs_fixed_costs and (run.get("eps") is None or run.get("delta") is None):
        raise ParameterError(
            "--accountant tight fixes each run's cost: give the runs' --eps and --delta (and "
            "--mechanism, --top, ... as the runs will)"
        )
    if not accountant.needs_fixed_costs and given:
        raise ParameterError(
            "--eps/--delta fix a tight data set's per-run cost; a basic data set has none"
        )
    if not accountant.needs_fixed_costs:
        return Cost.of(PureDP(Fraction(0)), neighbours)
    # imported here: the request module loads the mechanisms (and numpy), which the ledger's
    # other readers never need
    from dpfim.request import check_options

    return check_options(
        universe_given=True,
        neighbours=neighbours,
        accountant=accountant.name,
        **{"size": None, **run},
    ).cost()


@dataclass(frozen=True)
class Spend:
    """One run's request against a persistent ledger."""

    path: str
    dataset: str
    cost: Cost
    mechanism: str
    command: list[str]
    budget_eps: Fraction | None = None
    budget_delta: Fraction | None = None
    raise_budget: bool = False
    note: str | None = None
    accountant: str | None = None  # its name; None: the data set's (basic for a new one)
    # create the data set's budget only (`dpfim ledger create`): no spend; `cost` is the
    # per-run cost a tight data set fixes (and one run of it must fit)
    budget_only: bool = False

    @property
    def eps(self) -> Fraction:
        return accounting.basic([self.cost]).eps

    @property
    def delta(self) -> Fraction:
        return accounting.basic([self.cost]).delta


def admit(spend: Spend, entries: list[dict[str, Any]]) -> tuple[DatasetState, list[Any]]:
    """The lines a spend would append, after every check; the state before the spend.

    Raises ParameterError (budget mismatch, a budget below the spend, a tight data set's rule)
    or BudgetError.
    """
    st = state(entries).get(spend.dataset, DatasetState())
    if spend.budget_only and st.budget_eps is not None:
        raise ParameterError(
            f"data set {spend.dataset!r} already has a budget in {spend.path}: a budget is "
            "created once"
        )
    new_lines: list[tuple[str, Fraction, Fraction]] = []
    b_eps, b_delta = spend.budget_eps, spend.budget_delta
    requested = None if spend.accountant is None else get_accountant(spend.accountant)
    accountant = st.accountant if st.budget_eps is not None else requested or BASIC
    if requested not in (None, st.accountant) and st.budget_eps is not None:
        raise ParameterError(
            f"data set {spend.dataset!r} uses --accountant {st.accountant.name} in {spend.path}: "
            "it is fixed when the data set's budget is created"
        )
    if st.neighbours is not None and spend.cost.neighbours != st.neighbours:
        raise ParameterError(
            f"data set {spend.dataset!r} is accounted under {st.neighbours} neighbours in "
            f"{spend.path}: a run under {spend.cost.neighbours} neighbours does not compose "
            "with it (docs/privacy.md §20.2)"
        )
    if st.budget_eps is None:
        if b_eps is None or b_delta is None:
            raise ParameterError(
                f"data set {spend.dataset!r} has no budget in {spend.path} yet: give "
                "--budget-eps and --budget-delta on its first run"
            )
        new_lines.append(("budget", b_eps, b_delta))
        st.accountant = accountant
        if accountant.needs_fixed_costs:  # the first run fixes the per-run cost (§20.3)
            st.per_run = spend.cost
    elif (
        b_eps is not None
        and b_delta is not None
        and (b_eps, b_delta) != (st.budget_eps, st.budget_delta)
    ) or (spend.raise_budget and st.accountant.needs_fixed_costs):
        if st.accountant.needs_fixed_costs:
            raise ParameterError(
                f"data set {spend.dataset!r} uses the tight accountant in {spend.path}: its "
                "budget is fixed when it is created and cannot be raised (docs/privacy.md §20.3)"
            )
        assert b_eps is not None and b_delta is not None
        if not spend.raise_budget:
            raise ParameterError(
                f"data set {spend.dataset!r} has budget eps={format_amount(st.budget_eps)}, "
                f"delta={format_amount(st.budget_delta)} in {spend.path}; pass --raise-budget "
                "to change it"
            )
        if b_eps < st.spent_eps or b_delta < st.spent_delta:
            raise ParameterError(
                f"data set {spend.dataset!r} has already spent eps={format_amount(st.spent_eps)}, "
                f"delta={format_amount(st.spent_delta)}: a budget cannot be lowered below that"
            )
        new_lines.append(("raise-budget", b_eps, b_delta))
    if new_lines:
        st.budget_eps, st.budget_delta = new_lines[-1][1], new_lines[-1][2]
    assert st.budget_eps is not None and st.budget_delta is not None
    if st.accountant.needs_fixed_costs:
        _check_tight(spend, st)
    elif not st.accountant.fits([*st.costs, spend.cost], st.budget_eps, st.budget_delta):
        raise BudgetError(
            f"budget exhausted for data set {spend.dataset!r}: requested "
            f"eps={format_amount(spend.eps)}, delta={format_amount(spend.delta)}; spent "
            f"eps={format_amount(st.spent_eps)}, delta={format_amount(st.spent_delta)}; "
            f"remaining eps={format_amount(st.remaining_eps)}, "
            f"delta={format_amount(st.remaining_delta)}"
        )
    if not spend.budget_only:
        new_lines.append(("spend", spend.eps, spend.delta))
    return st, new_lines


def _check_tight(spend: Spend, st: DatasetState) -> None:
    """The §20.3 rule: the run costs exactly the data set's fixed per-run cost, and N + 1 such
    runs (N spent so far) fit the budget under tight composition."""
    assert st.per_run is not None and st.budget_eps is not None and st.budget_delta is not None
    if not spend.cost.same_as(st.per_run):
        raise ParameterError(
            f"data set {spend.dataset!r} uses the tight accountant in {spend.path}: every run "
            f"must cost what its first did ({st.per_run.describe()}), this one costs "
            f"{spend.cost.describe()} (docs/privacy.md §20.3)"
        )
    if not st.fits(st.runs + 1):
        n = st.runs + 1
        raise BudgetError(
            f"budget exhausted for data set {spend.dataset!r}: {st.runs} runs of "
            f"{st.per_run.describe()} were spent, and {n} {'run does' if n == 1 else 'do'} not "
            f"fit eps={format_amount(st.budget_eps)}, delta={format_amount(st.budget_delta)} "
            "under tight composition"
        )
    st.keep_ahead(st.runs + 1)
