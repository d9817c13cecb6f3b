"""What the executors run to read: input -> cached blocks of records. No counting, no privacy.

The driver never holds a record. Text formats (FIMI, basket, JSON lines) are read by the Python
workers themselves: the driver lists the input's files and plans byte ranges (engines/
byte_ranges.py: Hadoop's split rule, a range owns the lines that start in it; a compressed file
is one range, decompressed by readers.source), and each worker opens its file (local paths, or
HDFS/S3/GCS through pyarrow.fs) and runs the local engine's own `read_chunk` functions (the
compiled FIMI tokeniser for big inputs) on whole lines (`read_ranges`). No line crosses from the
JVM to Python. Where the workers cannot open a file (a Hadoop-only codec, a URI scheme pyarrow.fs
does not know, or `--spark-conf spark.dpfim.reader=jvm`), Spark's text reader reads it (lines
split at `\n` only) and the same readers parse the lines it hands over (`text_blocks`). Long
format (CSV/TSV/Parquet) goes through Spark's readers, `readers.long`'s per-line parser and
header rule (`long_lines`, `long_pairs`, `parquet_pairs`), grouped by record id on the cluster
(`grouped_blocks`). So a file gives the same records on both engines, and the same data errors
(named by file and line: `data_error` carries them to the driver between `MARK`s).

Each partition keeps its records as compact `Block`s (a `Records` CSR with a block-local
vocabulary), truncated there to --max-record-items (`truncated`). Every function here is
module-level, so that functools.partial ships it to the executors by reference.
"""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dpfim.engines import byte_ranges
from dpfim.engines.byte_ranges import ByteRange
from dpfim.errors import InputError
from dpfim.inputs import FORMATS
from dpfim.readers import basket
from dpfim.readers.frames import missing_item
from dpfim.readers.records import RecordBuilder, Records, Vocabulary, truncate
from dpfim.readers.source import CHUNK_BYTES, chunks, decode, decompressed, split_lines

if TYPE_CHECKING:
    import pyarrow as pa

_NAME = "<dpfim-chunk>"  # reader errors name this; the driver puts the file and line in its place
MARK = "@@dpfim-data-error@@"
_CHUNK_BYTES = CHUNK_BYTES  # lines handed to a reader at once, as in the local engine
_BLOCK_RECORDS = 1 << 18  # records per cached block (a block is one row on its way to the JVM)
_BLOCK_BYTES = 16 << 20
_RANGE_BLOCK_BYTES = 64 << 20  # input bytes per cached block when the workers read byte ranges


@dataclass(frozen=True)
class Block:
    """One cached piece of a partition: records with a block-local vocabulary, and for each
    local item the position of its first occurrence in the input (for the local engine's item
    order: ids by first appearance), and which reader paths read how many of its chunks
    (curator-only, for `dpfim mine -v`)."""

    records: Records
    first_seen: list[tuple[str, int, int, int]]
    paths: Mapping[str, int] = field(default_factory=dict)

    def __getstate__(self) -> tuple[Any, ...]:
        """Compact on its way to the JVM's block store and back: ids as uint16 when the block
        has at most 65536 items, record lengths in the smallest unsigned type that holds them."""
        recs = self.records
        ids = recs.indices.astype(np.uint16) if len(recs.items) <= 1 << 16 else recs.indices
        lengths = np.diff(recs.indptr)
        top = int(lengths.max()) if len(lengths) else 0
        kind = np.uint8 if top < 1 << 8 else np.uint16 if top < 1 << 16 else np.int64
        return recs.items, ids, lengths.astype(kind), self.first_seen, dict(self.paths)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        items, ids, lengths, first_seen, paths = state
        indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        records = Records(items, indptr, ids.astype(np.int32, copy=False))
        object.__setattr__(self, "records", records)
        object.__setattr__(self, "first_seen", first_seen)
        object.__setattr__(self, "paths", paths)


def _data_error(file: str, block: int, line: int | None, message: str) -> Exception:
    info = {"file": file, "block": block, "line": line, "message": message}
    return RuntimeError(MARK + json.dumps(info) + MARK)


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
        self.read = FORMATS[fmt].line_reader().read_chunk
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

    def feed(self, file: str, block: int, lines: pa.Array) -> Iterator[Block]:
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

    def _read_pending(self) -> Iterator[Block]:
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

    def _emit(self) -> Block:
        assert self.group is not None
        file, block = self.group
        records = self.builder.build()
        first = [(file, block, self.block_first, i) for i in range(len(records.items))]
        paths = self.builder.paths
        self._new_builder()
        return Block(records, first, paths)

    def finish(self) -> Iterator[Block]:
        yield from self._read_pending()
        if self.group is not None and self.block_lines:
            yield self._emit()


def text_blocks(
    batches: Iterable[pa.RecordBatch], fmt: str, sep: str, universe: Sequence[str] | None
) -> Iterator[pa.RecordBatch]:
    """mapInArrow: (line bytes, file, block start) -> pickled _Blocks."""
    blocks = _Blocks(fmt, sep, universe)
    for batch in batches:
        for file, block, lines in _runs(batch):
            yield from map(_arrow_blob, blocks.feed(file, block, lines))
    yield from map(_arrow_blob, blocks.finish())


def _arrow_blob(block: Block) -> pa.RecordBatch:
    import pyarrow as pa

    blob = pickle.dumps(block, protocol=pickle.HIGHEST_PROTOCOL)
    return pa.RecordBatch.from_arrays([pa.array([blob], type=pa.large_binary())], ["blob"])


def read_ranges(
    fmt: str, sep: str, universe: Sequence[str] | None, ranges: Iterable[ByteRange]
) -> Iterator[Block]:
    """mapPartitions over byte ranges: the worker opens each file itself and reads the range's
    lines with the local engine's chunk reader into blocks."""
    for part in ranges:
        yield from _read_range(part, fmt, sep, universe)


def _read_range(
    part: ByteRange, fmt: str, sep: str, universe: Sequence[str] | None
) -> Iterator[Block]:
    read = FORMATS[fmt].line_reader().read_chunk
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


def _range_block(part: ByteRange, at: int, out: RecordBuilder) -> Block:
    records = out.build()
    first = [(part.file, part.start, at, i) for i in range(len(records.items))]
    return Block(records, first, out.paths)


def long_lines(batches: Iterable[pa.RecordBatch], sep: str) -> Iterator[pa.RecordBatch]:
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


def long_pairs(
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


def parquet_pairs(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
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


def grouped_blocks(
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


def _long_block(builder: RecordBuilder, first: dict[int, tuple[str, int, int, int]]) -> Block:
    records = builder.build()
    far = ("\U0010ffff", 0, 0, 0)  # an item whose every row was dropped: never counted
    return Block(records, [first.get(i, far) for i in range(len(records.items))])


FRAME = "<DataFrame>"  # the "file" of a Spark DataFrame's records (first appearance, errors)
_ROW_BITS = 33  # monotonically_increasing_id: the partition id above, the row number below


def frame_row(row_id: int) -> str:
    """How an error names a DataFrame row (its monotonically_increasing_id)."""
    return f"row {row_id & ((1 << _ROW_BITS) - 1)} of partition {row_id >> _ROW_BITS}"


def frame_blocks(
    batches: Iterable[pa.RecordBatch], universe: Sequence[str] | None, column: str
) -> Iterator[pa.RecordBatch]:
    """mapInArrow, a Spark DataFrame of baskets: (row id, array of items) -> blocks.

    One row a record, its items kept as spelled (as dpfim.readers.frames reads a list of
    baskets: no trimming; the empty string is no item; duplicates count once). An item's first
    appearance is (row id, position in the row's array): the row ids (monotonically_increasing_id)
    follow the partitions and the rows inside each, so ids and ties fall as for the same baskets
    in a list in that order. A null array or a null item is a data error (the in-memory inputs
    refuse a missing basket and a missing item too)."""
    vocab = Vocabulary(universe, trim=False)
    builder = RecordBuilder(vocab)
    first: dict[int, tuple[str, int, int, int]] = {}
    count = 0
    for batch in batches:
        row_ids = batch.column(0).to_numpy(zero_copy_only=False)
        lists = batch.column(1)
        if lists.null_count:
            k = int(np.flatnonzero(lists.is_null().to_numpy(zero_copy_only=False))[0])
            where = f"{frame_row(int(row_ids[k]))}, column {column!r}"
            raise _data_error(
                FRAME,
                0,
                None,
                f"{where}: a null array is not a basket (an empty array is an empty record); "
                "drop the row or fill it with an empty array",
            )
        offsets = np.asarray(lists.offsets, dtype=np.int64)
        offsets = offsets - offsets[0]
        flat = lists.flatten()
        if flat.null_count:
            j = int(np.flatnonzero(flat.is_null().to_numpy(zero_copy_only=False))[0])
            row = int(np.searchsorted(offsets, j, side="right")) - 1
            where = f"{frame_row(int(row_ids[row]))}, column {column!r}"
            raise _data_error(FRAME, 0, None, str(missing_item(where)))  # frames.py's refusal
        ids = vocab.ids(flat.to_pylist())
        builder.add_ids(ids, np.diff(offsets))
        present = np.flatnonzero(ids >= 0)
        found, at = np.unique(ids[present], return_index=True)
        for i, j in zip(found.tolist(), present[at].tolist(), strict=True):
            if i not in first:  # batches come in row order: the first one seen is the least
                row = int(np.searchsorted(offsets, j, side="right")) - 1
                first[i] = (FRAME, int(row_ids[row]), j - int(offsets[row]), 0)
        count += len(offsets) - 1
        if count >= _BLOCK_RECORDS:
            yield _arrow_blob(_long_block(builder, first))
            vocab = Vocabulary(universe, trim=False)
            builder, first, count = RecordBuilder(vocab), {}, 0
    if count:
        yield _arrow_blob(_long_block(builder, first))


def load_block(row: Any) -> Block:
    block: Block = pickle.loads(row[0])
    return block


def truncated(limit: int, key: bytes, blocks: Iterable[Block]) -> Any:
    """Each record cut to `limit` uniformly random items (record-local), on the executor. The
    sample is a function of the record and the run's secret key only (readers.records.truncate):
    the local engine keeps the same items, and a recomputed or retried partition too."""
    for block in blocks:
        yield Block(truncate(block.records, limit, key), block.first_seen, block.paths)
