"""In-memory inputs of the Python API -> Records: what a pandas user has (issue 21, point 1).

Accepted shapes, decided from the input's type, its dtypes and the arguments only (never from
cell values, which would let one record change how every other record is read):

- an iterable of baskets (each an iterable of items, e.g. a list of lists);
- a pandas one-hot DataFrame (mlxtend's `TransactionEncoder` output): every column bool or
  integer 0/1, dense or sparse; a column's name is its item;
- a long DataFrame with `record_col=` and `item_col=`: a record is the union of the items of
  one record id;
- a pandas Series whose elements are baskets (lists, tuples or sets).

A frame becomes records row by row, items in column order, exactly as the list of baskets it
encodes does, so both give the same seeded result. A one-hot frame's columns are not a declared
vocabulary: an all-zero column is an item that does not occur (the open universe applies unless
`universe=` is passed). Every other shape raises `InputShapeError` (a `TypeError`); a bad value
inside an accepted shape (a 2 in a one-hot frame, a missing value, a basket that is a string) is
a data error, `RecordValueError` (a `ValueError`), like a line that does not parse. A missing
item (None, NaN, NA, NaT) is refused with one message in every shape, never read as 'None'.

Item names are exactly what the user's columns or records spell (str() of a non-string), as
mlxtend keeps them: no trimming here (the file formats trim, each by its own rules), so a
released itemset matches the caller's columns. The empty string is no item, as in files.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any

import numpy as np

from dpfim.errors import InputArgumentError, InputShapeError, RecordValueError
from dpfim.readers.records import RecordBuilder, Records, Vocabulary

ACCEPTED = (
    "accepted inputs: an iterable of baskets (e.g. [['milk', 'bread'], ['milk']]); a pandas "
    "one-hot DataFrame (bool or 0/1 integer columns named by item, dense or sparse: mlxtend's "
    "TransactionEncoder output); a long DataFrame with record_col= and item_col=; a pandas "
    "Series of baskets (lists, tuples or sets)"
)

_CHUNK = 1 << 20


def to_records(
    data: object,
    *,
    record_col: str | None = None,
    item_col: str | None = None,
    universe: Sequence[str] | None = None,
) -> Records:
    """Records from any accepted in-memory input (see the module docstring)."""
    pd = sys.modules.get("pandas")  # an object of pandas' exists only if pandas is imported
    long = record_col is not None or item_col is not None
    if pd is not None and isinstance(data, pd.DataFrame):
        if long:
            return _long_frame(pd, data, record_col, item_col, universe)
        return _one_hot(pd, data, universe)
    if long:
        raise InputArgumentError(
            f"record_col=/item_col= describe a long pandas DataFrame, not a {_type_name(data)}; "
            + ACCEPTED
        )
    if pd is not None and isinstance(data, pd.Series):
        return _series(pd, data, universe)
    if isinstance(data, np.ndarray):
        raise InputShapeError(
            "a numpy array has no item names (its values would be read as items): wrap a "
            "0/1 array as pandas.DataFrame(array, columns=item_names); " + ACCEPTED
        )
    if isinstance(data, str | bytes | bytearray | dict) or (
        pd is not None and isinstance(data, pd.Index)
    ):
        raise InputShapeError(f"a {_type_name(data)} is not a collection of baskets; " + ACCEPTED)
    if not isinstance(data, Iterable):
        raise InputShapeError(f"a {_type_name(data)} is not a collection of baskets; " + ACCEPTED)
    return from_baskets(data, universe=universe)


def from_baskets(baskets: Iterable[Any], *, universe: Sequence[str] | None = None) -> Records:
    """Records from an iterable of baskets; items are kept as spelled (non-strings str()-ed).
    A basket that is a string (a flat list of strings), bytes, a mapping or not iterable, and
    a missing item, are data errors."""
    builder = RecordBuilder(Vocabulary(universe, trim=False))
    tokens: list[str] = []
    lengths: list[int] = []
    for k, basket in enumerate(baskets):
        row = [item if type(item) is str else _name(item, k) for item in _basket(basket, k)]
        tokens.extend(row)
        lengths.append(len(row))
        if len(tokens) >= _CHUNK:
            builder.add_tokens(tokens, lengths)
            tokens, lengths = [], []
    builder.add_tokens(tokens, lengths)
    return builder.build()


def missing_item(where: str) -> RecordValueError:
    """The one refusal of a missing item (or record id), whatever the input's shape."""
    return RecordValueError(
        f"{where}: a missing value (None, NaN, NA or NaT) is not an item; drop it or name it"
    )


def _is_missing(x: object) -> bool:
    if x is None:
        return True
    if isinstance(x, float | np.floating):
        return bool(x != x)
    if isinstance(x, Decimal):
        return x.is_nan()
    if isinstance(x, np.datetime64 | np.timedelta64):
        return bool(np.isnat(x))
    pd = sys.modules.get("pandas")
    return pd is not None and (x is pd.NA or x is pd.NaT)


def _name(item: object, k: int) -> str:
    """A non-string item's name (its str()), unless it is a missing value."""
    if _is_missing(item):
        raise missing_item(f"basket {k}")
    return str(item)


def _basket(basket: object, k: int) -> Iterable[Any]:
    if isinstance(basket, str | bytes | bytearray):
        raise RecordValueError(
            f"basket {k} is a string ({basket!r:.40}), not a collection of items (a flat list "
            "of strings is not a list of baskets: wrap each basket in a list); " + ACCEPTED
        )
    if isinstance(basket, dict) or not isinstance(basket, Iterable):
        raise RecordValueError(
            f"basket {k} is a {_type_name(basket)}, not a collection of items; " + ACCEPTED
        )
    return basket


def _one_hot(pd: Any, df: Any, universe: Sequence[str] | None) -> Records:
    """A one-hot frame, by its dtypes: every column bool or integer (dense or sparse)."""
    for name, dtype in df.dtypes.items():
        inner = dtype.subtype if isinstance(dtype, pd.SparseDtype) else dtype
        if not (pd.api.types.is_bool_dtype(inner) or pd.api.types.is_integer_dtype(inner)):
            raise InputShapeError(
                f"column {name!r} has dtype {dtype}: a DataFrame without record_col=/item_col= "
                "is read as one-hot, which needs every column bool or 0/1 integer; for a long "
                "frame (a record id and an item a row) pass record_col= and item_col=; " + ACCEPTED
            )
    n, width = df.shape
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    for j in range(width):
        hits = _hits(pd, df.iloc[:, j], df.columns[j], n)
        rows.append(hits)
        cols.append(np.full(len(hits), j, dtype=np.int64))
    row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    col = np.concatenate(cols) if cols else np.zeros(0, np.int64)
    order = np.lexsort((col, row))  # row by row, items in column order
    row, col = row[order], col[order]
    names = [str(c) for c in df.columns]
    vocab = Vocabulary(universe, trim=False)
    # column -> item id, asked in the order the cells are read, so that ids are numbered by
    # first appearance exactly as for the list of baskets (an all-zero column gets no id)
    lut = np.full(width, -1, dtype=np.int64)
    _, first_at = np.unique(col, return_index=True)
    for j in col[np.sort(first_at)].tolist():
        lut[j] = vocab.id_of(names[j])
    builder = RecordBuilder(vocab)
    builder.add_ids(lut[col] if len(col) else np.zeros(0, np.int64), _lengths(row, n))
    return builder.build()


def _lengths(row: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(row, minlength=n).astype(np.int64) if n else np.zeros(0, np.int64)


def _hits(pd: Any, col: Any, name: object, n: int) -> np.ndarray:
    """The row positions where a one-hot column is 1/True; any other value is a data error."""
    if isinstance(col.dtype, pd.SparseDtype):
        arr = col.array
        fill = arr.fill_value
        if _cell_ok(fill) and not bool(fill):
            where = np.asarray(arr.sp_index.indices, dtype=np.int64)
            values = np.asarray(arr.sp_values)
            _check_cells(values, where, name)
            hit: np.ndarray = where[values.astype(bool)]
            return hit
        col = col.sparse.to_dense()
    if col.isna().any():
        k = int(np.flatnonzero(col.isna().to_numpy())[0])
        raise RecordValueError(f"row {k}, column {name!r}: a missing value in a one-hot frame")
    values = col.to_numpy()
    _check_cells(values, np.arange(n), name)
    return np.flatnonzero(values.astype(bool)).astype(np.int64)


def _cell_ok(value: object) -> bool:
    return isinstance(value, bool | np.bool_) or (
        isinstance(value, int | np.integer) and value in (0, 1)
    )


def _check_cells(values: np.ndarray, rows: np.ndarray, name: object) -> None:
    if values.dtype == bool:
        return
    bad = np.flatnonzero((values != 0) & (values != 1))
    if len(bad):
        k = int(bad[0])
        raise RecordValueError(
            f"row {int(rows[k])}, column {name!r}: value {values[k].item()!r} in a one-hot frame "
            "(cells must be 0/1 or bool)"
        )


def _long_frame(
    pd: Any, df: Any, record_col: str | None, item_col: str | None, universe: Sequence[str] | None
) -> Records:
    """A long frame: one (record id, item) a row, grouped by record id in order of first
    appearance; record ids compared as trimmed strings (as the long file reader does), items
    kept as spelled."""
    if record_col is None or item_col is None:
        raise InputArgumentError("a long DataFrame needs both record_col= and item_col=")
    missing = [c for c in (record_col, item_col) if c not in df.columns]
    if missing:
        raise InputArgumentError(
            f"the DataFrame has no column {missing[0]!r} (record_col={record_col!r}, "
            f"item_col={item_col!r})"
        )
    ids, items = df[record_col], df[item_col]
    for column, values in ((record_col, ids), (item_col, items)):
        if values.isna().any():
            k = int(np.flatnonzero(values.isna().to_numpy())[0])
            raise missing_item(f"row {k}, column {column!r}")
    id_codes, _ = pd.factorize(ids.astype(str).str.strip().to_numpy(dtype=object))
    n = int(id_codes.max()) + 1 if len(id_codes) else 0
    names = items.astype(str).tolist()
    order = np.argsort(id_codes, kind="stable")  # record by record, rows in frame order

    def baskets() -> Iterator[list[str]]:
        bounds = np.searchsorted(id_codes[order], np.arange(n + 1))
        for r in range(n):
            yield [names[i] for i in order[bounds[r] : bounds[r + 1]].tolist()]

    return from_baskets(baskets(), universe=universe)


def _series(pd: Any, s: Any, universe: Sequence[str] | None) -> Records:
    """A Series of baskets (object dtype); one element a record."""
    if s.dtype != object:
        raise InputShapeError(
            f"a Series of dtype {s.dtype} holds one value a row, not baskets; " + ACCEPTED
        )
    return from_baskets(s.tolist(), universe=universe)


def _type_name(x: object) -> str:
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
