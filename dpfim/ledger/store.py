"""The ledger's file format and storage (docs/ledger.md, "Format" and "Tamper evidence"): the
hash chain and its head file, parsing and verifying, locks and fsynced atomic appends. It knows
lines, not budgets: what a line may add is decided by dpfim.ledger.budgets."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpfim import accounting
from dpfim.accountants import ACCOUNTANTS, BASIC
from dpfim.accounting import ApproxDP, Cost
from dpfim.errors import InputNotFoundError, LedgerError, ParameterError

GENESIS = "0" * 64
LEDGER_VERSION = 2  # the lines written now: a spend carries its typed cost and relation
READ_VERSIONS = (1, 2)  # v1 spends are read as one generic (eps, delta) pair
HEAD_VERSION = 1
HEAD_SUFFIX = ".head"


class LedgerWriteError(LedgerError):
    """The ledger could not be written (read-only path, full disk): nothing was released."""

    exit_code = 5


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


def _read(path: str) -> list[dict[str, Any]]:
    """The verified entries of a ledger that must exist (a missing file is a usage error)."""
    try:
        content = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputNotFoundError(f"{path}: no such ledger file", path) from None
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


def peek(path: str, look: Callable[[list[dict[str, Any]]], object]) -> None:
    """Call look(entries) on the verified entries of a ledger under a shared lock, writing
    nothing (a ledger that does not exist yet has none); then fail unless PATH can be written.

    Raises LedgerWriteError (exit 5) when PATH is not a regular file, cannot be opened, or
    cannot be written (or, when new, created), LedgerError when it is damaged.
    """
    if os.path.lexists(path) and not os.path.isfile(path):
        raise LedgerWriteError(f"{path}: cannot open the ledger (not a regular file)")
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.access(parent, os.W_OK):
            raise LedgerWriteError(
                f"{path}: cannot open the ledger (directory {parent} is not writable)"
            ) from None
        if _read_head(path) is not None:
            check_head(path, [])
        look([])
        return
    except OSError as exc:
        raise LedgerWriteError(f"{path}: cannot open the ledger ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_SH)
        entries = parse(fh.read(), path)
        check_head(path, entries)
        look(entries)
    if not os.access(path, os.W_OK):
        raise LedgerWriteError(f"{path}: cannot open the ledger (not writable)")


def append(path: str, lines: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    """Under an exclusive lock: verify the ledger (creating it, mode 0600, when new), append
    the lines that lines(entries) returns and fsync them, then replace the head file.

    Each returned line holds its fields from "dataset" on; the chain's fields ("v", "seq",
    "prev") and "time" are put before them here. lines() may raise to append nothing. A new
    ledger gets its head (seq 0) before its first line, so a crash leaves a lagging head,
    never a missing one; a failed append is truncated away so the ledger stays verifiable.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError as exc:
        raise LedgerWriteError(f"{path}: cannot open the ledger ({exc.strerror})") from None
    with os.fdopen(fd, "r+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        fh.seek(0)
        content = fh.read()
        entries = parse(content, path)
        stored_head = check_head(path, entries)
        fields = lines(entries)
        mode = os.fstat(fh.fileno()).st_mode & 0o777
        if stored_head is None:  # a new ledger: its head exists before its first line does
            try:
                _write_head(path, Head(0, GENESIS), mode)
            except OSError as exc:
                raise LedgerWriteError(
                    f"{head_path(path)}: cannot write the ledger head ({exc.strerror}); "
                    "nothing was released"
                ) from None
        prev = chain_head(entries).sha256
        seq = len(entries)
        out = b""
        for rest in fields:
            seq += 1
            entry: dict[str, Any] = {
                "v": LEDGER_VERSION,
                "seq": seq,
                "prev": prev,
                "time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                **rest,
            }
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
                f"{path}: cannot write the ledger ({exc.strerror}); nothing was released"
            ) from None
        try:
            _write_head(path, Head(seq, prev), mode)
        except OSError as exc:
            raise LedgerWriteError(
                f"{head_path(path)}: cannot write the ledger head ({exc.strerror}); the "
                "spend is recorded, nothing was released"
            ) from None


def _append(fh: Any, data: bytes) -> None:
    """Append and force to disk (module-level so tests can inject a failing writer)."""
    fh.write(data)
    fh.flush()
    os.fsync(fh.fileno())
