"""Basket format: one record a line, items split by a one-character separator (default ",").

CSV quoting is honoured within a line (the stdlib csv reader on that one line, strict); a quote
never opens a field that spans lines, because every line is parsed on its own.
"""

from __future__ import annotations

import csv

from dpfim.errors import InputError
from dpfim.readers.records import RecordBuilder
from dpfim.readers.source import decode, split_lines


def parse_line(line: str, sep: str) -> list[str]:
    """The trimmed fields of one line (empty fields stay: they are dropped as items later).
    Raises csv.Error on bad quoting."""
    if '"' in line:
        fields = next(csv.reader([line], delimiter=sep, strict=True), [])
    else:
        fields = line.split(sep) if line else []
    return [f.strip() for f in fields]


def read_chunk(chunk: bytes, first_line: int, name: str, sep: str, out: RecordBuilder) -> None:
    tokens: list[str] = []
    lengths: list[int] = []
    for number, line in enumerate(split_lines(decode(chunk, name, first_line), name, first_line)):
        try:
            fields = parse_line(line, sep)
        except csv.Error as exc:
            raise InputError(f"{name}:{first_line + number}: bad CSV quoting ({exc})") from None
        tokens.extend(fields)
        lengths.append(len(fields))
    out.add_tokens(tokens, lengths)
