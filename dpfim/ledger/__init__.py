"""The persistent privacy ledger (docs/ledger.md): spends per data set, locked, hash-chained.

Three jobs, one module each, imported in this order (no module imports a later one):
store.py (the file format: the hash chain, its head file, parsing and verifying, locks and
fsynced appends), budgets.py (the budget rules: what the lines say per data set and what a
request may add) and runs.py (spending: the pre-check, the reservation, a budget created
without a spend, one mine run's way through them). The names callers use are here.
"""

from __future__ import annotations

from dpfim.ledger.budgets import (
    LOOKAHEAD,
    RUN_OPTIONS,
    RUNS_LEFT_CAP,
    DatasetState,
    Spend,
    load,
    per_run_cost,
    state,
)
from dpfim.ledger.runs import LedgerRun, check, create, create_budget, reserve
from dpfim.ledger.store import (
    GENESIS,
    HEAD_SUFFIX,
    HEAD_VERSION,
    LEDGER_VERSION,
    READ_VERSIONS,
    Head,
    LedgerWriteError,
    chain_head,
    check_expected_head,
    check_head,
    head,
    head_path,
    init_head,
    parse,
    read,
    recognise,
    refuse_ledger,
    verify,
)

__all__ = [
    "GENESIS",
    "HEAD_SUFFIX",
    "HEAD_VERSION",
    "LEDGER_VERSION",
    "LOOKAHEAD",
    "READ_VERSIONS",
    "RUNS_LEFT_CAP",
    "RUN_OPTIONS",
    "DatasetState",
    "Head",
    "LedgerRun",
    "LedgerWriteError",
    "Spend",
    "chain_head",
    "check",
    "check_expected_head",
    "check_head",
    "create",
    "create_budget",
    "head",
    "head_path",
    "init_head",
    "load",
    "parse",
    "per_run_cost",
    "read",
    "recognise",
    "refuse_ledger",
    "reserve",
    "state",
    "verify",
]
