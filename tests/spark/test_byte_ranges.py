"""The Python workers' byte-range reading (dpfim/engines/byte_ranges.py) against the local readers.

A file cut into byte ranges anywhere (at a line start, mid-line, between `\\r` and `\\n`, inside a
BOM, a range holding no line start at all) must give exactly the local engine's records, and a
data error must name the line the local engine names. Most of this runs the executor function
(`read.read_ranges`, dpfim/engines/spark/read.py) in-process, without a JVM; the last tests go
through Spark (local[2]).
"""

from __future__ import annotations

import gzip
import itertools
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_spark_engine import run

from dpfim.engines import byte_ranges
from dpfim.engines.byte_ranges import ByteRange
from dpfim.engines.spark import SparkInput, count_file, read
from dpfim.errors import InputError
from dpfim.readers import read_records

pytestmark = pytest.mark.slow  # whole-file or Spark tests: CI runs them, the quick loop does not


NASTY = [b'"', b",", b"\t", b" ", b"\r", b"\xef\xbb\xbf", b"\x00", b"a", b"b", b"1", b"007"]
NASTY += [b"[", b"]", b'"a"', b"\xff", b"\xc3", b"42", b"\r\n", b"\n"]
FORMATS = {"basket": ".csv", "tsv": ".tsv", "fimi": ".dat", "jsonl": ".jsonl"}


def local(path: Path) -> Counter[frozenset[str]] | str:
    try:
        recs = read_records(path)
    except InputError as exc:
        return str(exc).removeprefix(str(path))
    return Counter(frozenset(recs.record(k)) for k in range(recs.n))


def in_ranges(path: Path, fmt: str, cuts: list[int]) -> Counter[frozenset[str]] | str:
    """The file read as the byte ranges between `cuts`, one after another, as the workers read
    them; records, or the data error as the driver prints it (less the file name)."""
    size = path.stat().st_size
    bounds = sorted({0, size, *(c for c in cuts if 0 < c < size)})
    uri = path.resolve().as_uri()
    ranges = [ByteRange(uri, a, b, "none") for a, b in itertools.pairwise(bounds)]
    reader = "basket" if fmt == "tsv" else fmt
    sep = "\t" if fmt == "tsv" else ","
    out: Counter[frozenset[str]] = Counter()
    try:
        for part in ranges:
            for block in read.read_ranges(reader, sep, None, [part]):
                recs = block.records
                out.update(frozenset(recs.record(k)) for k in range(recs.n))
    except RuntimeError as exc:
        found = re.search(re.escape(read.MARK) + "(.*)" + re.escape(read.MARK), str(exc))
        assert found, exc
        info = json.loads(found.group(1))
        assert info["block"] == 0  # the worker names the line in its file itself
        if info["line"] is None:
            return f": {info['message']}"
        return f":{info['line']}: {info['message']}"
    return out


def owned(content: bytes, start: int, stop: int, tmp_path: Path) -> bytes:
    path = tmp_path / "owned.bin"
    path.write_bytes(content)
    with open(path, "rb") as f:
        return b"".join(chunk for chunk, _ in byte_ranges.range_chunks(f, start, stop, size=3))


@pytest.mark.parametrize(
    ("content", "cuts"),
    [
        (b"1 2\n3 4\n5 6\n", [4]),  # a line starting exactly at a boundary
        (b"1 2\n3 4\n5 6\n", [5]),  # a range ending mid-line
        (b"1 2\n3 4\n5 6\n", [3]),  # a boundary right before a \n
        (b"1 2\r\n3 4\r\n", [4]),  # \r\n across a boundary
        (b"\xef\xbb\xbf1 2\n3\n", [1]),  # a boundary inside the BOM
        (b"\xef\xbb\xbf1 2\n3\n", [3]),  # a boundary right after the BOM
        (b"1 2 3 4 5 6 7 8\n9\n", [2, 6]),  # a range holding no line start
        (b"1 2\n\n\n3", [4, 5, 6]),  # blank lines, one a range each; no final newline
        (b"1 2", [1]),  # one line, no newline
    ],
)
def test_cut_anywhere_same_records(tmp_path: Path, content: bytes, cuts: list[int]) -> None:
    path = tmp_path / "f.dat"
    path.write_bytes(content)
    expected = local(path)
    assert isinstance(expected, Counter)
    assert in_ranges(path, "fimi", cuts) == expected


def test_each_line_belongs_to_the_range_it_starts_in(tmp_path: Path) -> None:
    content = b"1 2\n3 4\n5 6\n"
    assert owned(content, 0, 4, tmp_path) == b"1 2\n"
    assert owned(content, 4, 12, tmp_path) == b"3 4\n5 6\n"
    assert owned(content, 0, 5, tmp_path) == b"1 2\n3 4\n"
    assert owned(content, 5, 12, tmp_path) == b"5 6\n"
    assert owned(content, 5, 8, tmp_path) == b""  # "3 4\n" started before 5: nothing starts here
    assert owned(b"a\r\nb\r\n", 3, 6, tmp_path) == b"b\r\n"  # boundary between \r and \n
    assert owned(b"\xef\xbb\xbfa\nb\n", 0, 1, tmp_path) == b"a\n"  # the BOM is dropped
    assert owned(b"\xef\xbb\xbfa\nb\n", 1, 7, tmp_path) == b"b\n"


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    fmt=st.sampled_from(sorted(FORMATS)),
    pieces=st.lists(st.sampled_from(NASTY), max_size=40),
    cuts=st.lists(st.integers(0, 80), max_size=6),
)
def test_ranges_match_the_local_readers(
    tmp_path: Path, fmt: str, pieces: list[bytes], cuts: list[int]
) -> None:
    content = b"".join(pieces)
    path = tmp_path / ("f" + FORMATS[fmt])
    path.write_bytes(content)
    expected = local(path)
    got = in_ranges(path, fmt, cuts)
    if isinstance(expected, Counter) or isinstance(got, Counter):
        assert got == expected
        return
    # Both are data errors. With several bad lines, which one is named depends on how the input
    # is cut (locally too), so the named line must be bad on its own, with this message.
    found = re.fullmatch(r":(\d+): (.*)", got, re.S)
    assert found, got
    number, message = int(found.group(1)), found.group(2)
    line = content.removeprefix(b"\xef\xbb\xbf").split(b"\n")[number - 1]
    alone = tmp_path / ("alone" + FORMATS[fmt])
    alone.write_bytes(b"\n" + line)  # after a blank line, so that a BOM is not at the start
    assert local(alone) == f":2: {message}"


def test_a_data_error_in_a_later_range_names_its_line_in_the_file(tmp_path: Path) -> None:
    lines = [b"1 2 3"] * 5000 + [b"4 x"] + [b"5 6"] * 10
    path = tmp_path / "big.dat"
    path.write_bytes(b"\n".join(lines) + b"\n")
    expected = local(path)
    assert expected == ":5001: FIMI items are non-negative integers, got 'x'"
    assert in_ranges(path, "fimi", list(range(0, 40_000, 7_001))) == expected
    bad_utf8 = tmp_path / "bad.csv"
    bad_utf8.write_bytes(b"a,b\n" * 3000 + b"\x1f\x8b\xff\n" + b"c\n")
    expected = local(bad_utf8)
    assert isinstance(expected, str) and expected.startswith(":3001: not valid UTF-8")
    assert in_ranges(bad_utf8, "basket", [6000, 12_000]) == expected


def test_plan_covers_each_file_once() -> None:
    files = [("file:///d/a.dat", 1000), ("file:///d/b.dat", 0), ("file:///d/c.dat.gz", 500)]
    ranges = byte_ranges.plan(files, max_split=300, open_cost=10, parallelism=2)
    plain = [r for r in ranges if r.file.endswith("a.dat")]
    assert plain[0].start == 0 and plain[-1].stop == 1000
    assert all(a.stop == b.start for a, b in itertools.pairwise(plain))
    assert all(r.stop - r.start <= 300 for r in plain)
    assert not [r for r in ranges if r.file.endswith("b.dat")]  # an empty file holds no line
    assert [r for r in ranges if r.compression != "none"] == [
        ByteRange("file:///d/c.dat.gz", 0, 500, "gzip")
    ]
    one = byte_ranges.plan([("file:///x.dat", 473 << 20)], 128 << 20, 4 << 20, 2)
    assert len(one) == 4  # a multiple of the cores, each under the split size


def test_local_files_lists_as_spark_does(tmp_path: Path) -> None:
    (tmp_path / "part-1.csv").write_bytes(b"a\n")
    (tmp_path / "part-0.csv").write_bytes(b"b\n")
    (tmp_path / "_SUCCESS").write_bytes(b"")
    (tmp_path / ".part-0.csv.crc").write_bytes(b"\x00")
    files = byte_ranges.local_files(str(tmp_path))
    assert files == [(tmp_path / f"part-{k}.csv").resolve().as_uri() for k in (0, 1)]
    assert byte_ranges.local_files(str(tmp_path / "*.csv")) is None  # a glob: Spark lists it
    assert byte_ranges.shown(files[0]) == str((tmp_path / "part-0.csv").resolve())


# --- through Spark ------------------------------------------------------------------------------


def test_directory_of_part_files_same_records(spark: Any, tmp_path: Path) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    bodies = [b"1 2 3\n4 5\n" * 300, b"\xef\xbb\xbf1 2\r\n2 3", b"", b"7 8\n\n9\n" * 200]
    for k, body in enumerate(bodies):
        (parts / f"part-{k:05d}.dat").write_bytes(body)
    (parts / "part-00004.dat.gz").write_bytes(gzip.compress(b"1 9\n" * 50))
    (parts / "_SUCCESS").write_bytes(b"")
    (parts / ".part-00000.dat.crc").write_bytes(b"junk")
    whole = tmp_path / "whole.dat"  # what the parts hold, as one file (each part's lines whole)
    whole.write_bytes(
        b"".join(b.removeprefix(b"\xef\xbb\xbf").rstrip(b"\n") + b"\n" for b in bodies if b)
        + b"1 9\n" * 50
    )
    expected = local(whole)
    assert isinstance(expected, Counter)
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1000")  # big parts in several ranges
    try:
        remote = count_file(SparkInput(str(parts), "fimi", ","), 2)
        assert remote._blocks.getNumPartitions() > 5  # the 3000-byte part in several ranges
        got: Counter[frozenset[str]] = Counter()
        for block in remote._blocks.collect():
            recs = block.records
            got.update(frozenset(recs.record(k)) for k in range(recs.n))
        assert remote.n == sum(expected.values())
        assert got == expected
        remote.close()
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")


def test_data_error_in_a_later_range_through_spark(spark: Any, tmp_path: Path) -> None:
    lines = [b"a,b"] * 30_000 + [b'"x'] + [b"c"] * 10
    path = tmp_path / "late.csv"
    path.write_bytes(b"\r\n".join(lines) + b"\r\n")
    args = ["mine", str(path), "--eps", "1", "--delta", "1e-6"]
    conf = ["--spark-conf", "spark.sql.files.maxPartitionBytes=20000"]
    local_run = run(args)
    try:
        remote = run([*args, "--engine", "spark", *conf])
    finally:  # --spark-conf is applied to the shared session: later tests must not inherit it
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert local_run[0] == 3
    assert ":30001:" in local_run[2]
    assert (remote[0], remote[2]) == (local_run[0], local_run[2])


@pytest.mark.parametrize("reader", ["jvm", "python"])
def test_reader_choice_gives_the_same_records(spark: Any, tmp_path: Path, reader: str) -> None:
    """spark.dpfim.reader=jvm keeps the old path (Spark's text reader, lines to Python)."""
    path = tmp_path / "f.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b\r\nb , c ,,\r\n\r\nc,a,a\r\n" * 50)
    expected = local(path)
    spark.conf.set("spark.dpfim.reader", reader)
    try:
        remote = count_file(SparkInput(str(path), "basket", ","), 1)
        got: Counter[frozenset[str]] = Counter()
        for block in remote._blocks.collect():
            recs = block.records
            got.update(frozenset(recs.record(k)) for k in range(recs.n))
        assert got == expected
        # the JVM path's blocks come back through Spark SQL rows; the workers' through an RDD
        assert (remote._lines is not None) == (reader == "jvm")
        remote.close()
    finally:
        spark.conf.unset("spark.dpfim.reader")


def test_ranges_match_the_local_readers_on_the_compiled_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above with the big-input paths forced on (the compiled FIMI, basket and JSON-lines
    tokenisers) in the workers and locally; the records and each range's item ids in order
    of first appearance."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/reader_paths.py
    try:
        from reader_paths import force_fast_readers
    finally:
        sys.path.pop(0)
    force_fast_readers(monkeypatch)

    @settings(
        max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(
        fmt=st.sampled_from(sorted(FORMATS)),
        pieces=st.lists(st.sampled_from(NASTY), max_size=40),
        cuts=st.lists(st.integers(0, 80), max_size=6),
    )
    def check(fmt: str, pieces: list[bytes], cuts: list[int]) -> None:
        content = b"".join(pieces)
        path = tmp_path / ("f" + FORMATS[fmt])
        path.write_bytes(content)
        expected = local(path)
        got = in_ranges(path, fmt, cuts)
        if isinstance(expected, Counter) or isinstance(got, Counter):
            assert got == expected
        if isinstance(expected, Counter):  # one range: ids in order of first appearance
            uri = path.resolve().as_uri()
            whole = ByteRange(uri, 0, path.stat().st_size, "none")
            reader, sep = ("basket", "\t") if fmt == "tsv" else (fmt, ",")
            items = [
                i for b in read.read_ranges(reader, sep, None, [whole]) for i in b.records.items
            ]
            kw = {"sep": sep} if fmt == "tsv" else {}
            assert items == read_records(path, **kw).items  # type: ignore[arg-type]

    check()
