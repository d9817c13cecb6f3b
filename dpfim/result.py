"""The released JSON (schema dpfim.result/1) and the one writer of results (SPEC §4).

A result holds public parameters and released quantities only: never an exact support, L, the
true rank of the selection, the number of distinct items, or a hash of the input.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import secrets
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpfim.choices import INTERVAL_Z
from dpfim.errors import OutputError, ParameterError

if TYPE_CHECKING:
    from dpfim.mechanisms.base import Outcome
    from dpfim.release import Release

__all__ = [
    "SCHEMA",
    "OutputError",
    "build",
    "check_not_overwriting",
    "check_output_path",
    "dumps",
    "rules_csv",
    "write",
    "write_bytes",
    "write_text",
]

SCHEMA = "dpfim.result/1"
RULES_SCHEMA = "dpfim.rules/1"

# Every key a result may carry; build() refuses anything else (fail closed).
RELEASABLE = frozenset(
    {
        "schema",
        "itemset",
        "itemsets",  # --top K > 1: [{"rank", "items", "noisy_support"?, "support_sd"?,
        # "support_interval"?, "consistent_support"? (levelwise: post-processing of the noisy
        # supports and public values), ...}]
        "noisy_support",  # --supports with K = 1: a noisy count, never exact
        "noisy_max",
        "ell",
        "n",
        "n_note",
        "noisy_n",  # add/remove with levelwise's supports (docs/privacy.md §24)
        "params",
        "ledger",
        "private",
        "dpfim_version",
        "created",
    }
)


# A rules result (SPEC §4) may also hold the selection, the noisy supports of its downward
# closure (and their consistent projection), a noisy n under add/remove, and the rules computed
# from those alone; never an exact support.
RULES_RELEASABLE = (RELEASABLE - {"itemset", "itemsets", "noisy_support", "noisy_max", "ell"}) | {
    "selected",  # [{"rank", "items", "noisy_max"?, "ell"?}], rank order
    "closure",  # [{"items", "noisy_support", "consistent_support"}]: the selection's subsets
    "noisy_n",  # add/remove only
    "rules",  # [{"antecedents", "consequents", "support", "confidence", "lift", ...}]
}


def selected_entries(rel: Release) -> list[dict[str, Any]]:
    """The selection of a rules run as a list in rank order (also for K = 1)."""
    return [
        {"rank": q.rank, "items": names, **_round_fields(rel, q.outcome)}
        for q, names in zip(rel.picks, rel.names, strict=True)
    ]


def release_fields(rel: Release) -> dict[str, Any]:
    """The result fields of a release: "itemset" (K = 1) or "itemsets" (K > 1), each with what
    its mechanism releases besides the itemset (noisy max, stopping rank) and, with
    --supports, its noisy support."""
    if rel.top == 1:
        first = rel.picks[0] if rel.picks else None
        fields: dict[str, Any] = {"itemset": rel.names[0] if rel.picks else None}
        if rel.supports:
            fields["noisy_support"] = first.noisy_support if first else None
        fields.update(_round_fields(rel, first.outcome if first else rel.last))
        return fields
    entries = []
    for j, (q, names) in enumerate(zip(rel.picks, rel.names, strict=True)):
        entry: dict[str, Any] = {"rank": q.rank, "items": names}
        if rel.supports:
            entry["noisy_support"] = q.noisy_support
        if rel.consistent is not None and rel.support_sd is not None:  # levelwise (§24)
            sd = rel.support_sd[j]
            entry["support_sd"] = round(sd, 6)
            entry["support_interval"] = support_interval(q.noisy_support, sd)
            entry["consistent_support"] = rel.consistent[j]
        entry.update(_round_fields(rel, q.outcome))
        entries.append(entry)
    fields = {"itemsets": entries}
    if rel.noisy_n is not None:  # add/remove: released with the supports (§24)
        fields["noisy_n"] = rel.noisy_n
    return fields


def support_interval(noisy: float | None, sd: float) -> list[float] | None:
    """The 95 % interval of an unbiased noisy support with exact sd: noisy +- z sd, the lower
    end at least 0 (a support is never negative, so the clip loses no coverage)."""
    if noisy is None:
        return None
    half = INTERVAL_Z * sd
    return [round(max(0.0, noisy - half), 3), round(noisy + half, 3)]


def _round_fields(rel: Release, out: Outcome | None) -> dict[str, Any]:
    """What a mechanism releases besides the itemset (its noisy max, its stopping rank)."""
    fields: dict[str, Any] = {}
    if out is None:
        return fields
    if "noisy_max" in rel.spec.releases and out.noisy_max is not None:
        fields["noisy_max"] = out.noisy_max
    if "ell" in rel.spec.releases:
        fields["ell"] = "inf" if out.ell is None else out.ell
    return fields


def build(*, schema: str = SCHEMA, **fields: Any) -> dict[str, Any]:
    """Assemble a result dict; unknown keys are a programming error, not a silent addition."""
    allowed = RULES_RELEASABLE if schema == RULES_SCHEMA else RELEASABLE
    extra = set(fields) - allowed
    if extra:
        raise AssertionError(f"result: refusing to release unlisted fields {sorted(extra)}")
    from dpfim import __version__

    created = fields.pop("created", None) or utc_now()
    out: dict[str, Any] = {"schema": schema}
    out.update(fields)
    out["dpfim_version"] = __version__
    out["created"] = created
    return out


def utc_now() -> str:
    """The UTC time, to the second. Results carry the time the run STARTED, before any data was
    read (the end time would carry the data-dependent run time, SPEC §4)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps(result: dict[str, Any], *, compact: bool = False) -> str:
    """The result as JSON text: indented, or one line (--compact) for pipelines and logs."""
    if compact:
        return json.dumps(result, ensure_ascii=False, separators=(",", ":")) + "\n"
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"


# --- the one writer of output files (-o, evaluate's --csv and --plot) -------------------------
#
# A regular file (also through symlinks: the target is replaced, never the link) is replaced
# atomically: a temporary file in the target's directory, fsynced, renamed over it, and the
# directory fsynced. A new file gets 0666 & ~umask; an existing file keeps its mode (and owner,
# where permitted). Anything else (a character device such as /dev/null, a FIFO, /dev/stdout,
# /dev/fd/N) is written in place, never replaced. Block devices, sockets and directories are
# refused before any work.

_FD_PATH = re.compile(r"/(?:dev/fd|proc/self/fd)/([0-9]+)")
_STD_PATHS = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def _fd_of(path: str) -> int | None:
    """The descriptor that /dev/stdout, /dev/fd/N or /proc/self/fd/N names, else None."""
    norm = os.path.normpath(os.path.abspath(path))
    if norm in _STD_PATHS:
        return _STD_PATHS[norm]
    match = _FD_PATH.fullmatch(norm)
    return int(match.group(1)) if match else None


def check_output_path(path: str | None, flag: str = "-o") -> None:
    """Fail before any work if `flag PATH` cannot be written (a usage error; data-independent)."""
    if path is None or path == "-":
        return
    if path == "":
        raise ParameterError(f"{flag}: empty path (use - for stdout)")
    fd = _fd_of(path)
    if fd is not None:
        # Python sets sys.stdin/stdout/stderr to None when the descriptor was closed at start
        # (the CLI then parks /dev/null on it, so fstat alone would not tell)
        std_closed = fd <= 2 and (sys.stdin, sys.stdout, sys.stderr)[fd] is None
        try:
            os.fstat(fd)
        except OSError:
            std_closed = True
        if std_closed:
            raise ParameterError(f"{flag} {path}: file descriptor {fd} is not open")
        return
    target = Path(os.path.realpath(path))
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ParameterError(f"{flag} {path}: {exc.strerror}") from None
    if st is None or stat.S_ISREG(st.st_mode):
        parent = target.parent
        if not parent.is_dir():
            raise ParameterError(f"{flag} {path}: directory {parent} does not exist")
        if not os.access(parent, os.W_OK):
            raise ParameterError(f"{flag} {path}: directory {parent} is not writable")
        if st is not None and not os.access(target, os.W_OK):
            raise ParameterError(f"{flag} {path}: the file is not writable")
    elif stat.S_ISDIR(st.st_mode):
        raise ParameterError(f"{flag} {path}: is a directory")
    elif stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        if not os.access(target, os.W_OK):
            raise ParameterError(f"{flag} {path}: not writable")
    else:
        raise ParameterError(f"{flag} {path}: not a regular file, character device or FIFO")


def _identity(path: str) -> tuple[str, os.stat_result | None]:
    """(resolved path, its stat when the file exists) for comparing paths."""
    fd = _fd_of(path)
    try:
        st = os.fstat(fd) if fd is not None else os.stat(path)
    except OSError:
        st = None
    return os.path.realpath(path), st


def check_not_overwriting(output: str | None, flag: str, others: dict[str, str | None]) -> None:
    """A usage error when `flag` names the same file as one of `others` (option -> path).

    Compared by resolved path and, for files that exist, by (device, inode); "-" among others
    is stdin. Character devices and FIFOs may be shared (/dev/null).
    """
    if output is None or output == "-":
        return
    out_path, out_st = _identity(output)
    if out_st is not None and not stat.S_ISREG(out_st.st_mode):
        return
    out_key = None if out_st is None else (out_st.st_dev, out_st.st_ino)
    for option, other in others.items():
        if other is None:
            continue
        if other == "-":
            try:
                in_st: os.stat_result | None = os.fstat(0)
            except OSError:
                in_st = None
            other_path = None
        else:
            other_path, in_st = _identity(other)
        other_key = None if in_st is None else (in_st.st_dev, in_st.st_ino)
        if other_path == out_path or (out_key is not None and out_key == other_key):
            raise ParameterError(
                f"{flag} {output} is the same file as {option} {other}: it would be overwritten"
            )


ITEMSETS_CSV_COLUMNS = (
    "rank",
    "items",
    "size",
    "noisy_support",
    "noisy_fraction",
    "consistent_support",
    "support_sd",
    "interval_low",
    "interval_high",
    "support_made_by",
    "private",
)


def itemsets_csv(result: dict[str, Any]) -> str:
    """A dpfim.result/1 result's released itemsets as CSV (mine --csv): rank, items (a JSON
    array), size, the noisy support and its fraction of n (public n under replace-one, the
    noisy n under add/remove; empty when neither was released), the consistent support, sd and
    95 % interval where the mechanism states them, how the support was made, and the run's
    `private` flag on every line. Released values only."""
    import csv
    import io

    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(ITEMSETS_CSV_COLUMNS)
    entries = result.get("itemsets")
    if entries is None:  # K = 1: one released itemset (or none)
        one = result.get("itemset")
        entries = [] if one is None else [{"rank": 1, "items": one, **_k1(result)}]
    n = result.get("n", result.get("noisy_n"))
    params = result.get("params", {})
    if "support_share" not in params and "noisy_support" not in result:
        how = ""
    elif params.get("mechanism") == "levelwise":
        how = "parity coefficients + discrete Gaussian (docs/privacy.md §24)"
    else:
        how = "discrete Laplace, scale m / eps_sup (docs/privacy.md §19.4)"
    for e in entries:
        noisy = e.get("noisy_support")
        interval = e.get("support_interval") or [None, None]
        row = {
            **e,
            "items": json.dumps(e["items"], ensure_ascii=False),
            "size": len(e["items"]),
            "noisy_fraction": None if noisy is None or not n else round(noisy / n, 9),
            "interval_low": interval[0],
            "interval_high": interval[1],
            "support_made_by": how if noisy is not None else "",
            "private": "true" if result["private"] else "false",
        }
        out.writerow(["" if row.get(c) is None else row[c] for c in ITEMSETS_CSV_COLUMNS])
    return buf.getvalue()


def _k1(result: dict[str, Any]) -> dict[str, Any]:
    return {"noisy_support": result["noisy_support"]} if "noisy_support" in result else {}


RULES_CSV_COLUMNS = (
    "antecedents",
    "consequents",
    "support",
    "confidence",
    "confidence_low",
    "confidence_high",
    "lift",
    "lift_low",
    "lift_high",
    "antecedent_support",
    "consequent_support",
    "private",
)


def rules_csv(result: dict[str, Any]) -> str:
    """A dpfim.rules/1 result's rules as CSV: items as JSON arrays (unambiguous whatever the
    item strings hold), the metrics, and the run's `private` flag on every line (a --seed run's
    rules must not pass for private ones once the CSV travels without its JSON)."""
    import csv
    import io

    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    metric = result["params"].get("metric", "confidence")
    columns = list(RULES_CSV_COLUMNS)
    if metric not in columns:
        columns.insert(-1, metric)
    out.writerow(columns)
    for rule in result["rules"]:
        row = {**rule, "private": "true" if result["private"] else "false"}
        for name in ("confidence", "lift"):
            low, high = rule.get(f"{name}_interval") or (None, None)
            row[f"{name}_low"], row[f"{name}_high"] = low, high
        for side in ("antecedents", "consequents"):
            row[side] = json.dumps(rule[side], ensure_ascii=False)
        out.writerow(["" if row.get(c) is None else row[c] for c in columns])
    return buf.getvalue()


def write(result: dict[str, Any], path: str | None, *, compact: bool = False) -> None:
    """Write a result to stdout, or to a file (see above)."""
    write_text(dumps(result, compact=compact), path)


def write_text(text: str, path: str | None, *, flag: str | None = "-o") -> None:
    """Text to stdout (path None or "-"), or to a file (see above). flag: the option that
    writes to a file instead (named when stdout is closed), None for a command without one."""
    if path is None or path == "-":
        _to_stdout(text, flag)
    else:
        write_bytes(text.encode("utf-8"), path, flag=flag or "-o")


def _to_stdout(text: str, flag: str | None = "-o") -> None:
    stream = sys.stdout
    if stream is None:  # Python sets it to None when fd 1 was closed at start (>&-)
        hint = f" (use {flag} FILE)" if flag == "-o" else ""
        raise OutputError(f"cannot write the result: stdout is closed{hint}")
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OutputError(f"cannot write the result to stdout ({reason})") from None


def write_bytes(data: bytes, path: str, *, flag: str = "-o") -> None:
    """Bytes to a file: atomic replace of a regular file, plain write to anything else."""
    try:
        fd = _fd_of(path)
        if fd is not None:
            if fd == 1 and sys.stdout is not None:
                sys.stdout.flush()
            _write_all(fd, data)
            return
        target = os.path.realpath(path)  # replace a symlink's target, never the link
        try:
            st: os.stat_result | None = os.stat(target)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
                raise OutputError(f"{flag} {path}: not a regular file, character device or FIFO")
            out = os.open(target, os.O_WRONLY)
            try:
                _write_all(out, data)
            finally:
                os.close(out)
            return
        _replace(target, data, st)
    except OSError as exc:
        raise OutputError(f"{flag} {path}: {exc.strerror or exc}") from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _replace(target: str, data: bytes, st: os.stat_result | None) -> None:
    """Atomically replace (or create) a regular file, keeping an existing file's mode."""
    folder, name = os.path.split(target)
    while True:
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
        try:  # the kernel applies the umask to 0o666, as a shell redirection does
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        try:
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
                if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(OSError):
                        os.fchown(fd, st.st_uid, st.st_gid)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # durability of the rename; not all file systems allow it
        dfd = os.open(folder or ".", os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
