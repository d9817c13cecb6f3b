"""Record locality, property-tested on whole files (issue 9; docs/testing-privacy.md §"Files").

The sensitivity-1 premise of every mechanism holds only if one changed record changes at most
that record of the parsed data. For every input format — plain, gzip-compressed and on stdin — we
generate a random file D, replace (or insert) one record by an adversarial line drawn from a nasty
alphabet, and check that the edited file D' either is a data error (exit 3) or parses to records
that differ from D's in that one record only. Long format is checked row by row against an
independent oracle: D' must group exactly as D's rows with the one row replaced.

A failing example prints both files (hypothesis `note`).
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from reader_paths import force_fast_readers

from dpfim.errors import InputError
from dpfim.readers import Records, read_records, source


@pytest.fixture(
    autouse=True, params=["small-input paths", "big-input paths", "big-input paths, one thread"]
)
def reader_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every property three times: as shipped (small inputs take the numpy and line parsers)
    and with the big-input paths forced on (the compiled FIMI, basket and JSON-lines tokenisers,
    arrow CSV, compiled grouping), the tokenisers on two threads merged in order (with chunks
    of a few lines, so a file is many chunks) or in one."""
    if request.param == "big-input paths":
        force_fast_readers(monkeypatch)
        monkeypatch.setattr(source, "CHUNK_BYTES", 64)
    elif request.param == "big-input paths, one thread":
        force_fast_readers(monkeypatch, pipelined=False)


# CI runs 4x the examples of the quick local loop.
SETTINGS = settings(
    max_examples=400 if os.environ.get("CI") else 100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Pieces of an adversarial line: quotes in every position, separators, CR, BOM, NUL, tabs,
# spaces, brackets, non-UTF-8 bytes, and text that looks like a header or compressed data.
NASTY = [
    b'"',
    b'""',
    b",",
    b";",
    b"\t",
    b" ",
    b"\r",
    b"\r\r",
    b"\xef\xbb\xbf",
    b"\x00",
    b"\\",
    b"a",
    b"b",
    b"x",
    b"1",
    b"42",
    b"007",
    b"-",
    b"[",
    b"]",
    b"{",
    b"}",
    b":",
    b'"a"',
    b"null",
    b"\xff",
    b"\xe9",
    b"\xc3",
    b"BZh91",
    b"\x1f\x8b\x08",
    b"\xfd7zXZ\x00",
    b"cust,item",
    b"customer_id",
    b"\x0b",
    b"\x0c",
    b"\x1c",
    b"\x85",
    b"\xe2\x80\xa8",
    b"#",
    # whole compressed streams without a newline: once read as the data set on stdin
    *[z for z in (lzma.compress(b"a,b\n" * k) for k in range(1, 40)) if b"\n" not in z][:2],
    *[z for z in (bz2.compress(b"1 2\n" * k) for k in range(1, 40)) if b"\n" not in z][:2],
    *[z for z in (gzip.compress(b'["a"]\n' * k) for k in range(1, 40)) if b"\n" not in z][:2],
]
adversarial_line = st.one_of(
    st.lists(st.sampled_from(NASTY), max_size=24).map(b"".join),
    st.tuples(st.sampled_from(NASTY), st.integers(1000, 40_000)).map(lambda t: t[0] * t[1]),
)
ITEMS = ["milk", "bread", "eggs", "tea", "jam", "a b", "x"]
NUMS = ["1", "2", "3", "10", "42", "007"]
MODES = ("path", "gzip", "stdin")


def as_sets(records: Records) -> list[set[str]]:
    ptr, idx = records.indptr, records.indices
    return [{records.items[i] for i in idx[ptr[k] : ptr[k + 1]]} for k in range(records.n)]


def parse(tmp_path: Path, content: bytes, suffix: str, fmt: str, mode: str, **kw: str) -> Records:
    """read_records on `content` as a file (plain or gzip) or on stdin."""
    if mode == "stdin":  # under the default --compression, as a user runs it
        return read_records("-", fmt=fmt, stdin=io.BytesIO(content), **kw)  # type: ignore[arg-type]
    name = "f" + suffix + (".gz" if mode == "gzip" else "")
    path = tmp_path / name
    path.write_bytes(gzip.compress(content) if mode == "gzip" else content)
    return read_records(path, **kw)  # type: ignore[arg-type]


def try_parse(*args: object, **kw: str) -> list[set[str]] | str:
    """The records as sets, or the data error's message."""
    try:
        return as_sets(parse(*args, **kw))  # type: ignore[arg-type]
    except InputError as exc:
        return str(exc)


def base_lines(fmt: str, draw: st.DrawFn) -> list[bytes]:
    n = draw(st.integers(1, 12))
    rows = [
        draw(st.lists(st.sampled_from(NUMS if fmt == "fimi" else ITEMS), max_size=5))
        for _ in range(n)
    ]
    if fmt == "fimi":
        return [" ".join(r).encode() for r in rows]
    if fmt == "jsonl":
        return [json.dumps(r).encode() for r in rows]
    sep = "\t" if fmt == "tsv" else ","
    return [sep.join(f'"{i}"' if draw(st.booleans()) else i for i in r).encode() for r in rows]


@st.composite
def edited(draw: st.DrawFn, fmt: str) -> tuple[bytes, bytes, int, bool]:
    """(D, D', position of the edited record, inserted?)"""
    lines = base_lines(fmt, draw)
    k = draw(st.integers(0, len(lines)))
    insert = k == len(lines) or draw(st.booleans())
    bad = draw(adversarial_line)
    new = [*lines[:k], bad, *lines[k + (0 if insert else 1) :]]
    end = draw(st.sampled_from([b"\n", b"\r\n"]))
    # A final newline or not (a blank last line needs one: "a\n" is one record, not two).
    final = draw(st.booleans()) or lines[-1:] == [b""] or new[-1:] == [b""]
    d = end.join(lines) + (end if final and lines else b"")
    d2 = end.join(new) + (end if final else b"")
    return d, d2, k, insert


FORMATS = {  # name: (suffix, --format for stdin)
    "basket": (".csv", "basket"),
    "tsv": (".tsv", "basket"),
    "fimi": (".dat", "fimi"),
    "jsonl": (".jsonl", "jsonl"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.slow
def test_one_changed_line_changes_at_most_its_record(tmp_path: Path, fmt: str, mode: str) -> None:
    suffix, stdin_fmt = FORMATS[fmt]
    extra = {"sep": "\t"} if (fmt == "tsv" and mode == "stdin") else {}

    @SETTINGS
    @given(case=edited(fmt))
    def check(case: tuple[bytes, bytes, int, bool]) -> None:
        d, d2, k, inserted = case
        note(
            f"D  = {d!r}\nD' = {d2!r}\nedited record {k} ({'inserted' if inserted else 'replaced'})"
        )
        before = try_parse(tmp_path, d, suffix, stdin_fmt, mode, **extra)
        assert not isinstance(before, str), "the generated base file must parse"
        after = try_parse(tmp_path, d2, suffix, stdin_fmt, mode, **extra)
        if isinstance(after, str):  # a data error (nothing is released) about that line only
            assert f":{k + 1}: " in after, f"the error does not name line {k + 1}: {after}"
            return
        if inserted:
            assert len(after) == len(before) + 1
            del after[k]
        else:
            assert len(after) == len(before)
            after[k] = before[k]
        assert after == before, "a record other than the edited one changed"

    check()


# --- long format: row-level oracle -------------------------------------------------------------


def oracle_row(line: bytes, sep: str) -> tuple[str, str] | str | None:
    """What one data line of a long CSV means on its own, written from SPEC §3 (not from the
    reader): a (record id, item) row, None for a blank line, or "error"."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return "error"
    if text.endswith("\r"):
        text = text[:-1]
    if "\r" in text or "\0" in text:
        return "error"
    if not text:
        return None
    try:
        rows = list(csv.reader([text], delimiter=sep, strict=True))
    except csv.Error:
        return "error"
    fields = [f.strip() for f in rows[0]] if rows else []
    if not fields:
        return None
    return (fields[0], fields[1]) if len(fields) == 2 else "error"


def grouped(rows: list[tuple[str, str] | None]) -> list[set[str]]:
    """Records in order of first appearance of their id; empty items are not items."""
    out: dict[str, set[str]] = {}
    for row in rows:
        if row is None:
            continue
        out.setdefault(row[0], set())
        if row[1]:
            out[row[0]].add(row[1])
    return list(out.values())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sep", [",", "\t"])
@pytest.mark.slow
def test_long_csv_one_changed_row_changes_only_its_own_meaning(
    tmp_path: Path, sep: str, mode: str
) -> None:
    suffix = ".csv" if sep == "," else ".tsv"
    header = f"cust{sep}item".encode()

    @st.composite
    def case(draw: st.DrawFn) -> tuple[list[tuple[str, str]], int, bytes, bool]:
        ids = [f"c{i}" for i in range(draw(st.integers(1, 5)))]
        rows = [
            (draw(st.sampled_from(ids)), draw(st.sampled_from(ITEMS)))
            for _ in range(draw(st.integers(1, 14)))
        ]
        k = draw(st.integers(0, len(rows) - 1))
        return rows, k, draw(adversarial_line), draw(st.booleans())

    @SETTINGS
    @given(c=case())
    def check(c: tuple[list[tuple[str, str]], int, bytes, bool]) -> None:
        rows, k, bad, crlf = c
        end = b"\r\n" if crlf else b"\n"
        lines = [f"{r}{sep}{i}".encode() for r, i in rows]
        d = end.join([header, *lines]) + end
        d2 = end.join([header, *lines[:k], bad, *lines[k + 1 :]]) + end
        note(f"D  = {d!r}\nD' = {d2!r}\nrow {k} replaced")
        kw = {"record_col": "cust", "item_col": "item", "sep": sep}
        fmt = "long"
        assert try_parse(tmp_path, d, suffix, fmt, mode, **kw) == grouped(list(rows))
        after = try_parse(tmp_path, d2, suffix, fmt, mode, **kw)
        meaning = oracle_row(bad + end[:-1], sep)  # the line as the file has it, minus \n
        if meaning == "error":
            assert isinstance(after, str), "a malformed row must be a data error"
            assert f":{k + 2}: " in after, f"the error does not name line {k + 2}: {after}"
            return
        assert not isinstance(after, str), f"a row that parses on its own broke the file: {after}"
        expected = [*rows[:k], meaning, *rows[k + 1 :]]
        assert after == grouped(expected)  # type: ignore[arg-type]

    check()


@pytest.mark.slow
def test_long_parquet_one_changed_row_changes_only_its_record(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    text = st.lists(
        st.sampled_from(['"', ",", "\r", "\n", "\t", " ", "\ufeff", "a", "c1", "\x00"]),
        max_size=12,
    ).map("".join)

    @SETTINGS
    @given(
        rows=st.lists(
            st.tuples(st.sampled_from(["c1", "c2", "c3"]), st.sampled_from(ITEMS)),
            min_size=1,
            max_size=10,
        ),
        k=st.integers(0, 9),
        new=st.tuples(text, text),
    )
    def check(rows: list[tuple[str, str]], k: int, new: tuple[str, str]) -> None:
        k = k % len(rows)
        edited = [*rows[:k], new, *rows[k + 1 :]]
        note(f"D  = {rows!r}\nD' = {edited!r}")
        path = tmp_path / "l.parquet"
        for data, expected in ((rows, rows), (edited, edited)):
            frame = pd.DataFrame(data, columns=["cust", "item"])
            frame.to_parquet(path)
            got = as_sets(read_records(path, record_col="cust", item_col="item"))
            assert got == grouped([(a.strip(), b.strip()) for a, b in expected])

    check()
