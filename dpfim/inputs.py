"""What to read and which engine reads it: the input and engine halves of a request, and one
`Format` record per input format (the one table every engine's reader looks formats up in).

Below the mechanisms: the engines, the readers and evaluate import this module, and it imports
no mechanism, no accountant and no numpy (tests/test_layers.py checks it), so that an engine
never loads the mechanism registry. `dpfim.request` validates the rest of a run (Options).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from dpfim.errors import ParameterError
from dpfim.progress import Setting

if TYPE_CHECKING:
    from dpfim.readers.interner import Interner
    from dpfim.readers.records import RecordBuilder


class LineReader(Protocol):
    """A format read one record a line (a module: dpfim/readers/basket.py, fimi.py, jsonl.py).
    Any run of whole lines is read on its own, so the local engine reads a stream in chunks and
    Spark's workers read byte ranges with the same `read_chunk`."""

    # input bytes from which the compiled tokeniser reads (an attribute of the module, read
    # when a file is read: tests and benchmarks move it)
    COMPILED_FROM: int

    def read_chunk(
        self,
        chunk: bytes,
        first_line: int,
        name: str,
        sep: str,
        out: RecordBuilder,
        compiled: bool = True,
    ) -> None:
        """Read whole lines into `out`; a bad line is an InputError naming `name` and its line."""

    def kernel_call(self, chunk: bytes, sep: str, table: Interner) -> Callable[..., Any] | None:
        """The compiled tokeniser for two-core reading (dpfim/readers/pipeline.py), or None."""


def _basket() -> LineReader:
    from dpfim.readers import basket

    return basket


def _fimi() -> LineReader:
    from dpfim.readers import fimi

    return fimi


def _jsonl() -> LineReader:
    from dpfim.readers import jsonl

    return jsonl


@dataclass(frozen=True)
class Format:
    """One input format: what the readers and the engines look up about it."""

    name: str  # as --format takes it
    suffixes: tuple[str, ...]  # --format auto: the file name extensions read as this format
    # one record a line: its reader module, imported when a file is read; None: the records are
    # grouped by a record-id column (long: dpfim/readers/long.py, or Spark's own readers)
    lines: Callable[[], LineReader] | None = None
    # --format auto with --record-col/--item-col: what a file with these suffixes is read as
    # instead (a .csv of baskets, given columns, is a long CSV with a header)
    with_columns: str | None = None
    # the reading options it takes (InputSpec fields); another one given is a usage error
    options: tuple[str, ...] = ()

    @property
    def needs_columns(self) -> bool:
        """Records grouped by a record id: read only with --record-col and --item-col."""
        return self.lines is None

    def line_reader(self) -> LineReader:
        """The module that reads this format's lines (imported now)."""
        if self.lines is None:
            raise ValueError(f"{self.name} is not read one record a line")
        return self.lines()


# Every input format, in the order --help and the error messages list them. A new format is one
# record here (and its reader module); each engine declares the formats it reads (Engine.formats)
# and refuses the others with a usage error before any data is read (engines.prepare).
FORMATS: Mapping[str, Format] = {
    f.name: f
    for f in (
        Format("basket", (".csv", ".tsv", ".txt", ".basket"), _basket, "long", options=("sep",)),
        Format("fimi", (".dat",), _fimi),
        Format("long", (".parquet",), options=("sep", "record_col", "item_col")),
        Format("jsonl", (".jsonl", ".ndjson"), _jsonl),
    )
}
# the reading options a format may take, as their flags
READING_OPTIONS = {"sep": "--sep", "record_col": "--record-col", "item_col": "--item-col"}


def check_reading_options(inp: InputSpec, decided: str) -> None:
    """A reading option the decided format does not take is a usage error (it would be
    ignored): --sep with FIMI or JSON lines, --record-col/--item-col with FIMI or JSON lines."""
    for name, flag in READING_OPTIONS.items():
        if getattr(inp, name) is not None and name not in FORMATS[decided].options:
            takers = ", ".join(f.name for f in FORMATS.values() if name in f.options)
            raise ParameterError(
                f"{flag} applies to --format {takers} only; {inp.source} is read as --format "
                f"{decided}: drop {flag}"
            )


# --format auto: the format a file name's extension (compression suffixes removed) names
BY_SUFFIX: Mapping[str, str] = {s: f.name for f in FORMATS.values() for s in f.suffixes}


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
    # a Spark DataFrame of baskets (the Python API: dpfim.mine/frequent_itemsets): read by the
    # Spark engine from `items_col` (an array<string> column, one row a record) in place of
    # `source`, its records staying on the executors; every other engine refuses it
    frame: Any = field(default=None, compare=False, repr=False)
    items_col: str | None = None


def refuse_frame(inp: InputSpec, engine: str) -> None:
    """A Spark DataFrame is counted where its records are: by the Spark engine only."""
    if inp.frame is not None:
        raise ParameterError(
            f"--engine {engine} does not read a Spark DataFrame (its records stay on the "
            "executors): it is counted by --engine spark"
        )


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
