"""Privacy accounting: the per-run ledger inside each result (SPEC §4), and the persistent,
locked, hash-chained ledger of spends per data set (docs/ledger.md)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import hashlib
import json
import math
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpfim import accounting
from dpfim.accountants import ACCOUNTANTS, BASIC, TIGHT, get_accountant
from dpfim.accounting import Accountant, ApproxDP, Cost, Neighbours
from dpfim.errors import (
    BudgetError,
    DpfimError,
    Interrupted,
    LedgerError,
    ParameterError,
)
from dpfim.params import format_amount

# --- the persistent ledger (docs/ledger.md) -------------------------------------------------

GENESIS = "0" * 64
LEDGER_VERSION = 2  # the lines written now: a spend carries its typed cost and relation
READ_VERSIONS = (1, 2)  # v1 spends are read as one generic (eps, delta) pair
HEAD_VERSION = 1
# runs_left() stops counting here (a tight budget that lasts longer says "at least")
RUNS_LEFT_CAP = 1 << 20
# a tight data set's run totals composed ahead when the library is loaded (keep_ahead)
LOOKAHEAD = 8
HEAD_SUFFIX = ".head"


class LedgerWriteError(LedgerError):
    """The ledger could not be written (read-only path, full disk): nothing was released."""

    exit_code = 5


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


@dataclass(frozen=True)
class Head:
    """The chain head: the number of lines and the SHA-256 of the last one (GENESIS when empty)."""

    seq: int
    sha256: str

    def text(self) -> str:
        return f"seq={self.seq} sha256={self.sha256}"


def _line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def head_path(path: str) -> str:
    """Where the chain's anchor lives: beside the ledger (docs/ledger.md, "Tamper evidence")."""
    return path + HEAD_SUFFIX


def recognise(path: str) -> str | None:
    """What dpfim ledger file PATH is ("a dpfim ledger", "a dpfim ledger's head file"), or None.

    The rule (docs/ledger.md, "Output files are never ledgers"): PATH is a ledger when its head
    file PATH.head exists beside it, or when its first line parses as a ledger's first line; it
    is a head file when it is named LEDGER.head and LEDGER is a ledger, or when its content
    parses as a head. Only regular files are looked at (after following symlinks).
    """
    target = os.path.realpath(path)
    if not os.path.isfile(target):
        return None
    if os.path.exists(head_path(target)) or os.path.exists(head_path(path)):
        return "a dpfim ledger"
    try:
        with open(target, "rb") as fh:
            first = fh.readline(1 << 16)
    except OSError:
        return None
    with_newline = first if first.endswith(b"\n") else first + b"\n"
    try:
        if parse(with_newline, path):
            return "a dpfim ledger"
    except LedgerError:
        pass
    try:
        obj = json.loads(first)
    except (ValueError, UnicodeDecodeError):
        obj = None
    if isinstance(obj, dict) and set(obj) == {"v", "seq", "sha256"} and obj["v"] == HEAD_VERSION:
        return "a dpfim ledger's head file"
    for name in (path, target):
        if name.endswith(HEAD_SUFFIX) and recognise(name[: -len(HEAD_SUFFIX)]):
            return "a dpfim ledger's head file"
    return None


def refuse_ledger(path: str | None, flag: str) -> None:
    """A usage error when output option `flag` names a dpfim ledger or its head file (the
    atomic replace would overwrite it, and `ledger verify` would then fail)."""
    if path is None or path == "-":
        return
    what = recognise(path)
    if what is not None:
        raise ParameterError(f"{flag} {path} is {what}: it would be overwritten")


def parse(content: bytes, name: str) -> list[dict[str, Any]]:
    """Check the hash chain and every line; raise LedgerError naming the first bad line.

    Each entry gets "_hash" (the SHA-256 of its line), "_eps" and "_delta" (exact), and a
    spend "_cost" (v2: its typed cost and relation; v1: one generic (eps, delta) pair whose
    relation "_relation" is None, i.e. not recorded).
    """
    entries: list[dict[str, Any]] = []
    if not content:
        return entries
    lines = content.split(b"\n")
    prev = GENESIS
    for number, line in enumerate(lines, 1):
        if number == len(lines):
            if line != b"":
                raise LedgerError(f"{name}:{number}: truncated line (no final newline)")
            break
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise LedgerError(f"{name}:{number}: not a JSON ledger line") from None
        if not isinstance(entry, dict) or entry.get("v") not in READ_VERSIONS:
            raise LedgerError(
                f"{name}:{number}: not a dpfim ledger line (v {LEDGER_VERSION} or older)"
            )
        if entry.get("seq") != number:
            raise LedgerError(
                f"{name}:{number}: sequence number {entry.get('seq')!r}, expected {number}"
            )
        if entry.get("prev") != prev:
            raise LedgerError(f"{name}:{number}: hash chain broken (line {number - 1} was changed)")
        kind = entry.get("kind")
        if kind not in ("budget", "raise-budget", "spend") or not isinstance(
            entry.get("dataset"), str
        ):
            raise LedgerError(f"{name}:{number}: unknown entry kind {kind!r}")
        try:
            entry["_eps"] = Fraction(entry["eps"])
            entry["_delta"] = Fraction(entry["delta"])
            entry["_relation"] = None
            if kind == "spend" and entry["v"] >= 2:
                entry["_cost"] = Cost.from_json(entry["neighbours"], entry["cost"])
                entry["_relation"] = entry["_cost"].neighbours
                total = accounting.basic([entry["_cost"]])
                if (total.eps, total.delta) != (entry["_eps"], entry["_delta"]):
                    raise ValueError("eps/delta differ from the cost")
            elif kind == "spend":
                entry["_cost"] = Cost.of(ApproxDP(entry["_eps"], entry["_delta"]), "replace")
            if kind == "budget":
                acct = ACCOUNTANTS.get(entry.get("accountant", BASIC.name))
                if acct is None:
                    raise ValueError("unknown accountant")
                entry["_accountant"] = acct
                if acct.needs_fixed_costs:
                    fixed = entry["per_run"]
                    entry["_per_run"] = Cost.from_json(fixed["neighbours"], fixed["cost"])
        except (KeyError, ValueError, TypeError, ZeroDivisionError):
            raise LedgerError(f"{name}:{number}: bad eps/delta amount or cost") from None
        prev = entry["_hash"] = _line_hash(line)
        entries.append(entry)
    return entries


def chain_head(entries: list[dict[str, Any]]) -> Head:
    return Head(len(entries), entries[-1]["_hash"] if entries else GENESIS)


def _read_head(path: str) -> Head | None:
    """The stored anchor, or None when there is no head file."""
    hpath = head_path(path)
    try:
        raw = Path(hpath).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LedgerError(f"{hpath}: cannot read the ledger head ({exc.strerror})") from None
    try:
        obj = json.loads(raw)
        head = Head(int(obj["seq"]), str(obj["sha256"]))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise LedgerError(f"{hpath}: not a dpfim ledger head") from None
    if head.seq < 0:
        raise LedgerError(f"{hpath}: not a dpfim ledger head")
    return head


def check_head(path: str, entries: list[dict[str, Any]]) -> Head | None:
    """Raise LedgerError when the head file shows that lines were removed or the tail rewritten.

    The head may lag behind the ledger (a crash between the fsynced append and the head
    update): the line it names must then still be in the chain. Returns the stored head.
    """
    head = _read_head(path)
    hname = head_path(path)
    if head is None:
        if entries:
            raise LedgerError(
                f"{path}: its head file {hname} is missing, so a removed or rewritten last "
                "line cannot be ruled out"
            )
        return None
    if head.seq > len(entries):
        raise LedgerError(
            f"{path}: truncated: {hname} records {head.seq} lines, the ledger has {len(entries)}"
        )
    expected = entries[head.seq - 1]["_hash"] if head.seq else GENESIS
    if head.sha256 != expected:
        raise LedgerError(
            f"{path}:{head.seq}: line {head.seq} was rewritten (its hash differs from {hname})"
        )
    return head


def _write_head(path: str, head: Head, mode: int) -> None:
    """Atomically replace the head file (temp file, fsync, rename, fsync the directory)."""
    hpath = head_path(path)
    tmp = f"{hpath}.{os.getpid()}.tmp"
    data = json.dumps({"v": HEAD_VERSION, "seq": head.seq, "sha256": head.sha256}).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        try:
            _write_fully(fd, data + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, hpath)
    except BaseException:  # a full disk, or an interrupt: no L.head.<pid>.tmp left behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dfd = os.open(os.path.dirname(os.path.abspath(hpath)), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _write_fully(fd: int, data: bytes) -> None:
    """os.write until everything is written (module-level so tests can inject a full disk)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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


def _read(path: str) -> list[dict[str, Any]]:
    """The verified entries of a ledger that must exist (a missing file is a usage error)."""
    try:
        content = Path(path).read_bytes()
    except FileNotFoundError:
        raise ParameterError(f"{path}: no such ledger file") from None
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read the ledger ({exc.strerror})") from None
    entries = parse(content, path)
    check_head(path, entries)
    return entries


def read(path: str) -> list[dict[str, Any]]:
    """The verified entries of a ledger file (its hash chain and head checked)."""
    return _read(path)


def verify(path: str, expect_head: str | None = None) -> int:
    """Number of valid lines; LedgerError names the first broken or truncated one.

    expect_head: a SHA-256 printed earlier by `dpfim ledger head`; it must still be in the chain.
    A value that is not a SHA-256 is a usage error (ParameterError), never a rollback.
    """
    wanted = None if expect_head is None else check_expected_head(expect_head)
    entries = _read(path)
    if wanted is not None and wanted not in {GENESIS, *(e["_hash"] for e in entries)}:
        raise LedgerError(
            f"{path}: the expected head {wanted} is not in the chain: the ledger was rolled "
            "back or rewritten since that head was recorded"
        )
    return len(entries)


def check_expected_head(text: str) -> str:
    """The lower-case hex of a SHA-256 given to --expect-head: 64 hex digits, as `dpfim ledger
    head` prints them after "sha256=" (that prefix may be kept)."""
    value = text.strip().lower()
    value = value.removeprefix("sha256=")
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise ParameterError(
            f"--expect-head must be a SHA-256 as `dpfim ledger head` prints it after sha256= "
            f"(64 hex digits), got {text!r}"
        )
    return value


def head(path: str) -> Head:
    """The verified chain head of a ledger file."""
    return chain_head(_read(path))


def init_head(path: str) -> Head:
    """Write the head file of a ledger that has none (one written before head files existed).

    Refuses when a head file exists: a head that does not match is evidence, never overwritten.
    Adopting a head proves nothing about the lines before it (docs/ledger.md, threat model).
    """
    with open(path, "rb") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        entries = parse(fh.read(), path)
        if os.path.lexists(head_path(path)):
            raise LedgerError(f"{path}: {head_path(path)} exists; it is never replaced by --init")
        current = chain_head(entries)
        try:
            _write_head(path, current, os.fstat(fh.fileno()).st_mode & 0o777)
        except OSError as exc:
            raise LedgerWriteError(
                f"{head_path(path)}: cannot write the ledger head ({exc.strerror})"
            ) from None
    return current


def load(path: str) -> dict[str, DatasetState]:
    """The per-data-set state of a ledger file (verified first)."""
    return state(_read(path))


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


def _plan(spend: Spend, entries: list[dict[str, Any]]) -> tuple[DatasetState, list[Any]]:
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


def check(spend: Spend) -> None:
    """Read-only pre-check before any data is read: would reserve(spend) be refused?

    Under a shared lock; writes nothing. The budget can still run out between this check and
    the reservation (another process may spend in between): reserve() checks again.
    """
    if os.path.lexists(spend.path) and not os.path.isfile(spend.path):
        raise LedgerWriteError(f"{spend.path}: cannot open the ledger (not a regular file)")
    try:
        fd = os.open(spend.path, os.O_RDONLY)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(spend.path))
        if not os.access(parent, os.W_OK):
            raise LedgerWriteError(
                f"{spend.path}: cannot open the ledger (directory {parent} is not writable)"
            ) from None
        if _read_head(spend.path) is not None:
            check_head(spend.path, [])
        _plan(spend, [])
        return
    except OSError as exc:
        raise LedgerWriteError(f"{spend.path}: cannot open the ledger ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
        entries = parse(fh.read(), spend.path)
        check_head(spend.path, entries)
        _plan(spend, entries)
    if not os.access(spend.path, os.W_OK):
        raise LedgerWriteError(f"{spend.path}: cannot open the ledger (not writable)")


def reserve(spend: Spend) -> DatasetState:
    """Under an exclusive lock: verify the ledger, check the budget, append and fsync the spend.

    Called before anything is released. Raises BudgetError (exit 4) when basic composition
    would exceed the budget, ParameterError for budget mismatches, LedgerError for a damaged
    ledger, LedgerWriteError when it cannot be written. Returns the state after the spend.
    The head file is then replaced atomically under the same lock.
    """
    try:
        fd = os.open(spend.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError as exc:
        raise LedgerWriteError(f"{spend.path}: cannot open the ledger ({exc.strerror})") from None
    with os.fdopen(fd, "r+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        fh.seek(0)
        content = fh.read()
        entries = parse(content, spend.path)
        stored_head = check_head(spend.path, entries)
        st, new_lines = _plan(spend, entries)
        mode = os.fstat(fh.fileno()).st_mode & 0o777
        if stored_head is None:  # a new ledger: its head exists before its first line does
            try:
                _write_head(spend.path, Head(0, GENESIS), mode)
            except OSError as exc:
                raise LedgerWriteError(
                    f"{head_path(spend.path)}: cannot write the ledger head ({exc.strerror}); "
                    "nothing was released"
                ) from None
        prev = chain_head(entries).sha256
        seq = len(entries)
        out = b""
        for kind, eps, delta in new_lines:
            seq += 1
            entry: dict[str, Any] = {
                "v": LEDGER_VERSION,
                "seq": seq,
                "prev": prev,
                "time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
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
            line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode()
            out += line + b"\n"
            prev = _line_hash(line)
        try:
            _append(fh, out)
        except OSError as exc:
            try:  # undo a partial line so the ledger stays verifiable
                fh.truncate(len(content))
                os.fsync(fh.fileno())
            except OSError:
                pass
            raise LedgerWriteError(
                f"{spend.path}: cannot write the ledger ({exc.strerror}); nothing was released"
            ) from None
        try:
            _write_head(spend.path, Head(seq, prev), mode)
        except OSError as exc:
            raise LedgerWriteError(
                f"{head_path(spend.path)}: cannot write the ledger head ({exc.strerror}); the "
                "spend is recorded, nothing was released"
            ) from None
        if not spend.budget_only:
            st.add(spend.cost)
        return st


def create(spend: Spend) -> DatasetState:
    """Create a data set's budget without spending (`dpfim ledger create`): the budget line,
    with a tight data set's fixed per-run cost `spend.cost` (docs/privacy.md §20.3). Refused
    (exit 2) when the data set has a budget already, exit 4 when one run of the cost does not
    fit the budget."""
    spend = dataclasses.replace(spend, budget_only=True)
    check(spend)  # read-only first: a refused creation leaves no file behind
    return reserve(spend)


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


def _append(fh: Any, data: bytes) -> None:
    """Append and force to disk (module-level so tests can inject a failing writer)."""
    fh.write(data)
    fh.flush()
    os.fsync(fh.fileno())


def _version() -> str:
    from dpfim import __version__

    return __version__
