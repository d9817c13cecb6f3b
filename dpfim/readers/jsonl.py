"""JSON lines: one JSON array of items a line (strings, trimmed, or numbers); blank lines are
empty records.

`parse_line` (the exact parser: `json.loads`) defines what a line holds. Big inputs (a file of
at least COMPILED_FROM bytes, or any chunk after the first) are read by a compiled scanner for
the common case, a flat array of escape-free strings and integers a line (dpfim/readers/
_compiled.py `tokenize_jsonl`); a chunk with anything else (an escape, a float, nesting, an
error) is read by the exact parser, line by line.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from dpfim.readers.records import RecordBuilder
from dpfim.readers.source import parse_lines


def parse_line(line: str) -> list[str]:
    """The items of one line; raises ValueError with a message on anything else."""
    if not line.strip():
        return []
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    except RecursionError:  # found by the record-locality property test
        raise ValueError("JSON nested too deeply") from None
    if not isinstance(value, list):
        raise ValueError("expected a JSON array of items")
    items = []
    for item in value:
        kind = type(item)  # json.loads makes str, int, float, bool, None, list, dict only
        if kind is str:
            if not item.isascii():  # a lone surrogate escape ("\\ud800") is no text
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError("an item is not valid Unicode (a lone surrogate)") from None
            items.append(item.strip())
        elif kind is int:
            items.append(int.__repr__(item))  # what json.dumps gives, without its call
        elif kind is float:
            items.append(json.dumps(item))
        else:
            raise ValueError("items must be strings or numbers")
    return items


# Input bytes from which the compiled scanner pays for its import: whole processes
# cross over near 16 MB (docs/performance.md, "The fallbacks that remain").
COMPILED_FROM = 16 << 20


def read_chunk(chunk: bytes, first_line: int, name: str, sep: str, out: RecordBuilder) -> None:
    del sep
    hint = out.size_hint
    big = first_line > 1 or COMPILED_FROM == 0 or (hint is not None and hint >= COMPILED_FROM)
    if big and _compiled(chunk, out):
        out.took("compiled")
        return
    out.add_tokens(*parse_lines(chunk, first_line, name, parse_line))
    out.took("json.loads")


def _compiled(chunk: bytes, out: RecordBuilder) -> bool:
    """Read a chunk with the compiled scanner; False when the exact parser must read it."""
    from dpfim.readers.interner import interner

    table = interner(out)
    if table is None:
        return False
    if not chunk.isascii():
        try:
            chunk.decode("utf-8")  # the exact parser names the line of invalid UTF-8
        except UnicodeDecodeError:
            return False
    kernel = table.kernel

    def call(raw: np.ndarray, pos: int, n_ids: int, n_rec: int, ids: Any, lengths: Any) -> Any:
        tables = table.tables()  # as they are now (growing replaces them)
        return kernel.tokenize_jsonl(raw, pos, n_ids, n_rec, *tables, table.open, ids, lengths)

    return bool(table.read(chunk, out, call, odd_line=parse_line) == kernel.OK)
