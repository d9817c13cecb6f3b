"""records -> exact supports on Apache Spark (`pip install 'dpfim[spark]'`). No privacy here.

The driver never holds a record. Text formats (FIMI, basket, JSON lines) are read by the Python
workers themselves: the driver lists the input's files and plans byte ranges (engines/
byte_ranges.py: Hadoop's split rule, a range owns the lines that start in it; a compressed file
is one range, decompressed by readers.source), and each worker opens its file (local paths, or
HDFS/S3/GCS through pyarrow.fs) and runs the local engine's own `read_chunk` functions (the
compiled FIMI tokeniser for big inputs) on whole lines. No line crosses from the JVM to Python.
Where the workers cannot open a file (a Hadoop-only codec, a URI scheme pyarrow.fs does not
know, or `--spark-conf spark.dpfim.reader=jvm`), Spark's text reader reads it (lines split at
`\n` only) and the same readers parse the lines it hands over. Long format (CSV/TSV/Parquet)
goes through Spark's readers, `readers.long`'s per-line parser and header rule, grouped by record
id on the cluster. So a file gives the same records on both engines, and the same data errors
(named by file and line). Each partition keeps its records as compact blocks (a `Records` CSR
with a block-local vocabulary), truncated there to --max-record-items from the OS CSPRNG (a
seeded source per block only under --seed). The blocks are persisted and locally checkpointed:
a lost block fails the job instead of being re-read and truncated again.

Counting is top-down with the local engine's threshold scheme (engines/local.py): the threshold s
starts just above the r-th largest item support and halves when the mechanism asks for deeper
ranks. One pass over the blocks gives the item supports (merged by reduceByKey, kept on the
cluster) and the record counts. For each s, the items with support >= s // 2 are broadcast (one
halving ahead: the next lowering needs no job); every partition counts the r-itemsets of its
records restricted to them, with the local engine's compiled kernel into a dense array when
the key space is small (else numpy), and emits partial counts in hash buckets; reduceByKey
merges the buckets and only itemsets with support >= s // 2 are collected to the driver.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import pickle
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from dpfim.counts import Counts, ItemIds
from dpfim.engines import Opened, byte_ranges
from dpfim.engines.byte_ranges import ByteRange
from dpfim.engines.topdown import TopDown
from dpfim.errors import InputError, ParameterError
from dpfim.readers import basket, fimi, jsonl, long
from dpfim.readers.records import RecordBuilder, Records, Vocabulary, truncate, truncation_key
from dpfim.readers.source import CHUNK_BYTES, chunks, decode, decompressed, split_lines
from dpfim.request import EngineSpec, InputSpec
from dpfim.samplers.rng import RandomSource

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import RDD
    from pyspark.sql import DataFrame, SparkSession

INSTALL = "pip install 'dpfim[spark]'"
_NAME = "<dpfim-chunk>"  # reader errors name this; the driver puts the file and line in its place
_MARK = "@@dpfim-data-error@@"
_CHUNK_BYTES = CHUNK_BYTES  # lines handed to a reader at once, as in the local engine
_BLOCK_RECORDS = 1 << 18  # records per cached block (a block is one row on its way to the JVM)
_BLOCK_BYTES = 16 << 20
_COMBOS_AT_ONCE = 1 << 22  # itemset occurrences generated per numpy step (bounds worker memory)
_RANGE_BLOCK_BYTES = 64 << 20  # input bytes per cached block when the workers read byte ranges
_DENSE_KEYS = 1 << 23  # r-itemset keys counted in a dense array per partition (64 MiB) at most
_READER_CONF = "spark.dpfim.reader"  # auto (default), python or jvm: who reads text input
_READERS: dict[str, Callable[[bytes, int, str, str, RecordBuilder], None]] = {
    "basket": basket.read_chunk,
    "fimi": fimi.read_chunk,
    "jsonl": jsonl.read_chunk,
}
_T = TypeVar("_T")


def require_pyspark() -> None:
    """A usage error naming the extra when pyspark is not installed."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise ParameterError(f"--engine spark needs pyspark: {INSTALL}") from None


def session(master: str | None = None, conf: Mapping[str, str] | None = None) -> SparkSession:
    """The active SparkSession, or a new one: `master` (default local[*], or what spark-submit
    set) and extra configuration. Spark's console progress bars are off."""
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None and not conf:
        return active
    builder = SparkSession.builder.appName("dpfim")
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit
        master = "local[*]"
    if master is not None:
        builder = builder.master(master)
        if master.startswith("local") and "spark.pyspark.python" not in (conf or {}):
            builder = builder.config("spark.pyspark.python", sys.executable)
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    if "spark.driver.extraJavaOptions" not in (conf or {}):
        # C1 only: the driver JVM starts 2x faster on a busy machine (C2 compiles compete for
        # the cores); dpfim's heavy work runs in Python, the JVM mostly moves bytes
        builder = builder.config(
            "spark.driver.extraJavaOptions", _quiet_log4j() + " -XX:TieredStopAtLevel=1"
        )
    if master is not None and master.startswith("local") and "spark.ui.enabled" not in (conf or {}):
        builder = builder.config("spark.ui.enabled", "false")  # a local run: no web UI to start
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return _quiet(builder.getOrCreate)


_LOG4J = """rootLogger.level = fatal
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def _quiet_log4j() -> str:
    """JVM options for a new driver JVM: Spark logs fatal errors only. Its default config
    prints warnings and every failed task's stack trace on stderr, around dpfim's one-line
    errors; a failed job still reaches dpfim as an exception (--debug shows Spark's trace)."""
    path = Path(tempfile.gettempdir()) / "dpfim-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J)
        tmp.replace(path)
    return f"-Dlog4j2.configurationFile={path.as_uri()}"


@dataclass(frozen=True)
class SparkInput:
    """What to read, as validated by the caller (api.mine_file)."""

    source: str
    fmt: str  # basket, fimi, jsonl or long (resolved)
    sep: str
    record_col: str | None = None
    item_col: str | None = None
    universe: Sequence[str] | None = None
    max_record_items: int | None = None
    seed: int | None = None  # None: the truncation key comes from the OS CSPRNG
    # the secret key of the --max-record-items sample, drawn once on the driver (None: drawn
    # when the blocks are planned); never released
    truncation_key: bytes | None = None


@dataclass(frozen=True)
class _Block:
    """One cached piece of a partition: records with a block-local vocabulary, and for each
    local item the position of its first occurrence in the input (for the local engine's item
    order: ids by first appearance)."""

    records: Records
    first_seen: list[tuple[str, int, int, int]]

    def __getstate__(self) -> tuple[Any, ...]:
        """Compact on its way to the JVM's block store and back: ids as uint16 when the block
        has at most 65536 items, record lengths in the smallest unsigned type that holds them."""
        recs = self.records
        ids = recs.indices.astype(np.uint16) if len(recs.items) <= 1 << 16 else recs.indices
        lengths = np.diff(recs.indptr)
        top = int(lengths.max()) if len(lengths) else 0
        kind = np.uint8 if top < 1 << 8 else np.uint16 if top < 1 << 16 else np.int64
        return recs.items, ids, lengths.astype(kind), self.first_seen

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        items, ids, lengths, first_seen = state
        indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        records = Records(items, indptr, ids.astype(np.int32, copy=False))
        object.__setattr__(self, "records", records)
        object.__setattr__(self, "first_seen", first_seen)


# --- reading (runs on the executors) ----------------------------------------------------------


def _data_error(file: str, block: int, line: int | None, message: str) -> Exception:
    info = {"file": file, "block": block, "line": line, "message": message}
    return RuntimeError(_MARK + json.dumps(info) + _MARK)


def _split_error(exc: InputError) -> tuple[int | None, str]:
    """(line within the chunk or None, message) of a reader error that named _NAME."""
    text = str(exc)
    found = re.match(re.escape(_NAME) + r":(\d+): (.*)", text, re.S)
    if found:
        return int(found.group(1)), found.group(2)
    return None, text.removeprefix(_NAME + ": ")


def _join_lines(values: pa.Array) -> bytes:
    """The lines of an arrow binary array, each followed by `\\n`: the original bytes."""
    import pyarrow as pa

    arr = values.cast(pa.large_binary()) if values.type != pa.large_binary() else values
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = (
        np.frombuffer(bufs[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
        if bufs[2] is not None
        else np.zeros(0, np.uint8)
    )
    lengths = np.diff(offsets)
    out = np.empty(len(data) + len(lengths), dtype=np.uint8)
    ends = np.cumsum(lengths + 1) - 1
    keep = np.ones(len(out), dtype=bool)
    keep[ends] = False
    out[ends] = 10
    out[keep] = data
    return out.tobytes()


def _runs(batch: pa.RecordBatch) -> Iterator[tuple[str, int, pa.Array]]:
    """(file, block start, lines) for each run of rows from one file split."""
    files = batch.column(1).to_pylist()
    blocks = batch.column(2).to_pylist()
    start = 0
    for i in range(1, len(files) + 1):
        if i == len(files) or files[i] != files[start] or blocks[i] != blocks[start]:
            yield files[start], int(blocks[start]), batch.column(0).slice(start, i - start)
            start = i


class _Blocks:
    """Builds the blocks of one partition from runs of lines (text formats)."""

    def __init__(self, fmt: str, sep: str, universe: Sequence[str] | None) -> None:
        self.read = _READERS[fmt]
        self.sep = sep
        self.universe = universe
        self.group: tuple[str, int] | None = None
        self.pending: list[bytes] = []
        self.pending_lines = 0
        self.pending_bytes = 0
        self.next_line = 0  # lines of the current file split handed to the reader so far
        self._new_builder()

    def _new_builder(self) -> None:
        self.builder = RecordBuilder(Vocabulary(self.universe))
        self.block_first = self.next_line
        self.block_lines = 0
        self.block_bytes = 0

    def feed(self, file: str, block: int, lines: pa.Array) -> Iterator[_Block]:
        if self.group != (file, block):
            yield from self.finish()
            self.group = (file, block)
            self.next_line = 0
            self._new_builder()
        chunk = _join_lines(lines)
        self.pending.append(chunk)
        self.pending_lines += len(lines)
        self.pending_bytes += len(chunk)
        if self.pending_bytes >= _CHUNK_BYTES:
            yield from self._read_pending()

    def _read_pending(self) -> Iterator[_Block]:
        if not self.pending or self.group is None:
            return
        data = b"".join(self.pending)
        try:
            self.read(data, self.next_line + 1, _NAME, self.sep, self.builder)
        except InputError as exc:
            line, message = _split_error(exc)
            raise _data_error(*self.group, line, message) from None
        self.next_line += self.pending_lines
        self.block_lines += self.pending_lines
        self.block_bytes += len(data)
        self.pending, self.pending_lines, self.pending_bytes = [], 0, 0
        if self.block_lines >= _BLOCK_RECORDS or self.block_bytes >= _BLOCK_BYTES:
            yield self._emit()

    def _emit(self) -> _Block:
        assert self.group is not None
        file, block = self.group
        records = self.builder.build()
        first = [(file, block, self.block_first, i) for i in range(len(records.items))]
        self._new_builder()
        return _Block(records, first)

    def finish(self) -> Iterator[_Block]:
        yield from self._read_pending()
        if self.group is not None and self.block_lines:
            yield self._emit()


def _text_blocks(
    batches: Iterable[pa.RecordBatch], fmt: str, sep: str, universe: Sequence[str] | None
) -> Iterator[pa.RecordBatch]:
    """mapInArrow: (line bytes, file, block start) -> pickled _Blocks."""
    blocks = _Blocks(fmt, sep, universe)
    for batch in batches:
        for file, block, lines in _runs(batch):
            yield from map(_arrow_blob, blocks.feed(file, block, lines))
    yield from map(_arrow_blob, blocks.finish())


def _arrow_blob(block: _Block) -> pa.RecordBatch:
    import pyarrow as pa

    blob = pickle.dumps(block, protocol=pickle.HIGHEST_PROTOCOL)
    return pa.RecordBatch.from_arrays([pa.array([blob], type=pa.large_binary())], ["blob"])


def _read_ranges(
    fmt: str, sep: str, universe: Sequence[str] | None, ranges: Iterable[ByteRange]
) -> Iterator[_Block]:
    """mapPartitions over byte ranges: the worker opens each file itself and reads the range's
    lines with the local engine's chunk reader into blocks."""
    for part in ranges:
        yield from _read_range(part, fmt, sep, universe)


def _read_range(
    part: ByteRange, fmt: str, sep: str, universe: Sequence[str] | None
) -> Iterator[_Block]:
    read = _READERS[fmt]
    try:
        f = byte_ranges.open_uri(part.file)
    except (OSError, ValueError) as exc:  # pyarrow.fs raises both
        raise _data_error(part.file, 0, None, f"cannot read the input ({exc})") from None
    whole = part.compression != "none"
    span = part.stop - part.start
    # the local engine's reader policy by input size (compressed: assume ~4x)
    hint = span * 4 if whole else span

    def builder() -> RecordBuilder:
        out = RecordBuilder(Vocabulary(universe))
        out.size_hint = hint
        return out

    with f:
        # (chunk, first line or None, position): plain ranges number their lines only on error
        pieces: Iterator[tuple[bytes, int | None, int]]
        if whole:
            stream = decompressed(f, part.compression)
            pieces = ((c, n, n) for c, n in chunks(stream, _NAME, part.compression))
        else:
            pieces = ((c, None, at) for c, at in byte_ranges.range_chunks(f, part.start, part.stop))
        out = builder()
        block_at: int | None = None
        block_bytes = 0
        try:
            for chunk, first, at in pieces:
                if block_at is None:
                    block_at = at
                try:
                    # a provisional first line for a plain range: the reader's choices do not
                    # depend on it beyond "the first chunk or not"; errors are renumbered below
                    line = first if first is not None else 1 if at == 0 else 2
                    read(chunk, line, _NAME, sep, out)
                except InputError as exc:
                    if first is not None:
                        raise
                    raise _renumbered(exc, f, chunk, at, read, sep, builder()) from None
                block_bytes += len(chunk)
                if block_bytes >= _RANGE_BLOCK_BYTES:
                    yield _range_block(part, block_at, out)
                    out, block_at, block_bytes = builder(), None, 0
        except InputError as exc:
            raise _data_error(part.file, 0, *_split_error(exc)) from None
        except OSError as exc:
            raise _data_error(part.file, 0, None, f"cannot read the input ({exc})") from None
        if block_at is not None:
            yield _range_block(part, block_at, out)


def _renumbered(
    exc: InputError,
    f: Any,
    chunk: bytes,
    at: int,
    read: Callable[[bytes, int, str, str, RecordBuilder], None],
    sep: str,
    scratch: RecordBuilder,
) -> InputError:
    """A reader error in a plain range, named by its line in the file: the chunk is read again
    with its true first line (the message is then exactly the local engine's)."""
    first = 1 + byte_ranges.lines_before(f, at)
    try:
        read(chunk, first, _NAME, sep, scratch)
    except InputError as again:
        return again
    line, message = _split_error(exc)  # pragma: no cover - the readers are deterministic
    return InputError(f"{_NAME}:{first + (line or 1) - 1}: {message}")


def _range_block(part: ByteRange, at: int, out: RecordBuilder) -> _Block:
    records = out.build()
    return _Block(records, [(part.file, part.start, at, i) for i in range(len(records.items))])


def _long_lines(batches: Iterable[pa.RecordBatch], sep: str) -> Iterator[pa.RecordBatch]:
    """mapInArrow, long CSV: each line's fields (blank lines dropped); the first line of a file
    is its header and kept whole."""
    import pyarrow as pa

    seen: dict[tuple[str, int], int] = {}  # lines of each file split so far
    for batch in batches:
        for file, block, values in _runs(batch):
            out: dict[str, list[Any]] = {k: [] for k in ("file", "block", "line", "fields")}
            out["header"] = []
            offset = seen.get((file, block), 0)
            try:
                text = decode(_join_lines(values), _NAME, offset + 1)
                lines = split_lines(text, _NAME, offset + 1)
            except InputError as exc:
                raise _data_error(file, block, *_split_error(exc)) from None
            for k, line in enumerate(lines):
                at = offset + k
                is_header = block == 0 and at == 0
                if is_header:
                    fields = [line]
                else:
                    try:
                        fields = basket.parse_line(line, sep)  # the one CSV line parser
                    except ValueError as exc:
                        raise _data_error(file, block, at + 1, str(exc)) from None
                    if not fields:
                        continue
                out["file"].append(file)
                out["block"].append(block)
                out["line"].append(at)
                out["fields"].append(fields)
                out["header"].append(is_header)
            seen[(file, block)] = offset + len(lines)
            yield pa.RecordBatch.from_pydict(out, schema=_LONG_LINES_SCHEMA())


def _LONG_LINES_SCHEMA() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("file", pa.string()),
            ("block", pa.int64()),
            ("line", pa.int64()),
            ("fields", pa.list_(pa.string())),
            ("header", pa.bool_()),
        ]
    )


def _long_pairs(
    batches: Iterable[pa.RecordBatch], columns: Mapping[str, tuple[int, int, int]]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow, long CSV: (record id, item, position) of each data line; a line with the
    wrong number of fields is a data error."""
    import pyarrow as pa

    for batch in batches:
        rows = batch.to_pydict()
        out: dict[str, list[Any]] = {k: [] for k in ("rid", "item", "file", "block", "line")}
        for file, block, line, fields in zip(
            rows["file"], rows["block"], rows["line"], rows["fields"], strict=True
        ):
            width, rc, ic = columns[file]
            if len(fields) != width:
                raise _data_error(
                    file, block, line + 1, f"{len(fields)} fields, but the header has {width}"
                )
            out["rid"].append(fields[rc])
            out["item"].append(fields[ic])
            out["file"].append(file)
            out["block"].append(block)
            out["line"].append(line)
        yield pa.RecordBatch.from_pydict(out)


def _parquet_pairs(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow, long Parquet: both columns as trimmed strings, as readers.long does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for batch in batches:
        cols = []
        for k in (0, 1):
            values = pc.cast(batch.column(k), pa.string()).to_pylist()
            cols.append(["" if v is None else v.strip() for v in values])
        yield pa.RecordBatch.from_pydict(
            {
                "rid": cols[0],
                "item": cols[1],
                "file": batch.column(2),
                "block": batch.column(3),
                "line": batch.column(4),
            }
        )


def _grouped_blocks(
    batches: Iterable[pa.RecordBatch], universe: Sequence[str] | None
) -> Iterator[pa.RecordBatch]:
    """mapInArrow, long format: one record per record id (rows: its items with positions)."""
    vocab = Vocabulary(universe)
    builder = RecordBuilder(vocab)
    first: dict[int, tuple[str, int, int, int]] = {}
    count = 0
    for batch in batches:
        rows = batch.column(0)
        offsets = np.asarray(rows.offsets)
        flat = rows.flatten()
        items = flat.field("item").to_pylist()
        ids = vocab.ids(items)
        builder.add_ids(ids, np.diff(offsets).astype(np.int64))
        for i, f, b, ln in zip(
            ids.tolist(),
            flat.field("file").to_pylist(),
            flat.field("block").to_pylist(),
            flat.field("line").to_pylist(),
            strict=True,
        ):
            if i >= 0:
                key = (f, b, ln, 0)
                if i not in first or key < first[i]:
                    first[i] = key
        count += len(offsets) - 1
        if count >= _BLOCK_RECORDS:
            yield _arrow_blob(_long_block(builder, first))
            vocab = Vocabulary(universe)
            builder, first, count = RecordBuilder(vocab), {}, 0
    if count:
        yield _arrow_blob(_long_block(builder, first))


def _long_block(builder: RecordBuilder, first: dict[int, tuple[str, int, int, int]]) -> _Block:
    records = builder.build()
    far = ("\U0010ffff", 0, 0, 0)  # an item whose every row was dropped: never counted
    return _Block(records, [first.get(i, far) for i in range(len(records.items))])


def _load(row: Any) -> _Block:
    block: _Block = pickle.loads(row[0])
    return block


def _truncated(limit: int, key: bytes, blocks: Iterable[_Block]) -> Any:
    """Each record cut to `limit` uniformly random items (record-local), on the executor. The
    sample is a function of the record and the run's secret key only (readers.records.truncate):
    the local engine keeps the same items, and a recomputed or retried partition too."""
    for block in blocks:
        yield _Block(truncate(block.records, limit, key), block.first_seen)


# --- counting (runs on the executors) ---------------------------------------------------------


def _support_at_least(s: int, kv: tuple[str, tuple[int, Any]]) -> bool:
    return kv[1][0] >= s


_SIZES = 5  # itemset sizes 1.._SIZES: records with at least r items, for each


def _summary(blocks: Iterable[_Block]) -> Iterator[tuple[str | None, tuple[int, Any]]]:
    """One pass over a partition: (item, (support, first seen)) for every item present, and
    (None, (records, records with >= r items for r = 1..5))."""
    n = 0
    usable = [0] * _SIZES
    for block in blocks:
        recs = block.records
        counts = np.bincount(recs.indices, minlength=len(recs.items)).tolist()
        for item, count, seen in zip(recs.items, counts, block.first_seen, strict=True):
            if count:
                yield item, (count, seen)
        lengths = np.diff(recs.indptr)
        n += recs.n
        for r in range(_SIZES):
            usable[r] += int(np.count_nonzero(lengths > r))
    yield None, (n, tuple(usable))


def _add_summary(a: tuple[int, Any], b: tuple[int, Any]) -> tuple[int, Any]:
    """Merge two summary values: supports add, the first-seen position is the least one; the
    stats entry (its second part a tuple of ints, not a position) adds element-wise."""
    if a[1] and isinstance(a[1][0], int):
        return a[0] + b[0], tuple(x + y for x, y in zip(a[1], b[1], strict=True))
    return a[0] + b[0], min(a[1], b[1])


_TOP_KNOWN = 4096  # the driver learns this many of the largest item supports (values only)


def _heads(kvs: Iterable[tuple[str | None, tuple[int, Any]]]) -> Iterator[Any]:
    """A merged summary partition's stats entry and its _TOP_KNOWN largest item supports (each
    item is in one partition, so together they hold the global _TOP_KNOWN largest)."""
    top: list[int] = []
    for key, value in kvs:
        if key is None:
            yield ("stats", value)
        else:
            top.append(value[0])
    top.sort(reverse=True)
    yield ("top", top[:_TOP_KNOWN])


def _is_item(kv: tuple[str | None, Any]) -> bool:
    return kv[0] is not None


@functools.lru_cache(maxsize=256)
def _combinations(length: int, size: int) -> np.ndarray:
    """All `size`-subsets of range(length) as rows of ascending positions."""
    if size == 1:
        return np.arange(length, dtype=np.int64).reshape(-1, 1)
    parts = []
    for first in range(length - size + 1):
        rest = _combinations(length - first - 1, size - 1) + first + 1
        parts.append(np.column_stack((np.full(len(rest), first, dtype=np.int64), rest)))
    if not parts:
        return np.zeros((0, size), dtype=np.int64)
    return np.concatenate(parts)


def _encode(ids: np.ndarray, width: int, size: int) -> np.ndarray:
    """Itemsets (rows of ascending global ids) as sortable keys: int64 when they fit."""
    if width**size < 1 << 62:
        weights = np.array([width ** (size - 1 - k) for k in range(size)], dtype=np.int64)
        return ids @ weights
    rows = np.ascontiguousarray(ids.astype(np.int32))
    return rows.view(np.dtype((np.void, 4 * size))).ravel()


def _decode_keys(keys: np.ndarray, width: int, size: int) -> np.ndarray:
    if keys.dtype.kind == "V":
        return np.frombuffer(keys.tobytes(), dtype=np.int32).reshape(-1, size).astype(np.int64)
    out = np.empty((len(keys), size), dtype=np.int64)
    rest = keys.copy()
    for k in range(size - 1, -1, -1):
        rest, out[:, k] = np.divmod(rest, width)
    return out


def _itemset_keys(recs: Records, lut: np.ndarray, width: int, size: int) -> Iterator[np.ndarray]:
    """The keys of every r-itemset of frequent items inside each record (lut: local -> global
    id of the frequent items, -1 for the others)."""
    if not len(recs.indices):
        return
    rows = np.repeat(np.arange(recs.n, dtype=np.int64), np.diff(recs.indptr))
    cols = lut[recs.indices]
    keep = cols >= 0
    key = rows[keep] * width + cols[keep]
    key.sort()
    rows, cols = np.divmod(key, width)  # global ids ascending inside each record
    per_row = np.bincount(rows, minlength=recs.n)
    starts = np.zeros(recs.n, dtype=np.int64)
    np.cumsum(per_row[:-1], out=starts[1:])
    for length in np.unique(per_row[per_row >= size]).tolist():
        at = starts[per_row == length]
        template = _combinations(length, size)
        step = max(1, _COMBOS_AT_ONCE // len(template))
        for i in range(0, len(at), step):
            picks = (at[i : i + step, None, None] + template[None]).reshape(-1, size)
            yield _encode(cols[picks], width, size)


def _merge(keys: list[np.ndarray], counts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Partial counts summed per key."""
    k = np.concatenate(keys)
    c = np.concatenate(counts)
    if not len(k):
        return k, c
    order = np.argsort(k, kind="stable")
    k, c = k[order], c[order]
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    return k[starts], np.add.reduceat(c, starts)


def _merge_pair(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    return _merge([a[0], b[0]], [a[1], b[1]])


def _bucket(keys: np.ndarray, buckets: int, size: int) -> np.ndarray:
    if keys.dtype.kind == "V":
        ids = np.frombuffer(keys.tobytes(), dtype=np.int32).reshape(-1, size).astype(np.int64)
        mix = np.array([1000003 ** (k + 1) % (1 << 31) for k in range(size)], dtype=np.int64)
        return (ids @ mix) % buckets
    return keys % buckets


def _kernels() -> Any:
    try:
        from dpfim.engines import _compiled
    except ImportError:  # numba missing or unusable: numpy counts exactly too
        return None
    return _compiled


def _dense_counts(
    index: Mapping[str, int], width: int, size: int, blocks: Iterable[_Block]
) -> tuple[np.ndarray, np.ndarray]:
    """(keys, partial counts) of a partition when width**size keys fit in a dense array: the
    local engine's compiled counting kernel (numba) per block, or numpy without it."""
    out = np.zeros(width**size, dtype=np.int64)
    kernels = _kernels()
    # level tables for the kernel: every (j)-subset of frequent items counts as a prefix, its id
    # its own key, so that a key is the itemset's base-`width` number (what _encode gives)
    offsets = np.zeros(size + 1, dtype=np.int64)
    parts = [np.full(1, -1, dtype=np.int64)]
    start = 1
    for j in range(2, size):
        offsets[j] = start
        parts.append(np.arange(width**j, dtype=np.int64))
        start += width**j
    tables = np.concatenate(parts)
    for block in blocks:
        recs = block.records
        lut = np.fromiter((index.get(t, -1) for t in recs.items), np.int64, len(recs.items))
        if not (lut >= 0).any():
            continue
        if kernels is not None:
            kernels.count_dense(
                recs.indptr, recs.indices, lut, 0, recs.n, size, width, tables, offsets, out, True
            )
            continue
        for part in _itemset_keys(recs, lut, width, size):
            out += np.bincount(part, minlength=len(out))
    keys = np.flatnonzero(out)
    return keys.astype(np.int64), out[keys]


def _partial_counts(
    bc: Any, width: int, size: int, buckets: int, blocks: Iterable[_Block]
) -> Iterator[tuple[int, tuple[np.ndarray, np.ndarray]]]:
    """One partition's counts of the r-itemsets of frequent items, by hash bucket."""
    index: dict[str, int] = bc.value
    if width**size <= _DENSE_KEYS:
        k, c = _dense_counts(index, width, size, blocks)
        where = _bucket(k, buckets, size)
        for b in range(buckets):
            sel = where == b
            if sel.any():
                yield b, (k[sel], c[sel])
        return
    keys: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    for block in blocks:
        items = block.records.items
        lut = np.fromiter((index.get(s, -1) for s in items), dtype=np.int64, count=len(items))
        if not (lut >= 0).any():
            continue
        for part in _itemset_keys(block.records, lut, width, size):
            u, c = np.unique(part, return_counts=True)
            keys.append(u)
            counts.append(c.astype(np.int64))
            if len(keys) >= 16:
                merged = _merge(keys, counts)
                keys, counts = [merged[0]], [merged[1]]
    if not keys:
        return
    k, c = _merge(keys, counts)
    where = _bucket(k, buckets, size)
    for b in range(buckets):
        sel = where == b
        if sel.any():
            yield b, (k[sel], c[sel])


def _at_least(s: int, kc: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    keep = kc[1] >= s
    return kc[0][keep], kc[1][keep]


def _block_supports(batch: Sequence[Sequence[str]], block: _Block) -> list[int]:
    """For each itemset of `batch` (item names), the records of `block` that hold it all."""
    recs = block.records
    where = {s: i for i, s in enumerate(recs.items)}
    rows = np.repeat(np.arange(recs.n), np.diff(recs.indptr))
    out = []
    for names in batch:
        if any(s not in where for s in names):
            out.append(0)
            continue
        hit = np.zeros(recs.n, dtype=np.int64)
        for s in names:
            hit[rows[recs.indices == where[s]]] += 1
        out.append(int((hit == len(names)).sum()))
    return out


def _add_lists(a: list[int], b: list[int]) -> list[int]:
    return [x + y for x, y in zip(a, b, strict=True)]


# --- the driver --------------------------------------------------------------------------------


def _quiet(call: Callable[[], _T]) -> _T:
    """Run a Spark call without pyspark's pandas-version FutureWarning (pandas >= 3 works for
    what dpfim does: arrow batches only)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
        return call()


class SparkCounts(TopDown):
    """Exact supports of the r-itemsets with support >= threshold, counted by Spark.

    The `Counts` contract of dpfim/counts.py, as the local engine keeps it: `counts` holds the
    support of EVERY r-itemset with support >= `threshold` and of no other, decreasing, ties
    by the first appearance of their items in the input. Item ids: positions in the declared
    vocabulary, or (open universe) append-only in the order the items become frequent enough
    to be counted (one ItemIds table, shared by every size of one input), so an id never
    changes when the threshold falls; a row lists its items in first-appearance order.
    `usable` (records with at least r items) is a curator fact.
    """

    def __init__(self, spark: SparkSession, inp: SparkInput, size: int) -> None:
        self._spark = spark
        self._inp = inp
        self._lines: DataFrame | None = None  # the text input, to number a bad line
        self._persisted: list[DataFrame] = []
        self._declared = list(Vocabulary(inp.universe).items) if inp.universe is not None else None
        self._ids = ItemIds(self._declared or ())  # shared by with_size() copies
        self._blocks = self._guard(lambda: self._read())
        # one pass over the records: item supports and record counts, merged on the cluster
        parts = max(2, spark.sparkContext.defaultParallelism)
        self._summary = self._blocks.mapPartitions(_summary).reduceByKey(_add_summary, parts)
        self._summary.persist()
        self._supports: Any = self._summary.filter(_is_item)  # items only
        heads = self._guard(lambda: self._summary.mapPartitions(_heads).collect())
        stats = [v for kind, v in heads if kind == "stats"]
        self._n: int = stats[0][0] if stats else 0
        self._usable: tuple[int, ...] = stats[0][1] if stats else (0,) * _SIZES
        top = sorted((x for kind, v in heads if kind == "top" for x in v), reverse=True)
        self._top = top[:_TOP_KNOWN]
        self._start(size)

    def with_size(self, size: int) -> SparkCounts:
        """Counts of the same records for another itemset size, from the top again (the cached
        blocks and item supports are shared; close() either one only when both are done)."""
        other = copy.copy(self)
        other._start(size)
        return other

    def _start(self, size: int) -> None:
        self._begin(size, self._top)
        self.n, self.usable = int(self._n), int(self._usable[size - 1])
        self._fetched: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def items(self) -> list[str]:
        """Names by id: only grows (the open universe learns items as the threshold falls)."""
        return self._ids.names

    def supports(self, batch: Sequence[Sequence[int]]) -> list[int]:
        """Exact supports of a batch of itemsets (item ids), in one Spark job."""
        wanted = [tuple(self.items[int(i)] for i in ids) for ids in batch]
        asked = [names for names in wanted if names]
        found: list[int] = [0] * len(asked)
        if asked:
            job = self._blocks.map(functools.partial(_block_supports, asked))
            found = self._guard(lambda: job.fold([0] * len(asked), _add_lists))
        it = iter(found)
        return [int(next(it)) if names else self.n for names in wanted]

    def close(self) -> None:
        """Release the cached blocks and supports."""
        self._summary.unpersist()
        self._blocks.unpersist()
        for frame in self._persisted:
            frame.unpersist()

    # --- one threshold -------------------------------------------------------------------------

    def _count_at(self, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every r-itemset with support >= s. Each counting job looks ahead (_ahead: s // 2 to
        s // 8): it collects the itemsets with support >= that; those at or above s are exposed
        now, the rest wait for the next lowerings, which then need no job."""
        ahead = self._ahead(s)
        if self._fetched is None or s < self._fetched[0]:
            self._fetched = (ahead, *self._fetch(ahead))
            self.passes += 1
        _, counts, itemsets, ties = self._fetched
        keep = counts >= s
        return counts[keep], itemsets[keep], ties[keep]

    def _ahead(self, s: int) -> int:
        """The threshold a job at s counts at: s // 2, and up to two halvings deeper (s // 8)
        while the items above it stay few enough for dense counting (known from the largest
        item supports): the mechanism usually asks for a few more ranks, each halving a job."""
        if self.size == 1:
            return s
        ahead = max(1, s // 2)
        descending = -np.asarray(self._top, dtype=np.int64)
        for _ in range(2):
            deeper = max(1, ahead // 2)
            width = int(np.searchsorted(descending, -deeper, side="right"))  # supports >= deeper
            if deeper == ahead or width >= _TOP_KNOWN or width**self.size > _DENSE_KEYS:
                break
            ahead = deeper
        return ahead

    def _fetch(self, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(supports, item ids, tie keys) of every r-itemset with support >= s, counted on the
        cluster; the tie keys are the items' positions in first-appearance (or declared) order
        among the frequent items, so ties fall as on the local engine (contract invariant 4).
        New frequent items get the next ids (open universe); known ids never change."""
        frequent: list[tuple[str, tuple[int, Any]]] = self._guard(
            lambda: self._supports.filter(functools.partial(_support_at_least, s)).collect()
        )
        if self._declared is not None:
            position = {item: i for i, item in enumerate(self._declared)}
            frequent.sort(key=lambda kv: position[kv[0]])
            ids = np.array([position[kv[0]] for kv in frequent], dtype=np.int64)
        else:
            frequent.sort(key=lambda kv: kv[1][1])
            ids = np.array([self._ids.id_of(kv[0]) for kv in frequent], dtype=np.int64)
        support = np.array([kv[1][0] for kv in frequent], dtype=np.int64)
        if self.size == 1:
            counts, rows = support, np.arange(len(frequent), dtype=np.int64).reshape(-1, 1)
        elif len(frequent) >= self.size:
            counts, rows = self._count(s, [kv[0] for kv in frequent])
        else:
            counts, rows = np.zeros(0, np.int64), np.zeros((0, self.size), np.int64)
        if not len(rows):
            rows = np.zeros((0, self.size), dtype=np.int64)
        return counts, ids[rows], rows

    def _count(self, s: int, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(supports, rows of positions in `names`) of the r-itemsets with support >= s."""
        sc = self._spark.sparkContext
        width = len(names)
        bc = sc.broadcast({name: i for i, name in enumerate(names)})
        buckets = max(2, sc.defaultParallelism)
        try:
            job = (
                self._blocks.mapPartitions(
                    functools.partial(_partial_counts, bc, width, self.size, buckets)
                )
                .reduceByKey(_merge_pair, numPartitions=buckets)
                .mapValues(functools.partial(_at_least, s))
                .values()
            )
            found = self._guard(lambda: job.collect())
        finally:
            bc.destroy()
        if not found:
            return np.zeros(0, np.int64), np.zeros((0, self.size), np.int64)
        keys = np.concatenate([k for k, _ in found])
        counts = np.concatenate([c for _, c in found]).astype(np.int64)
        return counts, _decode_keys(keys, width, self.size)

    # --- reading -------------------------------------------------------------------------------

    def _read(self) -> RDD[_Block]:
        from pyspark import StorageLevel

        inp = self._inp
        ranges = None if inp.fmt == "long" else self._plan()
        if ranges is not None:
            sc = self._spark.sparkContext
            blocks = sc.parallelize(ranges, max(1, len(ranges))).mapPartitions(
                functools.partial(_read_ranges, inp.fmt, inp.sep, inp.universe)
            )
        else:
            if inp.fmt == "long":
                blobs = self._read_long()
            else:
                lines = self._text()
                blobs = _quiet(
                    lambda: lines.mapInArrow(
                        functools.partial(
                            _text_blocks, fmt=inp.fmt, sep=inp.sep, universe=inp.universe
                        ),
                        "blob binary",
                    )
                )
            blocks = blobs.rdd.map(_load)
        if inp.max_record_items is not None:
            key = inp.truncation_key or truncation_key(seed=inp.seed)
            blocks = blocks.mapPartitions(functools.partial(_truncated, inp.max_record_items, key))
        blocks.persist(StorageLevel.MEMORY_AND_DISK)
        blocks.localCheckpoint()  # a lost block fails the run: it is never truncated twice
        return blocks

    def _plan(self) -> list[ByteRange] | None:
        """The byte ranges the Python workers read, or None when the JVM must read the input
        (--spark-conf spark.dpfim.reader=jvm, or a file the workers cannot open: a Hadoop-only
        codec, a URI scheme pyarrow.fs does not know or cannot reach from here)."""
        mode = self._spark.conf.get(_READER_CONF, "auto") or "auto"
        if mode not in ("auto", "python", "jvm"):
            raise ParameterError(f"{_READER_CONF} must be auto, python or jvm, got {mode!r}")
        if mode == "jvm":
            return None
        source = self._inp.source
        files = byte_ranges.local_files(source)
        if files is None:
            files = self._remote_files(mode)
        if files is None:  # a glob, a URI, nested directories: Spark's own file index lists it
            files = sorted(self._guard(lambda: self._spark.read.text(source).inputFiles()))
        try:
            if not all(byte_ranges.readable_here(f) for f in files):
                raise OSError("a file the Python workers cannot open")
            sizes = byte_ranges.sizes(files)
        except (OSError, ImportError, ValueError) as exc:
            if mode == "python":
                raise InputError(f"{source}: the Python workers cannot read it ({exc})") from None
            return None
        sc = self._spark.sparkContext
        jvm: Any = sc._jvm
        as_bytes = jvm.org.apache.spark.network.util.JavaUtils.byteStringAsBytes
        conf = self._spark.conf
        max_split = int(as_bytes(conf.get("spark.sql.files.maxPartitionBytes", "128m")))
        open_cost = int(as_bytes(conf.get("spark.sql.files.openCostInBytes", "4m")))
        return byte_ranges.plan(
            list(zip(files, sizes, strict=True)), max_split, open_cost, sc.defaultParallelism
        )

    def _remote_files(self, mode: str) -> list[str] | None:
        """The input's files listed through pyarrow.fs (S3, GCS, HDFS), or None for Spark's file
        index to list them (it has the cluster's Hadoop connectors, where pyarrow cannot reach)."""
        source = self._inp.source
        try:
            return byte_ranges.remote_files(source)
        except FileNotFoundError:
            raise ParameterError(f"{source}: no such file") from None
        except (OSError, ImportError, ValueError) as exc:
            if mode == "python":
                raise InputError(f"{source}: the Python workers cannot read it ({exc})") from None
            return None

    def _text(self) -> DataFrame:
        from pyspark.sql import functions as F

        raw = self._spark.read.option("lineSep", "\n").text(self._inp.source)
        self._lines = raw.select(
            F.col("value").cast("binary").alias("line"),
            F.input_file_name().alias("file"),
            F.input_file_block_start().alias("block"),
        )
        return self._lines

    def _read_long(self) -> DataFrame:
        from pyspark.sql import functions as F

        inp = self._inp
        assert inp.record_col is not None and inp.item_col is not None
        if _plain(inp.source).endswith(".parquet"):
            frame = self._spark.read.parquet(inp.source)
            for col in (inp.record_col, inp.item_col):
                if col not in frame.columns:
                    shown = ", ".join(frame.columns[:10])
                    raise InputError(f"{inp.source}: no column {col!r} (columns: {shown})")
            pairs_in = frame.select(
                F.col(f"`{inp.record_col}`"),
                F.col(f"`{inp.item_col}`"),
                F.input_file_name().alias("file"),
                F.input_file_block_start().alias("block"),
                F.monotonically_increasing_id().alias("line"),
            )
            pairs = _quiet(
                lambda: pairs_in.mapInArrow(
                    _parquet_pairs,
                    "rid string, item string, file string, block long, line long",
                )
            )
        else:
            lines = self._text()
            parsed = _quiet(
                lambda: lines.mapInArrow(
                    functools.partial(_long_lines, sep=inp.sep),
                    "file string, block long, line long, fields array<string>, header boolean",
                )
            )
            parsed = parsed.persist()
            self._persisted.append(parsed)
            headers = self._guard(lambda: parsed.where("header").select("file", "fields").collect())
            if not headers:
                raise InputError(f"{inp.source}: empty file, no header with columns")
            columns = {
                row["file"]: long._header(
                    row["fields"][0],
                    self._shown(row["file"]),
                    inp.sep,
                    inp.record_col,
                    inp.item_col,
                )
                for row in headers
            }
            data = parsed.where(~F.col("header"))
            pairs = _quiet(
                lambda: data.mapInArrow(
                    functools.partial(_long_pairs, columns=columns),
                    "rid string, item string, file string, block long, line long",
                )
            )
        grouped = pairs.groupBy("rid").agg(
            F.collect_list(F.struct("item", "file", "block", "line")).alias("rows")
        )
        return _quiet(
            lambda: grouped.select("rows").mapInArrow(
                functools.partial(_grouped_blocks, universe=inp.universe), "blob binary"
            )
        )

    # --- errors --------------------------------------------------------------------------------

    def _shown(self, file: str) -> str:
        """How an error names a file: the input as given when it is one file."""
        src = self._inp.source
        plain = byte_ranges.shown(file)
        if os.path.isfile(src) and os.path.realpath(src) == os.path.realpath(plain):
            return src
        return plain

    def _guard(self, call: Callable[[], _T]) -> _T:
        """Run a Spark job; a data error from the executors becomes an InputError naming the
        file and line, a missing path a usage error, an unreadable input a data error."""
        try:
            return _quiet(call)
        except Exception as exc:  # py4j and pyspark raise several unrelated types
            raise self._translate(exc) from None

    def _translate(self, exc: Exception) -> Exception:
        text = str(exc)
        found = re.search(re.escape(_MARK) + r"(.*?)" + re.escape(_MARK), text, re.S)
        if found:
            info = json.loads(found.group(1))
            shown = self._shown(info["file"])
            line = info["line"]
            if line is None:
                return InputError(f"{shown}: {info['message']}")
            return InputError(f"{shown}:{self._line_number(info, line)}: {info['message']}")
        if "PATH_NOT_FOUND" in text or "Path does not exist" in text:
            return ParameterError(f"{self._inp.source}: no such file")
        causes = re.findall(
            r"Caused by: ((?:java\.io|java\.util\.zip|org\.apache\.parquet)[^\n]*)", text
        )
        if causes or "FAILED_READ_FILE" in text:
            detail = causes[-1] if causes else "damaged or unreadable file"
            return InputError(f"{self._inp.source}: cannot read the input ({detail.strip()[:200]})")
        return exc

    def _line_number(self, info: dict[str, Any], line: int) -> int:
        """The line number in its file: lines of earlier splits of the file counted first."""
        if not info["block"] or self._lines is None:
            return line
        from pyspark.sql import functions as F

        earlier = self._lines.where(
            (F.col("file") == info["file"]) & (F.col("block") < info["block"])
        )
        return int(earlier.count()) + line


def _plain(source: str) -> str:
    name = source.rstrip("/").lower()
    for suffix in (".gz", ".bz2", ".xz"):
        name = name.removesuffix(suffix)
    return name


def count_file(
    inp: SparkInput,
    size: int,
    *,
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    timings: dict[str, float] | None = None,
) -> SparkCounts:
    """Read `inp` on Spark and return its counts; the records stay on the executors.

    timings: receives the session's start-up time (curator diagnostics, never the result)."""
    check_source(inp.source)
    if inp.fmt == "long" and (inp.record_col is None or inp.item_col is None):
        raise ParameterError("--format long needs --record-col and --item-col")
    if inp.max_record_items is not None and inp.max_record_items < 1:
        raise ParameterError(f"--max-record-items must be >= 1, got {inp.max_record_items}")
    started = time.perf_counter()
    spark = session(master, conf)
    if timings is not None:
        timings["spark start-up"] = time.perf_counter() - started
    return SparkCounts(spark, inp, size)


def check_source(source: str, compression: str = "auto") -> None:
    """Usage errors Spark would otherwise report late or not at all (and pyspark missing)."""
    require_pyspark()
    if source == "-":
        raise ParameterError(
            "--engine spark reads a path (a file, a directory of part files, hdfs://, s3a://), "
            "not stdin"
        )
    if compression != "auto":
        raise ParameterError(
            "--engine spark decompresses by the file extension (Spark's codecs: .gz, .bz2); "
            "--compression is for --engine local"
        )
    name = source.rstrip("/").lower()
    if name.endswith(".xz"):
        raise ParameterError(
            f"{source}: Spark cannot read xz; recompress as .gz or .bz2 (or use --engine local)"
        )
    if "://" not in source and not os.path.exists(source) and not any(c in source for c in "*?["):
        raise ParameterError(f"{source}: no such file")


# --- the engine table's entry ---------------------------------------------------------------


def _longest(block: _Block) -> int:
    lengths = np.diff(block.records.indptr)
    return int(lengths.max()) if len(lengths) else 0


class _SparkEngine:
    """Reads and counts on Spark; the records stay on the executors."""

    name = "spark"

    def check(self, inp: InputSpec) -> None:
        check_source(inp.source, inp.compression)

    def open(
        self,
        inp: InputSpec,
        sizes: Sequence[int],
        spec: EngineSpec,
        warn: Callable[[str], None],
        rng: RandomSource,
    ) -> Opened:
        """rng is not used: truncation draws on the executors, per block, from the OS CSPRNG
        (or, under --seed, from a source derived from the seed and the block)."""
        from dpfim.readers import default_sep
        from dpfim.views import Merged

        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        first = count_file(
            SparkInput(
                inp.source,
                inp.decided,
                default_sep(inp.source, inp.sep),
                inp.record_col,
                inp.item_col,
                inp.universe,
                inp.max_record_items,
                inp.seed,
                truncation_key(seed=inp.seed),  # once, here on the driver
            ),
            min(sizes),
            master=spec.master,
            conf=spec.conf,
            timings=timings,
        )
        engines = [first] + [first.with_size(r) for r in sizes if r != min(sizes)]
        engines.sort(key=lambda e: e.size)
        timings["read"] = time.perf_counter() - t0
        counts: Counts = engines[0] if len(engines) == 1 else Merged(engines)

        def facts() -> dict[str, Any]:
            return {"counting jobs": sum(e.passes for e in engines)}

        return Opened(
            counts,
            usable=first.usable,
            close=first.close,
            facts=facts,
            timings=timings,
            distinct_items=lambda: int(first._guard(lambda: first._supports.count())),
            longest_record=lambda: (
                int(first._guard(lambda: first._blocks.map(_longest).max())) if first.n else 0
            ),
        )


ENGINE = _SparkEngine()
