"""Basket format: one record a line, items split by a one-character separator (default ",").

CSV quoting is honoured within a line (the stdlib csv reader on that one line, strict); a quote
never opens a field that spans lines, because every line is parsed on its own.

Big inputs (a file of at least COMPILED_FROM bytes, or any chunk after the first) are read by
a compiled tokeniser (`_compiled`, dpfim/readers/_compiled.py `tokenize_csv`): the same fields,
quoting and trimming, items mapped to ids by a hash table over their bytes; a chunk it cannot
read exactly (a doubled quote `""` inside quotes, a non-ASCII separator, an error) goes to the
paths below. Otherwise a chunk of FAST_FROM bytes with no `"` and no `\r` except in CRLF
endings is split with a few whole-chunk string operations (`_fast`; same records, see there),
and the rest line by line.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from typing import Any

import numpy as np

from dpfim.readers.interner import Interner, big_input, read_compiled
from dpfim.readers.records import RecordBuilder, factorize
from dpfim.readers.source import parse_lines


def parse_line(line: str, sep: str) -> list[str]:
    """The trimmed fields of one line (empty fields stay: they are dropped as items later).
    Raises ValueError on bad quoting."""
    if '"' not in line:
        return [f.strip() for f in line.split(sep)] if line else []
    try:
        fields = next(csv.reader([line], delimiter=sep, strict=True), [])
    except csv.Error as exc:
        raise ValueError(f"bad CSV quoting ({exc})") from None
    return [f.strip() for f in fields]


FAST_FROM = 1 << 20  # chunk bytes from which the whole-chunk split pays
# Input bytes from which the compiled tokeniser pays for its import: whole processes
# cross over near 20 MB (docs/performance.md, "The fallbacks that remain").
COMPILED_FROM = 16 << 20


def read_chunk(
    chunk: bytes, first_line: int, name: str, sep: str, out: RecordBuilder, compiled: bool = True
) -> None:
    """Read a chunk into `out` (compiled: False when the compiled tokeniser has given it back
    already, see dpfim/readers/pipeline.py)."""
    if (
        compiled
        and big_input(first_line, out, COMPILED_FROM)
        and read_compiled(chunk, sep, out, kernel_call)
    ):
        out.took("compiled")
        return
    if len(chunk) >= FAST_FROM and _fast(chunk, sep, out):
        out.took("whole-chunk split")
        return
    out.add_tokens(*parse_lines(chunk, first_line, name, lambda line: parse_line(line, sep)))
    out.took("line parser")


def kernel_call(chunk: bytes, sep: str, table: Interner) -> Callable[..., Any] | None:
    """The compiled tokeniser over `table` for this chunk: call(raw, pos, n_ids, n_rec, ids,
    lengths) (Interner.read's form), or None when it cannot read the chunk (a non-ASCII
    separator; invalid UTF-8: the line parser names the line)."""
    if ord(sep) >= 128:
        return None
    if not chunk.isascii():
        try:
            chunk.decode("utf-8")  # the line parser names the line of invalid UTF-8
        except UnicodeDecodeError:
            return None
    kernel, code, limit = table.kernel, ord(sep), csv.field_size_limit()
    resume = np.full(4, -1, dtype=np.int64)  # where a ROOM stopped inside a line

    def call(raw: np.ndarray, pos: int, n_ids: int, n_rec: int, ids: Any, lengths: Any) -> Any:
        tables = table.tables()  # as they are now (growing replaces them)
        return kernel.tokenize_csv(
            raw, pos, n_ids, n_rec, *tables, table.open, code, limit, ids, lengths, resume
        )

    return call


def _fast(chunk: bytes, sep: str, out: RecordBuilder) -> bool:
    """Read a quote-free chunk by whole-chunk splits; False when the line parser must read it.

    The same records as the line parser: without `"` a line's fields are `line.split(sep)`
    (an empty line has no fields, and here one empty field, which is no item either); the
    `\r` of each CRLF is dropped as `split_lines` drops it; every field is trimmed with
    `str.strip` (once per distinct field). Invalid UTF-8 and NUL go to the line parser, which
    names the line.
    """
    if b'"' in chunk or b"\0" in chunk:
        return False
    if b"\r" in chunk:
        if chunk.count(b"\r") != chunk.count(b"\r\n"):
            return False
        chunk = chunk.replace(b"\r\n", b"\n")
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if text.endswith("\n"):
        text = text[:-1]
    lengths = [line.count(sep) + 1 for line in text.split("\n")]
    tokens = text.replace("\n", sep).split(sep)
    codes, uniques = factorize(tokens)
    lut = np.fromiter(
        (out.vocab.id_of(u.strip()) for u in uniques), dtype=np.int64, count=len(uniques)
    )
    out.add_ids(lut[codes] if len(codes) else codes, np.asarray(lengths, dtype=np.int64))
    return True
