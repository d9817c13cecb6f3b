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
import re
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
    numbers = _numbers(out)

    def call(raw: np.ndarray, pos: int, n_ids: int, n_rec: int, ids: Any, lengths: Any) -> Any:
        tables = table.tables()  # as they are now (growing replaces them)
        spelled = (*numbers.table.tables(), numbers.ids)
        return kernel.tokenize_jsonl(
            raw, pos, n_ids, n_rec, *tables, table.open, *spelled, ids, lengths
        )

    def other(status: int, pos: int, n_ids: int, n_rec: int, ids: Any) -> Any:
        if status == kernel.ODD:  # a line for the exact parser
            return table.add_line(chunk, pos, n_ids, n_rec, ids, parse_line)
        if status == kernel.NUMBER_ROOM:
            numbers.table.grow(1, 1 << 12)
            return n_ids, n_rec, chunk.rfind(b"\n", 0, pos) + 1
        if status == kernel.NUMBER:  # pos: the token; then again from the line's start
            token = _NUMBER.match(chunk, pos)
            assert token is not None  # the kernel read one there
            numbers.spell(token.group(), table)
            return n_ids, n_rec, chunk.rfind(b"\n", 0, pos) + 1
        return None

    done = table.read(chunk, out, call, other) == kernel.OK
    if not done:
        numbers.ids.fill(kernel.UNSEEN)  # the ids it maps to may have been forgotten
    return done


_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


class _Numbers:
    """JSON-lines numbers the compiled scanner does not spell itself ("-0", fractions,
    exponents): their texts in a table like the item table, and for each the id of the item
    the exact parser makes of it (UNSEEN until asked)."""

    def __init__(self) -> None:
        from dpfim.readers.interner import Interner
        from dpfim.readers.records import Vocabulary

        self.table = Interner(Vocabulary())
        self.ids = np.zeros(0, dtype=np.int32)

    def spell(self, text: bytes, items: Any) -> None:
        """Map the number `text` to its item's id in `items` (an Interner), numbered now if new:
        the exact parser's spelling, parse_line('[' + text + ']')."""
        k = self.table.id_of(text)
        if k >= len(self.ids):
            grown = np.full(max(2 * len(self.ids), k + 1, 64), items.kernel.UNSEEN, np.int32)
            grown[: len(self.ids)] = self.ids
            self.ids = grown
        (item,) = parse_line("[" + text.decode("ascii") + "]")
        self.ids[k] = items.id_of(item.encode("utf-8"))


def _numbers(out: RecordBuilder) -> _Numbers:
    if "jsonl numbers" not in out.scratch:
        out.scratch["jsonl numbers"] = _Numbers()
    got: _Numbers = out.scratch["jsonl numbers"]
    return got
