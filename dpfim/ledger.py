"""Privacy accounting: the per-run ledger inside each result (SPEC §4), and the persistent,
locked, hash-chained ledger of spends per data set (docs/ledger.md)."""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpfim.errors import BudgetError, LedgerError, ParameterError
from dpfim.mechanisms.thresholds import Split
from dpfim.params import fraction_to_float


def amount(x: Fraction) -> dict[str, Any]:
    """A privacy amount as a JSON number and as the exact rational it is."""
    return {"value": fraction_to_float(x), "exact": str(x)}


def margin_ledger(split: Split, neighbours: str, *, with_max: bool) -> dict[str, Any]:
    """The ledger of lmm (with_max) or lmm-gap: per-step epsilons and where delta comes from."""
    steps: list[dict[str, Any]] = []
    if with_max:
        steps.append(
            {
                "step": "noisy max M = c(1) + DLap(1/alpha_m)",
                "releases": "noisy_max",
                "eps": amount(split.alpha_m),
                "delta": amount(Fraction(0)),
            }
        )
    steps.append(
        {
            "step": "margin search (sparse vector, G ~ DLap(2/alpha_s), Z_l ~ DLap(4/alpha_s))",
            "releases": "ell",
            "eps": amount(split.alpha_s),
            "delta": amount(Fraction(0)),
        }
    )
    steps.append(
        {
            "step": "restricted exponential mechanism over the top ell",
            "releases": "itemset",
            "eps": amount(split.alpha_a),
            "delta": "see delta_sources: e^alpha_a multiplicative only when the margin holds",
        }
    )
    sources = {}
    if with_max:
        sources["max_certification_failure"] = amount(split.delta_m)
    sources["search_certification_failure"] = amount(split.delta_s)
    sources["selection_leak"] = amount(split.delta_leak)
    return {
        "neighbours": neighbours,
        "eps": amount(split.eps),
        "delta": amount(split.delta),
        "steps": steps,
        "delta_sources": sources,
        "note": (
            "The run as a whole is (eps, delta)-DP. The total delta is not a sum of per-step "
            "deltas: it is the chance that the margin is certified wrongly plus what the "
            "selection can leak (beta * e^(alpha_m + alpha_s)). Each run spends (eps, delta); "
            "repeated runs on the same data compose."
        ),
    }


# --- the persistent ledger (docs/ledger.md) -------------------------------------------------

GENESIS = "0" * 64
LEDGER_VERSION = 1


class LedgerWriteError(LedgerError):
    """The ledger could not be written (read-only path, full disk): nothing was released."""

    exit_code = 5


@dataclass
class DatasetState:
    """What the ledger says about one data set name."""

    budget_eps: Fraction | None = None
    budget_delta: Fraction | None = None
    spent_eps: Fraction = Fraction(0)
    spent_delta: Fraction = Fraction(0)
    runs: int = 0

    @property
    def remaining_eps(self) -> Fraction | None:
        return None if self.budget_eps is None else self.budget_eps - self.spent_eps

    @property
    def remaining_delta(self) -> Fraction | None:
        return None if self.budget_delta is None else self.budget_delta - self.spent_delta


def _line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def parse(content: bytes, name: str) -> list[dict[str, Any]]:
    """Check the hash chain and every line; raise LedgerError naming the first bad line."""
    entries: list[dict[str, Any]] = []
    if not content:
        return entries
    lines = content.split(b"\n")
    if lines[-1] != b"":
        raise LedgerError(f"{name}:{len(lines)}: truncated line (no final newline)")
    prev = GENESIS
    for number, line in enumerate(lines[:-1], 1):
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise LedgerError(f"{name}:{number}: not a JSON ledger line") from None
        if not isinstance(entry, dict) or entry.get("v") != LEDGER_VERSION:
            raise LedgerError(f"{name}:{number}: not a dpfim ledger line (v {LEDGER_VERSION})")
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
        except (KeyError, ValueError, TypeError, ZeroDivisionError):
            raise LedgerError(f"{name}:{number}: bad eps/delta amount") from None
        entries.append(entry)
        prev = _line_hash(line)
    return entries


def state(entries: list[dict[str, Any]]) -> dict[str, DatasetState]:
    """Budgets and basic-composition totals per data set name, in exact arithmetic."""
    out: dict[str, DatasetState] = {}
    for entry in entries:
        st = out.setdefault(entry["dataset"], DatasetState())
        if entry["kind"] == "spend":
            st.spent_eps += entry["_eps"]
            st.spent_delta += entry["_delta"]
            st.runs += 1
        else:
            st.budget_eps, st.budget_delta = entry["_eps"], entry["_delta"]
    return out


def verify(path: str) -> int:
    """Number of valid lines; LedgerError names the first broken or truncated one."""
    try:
        content = Path(path).read_bytes()
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read the ledger ({exc.strerror})") from None
    return len(parse(content, path))


def load(path: str) -> dict[str, DatasetState]:
    """The per-data-set state of a ledger file (verified first)."""
    try:
        content = Path(path).read_bytes()
    except OSError as exc:
        raise LedgerError(f"{path}: cannot read the ledger ({exc.strerror})") from None
    return state(parse(content, path))


@dataclass(frozen=True)
class Spend:
    """One run's request against a persistent ledger."""

    path: str
    dataset: str
    eps: Fraction
    delta: Fraction
    mechanism: str
    command: list[str]
    budget_eps: Fraction | None = None
    budget_delta: Fraction | None = None
    raise_budget: bool = False
    note: str | None = None


def reserve(spend: Spend) -> DatasetState:
    """Under an exclusive lock: verify the ledger, check the budget, append and fsync the spend.

    Called before anything is released. Raises BudgetError (exit 4) when basic composition
    would exceed the budget, ParameterError for budget mismatches, LedgerError for a damaged
    ledger, LedgerWriteError when it cannot be written. Returns the state after the spend.
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
        st = state(entries).get(spend.dataset, DatasetState())
        new_lines = []
        given = spend.budget_eps is not None
        if st.budget_eps is None:
            if not given:
                raise ParameterError(
                    f"data set {spend.dataset!r} has no budget in {spend.path} yet: give "
                    "--budget-eps and --budget-delta on its first run"
                )
            new_lines.append(("budget", spend.budget_eps, spend.budget_delta))
        elif given and (spend.budget_eps, spend.budget_delta) != (st.budget_eps, st.budget_delta):
            if not spend.raise_budget:
                raise ParameterError(
                    f"data set {spend.dataset!r} has budget eps={st.budget_eps}, "
                    f"delta={st.budget_delta} in {spend.path}; pass --raise-budget to change it"
                )
            new_lines.append(("raise-budget", spend.budget_eps, spend.budget_delta))
        if new_lines:
            st.budget_eps, st.budget_delta = new_lines[-1][1], new_lines[-1][2]
        assert st.budget_eps is not None and st.budget_delta is not None
        if (
            st.spent_eps + spend.eps > st.budget_eps
            or st.spent_delta + spend.delta > st.budget_delta
        ):
            raise BudgetError(
                f"budget exhausted for data set {spend.dataset!r}: requested eps={spend.eps}, "
                f"delta={spend.delta}; spent eps={st.spent_eps}, delta={st.spent_delta}; "
                f"remaining eps={st.remaining_eps}, delta={st.remaining_delta}"
            )
        new_lines.append(("spend", spend.eps, spend.delta))
        prev = _line_hash(content.split(b"\n")[-2]) if content else GENESIS
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
                entry["mechanism"] = spend.mechanism
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
        st.spent_eps += spend.eps
        st.spent_delta += spend.delta
        st.runs += 1
        return st


def _append(fh: Any, data: bytes) -> None:
    """Append and force to disk (module-level so tests can inject a failing writer)."""
    fh.write(data)
    fh.flush()
    os.fsync(fh.fileno())


def _version() -> str:
    from dpfim import __version__

    return __version__
