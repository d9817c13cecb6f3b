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
from collections.abc import Callable
from typing import Any

import numpy as np

from dpfim.readers.interner import Interner, Scan, big_input, read_compiled
from dpfim.readers.records import RecordBuilder, Vocabulary
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


def read_chunk(
    chunk: bytes, first_line: int, name: str, sep: str, out: RecordBuilder, compiled: bool = True
) -> None:
    """Read a chunk into `out` (compiled: False when the compiled scanner has given it back
    already, see dpfim/readers/pipeline.py)."""
    if (
        compiled
        and big_input(first_line, out, COMPILED_FROM)
        and read_compiled(chunk, sep, out, kernel_call)
    ):
        out.took("compiled")
        return
    out.add_tokens(*parse_lines(chunk, first_line, name, parse_line))
    out.took("json.loads")


def kernel_call(chunk: bytes, sep: str, table: Interner) -> Callable[..., Any] | None:
    """The compiled scanner over `table` for this chunk: call(raw, pos, n_ids, n_rec, ids,
    lengths) (Interner.read's form), or None when it cannot read the chunk (invalid UTF-8: the
    exact parser names the line)."""
    del sep
    if not chunk.isascii():
        try:
            chunk.decode("utf-8")  # the exact parser names the line of invalid UTF-8
        except UnicodeDecodeError:
            return None
    kernel = table.kernel
    numbers = _numbers(table)
    resume = np.full(3, -1, dtype=np.int64)  # where a ROOM stopped inside a line

    def call(raw: np.ndarray, pos: int, n_ids: int, n_rec: int, ids: Any, lengths: Any) -> Any:
        tables = table.tables()  # as they are now (growing replaces them)
        return kernel.tokenize_jsonl(
            raw, pos, n_ids, n_rec, *tables, table.open, *numbers.tables(), ids, lengths, resume
        )

    def other(status: int, pos: int, n_ids: int, n_rec: int, ids: Any, lengths: Any) -> Any:
        if status == kernel.ODD:  # a line for the exact parser
            return table.add_line(chunk, pos, n_ids, n_rec, ids, lengths, parse_line)
        if status == kernel.NUMBER:  # spell the numbers from that line on, then go on there
            numbers.spell_from(chunk, pos)
            return n_ids, n_rec, pos
        return None

    return Scan(call, other)


class _Numbers:
    """JSON-lines numbers other than plain integers ("-0", fractions, exponents) for the
    compiled scanner: their texts in a table like the item table, and number k's item as the
    exact parser spells it (json.dumps of json.loads(text)) at spelled[at[k]:at[k + 1]]. Only
    spellings are kept, no ids, so nothing here depends on the order items are met in."""

    def __init__(self) -> None:
        self.table = Interner(Vocabulary())
        self.kernel = self.table.kernel
        self.spelled = np.zeros(1 << 16, dtype=np.uint8)
        self.at = np.zeros(1 << 12, dtype=np.int64)

    def tables(self) -> tuple[np.ndarray, ...]:
        return (*self.table.tables(), self.spelled, self.at[: self.table.count + 1])

    def spell_from(self, chunk: bytes, pos: int) -> None:
        """Spell every number of chunk[pos:] the scanner will ask for (and perhaps more)."""
        raw = np.frombuffer(chunk, dtype=np.uint8)
        spans = np.empty((1 << 16, 2), dtype=np.int64)
        while pos < len(chunk):
            rows, pos = self.kernel.number_texts(raw, pos, spans)
            self.spell(raw, spans[:rows])

    def spell(self, raw: np.ndarray, spans: np.ndarray) -> None:
        """Store the texts raw[a:b] of the (a, b) rows of `spans`, and spell the new ones."""
        before, done = self.table.count, 0
        while done < len(spans):
            self.table.grow(len(spans) - done, int((spans[done:, 1] - spans[done:, 0]).sum()))
            done += self.kernel.intern_spans(raw, spans[done:], *self.table.tables())
        count = self.table.count
        if count == before:
            return
        cuts = self.table.starts[before : count + 1]
        texts = np.insert(self.table.arena[cuts[0] : cuts[-1]], cuts[1:-1] - cuts[0], 44)
        values = json.loads(b"[" + texts.tobytes() + b"]")  # each text is a JSON number
        if all(type(v) is float for v in values):  # the common case, without a call each
            spelled = list(map(float.__repr__, values))
            if "inf" in spelled or "-inf" in spelled or "nan" in spelled:
                spelled = [_spelling(v) for v in values]
        else:
            spelled = [_spelling(v) for v in values]
        lengths = np.fromiter(map(len, spelled), dtype=np.int64, count=len(spelled))
        used = int(self.at[before])
        if count + 1 > len(self.at):
            self.at = np.concatenate([self.at, np.zeros(max(len(self.at), count), np.int64)])
        np.cumsum(lengths, out=self.at[before + 1 : count + 1])
        self.at[before + 1 : count + 1] += used
        end = int(self.at[count])
        if end > len(self.spelled):
            grown = np.zeros(max(2 * len(self.spelled), end), dtype=np.uint8)
            grown[:used] = self.spelled[:used]
            self.spelled = grown
        self.spelled[used:end] = np.frombuffer("".join(spelled).encode("ascii"), np.uint8)


def _spelling(value: int | float) -> str:
    """What parse_line makes of a number json.loads gave (json.dumps, without its call)."""
    if type(value) is int:
        return int.__repr__(value)
    text = float.__repr__(value)
    return json.dumps(value) if text in ("inf", "-inf", "nan") else text


def _numbers(table: Interner) -> _Numbers:
    """The number table that goes with an item table (each is used by one thread at a time)."""
    if "jsonl numbers" not in table.scratch:
        table.scratch["jsonl numbers"] = _Numbers()
    got: _Numbers = table.scratch["jsonl numbers"]
    return got
