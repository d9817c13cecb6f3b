"""FIMI format (the benchmark `.dat` files): one record a line, items are runs of ASCII digits
separated by spaces or tabs. Items are strings: "007" and "7" are different items.

Three paths read a chunk, all to the same records:
* big inputs (a file of at least COMPILED_FROM bytes, or any chunk after the first): a compiled
  one-pass tokeniser (numba, dpfim/readers/_compiled.py) that maps each token's bytes straight
  to an id through a hash table kept in step with the Vocabulary (dpfim/readers/interner.py):
  any number of digits, leading zeros kept;
* small inputs (no numba import, so small files start fast): numpy on the raw bytes;
* a chunk these cannot take (a token of 18+ digits on the numpy path) or that holds an error:
  the line-by-line parser, which gives the same records and names the first bad line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from dpfim.readers.interner import Interner, big_input, read_compiled
from dpfim.readers.records import RecordBuilder
from dpfim.readers.source import parse_lines

_LINE = re.compile(r"[0-9 \t]*")
# Input bytes from which the compiled tokeniser pays for its import: whole processes
# cross over near 7-10 MB (docs/performance.md, "The fallbacks that remain").
COMPILED_FROM = 8 << 20
_POW10 = 10 ** np.arange(18, dtype=np.int64)
_WIDTH_BITS = 5  # token width (<= 17) is packed below the value: key = value * 32 + width


def parse_line(line: str) -> list[str]:
    """The items of one line; raises ValueError naming the first bad token."""
    if not _LINE.fullmatch(line):
        bad = next((t for t in line.split() if not (t.isascii() and t.isdigit())), line.strip())
        raise ValueError(f"FIMI items are non-negative integers, got {bad[:40]!r}")
    return line.split()


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
    if _fast(chunk, out):
        out.took("numpy")
    else:
        _slow(chunk, first_line, name, out)
        out.took("line parser")


def kernel_call(chunk: bytes, sep: str, table: Interner) -> Callable[..., Any]:
    """The compiled tokeniser over `table` for this chunk: call(raw, pos, n_ids, n_rec, ids,
    lengths) (Interner.read's form; the other formats' may be None: no FIMI chunk is refused
    before the kernel runs)."""
    del chunk, sep  # FIMI files are separated by spaces and tabs
    kernel, lut = table.kernel, table.value_cache()
    resume = np.full(3, -1, dtype=np.int64)  # where a ROOM stopped inside a line (see tokenize)

    def call(raw: np.ndarray, pos: int, n_ids: int, n_rec: int, ids: Any, lengths: Any) -> Any:
        # the table's arrays as they are now (growing replaces them)
        tables = table.tables()
        return kernel.tokenize(
            raw, pos, n_ids, n_rec, *tables, table.open, lut, ids, lengths, resume
        )

    return call


def _slow(chunk: bytes, first_line: int, name: str, out: RecordBuilder) -> None:
    out.add_tokens(*parse_lines(chunk, first_line, name, parse_line))


def _fast(chunk: bytes, out: RecordBuilder) -> bool:
    """Parse a chunk of whole lines with numpy; False when the slow path must run instead."""
    raw = np.frombuffer(chunk, dtype=np.uint8)
    if len(raw) == 0:
        return True
    newline = raw == 10
    digit = (raw >= 48) & (raw <= 57)
    cr = raw == 13
    if not (digit | newline | cr | (raw == 32) | (raw == 9)).all():
        return False  # the slow path names the bad line
    if cr.any():
        at = np.flatnonzero(cr)
        followed = at + 1 < len(raw)
        if not newline[at[followed] + 1].all():
            return False  # a lone \r: the slow path raises naming its line
    ends_with_newline = bool(newline[-1])
    n = int(newline.sum()) + (0 if ends_with_newline else 1)
    prev = np.empty_like(digit)
    prev[0] = False
    prev[1:] = digit[:-1]
    starts = np.flatnonzero(digit & ~prev)
    nxt = np.empty_like(digit)
    nxt[-1] = False
    nxt[:-1] = digit[1:]
    ends = np.flatnonzero(digit & ~nxt)  # inclusive
    width = ends - starts + 1
    if len(width) and int(width.max()) > 17:
        return False
    # value of each token: sum of digit * 10^(distance to the token's end)
    pos = np.flatnonzero(digit)
    power = np.repeat(ends, width) - pos
    values = (raw[pos] - 48).astype(np.int64) * _POW10[power]
    if len(width):
        group = np.zeros(len(width), dtype=np.int64)
        np.cumsum(width[:-1], out=group[1:])
        values = np.add.reduceat(values, group)
    keys = (values << _WIDTH_BITS) + width
    codes, uniques = _factorize_ints(keys)
    lut = np.fromiter(
        (out.vocab.id_of(str(k >> _WIDTH_BITS).zfill(k & 31)) for k in uniques.tolist()),
        dtype=np.int64,
        count=len(uniques),
    )
    row_of = np.searchsorted(np.flatnonzero(newline), starts)
    lengths = np.bincount(row_of, minlength=n).astype(np.int64)
    out.add_ids(lut[codes] if len(codes) else codes, lengths)
    return True


def _factorize_ints(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques) of an int64 array; pandas' hash table for large chunks."""
    if len(keys) >= 2_000_000:  # pandas pays for its import (~0.5 s) only on big chunks
        import pandas as pd

        codes, uniques = pd.factorize(keys)
        return codes.astype(np.int64, copy=False), np.asarray(uniques)
    # in order of first appearance, as pandas gives them: item ids then do not depend on how the
    # input is cut into chunks (the Spark engine cuts it elsewhere), and neither does tie order
    uniques, first, codes = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[codes.reshape(-1)].astype(np.int64), uniques[order]
