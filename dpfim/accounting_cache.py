"""What the tight accountant composed, kept: exact arguments in, the exact result out.

The tight accountant (dpfim.tight) spends seconds on one composition (importing dp-accounting
and its SciPy stack, then FFTs over privacy loss distributions), and a ledger, a `--top K`
split or `ledger plan` asks for many. Each result is a pure function of its arguments (the
ordered measures with their counts, and delta) and of the code that computes it, so it is
kept, in memory for the process and on disk across runs, under a key that holds the whole of
both:

- the arguments, as exact rationals in canonical text;
- a fingerprint of the code: this cache's format, dpfim's version, the SHA-256 of the modules
  that compute the result (tight.py, accounting.py), the installed versions of dp-accounting,
  NumPy and SciPy (read from their metadata, without importing them), Python's version and the
  machine.

A hit returns what the computation returned, exactly (a Fraction stored as its exact text), so
the shown eps and every split are the uncached ones; a hit does not import dp-accounting.

The cache holds public quantities only: privacy parameters of runs (eps, delta, rho, counts)
and the totals composed from them, never data, supports or results. Where: $DPFIM_CACHE_DIR,
else $XDG_CACHE_HOME/dpfim, else ~/.cache/dpfim, in `tight/`; DPFIM_NO_CACHE=1 turns it off
(the computation then runs every time). One JSON file per entry, named by the key's SHA-256,
holding the whole key, the value and a checksum; written atomically (a temporary file, then a
rename). An entry that cannot be read, does not parse, names another key or fails its checksum
is ignored and recomputed, and a cache that cannot be written is skipped silently: the cache
only ever saves time.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

FORMAT = 1
SUBDIR = "tight"
# the modules whose code the cached results are computed by (their source is in the key)
CODE = ("tight.py", "accounting.py")
LIBRARIES = ("dp-accounting", "numpy", "scipy")

_memo: dict[str, Any] = {}
_fingerprint: str | None = None


def enabled() -> bool:
    """Whether results are kept at all (DPFIM_NO_CACHE=1 turns the cache off)."""
    return os.environ.get("DPFIM_NO_CACHE", "") in ("", "0")


def directory() -> Path:
    """Where entries live: $DPFIM_CACHE_DIR, else $XDG_CACHE_HOME/dpfim (an absolute path
    only, as the XDG base directory spec says), else ~/.cache/dpfim; then `tight/`."""
    explicit = os.environ.get("DPFIM_CACHE_DIR", "")
    if explicit:
        return Path(explicit) / SUBDIR
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "dpfim" / SUBDIR


def fingerprint() -> str:
    """Everything a cached result depends on besides its arguments (computed once)."""
    global _fingerprint
    if _fingerprint is None:
        from importlib import metadata

        from dpfim import __version__

        here = Path(__file__).parent
        parts = [f"format={FORMAT}", f"dpfim={__version__}"]
        for name in CODE:
            parts.append(f"{name}={hashlib.sha256((here / name).read_bytes()).hexdigest()}")
        for lib in LIBRARIES:
            try:
                version = metadata.version(lib)
            except metadata.PackageNotFoundError:
                version = "absent"
            parts.append(f"{lib}={version}")
        parts.append(f"python={sys.implementation.name}-{platform.python_version()}")
        parts.append(f"machine={platform.machine()}")
        _fingerprint = ";".join(parts)
    return _fingerprint


def clear_memory() -> None:
    """Forget what this process kept (the disk entries stay)."""
    global _fingerprint
    _memo.clear()
    _fingerprint = None


def _checksum(key: str, value: Any) -> str:
    text = json.dumps([key, value], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _path(key: str) -> Path:
    return directory() / (hashlib.sha256(key.encode()).hexdigest() + ".json")


def get(args: str) -> Any | None:
    """The JSON value kept for these arguments (under this code's fingerprint), or None."""
    if not enabled():
        return None
    key = f"{fingerprint()}\n{args}"
    if key in _memo:
        return _memo[key]
    try:
        with open(_path(key), encoding="utf-8") as fh:
            entry = json.load(fh)
        if (
            not isinstance(entry, dict)
            or entry.get("format") != FORMAT
            or entry.get("key") != key
            or "value" not in entry
            or entry.get("sha256") != _checksum(key, entry["value"])
        ):
            return None
    except (OSError, ValueError):  # missing, unreadable, not JSON: recomputed
        return None
    _memo[key] = entry["value"]
    return entry["value"]


def put(args: str, value: Any) -> None:
    """Keep a JSON value for these arguments: in memory, and on disk when it can be written."""
    if not enabled():
        return
    key = f"{fingerprint()}\n{args}"
    _memo[key] = value
    entry = {"format": FORMAT, "key": key, "value": value, "sha256": _checksum(key, value)}
    path = _path(key)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(entry, fh, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:  # a read-only or full cache directory: the result is simply not kept
        pass
