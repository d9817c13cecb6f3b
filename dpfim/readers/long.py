"""Long (tabular) format: one row per (record id, item); a record is the union of the items of
one record id. CSV/TSV or Parquet.

CSV/TSV is parsed one `\\n`-terminated line at a time by the stdlib csv reader (strict), with the
number of fields fixed by the header (line 1). Nothing is inferred from the content: no index
column, no dialect, no header sniffing, no types (every field is a string, trimmed). A row that
does not parse or has the wrong number of fields is a data error naming its line. Blank lines
name no record and are skipped. Parquet is column-typed: the two columns are read as strings.

A chunk with no `"`, no NUL, no byte-order mark at its start and no `\r` except right before
a `\n` (and valid UTF-8) is read by pyarrow's CSV parser instead, when pyarrow is installed
(`_arrow_chunk`; below that function's docstring says why the records are the same).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import numpy as np

from dpfim.errors import InputError, ParameterError
from dpfim.readers.basket import parse_line
from dpfim.readers.records import RecordBuilder, Records, Vocabulary, factorize
from dpfim.readers.source import chunks, decode, split_lines


class _Grouper:
    """Pairs (record id, item) collected chunk by chunk, grouped into records at the end.

    Per chunk only codes are kept: each row's record id as a code into that chunk's distinct
    record ids (numbered globally, in order of first appearance, at the end) and its item id."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self._codes: list[np.ndarray] = []  # int32, per chunk
        self._uniques: list[Any] = []  # per chunk: the distinct record ids (list or arrow array)
        self._items: list[np.ndarray] = []  # int32 item ids, -1: dropped

    def add(self, ids: Sequence[str], items: Sequence[str]) -> None:
        codes, uniques = factorize(ids)
        self._codes.append(codes.astype(np.int32))
        self._uniques.append(uniques)
        self._items.append(self.vocab.ids(items).astype(np.int32))

    def add_coded(
        self, id_codes: np.ndarray, id_uniques: Any, item_codes: np.ndarray, item_uniques: list[str]
    ) -> None:
        """Rows given as codes into each column's distinct values (id_uniques: an arrow array)."""
        items_lut = np.fromiter(
            (self.vocab.id_of(u) for u in item_uniques), dtype=np.int32, count=len(item_uniques)
        )
        self._codes.append(id_codes.astype(np.int32, copy=False))
        self._uniques.append(id_uniques)
        self._items.append(items_lut[item_codes])

    def _record_numbers(self) -> tuple[list[np.ndarray], int]:
        """Per chunk, the global record number of each of its distinct record ids; how many."""
        if all(isinstance(u, list) for u in self._uniques):
            record_of: dict[str, int] = {}
            luts = [
                np.fromiter((record_of.setdefault(x, len(record_of)) for x in u), np.int64, len(u))
                for u in self._uniques
            ]
            return luts, len(record_of)
        import pyarrow as pa

        arrays = [
            pa.array(u, pa.large_string()) if isinstance(u, list) else u.cast(pa.large_string())
            for u in self._uniques
        ]
        encoded = pa.concat_arrays(arrays).dictionary_encode()
        del arrays
        numbers = encoded.indices.to_numpy().astype(np.int64)
        bounds = np.cumsum([0] + [len(u) for u in self._uniques])
        n = len(encoded.dictionary)
        del encoded
        pa.default_memory_pool().release_unused()
        return [numbers[bounds[k] : bounds[k + 1]] for k in range(len(bounds) - 1)], n

    def build(self) -> Records:
        luts, n = self._record_numbers()
        self._uniques = []
        rows = sum(len(c) for c in self._codes)
        if rows >= COMPILED_FROM and _numba_works():
            return self._build_compiled(luts, n, rows)
        width = max(len(self.vocab), 1)
        keys = np.empty(sum(int((i >= 0).sum()) for i in self._items), dtype=np.int64)
        at = 0
        for lut, codes, items in zip(luts, self._codes, self._items, strict=True):
            keep = items >= 0
            part = lut[codes[keep]] * width + items[keep]
            keys[at : at + len(part)] = part
            at += len(part)
        self._codes, self._items = [], []
        # rows usually come grouped by record: the stable sort (timsort) is near-linear then
        keys.sort(kind="stable")
        if len(keys):
            keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]  # duplicates count once
        record_of = keys // width
        item_ids = (keys - record_of * width).astype(np.int32)
        del keys
        builder = RecordBuilder(self.vocab)
        builder.add_sorted(item_ids, np.bincount(record_of, minlength=n).astype(np.int64))
        return builder.build()

    def _build_compiled(self, luts: list[np.ndarray], n: int, rows: int) -> Records:
        from dpfim.readers import _compiled

        records = np.empty(rows, dtype=np.int32 if n < 2**31 else np.int64)
        items = np.empty(rows, dtype=np.int32)
        at = 0
        for k, lut in enumerate(luts):  # chunk by chunk, freeing each as it is copied
            codes, chunk_items = self._codes[k], self._items[k]
            records[at : at + len(codes)] = lut[codes]
            items[at : at + len(codes)] = chunk_items
            at += len(codes)
            self._codes[k] = self._items[k] = luts[k] = _EMPTY
        self._codes, self._items = [], []
        indices, lengths = _compiled.group(records, items, n)
        del records, items
        builder = RecordBuilder(self.vocab)
        builder.add_sorted(indices, lengths)
        return builder.build()


def _numba_works() -> bool:
    try:
        from dpfim.readers import _compiled  # noqa: F401
    except ImportError:  # numba missing or broken: numpy groups the rows
        return False
    return True


def read_csv(
    stream: BinaryIO,
    name: str,
    label: str,
    sep: str,
    record_col: str,
    item_col: str,
    vocab: Vocabulary,
) -> Records:
    """Long CSV/TSV from a stream of bytes."""
    grouper = _Grouper(vocab)
    columns: tuple[int, int, int] | None = None  # (n fields, record column, item column)
    arrow = _arrow() if len(sep.encode()) == 1 else None
    for chunk, first in chunks(stream, name, label):
        if arrow is not None and _arrow_ready(chunk):
            cut = chunk.find(b"\n") + 1 or len(chunk)
            body = chunk
            if columns is None:
                head = split_lines(chunk[:cut].decode(), name, first)[0]
                columns = _header(head, name, sep, record_col, item_col)
                body = chunk[cut:]
            if _arrow_chunk(arrow, body, sep, columns, grouper):
                continue
            if body is not chunk:  # the slow path reads the rest; the header is read
                chunk, first = body, first + 1
        lines = split_lines(decode(chunk, name, first), name, first)
        start = 0
        if columns is None and lines:
            columns = _header(lines[0], name, sep, record_col, item_col)
            start = 1
        assert columns is not None or not lines
        if columns is None:
            continue
        ids, items = [], []
        for number, line in _numbered(lines, first, start):
            width, rc, ic = columns
            try:
                fields = parse_line(line, sep)
            except ValueError as exc:
                raise InputError(f"{name}:{number}: {exc}") from None
            if not fields:
                continue  # a blank line names no record
            if len(fields) != width:
                raise InputError(
                    f"{name}:{number}: {len(fields)} fields, but the header has {width}"
                )
            ids.append(fields[rc])
            items.append(fields[ic])
        grouper.add(ids, items)
    if columns is None:
        raise InputError(f"{name}: empty file, no header with columns")
    return grouper.build()


_SPACES = (  # exactly the characters str.isspace() is true for (tests check), so trim == strip
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
ARROW_FROM = 1 << 20  # chunk bytes from which pyarrow's parser pays for its import
_EMPTY = np.zeros(0, dtype=np.int32)
COMPILED_FROM = 1 << 21  # rows from which the compiled grouping pays for numba's import
BOM = b"\xef\xbb\xbf"


def _arrow() -> Any:
    """pyarrow's csv and compute modules, or None when pyarrow is not installed."""
    try:
        import pyarrow.compute
        import pyarrow.csv
    except ImportError:
        return None
    return pyarrow


def _arrow_ready(chunk: bytes) -> bool:
    """Whether the arrow parser may read this chunk (see `_arrow_chunk`)."""
    if len(chunk) < ARROW_FROM or b'"' in chunk or b"\0" in chunk or chunk.startswith(BOM):
        return False
    if b"\r" in chunk and chunk.count(b"\r") != chunk.count(b"\r\n"):
        return False
    if not chunk.isascii():
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def _arrow_chunk(
    pa: Any, body: bytes, sep: str, columns: tuple[int, int, int], grouper: _Grouper
) -> bool:
    """Read whole lines (no header) with pyarrow's CSV parser; False when it refuses them (a
    wrong field count): then the line parser reads the chunk and names the bad line.

    Why the records are the same as the line parser's, for a chunk `_arrow_ready` accepts:
    * lines: arrow ends a line at `\n`, `\r\n` or `\r`; here every `\r` is followed by a
      `\n`, so its lines are ours (`\n`-terminated, one `\r` before it dropped), the last one
      with or without a newline; `ignore_empty_lines` skips exactly the empty lines, which name no
      record in the line parser (a line of spaces is not empty in either);
    * fields: with quoting and escaping off and no `"` in the chunk, the line parser splits at
      every `sep` (`line.split(sep)`), and so does arrow; a line with another number of fields
      than the header is an error in arrow too (we then fall back, and the line parser raises);
    * values: every column is a string (no inference, no nulls), then trimmed of exactly the
      characters `str.strip()` removes; the chunk is valid UTF-8 (checked), has no NUL (a data
      error in the line parser) and does not start with a byte-order mark (arrow would drop it).
    """
    if body.startswith(BOM):  # after the header: arrow would drop it, the line parser keeps it
        return False
    width, rc, ic = columns
    names = [f"c{k}" for k in range(width)]
    try:
        table = pa.csv.read_csv(
            pa.py_buffer(body),
            read_options=pa.csv.ReadOptions(
                column_names=names, block_size=1 << 20, use_threads=True
            ),
            parse_options=pa.csv.ParseOptions(
                delimiter=sep,
                quote_char=False,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=True,
            ),
            convert_options=pa.csv.ConvertOptions(
                column_types={c: pa.string() for c in names},
                include_columns=list(dict.fromkeys((names[rc], names[ic]))),
                strings_can_be_null=False,
                null_values=[],
                check_utf8=True,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    coded = []
    for col in (names[rc], names[ic]):
        # trim the distinct values only, then merge those that became equal
        raw = table.column(col).combine_chunks().dictionary_encode()
        trimmed = pa.compute.utf8_trim(raw.dictionary, characters=_SPACES).dictionary_encode()
        codes = trimmed.indices.to_numpy()[raw.indices.to_numpy()]
        coded.append((codes, trimmed.dictionary))
    grouper.add_coded(coded[0][0], coded[0][1], coded[1][0], coded[1][1].to_pylist())
    return True


def _numbered(lines: list[str], first: int, start: int) -> Iterator[tuple[int, str]]:
    for k in range(start, len(lines)):
        yield first + k, lines[k]


def _header(line: str, name: str, sep: str, record_col: str, item_col: str) -> tuple[int, int, int]:
    try:
        header = parse_line(line, sep)
    except ValueError as exc:
        raise InputError(f"{name}:1: {exc} in the header") from None
    found = []
    for col in (record_col, item_col):
        hits = [k for k, h in enumerate(header) if h == col.strip()]
        if not hits:
            shown = ", ".join(repr(h) for h in header[:10])
            hint = ""
            if sep != "\t" and "\t" in line:
                hint = "; the header has tabs: is it tab-separated? pass --sep tab"
            raise InputError(f"{name}: no column {col!r} (columns: {shown}){hint}")
        if len(hits) > 1:
            raise InputError(f"{name}:1: column {col!r} appears {len(hits)} times in the header")
        found.append(hits[0])
    return len(header), found[0], found[1]


def read_parquet(
    path: str, name: str, record_col: str, item_col: str, vocab: Vocabulary
) -> Records:
    """Long Parquet (a path: Parquet needs a seekable file), read batch by batch as strings."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError:
        raise ParameterError("reading Parquet needs pyarrow: pip install pyarrow") from None
    try:
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise InputError(f"{name}: not a readable Parquet file ({exc})") from None
    for col in (record_col, item_col):
        if col not in names:
            raise InputError(f"{name}: no column {col!r} (columns: {', '.join(names[:10])})")
    grouper = _Grouper(vocab)
    try:
        for batch in parquet.iter_batches(columns=[record_col, item_col], batch_size=1 << 20):
            cols = []
            for col in (record_col, item_col):
                # str.strip, as for every other format (arrow's trim knows other spaces)
                values = pc.cast(batch.column(col), pa.string()).to_pylist()
                cols.append(["" if v is None else v.strip() for v in values])
            grouper.add(cols[0], cols[1])
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InputError(f"{name}: cannot read columns as strings ({exc})") from None
    return grouper.build()
