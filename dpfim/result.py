"""The released JSON (schema dpfim.result/1) and the one writer of results (SPEC §4).

A result holds public parameters and released quantities only: never an exact support, L, the
true rank of the selection, the number of distinct items, or a hash of the input.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from dpfim.errors import DpfimError, ParameterError

SCHEMA = "dpfim.result/1"

# Every key a result may carry; build() refuses anything else (fail closed).
RELEASABLE = frozenset(
    {
        "schema",
        "itemset",
        "noisy_max",
        "ell",
        "n",
        "n_note",
        "params",
        "ledger",
        "private",
        "dpfim_version",
        "created",
    }
)


def build(**fields: Any) -> dict[str, Any]:
    """Assemble a result dict; unknown keys are a programming error, not a silent addition."""
    extra = set(fields) - RELEASABLE
    if extra:
        raise AssertionError(f"result: refusing to release unlisted fields {sorted(extra)}")
    from dpfim import __version__

    created = fields.pop("created", None) or utc_now()
    out: dict[str, Any] = {"schema": SCHEMA}
    out.update(fields)
    out["dpfim_version"] = __version__
    out["created"] = created
    return out


def utc_now() -> str:
    """The UTC time, to the second. Results carry the time the run STARTED, before any data was
    read (the end time would carry the data-dependent run time, SPEC §4)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"


def check_output_path(path: str | None, flag: str = "-o") -> None:
    """Fail before any work if -o cannot be written (a usage error; data-independent)."""
    if path is None or path == "-":
        return
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise ParameterError(f"{flag} {path}: is a directory")
    if not parent.is_dir():
        raise ParameterError(f"{flag} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise ParameterError(f"{flag} {path}: directory {parent} is not writable")


def write(result: dict[str, Any], path: str | None) -> None:
    """Write to stdout, or atomically to a file (temp file in the same directory + rename)."""
    write_text(dumps(result), path)


def write_text(text: str, path: str | None, *, flag: str = "-o") -> None:
    """Text to stdout (path None or "-"), or atomically to a file."""
    if path is None or path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise OutputError(f"{flag} {path}: {exc.strerror or exc}") from None


class OutputError(DpfimError):
    """The result could not be written (nothing partial is left behind)."""

    exit_code = 2
