"""Basket format: one record a line, items split by a one-character separator (default ",").

CSV quoting is honoured within a line (the stdlib csv reader on that one line, strict); a quote
never opens a field that spans lines, because every line is parsed on its own.
"""

from __future__ import annotations

import csv

from dpfim.readers.records import RecordBuilder
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


def read_chunk(chunk: bytes, first_line: int, name: str, sep: str, out: RecordBuilder) -> None:
    out.add_tokens(*parse_lines(chunk, first_line, name, lambda line: parse_line(line, sep)))
