"""bytes/stdin → records: formats, decompression, per-record dedupe and truncation.

Parsing is record-local and decided from public information only (SPEC §3): the format comes from
the file name's extension or `--format`, never from sniffing content, and no quoted field may
span lines, so one changed record can never change how another record is read.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import itertools
import json
import lzma
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from dpfim.errors import InputError, ParameterError
from dpfim.params import check_sep
from dpfim.samplers.rng import RandomSource, system_source

FORMATS = ("basket", "fimi", "long", "jsonl")
_BY_EXTENSION = {
    ".dat": "fimi",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "long",
    ".csv": "basket",
    ".tsv": "basket",
    ".txt": "basket",
    ".basket": "basket",
}
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
_MAGIC = (
    (b"\x1f\x8b", gzip.decompress, "gzip"),
    (b"BZh", bz2.decompress, "bzip2"),
    (b"\xfd7zXZ\x00", lzma.decompress, "xz"),
)
_FIMI_LINE = re.compile(r"[0-9 \t\r\f\v]*")


@dataclass(frozen=True)
class Records:
    """Transactions as a CSR matrix of item ids.

    items[i] is the canonical (trimmed) string of item id i. Record k holds the item ids
    indices[indptr[k]:indptr[k + 1]], sorted ascending and without duplicates.
    """

    items: list[str]
    indptr: np.ndarray  # int64, length n + 1
    indices: np.ndarray  # int32

    @property
    def n(self) -> int:
        return len(self.indptr) - 1


def resolve_format(source: str, fmt: str, *, long_columns_given: bool = False) -> str:
    """The input format: as given, or by the file name's extension for "auto"."""
    if fmt != "auto":
        if fmt not in FORMATS:
            raise ParameterError(f"--format must be auto or one of {', '.join(FORMATS)}: {fmt!r}")
        return fmt
    if source == "-":
        raise ParameterError("reading stdin needs --format (auto decides by the file extension)")
    name = Path(source).name.lower()
    for suffix in _COMPRESSED_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    ext = Path(name).suffix
    decided = _BY_EXTENSION.get(ext)
    if decided is None:
        raise ParameterError(
            f"{source}: cannot tell the format from the extension {ext or '(none)'!r}; "
            f"pass --format ({', '.join(FORMATS)})"
        )
    if decided == "basket" and long_columns_given:
        return "long"
    return decided


def check_source(src: str) -> None:
    """Fail early, as a usage error, on a path that cannot be read as a file."""
    if src == "-":
        return
    path = Path(src)
    if path.is_dir():
        raise ParameterError(f"{src}: is a directory, not a file")
    if not path.exists():
        raise ParameterError(f"{src}: no such file")


def read_universe(path: str) -> list[str]:
    """A declared vocabulary: one item a line, trimmed, blank lines ignored, deduplicated."""
    text = _decode(_read_bytes(path, None), path)
    return list(dict.fromkeys(s for s in (line.strip() for line in text.splitlines()) if s))


def read_records(
    source: str | os.PathLike[str],
    *,
    fmt: str = "auto",
    sep: str | None = None,
    record_col: str | None = None,
    item_col: str | None = None,
    max_record_items: int | None = None,
    universe: Sequence[str] | None = None,
    rng: RandomSource | None = None,
    progress: bool = False,
    stdin: BinaryIO | None = None,
) -> Records:
    """Read a transaction file (or "-" for stdin) into Records."""
    src = os.fspath(source)
    check_source(src)
    fmt = resolve_format(
        src, fmt, long_columns_given=record_col is not None or item_col is not None
    )
    name = "<stdin>" if src == "-" else src
    sep = check_sep(sep)
    if sep is None:
        sep = "\t" if _plain_name(src).endswith(".tsv") else ","
    if max_record_items is not None and max_record_items < 1:
        raise ParameterError(f"--max-record-items must be >= 1, got {max_record_items}")
    data = _read_bytes(src, stdin)
    if fmt == "long":
        if record_col is None or item_col is None:
            raise ParameterError("--format long needs --record-col and --item-col")
        parquet = _plain_name(src).endswith(".parquet")
        rows: Iterable[list[str]] | None = _long(data, name, record_col, item_col, sep, parquet)
    elif fmt == "fimi" and universe is None and (fast := _fimi(data, name)) is not None:
        rows, records = None, fast
    else:
        lines = _lines(_decode(data, name))
        if progress:
            from tqdm import tqdm

            lines = tqdm(lines, desc="reading", unit=" rec", file=sys.stderr, leave=False)
        parse = {"basket": _basket, "jsonl": _jsonl, "fimi": _fimi_lines}[fmt]
        rows = parse(lines, name, sep)
    if rows is not None:
        tokens, row_of, n = _flatten(rows)
        records = _build(tokens, row_of, n, universe)
    if max_record_items is not None:
        records = truncate(records, max_record_items, rng or system_source())
    return records


def from_transactions(
    transactions: Iterable[Iterable[object]], *, universe: Sequence[str] | None = None
) -> Records:
    """Records from in-memory transactions (the Python API); items are str()-ed and trimmed."""
    tokens, row_of, n = _flatten([str(item).strip() for item in t] for t in transactions)
    return _build(tokens, row_of, n, universe)


def truncate(records: Records, limit: int, rng: RandomSource) -> Records:
    """Keep a uniformly random `limit` items of each longer record (record-local, SPEC §3)."""
    lengths = np.diff(records.indptr)
    if not (lengths > limit).any():
        return records
    keep = np.ones(len(records.indices), dtype=bool)
    for row in np.flatnonzero(lengths > limit).tolist():
        start, k = int(records.indptr[row]), int(lengths[row])
        order = list(range(k))
        for i in range(limit):  # partial Fisher-Yates: a uniform subset of size `limit`
            j = i + rng.randbelow(k - i)
            order[i], order[j] = order[j], order[i]
        dropped = np.array(order[limit:], dtype=np.int64) + start
        keep[dropped] = False
    kept_lengths = np.minimum(lengths, limit)
    indptr = np.concatenate(([0], np.cumsum(kept_lengths))).astype(np.int64)
    return Records(records.items, indptr, records.indices[keep])


# --- bytes ----------------------------------------------------------------------------------


def _plain_name(src: str) -> str:
    name = Path(src).name.lower()
    for suffix in _COMPRESSED_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _read_bytes(src: str, stdin: BinaryIO | None) -> bytes:
    """All bytes of the input, decompressed when the magic bytes say so."""
    name = "<stdin>" if src == "-" else src
    if src == "-":
        raw = (stdin or sys.stdin.buffer).read()
    else:
        path = Path(src)
        if path.is_dir():
            raise ParameterError(f"{src}: is a directory, not a file")
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise ParameterError(f"{src}: no such file") from None
        except PermissionError:
            raise ParameterError(f"{src}: permission denied") from None
        except OSError as exc:
            raise ParameterError(f"{src}: cannot read ({exc.strerror})") from None
    for magic, decompress, label in _MAGIC:
        if raw.startswith(magic):
            try:
                return decompress(raw)
            except (OSError, EOFError, ValueError, lzma.LZMAError) as exc:
                raise InputError(f"{name}: damaged {label} data ({exc})") from None
    return raw


def _decode(data: bytes, name: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{name}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); "
            "convert the file to UTF-8"
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        raise InputError(f"{name}:{text.count(chr(10), 0, nul) + 1}: NUL byte (binary data?)")
    return text[1:] if text.startswith("\ufeff") else text


def _lines(text: str) -> list[str]:
    """Physical lines; a final newline does not start another record. Blank lines are records."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


# --- formats (each yields one list of trimmed item strings per record) ----------------------


def _basket(lines: Iterable[str], name: str, sep: str) -> Iterator[list[str]]:
    for number, line in enumerate(lines, 1):
        if not line:
            yield []
            continue
        if '"' in line:
            try:
                fields = next(csv.reader([line], delimiter=sep, strict=True), [])
            except csv.Error as exc:
                raise InputError(f"{name}:{number}: bad CSV quoting ({exc})") from None
        else:
            fields = line.split(sep)
        yield [f.strip() for f in fields]


def _fimi(data: bytes, name: str) -> Records | None:
    """FIMI lines parsed with numpy on the raw bytes; None when the fast path does not apply
    (a token of 18+ digits, or any byte outside digits and white space) — then the caller
    falls back to the line-by-line parser, which also names a bad line."""
    raw = np.frombuffer(data, dtype=np.uint8)
    if data.endswith(b"\n"):
        raw = raw[:-1]
    digit = (raw >= 48) & (raw <= 57)
    space = (raw == 32) | (raw == 9) | (raw == 13) | (raw == 11) | (raw == 12)
    newline = raw == 10
    if not (digit | space | newline).all():
        return None
    n = int(newline.sum()) + 1 if len(data) else 0
    prev = np.concatenate(([False], digit[:-1]))
    nxt = np.concatenate((digit[1:], [False]))
    starts = np.flatnonzero(digit & ~prev)
    ends = np.flatnonzero(digit & ~nxt)  # inclusive
    width = ends - starts + 1
    if len(width) and width.max() > 17:
        return None
    # value of each token: sum of digit * 10^(distance to the token's end); the digits of
    # token k are exactly the positions starts[k]..ends[k]
    pos = np.flatnonzero(digit)
    power = np.repeat(ends, width) - pos
    group = np.concatenate(([0], np.cumsum(width)[:-1])) if len(width) else width
    values = np.add.reduceat((raw[pos] - 48).astype(np.int64) * 10**power, group)
    # (width, value) identifies the token text exactly, leading zeros included
    keys = values * 32 + width
    uniq, ids = np.unique(keys, return_inverse=True)
    items = [
        str(v).zfill(w) for v, w in zip((uniq // 32).tolist(), (uniq % 32).tolist(), strict=True)
    ]
    row_of = np.searchsorted(np.flatnonzero(newline), starts)
    return _assemble(items, ids.astype(np.int64), row_of.astype(np.int64), n)


def _fimi_lines(lines: Sequence[str], name: str, sep: str) -> list[list[str]]:
    """The line-by-line FIMI parser: slower, names the first bad line."""
    del sep  # FIMI files are separated by white space
    for number, line in enumerate(lines, 1):
        if not _FIMI_LINE.fullmatch(line):
            bad = next(t for t in line.split() if not (t.isascii() and t.isdigit()))
            raise InputError(
                f"{name}:{number}: FIMI items are non-negative integers, got {bad[:40]!r}"
            )
    return [line.split() for line in lines]


def _jsonl(lines: Iterable[str], name: str, sep: str) -> Iterator[list[str]]:
    del sep
    for number, line in enumerate(lines, 1):
        if not line.strip():
            yield []
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{name}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(value, list):
            raise InputError(f"{name}:{number}: expected a JSON array of items")
        items = []
        for item in value:
            if isinstance(item, str):
                items.append(item.strip())
            elif isinstance(item, int | float) and not isinstance(item, bool):
                items.append(json.dumps(item))
            else:
                raise InputError(f"{name}:{number}: items must be strings or numbers")
        yield items


def _long(
    data: bytes, name: str, record_col: str, item_col: str, sep: str, parquet: bool
) -> list[list[str]]:
    import pandas as pd

    if parquet:
        try:
            frame = pd.read_parquet(io.BytesIO(data))
        except ImportError:
            raise ParameterError(
                "reading Parquet needs pyarrow: pip install 'dpfim[parquet]'"
            ) from None
        except Exception as exc:
            raise InputError(f"{name}: not a readable Parquet file ({exc})") from None
    else:
        text = _decode(data, name)
        for number, line in enumerate(_lines(text), 1):
            if line.count('"') % 2:
                raise InputError(
                    f"{name}:{number}: a quoted field spans lines (not allowed: each line must "
                    "parse on its own)"
                )
        try:
            frame = pd.read_csv(
                io.StringIO(text), dtype=str, keep_default_na=False, sep=sep, engine="c"
            )
        except pd.errors.EmptyDataError:
            raise InputError(f"{name}: empty file, no header with columns") from None
        except (pd.errors.ParserError, ValueError) as exc:
            raise InputError(f"{name}: {str(exc).strip().splitlines()[-1]}") from None
    for col in (record_col, item_col):
        if col not in frame.columns:
            cols = ", ".join(map(str, frame.columns[:10]))
            raise InputError(f"{name}: no column {col!r} (columns: {cols})")
    ids = frame[record_col].astype("string").fillna("").astype(str).str.strip()
    items = frame[item_col].astype("string").fillna("").astype(str).str.strip()
    codes, _ = pd.factorize(ids, sort=False)
    out: list[list[str]] = [[] for _ in range(int(codes.max()) + 1 if len(codes) else 0)]
    for code, item in zip(codes.tolist(), items.tolist(), strict=True):
        out[code].append(item)
    return out


# --- building the CSR -----------------------------------------------------------------------


def _flatten(rows: Iterable[list[str]]) -> tuple[list[str], np.ndarray, int]:
    """(all items in order, the record of each item, number of records)."""
    row_list = rows if isinstance(rows, list) else list(rows)
    lengths = np.fromiter((len(r) for r in row_list), dtype=np.int64, count=len(row_list))
    tokens = list(itertools.chain.from_iterable(row_list))
    return tokens, np.repeat(np.arange(len(row_list), dtype=np.int64), lengths), len(row_list)


def _build(
    tokens: list[str], row_of: np.ndarray, n: int, universe: Sequence[str] | None
) -> Records:
    """Map item strings to ids; drop empty (and, with a universe, undeclared) items; sort and
    deduplicate each record."""
    if universe is not None:
        items = list(dict.fromkeys(u.strip() for u in universe if u.strip()))
        vocab = {item: i for i, item in enumerate(items)}
        lookup = map(vocab.get, tokens, itertools.repeat(-1))
    else:
        vocab = {item: i for i, item in enumerate(dict.fromkeys(tokens))}
        if "" in vocab:  # empty fields are not items: give "" the id -1 and close the gap
            gap = vocab.pop("")
            vocab = {item: (i if i < gap else i - 1) for item, i in vocab.items()}
            vocab[""] = -1
        items = [item for item in vocab if item]
        lookup = map(vocab.__getitem__, tokens)
    ids = np.fromiter(lookup, dtype=np.int64, count=len(tokens))
    return _assemble(items, ids, row_of, n)


def _assemble(items: list[str], ids: np.ndarray, row_of: np.ndarray, n: int) -> Records:
    """CSR from (item id, record) pairs: ids < 0 dropped, each record sorted and deduplicated."""
    keep = ids >= 0
    key = np.sort(row_of[keep] * max(len(items), 1) + ids[keep])  # by record, then item id
    if len(key):
        key = key[np.concatenate(([True], key[1:] != key[:-1]))]  # duplicates count once
    width = max(len(items), 1)
    rows, ids = np.divmod(key, width)
    indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n)))).astype(np.int64)
    return Records(items, indptr, ids.astype(np.int32))
