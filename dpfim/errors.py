"""One exception tree for dpfim; the CLI turns each into one line on stderr and its exit code.

Exit codes (documented in docs/cli.md):
  2  usage error: a bad option value, an option conflict, an unreadable path
  3  data error: input that does not parse, a damaged ledger
  4  budget exhausted: the persistent ledger refuses the run
  5  the persistent ledger cannot be written (ledger.LedgerWriteError)
  6  exact counting does not fit in --max-memory (ResourceError); dpfim never approximates
"""

from __future__ import annotations


class DpfimError(Exception):
    """Base of every error dpfim raises on purpose."""

    exit_code: int = 1


class ParameterError(DpfimError):
    """A bad parameter or option combination (usage error)."""

    exit_code = 2


class InputError(DpfimError):
    """Input data that cannot be read or parsed; the message names the file and line."""

    exit_code = 3


class BudgetError(DpfimError):
    """The persistent ledger would exceed its budget."""

    exit_code = 4


class LedgerError(DpfimError):
    """A ledger file that is damaged, unreadable or unwritable."""

    exit_code = 3


class ResourceError(DpfimError):
    """Exact counting does not fit in the memory budget (--max-memory); the message says what
    to do. dpfim stops rather than approximate."""

    exit_code = 6
