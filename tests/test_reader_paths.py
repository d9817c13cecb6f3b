"""The readers' big-input paths (compiled FIMI tokeniser, pyarrow CSV chunks, compiled long
grouping) read exactly what the small-input paths read: the same records, in the same order,
or the same data error naming the same line. Random files, split into small chunks so that
paths change between chunks and the vocabulary is shared across them."""

from __future__ import annotations

import functools
import random
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from reader_paths import force_fast_readers, force_slow_readers

import dpfim.readers as readers
from dpfim.errors import InputError
from dpfim.readers import Records, long, read_records, source

pytestmark = pytest.mark.slow  # whole-file or Spark tests: CI runs them, the quick loop does not


SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
DATA = Path("/work/shared/data")


def as_rows(records: Records) -> list[list[str]]:
    """Records as item strings, each record's ids checked sorted and distinct."""
    rows = []
    for k in range(records.n):
        ids = records.indices[records.indptr[k] : records.indptr[k + 1]].tolist()
        assert ids == sorted(set(ids)), "a record's ids must be sorted and distinct"
        rows.append(sorted(records.items[i] for i in ids))
    return rows


def read_both(
    monkeypatch: pytest.MonkeyPatch, path: Path, chunk: int | None, **kw: object
) -> tuple[list[list[str]] | str, list[list[str]] | str]:
    """(small-input paths, big-input paths): records as strings, or the error message."""
    chunks = source.chunks if chunk is None else functools.partial(source.chunks, size=chunk)
    monkeypatch.setattr(readers, "chunks", chunks)
    monkeypatch.setattr(long, "chunks", chunks)
    got = []
    for force in (force_slow_readers, force_fast_readers):
        force(monkeypatch)
        try:
            got.append(as_rows(read_records(path, **kw)))  # type: ignore[arg-type]
        except InputError as exc:
            got.append(str(exc))
    return got[0], got[1]


FIMI_PIECES = [b"1", b"2", b"7", b"42", b"007", b"0", b"00", b"123456789", b"1234567890"]
FIMI_PIECES += [b"99999999999999999999", b"65536", b"70000", b"33554432", b" ", b"\t", b"  "]
FIMI_PIECES += [b"\n", b"\r\n", b"\r", b"x", b"\xff", b"\x00", b"-1"]


@st.composite
def fimi_file(draw: st.DrawFn) -> bytes:
    clean = draw(st.booleans())  # clean files exercise the compiled path, others the fallbacks
    alphabet = FIMI_PIECES[:17] + [b"\n"] * 6 if clean else FIMI_PIECES
    pieces = draw(st.lists(st.sampled_from(alphabet), max_size=120))
    return b"".join(pieces)


@pytest.mark.parametrize("universe", [None, ["1", "7", "007", "42", "70000", "x"]])
def test_fimi_paths_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, universe: list[str] | None
) -> None:
    path = tmp_path / "f.dat"

    @SETTINGS
    @given(content=fimi_file(), chunk=st.sampled_from([None, 1, 5, 16]))
    def check(content: bytes, chunk: int | None) -> None:
        note(repr(content))
        path.write_bytes(content)
        slow, fast = read_both(monkeypatch, path, chunk, universe=universe)
        assert fast == slow

    check()


def test_fimi_table_grows_and_keeps_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Values past the first table size, and past the largest table, read as on the slow path."""
    path = tmp_path / "f.dat"
    path.write_bytes(b"1 70000 3\n007 5 1\n40000000 1\n70000 5 70000\n1 2 3\n")
    slow, fast = read_both(monkeypatch, path, 6)
    assert fast == slow
    assert fast[0] == ["1", "3", "70000"]


@pytest.mark.parametrize("name", ["retail.dat", "mushroom.dat", "T10I4D100K.dat"])
def test_fimi_paths_agree_on_the_shared_data(
    monkeypatch: pytest.MonkeyPatch, name: str, tmp_path: Path
) -> None:
    if not (DATA / name).exists():
        pytest.skip("shared data not present")
    force_slow_readers(monkeypatch)
    slow = read_records(DATA / name)
    force_fast_readers(monkeypatch)
    fast = read_records(DATA / name)
    assert fast.items == slow.items or sorted(fast.items) == sorted(slow.items)
    assert as_rows(fast) == as_rows(slow)


# Quote-free field pieces: ASCII and Unicode spaces (str.strip's), separators, CR, BOM, NUL,
# invalid UTF-8, blank lines.
CSV_PIECES = ["a", "b", "x1", "é", " ", "\t", "\x0b", "\x1c", "\x85", "\u3000", "\ufeff", ","]
CSV_PIECES += ["", ";"]


@st.composite
def long_file(draw: st.DrawFn, sep: str) -> bytes:
    field = st.lists(st.sampled_from(CSV_PIECES), max_size=3).map("".join)
    ending = st.sampled_from(["\n"] * 6 + ["\r\n", "\r", "\n\n"])
    lines = ["id" + sep + "item" + sep + "z"]
    for _ in range(draw(st.integers(0, 40))):
        n = draw(st.sampled_from([3] * 8 + [2, 4, 0]))
        lines.append(sep.join(draw(field) for _ in range(n)) + draw(ending))
    text = lines[0] + "\n" + "".join(lines[1:])
    raw = text.encode()
    if draw(st.integers(0, 9)) == 0:  # now and then a byte that is not UTF-8, or a NUL
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\x00", b'"'])) + raw[at:]
    return raw


@pytest.mark.parametrize("sep", [",", "\t"])
def test_long_csv_paths_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sep: str) -> None:
    path = tmp_path / "f.csv"

    @SETTINGS
    @given(content=long_file(sep), chunk=st.sampled_from([None, 1, 7, 40]))
    def check(content: bytes, chunk: int | None) -> None:
        note(repr(content))
        path.write_bytes(content)
        kw = {"record_col": "id", "item_col": "item", "sep": sep}
        slow, fast = read_both(monkeypatch, path, chunk, **kw)
        assert fast == slow

    check()


@pytest.mark.parametrize("sep", [",", "\t", ";"])
def test_basket_paths_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sep: str) -> None:
    path = tmp_path / "f.csv"

    @SETTINGS
    @given(content=long_file(","), chunk=st.sampled_from([None, 1, 7, 40]))
    def check(content: bytes, chunk: int | None) -> None:
        note(repr(content))
        path.write_bytes(content)
        slow, fast = read_both(monkeypatch, path, chunk, sep=sep, fmt="basket")
        assert fast == slow

    check()


def test_the_trimmed_characters_are_exactly_str_strips() -> None:
    spaces = "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())
    assert spaces == long._SPACES


def test_the_arrow_path_is_taken_on_a_clean_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards the tests above against comparing the slow path with itself."""
    path = tmp_path / "f.csv"
    path.write_bytes(b"id,item\n1, a\n1,b \n2,a\n")
    force_fast_readers(monkeypatch)
    calls = []
    real = long._arrow_chunk

    def spy(*args: object) -> bool:
        calls.append(real(*args))  # type: ignore[arg-type]
        return calls[-1]

    monkeypatch.setattr(long, "_arrow_chunk", spy)
    records = read_records(path, record_col="id", item_col="item")
    assert calls == [True]
    assert as_rows(records) == [["a", "b"], ["a"]]


@pytest.mark.slow  # compiles from scratch: up to a minute on a busy machine
def test_numba_cache_works_from_a_read_only_package() -> None:
    """A read-only install (no __pycache__ writes) still compiles, runs and caches: numba then
    uses the user's cache directory. Root ignores file modes, so root runs it as nobody."""
    import os
    import shutil
    import subprocess
    import tempfile

    import dpfim

    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a read-only install")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    base = Path(tempfile.mkdtemp())
    try:
        base.chmod(0o755)
        site = base / "site"
        shutil.copytree(
            Path(dpfim.__file__).parent,
            site / "dpfim",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        for p in sorted(site.rglob("*"), reverse=True):
            p.chmod(0o555 if p.is_dir() else 0o444)
        site.chmod(0o555)
        home = base / "home"
        home.mkdir(mode=0o777)
        home.chmod(0o777)
        data = base / "d.dat"
        data.write_bytes(b"1 2 3\n3 2\n\n7\n")
        data.chmod(0o644)
        code = (  # an editable install's import hook would win over PYTHONPATH: drop it
            "import sys; sys.meta_path[:] = [m for m in sys.meta_path "
            "if 'editable' not in getattr(m, '__name__', type(m).__name__)]; "
            "import dpfim.readers.fimi as f; f.COMPILED_FROM = 0; "
            "from dpfim.readers import read_records; "
            f"r = read_records({str(data)!r}); print(r.n, len(r.indices), f.__file__)"
        )
        env = {"PYTHONPATH": str(site), "HOME": str(home), "PATH": "/usr/bin:/bin"}
        out = subprocess.run(
            [*prefix, sys.executable, "-c", code],
            env=env,
            cwd=base,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["4", "6", str(site / "dpfim" / "readers" / "fimi.py")]
        assert not list(site.rglob("*.nbi")), "the read-only package was written to"
        assert list(home.rglob("*.nbi")), "numba caches in the user's cache directory"
    finally:
        for p in [base, *base.rglob("*")]:
            p.chmod(0o755)
        shutil.rmtree(base)


def test_compiled_grouping_matches_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    from dpfim.readers.records import Vocabulary

    vocab = Vocabulary()
    for k in range(50):
        vocab.id_of(str(k))
    results = []
    for threshold in (1 << 62, 0):
        monkeypatch.setattr(long, "COMPILED_FROM", threshold)
        grouper = long._Grouper(vocab)
        for _ in range(3):
            ids = [str(x) for x in rng.integers(0, 30, 200).tolist()]
            items = [str(x) for x in rng.integers(0, 60, 200).tolist()]  # 50..59: new items
            grouper.add(ids, items)
        results.append(as_rows(grouper.build()))
        rng = np.random.default_rng(7)
    assert results[0] == results[1]


def test_without_numba_the_numpy_paths_read_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fimi_path, long_path = tmp_path / "f.dat", tmp_path / "f.csv"
    fimi_path.write_bytes(b"1 2 3\n3 2\n\n7\n")
    long_path.write_bytes(b"id,item\n1,a\n2,b\n1,c\n")
    force_slow_readers(monkeypatch)
    expected = [as_rows(read_records(fimi_path)), as_rows(read_records(long_path, **LONG))]
    force_fast_readers(monkeypatch)
    monkeypatch.setitem(sys.modules, "dpfim.readers._compiled", None)  # import fails
    got = [as_rows(read_records(fimi_path)), as_rows(read_records(long_path, **LONG))]
    assert got == expected


LONG = {"record_col": "id", "item_col": "item"}


def test_read_ahead_keeps_order_raises_in_order_and_stops_when_closed() -> None:
    import contextlib
    import threading

    from dpfim.readers.prefetch import prefetched

    def source(n: int, fail: bool) -> Iterator[tuple[bytes, int]]:
        for k in range(n):
            yield str(k).encode(), k
        if fail:
            raise InputError("damaged")

    assert list(prefetched(source(50, False))) == [(str(k).encode(), k) for k in range(50)]
    got = []
    with pytest.raises(InputError, match="damaged"):
        for item in prefetched(source(3, True)):
            got.append(item)
    assert len(got) == 3
    before = threading.active_count()
    pieces = prefetched(source(10**6, False))
    with contextlib.closing(pieces):
        next(pieces)
    assert threading.active_count() == before  # the reading thread was stopped and joined


def _generated_fimi(seed: int, lines: int) -> bytes:
    """A seeded FIMI file: long-tail ids up to 10^25, leading zeros, CRLF and LF endings,
    blank lines, tabs and runs of spaces, duplicates within a line."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(lines):
        n = int(rng.integers(0, 12))
        values = (10 ** rng.uniform(0, 25, n)).astype(object)
        tokens = [str(int(v)) for v in values] + [str(int(rng.integers(0, 50)))] * (n % 3)
        tokens = [("0" * int(rng.integers(1, 3)) + t) if rng.random() < 0.1 else t for t in tokens]
        seps = rng.choice([" ", "  ", "\t"], size=len(tokens) + 1).tolist()
        line = "".join(s + t for s, t in zip(seps, tokens, strict=False)) if tokens else ""
        out.append(line + ("\r\n" if rng.random() < 0.2 else "\n"))
    return "".join(out).encode()


@pytest.mark.parametrize("chunk", [None, 997, 1 << 14])
def test_fimi_compiled_reads_any_id_like_the_line_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int | None
) -> None:
    """Records and item ids (first-appearance order) equal on a generated file with ~60,000
    distinct items (past the interner's first table, so it grows mid-chunk)."""
    path = tmp_path / "f.dat"
    path.write_bytes(_generated_fimi(22, 12_000))
    chunks = source.chunks if chunk is None else functools.partial(source.chunks, size=chunk)
    monkeypatch.setattr(readers, "chunks", chunks)
    got = []
    for force in (force_slow_readers, force_fast_readers):
        force(monkeypatch)
        records = read_records(path)
        got.append((records.items, as_rows(records)))
    assert len(got[0][0]) > 40_000
    assert got[1] == got[0]


def test_fimi_compiled_path_is_taken_on_huge_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guards the test above: every chunk is read compiled, whatever the ids' size."""
    from dpfim.readers import fimi
    from dpfim.readers.records import RecordBuilder, Vocabulary

    force_fast_readers(monkeypatch)
    out = RecordBuilder(Vocabulary())
    fimi.read_chunk(b"1 99999999999999999999999999 007\n7 7 0\n", 1, "x", ",", out)
    fimi.read_chunk(b"33554432 1\n", 3, "x", ",", out)
    assert out.paths == {"compiled": 2}
    records = out.build()
    assert records.items == ["1", "99999999999999999999999999", "007", "7", "0", "33554432"]
    assert as_rows(records) == [
        ["007", "1", "99999999999999999999999999"],
        ["0", "7"],
        ["1", "33554432"],
    ]


def test_fimi_compiled_forgets_a_bad_chunks_items(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk with a data error leaves no items behind in the table (the line parser reads it
    and raises; a caller that goes on would otherwise see ids with no item)."""
    from dpfim.readers import fimi
    from dpfim.readers.records import RecordBuilder, Vocabulary

    force_fast_readers(monkeypatch)
    out = RecordBuilder(Vocabulary())
    fimi.read_chunk(b"1 2\n", 1, "x", ",", out)
    with pytest.raises(InputError, match="x:4"):
        fimi.read_chunk(b"5 6\n7 8\nx\n", 2, "x", ",", out)
    table = out.scratch["interner"]
    assert table.count == 2 and out.vocab.items == ["1", "2"]  # type: ignore[attr-defined]
    fimi.read_chunk(b"6 5\n", 5, "x", ",", out)
    assert out.vocab.items == ["1", "2", "6", "5"]


# Basket pieces with CSV quoting: quoted fields (with separators and spaces inside), a quote
# inside an unquoted field, doubled quotes, unterminated quotes, a character after a closing
# quote, str.strip's Unicode spaces, CRLF, lone CR.
QUOTED_PIECES = ['"a"', '"a,b"', '" x "', '""', '"é\u3000"', 'a"b', '"a""b"', '"', "q", "7"]
QUOTED_PIECES += [",", ",", " ", "\u2028", "\x85", "\xa0", "\u200a", "\u200b", "\ufeff", ";"]
QUOTED_PIECES += ["\t", "SKU-1", "4006381333931", "\r\n", "\n", "\n", "\r"]


@pytest.mark.parametrize("sep", [",", "\t", ";", " "])
def test_basket_compiled_reads_quotes_like_the_line_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sep: str
) -> None:
    path = tmp_path / "f.csv"

    @SETTINGS
    @given(
        pieces=st.lists(st.sampled_from(QUOTED_PIECES), max_size=60),
        chunk=st.sampled_from([None, 1, 9]),
    )
    def check(pieces: list[str], chunk: int | None) -> None:
        content = "".join(pieces).encode()
        note(repr(content))
        path.write_bytes(content)
        slow, fast = read_both(monkeypatch, path, chunk, sep=sep, fmt="basket")
        assert fast == slow

    check()


def test_basket_compiled_path_is_taken_with_quotes_and_keeps_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Guards the tests above: quoted fields and Unicode spaces read compiled, ids in order of
    first appearance; a doubled quote gives the chunk to the line parser, same ids."""
    from dpfim.readers import basket
    from dpfim.readers.records import RecordBuilder, Vocabulary

    force_fast_readers(monkeypatch)
    out = RecordBuilder(Vocabulary())
    text = '"b,1", a\u3000,"  c ",a"x"\r\n\n0042,42,"",\u2028\n'
    basket.read_chunk(text.encode(), 1, "x", ",", out)
    basket.read_chunk(b'"d""e",b\n', 4, "x", ",", out)
    assert out.paths == {"compiled": 1, "whole-chunk split": 1} or out.paths == {
        "compiled": 1,
        "line parser": 1,
    }
    records = out.build()
    assert records.items == ["b,1", "a", "c", 'a"x"', "0042", "42", 'd"e', "b"]
    assert as_rows(records) == [["a", 'a"x"', "b,1", "c"], [], ["0042", "42"], ["b", 'd"e']]


def test_basket_compiled_honours_the_csv_field_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A quoted line with a field past csv's size limit is the line parser's error, named by
    its line, on every path; an unquoted line has no limit."""
    import csv

    path = tmp_path / "f.csv"
    path.write_bytes(b"abcdefghijkl,b\n" + b'"a",abcdefghijkl\n')
    old = csv.field_size_limit(8)
    try:
        slow, fast = read_both(monkeypatch, path, None, fmt="basket")
    finally:
        csv.field_size_limit(old)
    assert fast == slow
    assert "f.csv:2" in str(fast)


# JSON-lines pieces: strings with and without escapes and spaces, integers (negative, zero,
# "-0", leading zeros, huge), floats, literals, nesting, blank and odd lines, CR.
JSON_PIECES = ['["a"', '[" b "', "[1", "[-7", "[0", "[-0", "[007", "[1.5", "[1e3", "[true"]
JSON_PIECES += ['["\\u00e9"', '["\\ud800"', '["x\\ty"', '["é\u3000"', "[12345678901234567890123"]
JSON_PIECES += [', "a"', ", 2", ",", " ", "\t", "]", "]", "]", "[]", "[[1]]", "{}", '"s"', "null"]
JSON_PIECES += ["\n", "\n", "\n", "\r\n", "\r", "\u3000", "\x0b", "\ufeff", '"', "x"]


def test_jsonl_compiled_reads_like_the_exact_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.jsonl"

    @SETTINGS
    @given(
        pieces=st.lists(st.sampled_from(JSON_PIECES), max_size=60),
        chunk=st.sampled_from([None, 1, 9]),
    )
    def check(pieces: list[str], chunk: int | None) -> None:
        content = "".join(pieces).encode()
        note(repr(content))
        path.write_bytes(content)
        slow, fast = read_both(monkeypatch, path, chunk)
        assert fast == slow

    check()


def test_jsonl_compiled_path_is_taken_and_spells_items_as_json_loads() -> None:
    """Guards the test above: strings (escapes decoded) and integers read compiled, each item
    the exact parser's string, with the same ids."""
    from dpfim.readers import jsonl
    from dpfim.readers.records import RecordBuilder, Vocabulary

    lines = ['[" b ", 1, -25, 0, "1", 12345678901234567890123]', "", "\u3000", "  [ ] "]
    chunk = ("\n".join(lines) + "\r\n").encode()
    expected = [jsonl.parse_line(line) for line in lines]
    mp = pytest.MonkeyPatch()
    try:
        force_fast_readers(mp)
        out = RecordBuilder(Vocabulary())
        jsonl.read_chunk(chunk, 1, "x", ",", out)
        jsonl.read_chunk(b'["\\u0062", "c"]\n', 5, "x", ",", out)
    finally:
        mp.undo()
    assert out.paths == {"compiled": 2}
    records = out.build()
    assert records.items == ["b", "1", "-25", "0", "12345678901234567890123", "c"]
    assert as_rows(records)[:4] == [sorted(set(e)) for e in expected]
    assert as_rows(records)[4] == ["b", "c"]


# Strings with escapes: each kind json.loads decodes, surrogate pairs, escaped spaces that
# str.strip() then trims, and bad ones (a lone surrogate, an unknown escape, short hex).
ESCAPED = [r'"a\"b"', r'"\\"', r'"\/x"', r'"\b\f\n\r\t"', r'"\u00e9"', r'"\u00E9t\u00e9"']
ESCAPED += [r'"\ud83d\ude00"', r'"\u3000a\u3000"', r'"\u0020b\u00a0"', r'"\u0000x"', r'"\n"']
ESCAPED += [r'"x\u0085"', r'"\u2028"', r'"\ud800"', r'"\udc00x"', r'"\q"', r'"\u12"', r'"é\"é"']


@st.composite
def clean_jsonl(draw: st.DrawFn) -> bytes:
    """Lines the compiled scanner reads itself (now and then one it gives back)."""
    item = st.one_of(
        st.integers(-(10**30), 10**30).map(str),
        st.sampled_from(['"a"', '" a "', '"é"', '"\u3000x"', '""', '"SKU-1"', '"7"', "-0"]),
        st.sampled_from(ESCAPED),
        st.sampled_from(["1.5", "1e3", "-0.0", "[]", "null"]),  # a line the exact parser reads
    )
    space = st.sampled_from(["", " ", "\t", "  "])
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        items = draw(st.lists(item, max_size=6))
        sep = draw(space) + "," + draw(space)
        body = draw(space) + "[" + draw(space) + sep.join(items) + draw(space) + "]" + draw(space)
        lines.append(draw(st.sampled_from([body] * 8 + ["", " \u3000", "[1.5]"])))
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    return (ending.join(lines) + draw(st.sampled_from(["", ending]))).encode()


def test_jsonl_compiled_reads_clean_lines_like_the_exact_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dpfim.readers import jsonl

    path = tmp_path / "f.jsonl"
    calls: list[bool] = []
    real = jsonl.read_compiled

    def spy(*args: object) -> bool:
        calls.append(real(*args))  # type: ignore[arg-type]
        return calls[-1]

    monkeypatch.setattr(jsonl, "read_compiled", spy)

    @SETTINGS
    @given(content=clean_jsonl(), chunk=st.sampled_from([None, 1, 30]))
    def check(content: bytes, chunk: int | None) -> None:
        note(repr(content))
        path.write_bytes(content)
        slow, fast = read_both(monkeypatch, path, chunk)
        assert fast == slow

    check()
    assert calls.count(True) > len(calls) // 3  # the compiled path did most of the reading


def test_truncating_in_place_keeps_what_a_copy_keeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """read_records truncates its own fresh records in place (no second copy of the ids, the
    kept ids moved left a block at a time): the same records as the copying truncation, for
    random records and keys, blocks with and without dropped ids, many or few dropped."""
    from dpfim.readers import records as records_mod
    from dpfim.readers.records import truncate, truncation_key

    monkeypatch.setattr(records_mod, "_COMPACT_BLOCK", 97)  # many blocks, some without a drop
    rng = np.random.default_rng(23)
    for trial in range(30):
        rows = [
            sorted(set(rng.integers(0, 40, int(rng.integers(0, 30))).tolist())) for _ in range(50)
        ]
        rows += [list(range(3))] * int(rng.integers(0, 2_000))  # few truncated, far apart
        rows = [rows[k] for k in rng.permutation(len(rows))]
        records = readers.from_transactions([[str(x) for x in r] for r in rows])
        key = truncation_key(seed=trial)
        limit = int(rng.integers(3, 12))
        before = records.indptr.copy(), records.indices.copy()
        copied = truncate(records, limit, key)
        assert np.array_equal(records.indptr, before[0])  # the copy leaves its input alone
        assert np.array_equal(records.indices, before[1])
        fresh = Records(records.items, records.indptr.copy(), records.indices.copy())
        moved = truncate(fresh, limit, key, in_place=True)
        assert np.array_equal(moved.indptr, copied.indptr)
        assert np.array_equal(moved.indices, copied.indices)
        if len(moved.indices) < len(records.indices):
            assert np.shares_memory(moved.indices, fresh.indices)
            assert moved.indptr is fresh.indptr


def test_jsonl_a_rare_odd_line_is_read_exactly_inside_a_compiled_chunk() -> None:
    """Numbers of every form read compiled, spelled as the exact parser spells them; a line
    the scanner does not read (here an integer of over 1000 digits) is read by the exact
    parser and the scan goes on after it (the chunk stays compiled, ids in first-appearance
    order); a chunk where such lines are common is given to the exact parser whole (faster);
    a line the exact parser refuses gives the chunk back, and the line parser names it."""
    from dpfim.errors import InputError
    from dpfim.readers import jsonl
    from dpfim.readers.records import RecordBuilder, Vocabulary

    plain = [f'["a{k % 7}", {k % 5}]' for k in range(400)]
    huge = "9" * 1001
    numbers = '["new", 1.5, -0, "a1", 1E3, -0.0, 2.50e-1, 1e400, 0.1, 1.5, "1.5"]'
    lines = [*plain[:100], numbers, *plain[100:200], f'["x", {huge}]', *plain[200:]]
    lines += ['[2.50, "\\u00e9", -12.5E+2, 1.0]']
    expected = [jsonl.parse_line(line) for line in lines]
    mp = pytest.MonkeyPatch()
    try:
        force_fast_readers(mp)
        out = RecordBuilder(Vocabulary())
        jsonl.read_chunk(("\n".join(lines) + "\n").encode(), 1, "x", ",", out)
        assert out.paths == {"compiled": 1}
        dense = RecordBuilder(Vocabulary())
        dense_lines = [f"[{huge}, {k}]" for k in range(200)]
        jsonl.read_chunk(("\n".join(dense_lines) + "\n").encode(), 1, "x", ",", dense)
        assert dense.paths == {"json.loads": 1}
        bad = RecordBuilder(Vocabulary())
        with pytest.raises(InputError, match="x:3: not JSON"):
            jsonl.read_chunk(b'["a"]\n[1.5]\n[1.5,]\n', 1, "x", ",", bad)
    finally:
        mp.undo()
    records = out.build()
    firsts = list(dict.fromkeys(item for items in expected for item in items))
    assert records.items == firsts
    assert as_rows(records) == [sorted(set(e)) for e in expected]
    for item in ["1.5", "0", "-0.0", "1000.0", "0.25", "Infinity", "0.1", "é", "-1250.0", huge]:
        assert item in records.items


def test_jsonl_numbers_are_spelled_in_batches_and_keep_first_appearance_order() -> None:
    """More distinct non-integer numbers in a chunk than one batch of the number scan holds,
    read compiled, each spelled as the exact parser spells it, ids in first-appearance order;
    a declared vocabulary keeps only its own numbers."""
    from dpfim.readers import jsonl
    from dpfim.readers.records import RecordBuilder, Vocabulary

    lines = [f'["s{k % 3}", {k}.5e0, {k % 10}.25, -0]' for k in range(70_000)]
    chunk = ("\n".join(lines) + "\n").encode()
    expected = [jsonl.parse_line(line) for line in lines]
    mp = pytest.MonkeyPatch()
    try:
        force_fast_readers(mp)
        out = RecordBuilder(Vocabulary())
        jsonl.read_chunk(chunk, 1, "x", ",", out)
        declared = RecordBuilder(Vocabulary(["3.25", "69999.5", "0", "s1"]))
        jsonl.read_chunk(chunk, 1, "x", ",", declared)
    finally:
        mp.undo()
    assert out.paths == {"compiled": 1} and declared.paths == {"compiled": 1}
    records = out.build()
    assert records.items == list(dict.fromkeys(i for items in expected for i in items))
    assert as_rows(records) == [sorted(set(e)) for e in expected]
    kept = declared.build()
    assert as_rows(kept)[1] == ["0", "s1"] and as_rows(kept)[3] == ["0", "3.25"]
    assert as_rows(kept)[69_999] == ["0", "69999.5"]


@pytest.mark.parametrize("fmt", ["fimi", "basket", "jsonl"])
def test_a_long_line_grows_the_table_mid_line_and_reads_as_the_line_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """One line of 60,000 distinct items grows the item table many times while the compiled
    tokeniser is inside it; each time it goes on from the item where it stopped (issue 35: it
    used to read the line again from its start, once per growth). The records are the line
    parser's, and the tokeniser was indeed resumed inside the line."""
    from dpfim.readers import _compiled

    rng = random.Random(3)
    items = [str(100_000 + k) for k in range(60_000)]
    rng.shuffle(items)
    if fmt == "fimi":
        long_line = " ".join(items)
        short = "1 2\n7 8 9\n"
    elif fmt == "basket":  # a few quoted fields, spaces trimmed
        long_line = ",".join(f'"{x}"' if k % 97 == 0 else f" {x} " for k, x in enumerate(items))
        short = 'a,b\n"c",d\n'
    else:  # strings with escapes, integers, numbers the exact parser spells
        parts = [
            f'"{x}\\u0041"' if k % 89 == 0 else (x if k % 7 == 0 else f'"{x}"')
            for k, x in enumerate(items)
        ]
        long_line = "[" + ", ".join([*parts, "1.50", "-0"]) + "]"
        short = '["a", "b"]\n[1, 2]\n'
    path = tmp_path / {"fimi": "f.dat", "basket": "b.csv", "jsonl": "j.jsonl"}[fmt]
    path.write_text(short + long_line + "\n" + short)
    resumed = []
    kernel = {"fimi": "tokenize", "basket": "tokenize_csv", "jsonl": "tokenize_jsonl"}[fmt]
    real = getattr(_compiled, kernel)

    def spy(*args: object) -> object:
        resume = args[-1]
        at = int(resume[1]) if int(resume[0]) == int(args[1]) else -1  # type: ignore[index]
        got = real(*args)
        resumed.append(at)
        return got

    monkeypatch.setattr(_compiled, kernel, spy)  # the table calls it through the module
    slow, fast = read_both(monkeypatch, path, None, fmt=fmt)
    assert fast == slow
    assert len(fast) == 5 and len(fast[2]) == len(set(slow[2])) >= 60_000
    assert sum(at > 0 for at in resumed) >= 2  # growths inside the long line, gone on from
