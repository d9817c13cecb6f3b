"""The executors' reading code against the local readers on adversarial files, without a JVM.

Spark's text reader (lineSep "\\n") hands the executors each file's lines without their `\\n`, in
arrow batches, a file possibly cut into splits. Here that is simulated with random batch and
split boundaries, and the executor function (`read.text_blocks`) must give exactly the local
records, or a data error exactly when the local reader gives one, naming a line that is bad on its
own with that message (with several bad lines, which is named depends on chunking, locally
too). Spark's own line splitting is checked on real files in test_spark_engine.py.
"""

from __future__ import annotations

import itertools
import json
import pickle
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpfim.engines.spark import read
from dpfim.errors import InputError
from dpfim.readers import read_records

pa = pytest.importorskip("pyarrow")

pytestmark = pytest.mark.slow  # whole-file or Spark tests: CI runs them, the quick loop does not


NASTY = [b'"', b'""', b",", b"\t", b" ", b"\r", b"\xef\xbb\xbf", b"\x00", b"a", b"b", b"1"]
NASTY += [b"007", b"[", b"]", b'"a"', b"\xff", b"\xc3", b"\x0b", b"\x0c", b"\xe2\x80\xa8", b"42"]
FORMATS = {"basket": ".csv", "tsv": ".tsv", "fimi": ".dat", "jsonl": ".jsonl"}
FILE = "file:///data/f"


def local(tmp_path: Path, content: bytes, suffix: str) -> Counter[frozenset[str]] | str:
    path = tmp_path / ("f" + suffix)
    path.write_bytes(content)
    try:
        recs = read_records(path)
    except InputError as exc:
        return str(exc).removeprefix(str(path))
    return Counter(frozenset(recs.record(k)) for k in range(recs.n))


def on_executors(content: bytes, fmt: str, sep: str, cuts: list[int], split: int) -> Any:
    """Lines as Spark gives them (BOM at the start dropped, split at \\n only), in batches cut
    at `cuts`, the file in two splits at line `split`; records or the error as the driver
    would print it."""
    body = content.removeprefix(b"\xef\xbb\xbf")
    lines = body.split(b"\n")
    if body.endswith(b"\n") or not body:
        lines.pop()
    split = min(split, len(lines))
    block = [0 if i < split else 1000 for i in range(len(lines))]
    bounds = sorted({0, len(lines), *(c % (len(lines) + 1) for c in cuts), split})
    batches = [
        pa.RecordBatch.from_arrays(
            [
                pa.array(lines[a:b], type=pa.binary()),
                pa.array([FILE] * (b - a)),
                pa.array(block[a:b], type=pa.int64()),
            ],
            ["line", "file", "block"],
        )
        for a, b in itertools.pairwise(bounds)
        if b > a
    ]
    try:
        blobs = list(read.text_blocks(batches, fmt, sep, None))
    except RuntimeError as exc:
        found = re.search(re.escape(read.MARK) + "(.*)" + re.escape(read.MARK), str(exc))
        assert found, exc
        info = json.loads(found.group(1))
        if info["line"] is None:
            return f": {info['message']}"
        line = info["line"] + (split if info["block"] else 0)
        return f":{line}: {info['message']}"
    out: Counter[frozenset[str]] = Counter()
    for batch in blobs:
        recs = pickle.loads(batch.column(0)[0].as_py()).records
        out.update(frozenset(recs.record(k)) for k in range(recs.n))
    return out


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    fmt=st.sampled_from(sorted(FORMATS)),
    lines=st.lists(st.lists(st.sampled_from(NASTY), max_size=8).map(b"".join), max_size=10),
    end=st.sampled_from([b"\n", b"\r\n"]),
    final=st.booleans(),
    cuts=st.lists(st.integers(0, 20), max_size=4),
    split=st.integers(0, 12),
)
def test_executor_reading_matches_the_local_readers(
    tmp_path: Path,
    fmt: str,
    lines: list[bytes],
    end: bytes,
    final: bool,
    cuts: list[int],
    split: int,
) -> None:
    content = end.join(lines) + (end if final and lines else b"")
    suffix = FORMATS[fmt]
    sep = "\t" if fmt == "tsv" else ","
    reader = "basket" if fmt == "tsv" else fmt
    expected = local(tmp_path, content, suffix)
    got = on_executors(content, reader, sep, cuts, split)
    if isinstance(expected, Counter) or isinstance(got, Counter):
        assert got == expected
        return
    # Both are data errors. With several bad lines, which one is named depends on how the input
    # is cut into chunks (locally too), so the named line must be bad on its own, with this error.
    found = re.fullmatch(r":(\d+): (.*)", got, re.S)
    assert found, got
    number, message = int(found.group(1)), found.group(2)
    line = content.removeprefix(b"\xef\xbb\xbf").split(b"\n")[number - 1]
    # after a blank first line (a valid empty record), so that a BOM is not at the file's start
    assert local(tmp_path, b"\n" + line, suffix) == f":2: {message}"
