"""One exception tree for dpfim; the CLI turns each into one line on stderr and its exit code.

Exit codes (documented in docs/cli.md):
  1  internal error (a bug)
  2  usage error: a bad option value, an option conflict, an unreadable path
  3  data error: input that does not parse, a damaged ledger
  4  budget exhausted: the persistent ledger refuses the run
  5  the persistent ledger cannot be written (ledger.LedgerWriteError)
  6  out of memory (ResourceError): the machine's memory ran out (holding the records, or
     counting with a --max-memory above what the machine has); the message names the phase and
     what to do. Counting itself clips at its row budget instead (docs/privacy.md §1.2)
  7  the result cannot be written (OutputError): closed stdout, full disk, -o write failure
  8  the answer is none, only with `mine --fail-on-none` (NoneAnswer): the result is written
     and the spend charged as on exit 0; the exit status says what the JSON's "itemset": null
     says, so a cron job can tell without parsing it
  129 hung up (SIGHUP), 130 interrupted (Ctrl-C, SIGINT), 143 terminated (SIGTERM)
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator


class DpfimError(Exception):
    """Base of every error dpfim raises on purpose."""

    exit_code: int = 1


class ParameterError(DpfimError, ValueError):
    """A bad parameter or option combination (usage error). A ValueError too, so that a
    Python caller's `except ValueError` catches a bad keyword value as it would elsewhere."""

    exit_code = 2


class InputNotFoundError(ParameterError, FileNotFoundError):
    """A path to read (the input, a vocabulary, a ledger) that does not exist: a usage error
    (exit 2) and a FileNotFoundError (errno ENOENT, `filename` set) for Python callers. Its
    message is the one line the CLI prints, never OSError's "[Errno 2] ..." form. (Its errno
    is none of the output errors' that dpfim.cli checks before DpfimError.)"""

    def __init__(self, message: str, filename: str | None = None) -> None:
        super().__init__(message)
        self.errno = errno.ENOENT
        self.strerror = "No such file or directory"
        self.filename = filename

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[type[InputNotFoundError], tuple[str, str | None]]:
        return type(self), (str(self.args[0]), self.filename)


class InputError(DpfimError):
    """Input data that cannot be read or parsed; the message names the file and line."""

    exit_code = 3


class InputShapeError(ParameterError, TypeError):
    """An in-memory input of a shape the Python API does not accept (decided from its type
    and dtypes only); the message names the accepted shapes."""


class InputArgumentError(ParameterError, ValueError):
    """Arguments that do not fit the in-memory input (record_col= on a list, a missing
    column); the message names the accepted shapes."""


class RecordValueError(InputError, ValueError):
    """A bad value inside an accepted in-memory input (a 2 in a one-hot frame, a missing
    value, a basket that is a string): a data error, like a line that does not parse."""


class BudgetError(DpfimError):
    """The persistent ledger would exceed its budget."""

    exit_code = 4


class LedgerError(DpfimError):
    """A ledger file that is damaged, unreadable or unwritable."""

    exit_code = 3


class ResourceError(DpfimError):
    """Exact counting does not fit in the memory budget (--max-memory), or memory ran out; the
    message names the phase and says what to do. dpfim stops rather than approximate."""

    exit_code = 6


class OutputError(DpfimError):
    """The result could not be written (stdout closed, disk full, -o not writable)."""

    exit_code = 7


class NoneAnswer(DpfimError):
    """mine --fail-on-none: the release is "none" (written, charged). Decided by the released
    answer only."""

    exit_code = 8


class Interrupted(DpfimError):
    """The run was interrupted: SIGINT (Ctrl-C, exit 130), SIGTERM (143) or SIGHUP (129)."""

    exit_code = 130

    def __init__(self, message: str = "interrupted", *, exit_code: int = 130) -> None:
        super().__init__(message)
        self.exit_code = exit_code


# Each phase's name in messages and what to do; public text (it names options only).
_PHASES = {
    "reading": (
        "reading the input",
        "dpfim holds every record in memory: use a machine with more memory",
    ),
    "counting": (
        "counting exactly",
        "--max-memory is above what this machine has free: lower it (the counting then "
        "clips earlier; docs/privacy.md 1.2) or use a machine with more memory",
    ),
}


@contextlib.contextmanager
def memory_phase(phase: str) -> Iterator[None]:
    """Turn a MemoryError inside the block into a ResourceError naming the phase and the fix."""
    try:
        yield
    except MemoryError:
        what, advice = _PHASES[phase]
        raise ResourceError(
            f"out of memory while {what} (dpfim never approximates): {advice}"
        ) from None
