"""Long (tabular) format: one row per (record id, item); a record is the union of the items of
one record id. CSV/TSV or Parquet.

CSV/TSV is parsed one `\\n`-terminated line at a time by the stdlib csv reader (strict), with the
number of fields fixed by the header (line 1). Nothing is inferred from the content: no index
column, no dialect, no header sniffing, no types (every field is a string, trimmed). A row that
does not parse or has the wrong number of fields is a data error naming its line. Blank lines
name no record and are skipped. Parquet is column-typed: the two columns are read as strings.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import BinaryIO

import numpy as np

from dpfim.errors import InputError, ParameterError
from dpfim.readers.basket import parse_line
from dpfim.readers.records import RecordBuilder, Records, Vocabulary, factorize
from dpfim.readers.source import chunks, decode, split_lines


class _Grouper:
    """Pairs (record id, item) collected chunk by chunk, grouped into records at the end."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab
        self._record_of: dict[str, int] = {}
        self._recs: list[np.ndarray] = []
        self._items: list[np.ndarray] = []

    def add(self, ids: Sequence[str], items: Sequence[str]) -> None:
        codes, uniques = factorize(ids)
        lut = np.fromiter(
            (self._record_of.setdefault(u, len(self._record_of)) for u in uniques),
            dtype=np.int64,
            count=len(uniques),
        )
        self._recs.append(lut[codes] if len(codes) else codes)
        self._items.append(self.vocab.ids(items))

    def build(self) -> Records:
        n = len(self._record_of)
        recs = np.concatenate(self._recs) if self._recs else np.zeros(0, np.int64)
        items = np.concatenate(self._items) if self._items else np.zeros(0, np.int64)
        self._recs, self._items = [], []
        order = np.argsort(recs, kind="stable")
        builder = RecordBuilder(self.vocab)
        builder.add_ids(items[order], np.bincount(recs, minlength=n).astype(np.int64))
        return builder.build()


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
    for chunk, first in chunks(stream, name, label):
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
        raise ParameterError(
            "reading Parquet needs pyarrow: pip install 'dpfim[parquet]'"
        ) from None
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
