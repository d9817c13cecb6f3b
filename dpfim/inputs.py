"""What to read and which engine reads it: the input and engine halves of a request.

Below the mechanisms: the engines, the readers and evaluate import this module, and it imports
no mechanism, no accountant and no numpy (tests/test_layers.py checks it), so that an engine
never loads the mechanism registry. `dpfim.request` validates the rest of a run (Options).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from dpfim.errors import ParameterError
from dpfim.progress import Setting


@dataclass(frozen=True)
class InputSpec:
    """What to read, and how: the input half of a request (an engine reads it)."""

    source: str  # a path, a URI (Spark) or "-"
    fmt: str  # as given: auto, basket, fimi, long or jsonl
    decided: str = ""  # the format auto resolved to (engines.prepare fills it in)
    sep: str | None = None
    record_col: str | None = None
    item_col: str | None = None
    compression: str = "auto"
    max_record_items: int | None = None
    universe: tuple[str, ...] | None = None  # the declared vocabulary, read
    seed: int | None = None  # None: truncation draws from the OS CSPRNG


@dataclass(frozen=True)
class EngineSpec:
    """Which engine counts, and its public settings (the engine table: dpfim/engines)."""

    name: str = "local"
    master: str | None = None  # spark
    conf: Mapping[str, str] = field(default_factory=dict)  # spark
    max_memory: int | None = None  # local: bytes
    progress: Setting = False  # dpfim/progress.py: True is PUBLIC, "exact" needs -v


def parse_conf(pairs: Iterable[str]) -> dict[str, str]:
    """--spark-conf KEY=VALUE options as a dict (a usage error on anything else)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise ParameterError(f"--spark-conf takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out


# The record-length cap (docs/privacy.md, "Record-length cap"): every record keeps at most this
# many items, a uniformly random subset, unless the user opts out with --max-record-items none.
# A fixed constant, never computed from the input. Chosen once from the shared benchmark data:
# it truncates no record of mushroom, T10I4D100K or groceries, 17 of retail's 88,162 records
# (max 76 items) and 50 of BMS-WebView-2's 77,512 (max 161); it bounds what one record adds to
# the counting's memory and time by C(64, r) itemsets (2,016 pairs).
DEFAULT_MAX_RECORD_ITEMS = 64
NO_CAP = "none"


def check_record_cap(value: int | str | None) -> int | None:
    """--max-record-items: None -> the default cap; "none" -> no cap; else an integer >= 1."""
    if value is None:
        return DEFAULT_MAX_RECORD_ITEMS
    if isinstance(value, str):
        if value.strip().lower() == NO_CAP:
            return None
        try:
            value = int(value)
        except ValueError:
            raise ParameterError(
                f"--max-record-items takes a number of items or 'none', got {value!r}"
            ) from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(f"--max-record-items must be at least 1, got {value!r}")
    return value
