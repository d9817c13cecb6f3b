"""JSON lines: one JSON array of items a line (strings, trimmed, or numbers); blank lines are
empty records."""

from __future__ import annotations

import json

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
        if isinstance(item, str):
            if not item.isascii():  # a lone surrogate escape ("\\ud800") is no text
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError("an item is not valid Unicode (a lone surrogate)") from None
            items.append(item.strip())
        elif isinstance(item, int | float) and not isinstance(item, bool):
            items.append(json.dumps(item))
        else:
            raise ValueError("items must be strings or numbers")
    return items


def read_chunk(chunk: bytes, first_line: int, name: str, sep: str, out: RecordBuilder) -> None:
    del sep
    out.add_tokens(*parse_lines(chunk, first_line, name, parse_line))
