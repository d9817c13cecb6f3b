"""Counting engines: records -> exact ranked supports (the `Counts` contract of dpfim/counts.py).

The engine table, and the one seam every caller uses: `open_engine(spec, inp, sizes)` reads the
input and returns `Opened` (the counts, merged over the sizes, and the curator facts). `mine`,
`mine_file`, `evaluate` and the CLI name no engine; they pass an `EngineSpec`. A new engine
(DuckDB, Polars, Dask) is one module with an `Engine` object (its name, the formats of
dpfim.inputs.FORMATS it reads, check, open) plus one entry in ENGINES (docs/architecture.md).
An engine never imports a mechanism, nor dpfim.request (tests/test_layers.py).

local.py counts on this machine (numpy, bounded scratch memory); spark/ reads and counts on
Apache Spark (the `spark` extra, imported only when asked for).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from dpfim.counts import Counts
from dpfim.errors import ParameterError
from dpfim.inputs import FORMATS, EngineSpec, InputSpec, check_reading_options
from dpfim.readers import resolve_format
from dpfim.samplers.rng import RandomSource


@dataclass
class Opened:
    """An engine's counts for one run. `usable`: records with at least min(sizes) items.
    `facts` and `timings` are curator-only (exact, NOT private: --verbose). close() when done."""

    counts: Counts
    usable: int
    close: Callable[[], None] = lambda: None
    facts: Callable[[], dict[str, Any]] = dict
    timings: dict[str, float] = field(default_factory=dict)
    # seconds spent counting so far, on time.perf_counter (curator-only; None: not timed apart)
    counting_seconds: Callable[[], float] | None = None
    # exact facts evaluate needs (NOT private): distinct items, the longest record
    distinct_items: Callable[[], int] | None = None
    longest_record: Callable[[], int] | None = None


class Engine(Protocol):
    """One row of the engine table."""

    name: str
    # the input formats it reads (names in dpfim.inputs.FORMATS); engines.prepare refuses the
    # others with a usage error before any data is read, the same on every engine
    formats: frozenset[str]

    def check(self, inp: InputSpec) -> None:
        """Usage errors this engine reports before any data is read (exit 2)."""

    def open(
        self,
        inp: InputSpec,
        sizes: Sequence[int],
        spec: EngineSpec,
        warn: Callable[[str], None],
        rng: RandomSource,
    ) -> Opened:
        """Read `inp` and count its itemsets of every size in `sizes` (top down, lazily).
        rng: for --max-record-items truncation where the engine draws on this machine (an
        engine drawing elsewhere derives per-part sources from inp.seed)."""


def _local() -> Engine:
    from dpfim.engines.local import ENGINE

    return ENGINE


def _spark() -> Engine:
    from dpfim.engines.spark import ENGINE

    return ENGINE


# name -> a loader (engines with optional dependencies are imported only when chosen)
ENGINES: dict[str, Callable[[], Engine]] = {"local": _local, "spark": _spark}
NAMES = tuple(ENGINES)


def get(name: str) -> Engine:
    if name not in ENGINES:
        raise ParameterError(f"--engine must be one of {', '.join(NAMES)}: {name!r}")
    return ENGINES[name]()


def prepare(spec: EngineSpec, inp: InputSpec) -> InputSpec:
    """The engine's usage checks, then the format auto resolves to (from the name only), which
    the engine must read: what mine_file and evaluate both do before any data is read."""
    engine = get(spec.name)
    engine.check(inp)
    if inp.frame is not None:  # a Spark DataFrame (the Python API): no file, no format
        return inp
    long_columns = inp.record_col is not None or inp.item_col is not None
    decided = resolve_format(inp.source, inp.fmt, long_columns_given=long_columns)
    if decided not in engine.formats:
        reads = ", ".join(f for f in FORMATS if f in engine.formats)
        raise ParameterError(
            f"--engine {engine.name} does not read --format {decided} (it reads {reads})"
        )
    check_reading_options(inp, decided)
    return replace(inp, decided=decided)


def open_engine(
    spec: EngineSpec,
    inp: InputSpec,
    sizes: Sequence[int],
    rng: RandomSource,
    warn: Callable[[str], None] = lambda _: None,
) -> Opened:
    """Read and count `inp` with the engine `spec` names."""
    return get(spec.name).open(inp, sizes, spec, warn, rng)
