"""The two-thread reader (dpfim/readers/pipeline.py) gives byte-identical records to the one-
thread compiled reader: the same item list (ids in order of first appearance), the same CSR
arrays, or the same data error naming the same line. Random files from the nasty alphabets of
tests/test_reader_paths.py, cut into chunks of a few bytes so that chunks given back to the
line parser sit between chunks merged from the workers."""

from __future__ import annotations

import functools
import io
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from reader_paths import force_fast_readers
from test_reader_paths import FIMI_PIECES, JSON_PIECES, QUOTED_PIECES, clean_jsonl

import dpfim.readers as readers
from dpfim.errors import InputError
from dpfim.readers import basket, pipeline, read_records, source

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PIECES = {
    "fimi": FIMI_PIECES,
    "basket": [p.encode() for p in QUOTED_PIECES],
    "jsonl": [p.encode() for p in JSON_PIECES],
}
SUFFIX = {"fimi": ".dat", "basket": ".csv", "jsonl": ".jsonl"}


def outcome(path: Path, **kw: object) -> object:
    """Everything read_records gives: items, indptr, indices and the paths line; or the error."""
    paths: list[str] = []
    try:
        records = read_records(path, paths=paths.append, **kw)  # type: ignore[arg-type]
    except InputError as exc:
        return str(exc)
    return records.items, records.indptr.tolist(), records.indices.tolist(), paths


def both(
    monkeypatch: pytest.MonkeyPatch, path: Path, chunk: int | None, **kw: object
) -> list[object]:
    chunks = source.chunks if chunk is None else functools.partial(source.chunks, size=chunk)
    monkeypatch.setattr(readers, "chunks", chunks)
    got = []
    for pipelined in (False, True):
        force_fast_readers(monkeypatch, pipelined=pipelined)
        got.append(outcome(path, **kw))
    return got


@pytest.mark.parametrize("fmt", ["fimi", "basket", "jsonl"])
@pytest.mark.parametrize("universe", [None, ["1", "7", "007", "a", "b", "SKU-1", "x"]])
@pytest.mark.slow
def test_two_threads_read_exactly_what_one_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, universe: list[str] | None
) -> None:
    path = tmp_path / f"f{SUFFIX[fmt]}"

    @SETTINGS
    @given(
        lines=st.lists(st.lists(st.sampled_from(PIECES[fmt]), max_size=8), max_size=30),
        chunk=st.sampled_from([None, 1, 9, 40]),
    )
    def check(lines: list[list[bytes]], chunk: int | None) -> None:
        content = b"\n".join(b"".join(line) for line in lines)
        note(repr(content))
        path.write_bytes(content)
        one, two = both(monkeypatch, path, chunk, universe=universe)
        assert two == one

    check()


@pytest.mark.parametrize("universe", [None, ["1.5", "0", "1000.0", "a", "é", "x"]])
@pytest.mark.slow
def test_two_threads_read_json_numbers_escapes_and_odd_lines_as_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, universe: list[str] | None
) -> None:
    """The JSON scanner's own stops (a number to spell, a line for the exact parser) are
    handled in the workers' tables too: the same records, ids and errors as one thread."""
    path = tmp_path / "f.jsonl"

    @SETTINGS
    @given(content=clean_jsonl(), chunk=st.sampled_from([None, 1, 9, 40]))
    def check(content: bytes, chunk: int | None) -> None:
        note(repr(content))
        path.write_bytes(content)
        one, two = both(monkeypatch, path, chunk, universe=universe)
        assert two == one

    check()


def test_two_threads_keep_first_appearance_across_given_back_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guards the property above: the pipelined path is taken, a chunk in the middle is read by
    the line parser (a doubled quote), and an item it numbers first keeps its place."""
    path = tmp_path / "f.csv"
    path.write_bytes(b"a,b\nc,a\n" + b'"d""e",z\n' + b"z,f\nb,g\n")
    one, two = both(monkeypatch, path, 4)
    assert two == one
    assert isinstance(two, tuple)
    items, _, _, paths = two
    assert items == ["a", "b", "c", 'd"e', "z", "f", "g"]
    assert "compiled (4 chunks)" in paths[0] and "chunk)" in paths[0]


def test_a_data_error_in_a_later_chunk_names_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.dat"
    path.write_bytes(b"1 2\n" * 50 + b"3 x\n" + b"4 5\n" * 50)
    one, two = both(monkeypatch, path, 16)
    assert two == one
    assert isinstance(two, str) and "f.dat:51" in two


def test_an_error_in_a_worker_is_raised_in_order_and_stops_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's exception is raised by read_records itself (so the CLI prints its one-line
    error), not before the chunks ahead of it are merged, and no thread is left running."""
    path = tmp_path / "f.csv"
    path.write_bytes(b"a,b\n" * 20 + b"boom\n" + b"c\n" * 200)
    monkeypatch.setattr(readers, "chunks", functools.partial(source.chunks, size=8))
    force_fast_readers(monkeypatch)
    real = basket.kernel_call
    merged: list[int] = []

    def kernel_call(chunk: bytes, sep: str, table: object) -> object:
        if b"boom" in chunk:
            raise InputError(f"{path}:21: boom")
        return real(chunk, sep, table)  # type: ignore[arg-type]

    real_merge = pipeline.merge

    def merge(got: pipeline.Scanned, out: object, table: object) -> None:
        merged.append(len(got.lengths))
        real_merge(got, out, table)  # type: ignore[arg-type]

    monkeypatch.setattr(basket, "kernel_call", kernel_call)
    monkeypatch.setattr(pipeline, "merge", merge)
    before = threading.active_count()
    with pytest.raises(InputError, match=r"f\.csv:21: boom"):
        read_records(path)
    assert sum(merged) == 20  # every chunk before the bad one, none after
    assert threading.active_count() == before


def test_a_worker_error_is_one_line_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cli_run import run

    path = tmp_path / "f.csv"
    path.write_bytes(b"a,b\n" * 20 + b"boom\n")
    monkeypatch.setattr(readers, "chunks", functools.partial(source.chunks, size=8))
    force_fast_readers(monkeypatch)

    def kernel_call(chunk: bytes, sep: str, table: object) -> object:
        raise InputError(f"{path}:21: boom")

    monkeypatch.setattr(basket, "kernel_call", kernel_call)
    code, out, err = run(["mine", str(path), "--eps", "1", "--delta", "1e-9", "--seed", "1", "-q"])
    assert code == 3, err
    assert out == "" and "Traceback" not in err
    assert [line for line in err.splitlines() if "boom" in line] == [
        f"dpfim: error: {path}:21: boom"
    ]


def test_the_two_threads_are_used_only_when_a_core_is_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipeline, "ENABLED", None)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.4, 0.0, 0.0))
    assert pipeline.worth_it()
    monkeypatch.setattr(os, "getloadavg", lambda: (1.6, 0.0, 0.0))
    assert not pipeline.worth_it()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert not pipeline.worth_it()
    for forced in (True, False):
        monkeypatch.setattr(pipeline, "ENABLED", forced)
        assert pipeline.worth_it() is forced


def test_renumber_sorts_and_drops_like_numpy() -> None:
    """The merge kernel against a plain reference on random local records."""
    from dpfim.readers import _compiled as kernel

    rng = np.random.default_rng(5)
    for _ in range(50):
        n_local = int(rng.integers(1, 60))
        lengths = rng.integers(0, 40, size=int(rng.integers(0, 30))).astype(np.int64)
        ids = rng.integers(0, n_local, size=int(lengths.sum())).astype(np.int32)
        lut = rng.permutation(n_local * 2)[:n_local].astype(np.int32)
        lut[rng.random(n_local) < 0.2] = -1
        want, at = [], 0
        for m in lengths.tolist():
            want.append(sorted({int(lut[i]) for i in ids[at : at + m]} - {-1}))
            at += m
        out = np.empty(len(ids) + 1, dtype=np.int32)
        got_lengths = lengths.copy()
        n = kernel.renumber(ids, got_lengths, len(lengths), lut, out)
        assert got_lengths.tolist() == [len(w) for w in want]
        assert out[:n].tolist() == [x for w in want for x in w]


class _NoReadinto:
    """A stream without readinto (bz2/xz, the progress bar): chunks' plain path."""

    def __init__(self, data: bytes) -> None:
        self._f = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self._f.read(size)


class _Trickle(io.RawIOBase):
    """A raw stream that hands out a few bytes a call (a pipe)."""

    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0

    def readable(self) -> bool:
        return True

    def readinto(self, view: object) -> int:
        k = min(len(view), 3, len(self._data) - self._at)  # type: ignore[arg-type]
        view[:k] = self._data[self._at : self._at + k]  # type: ignore[index]
        self._at += k
        return k


@SETTINGS
@given(
    pieces=st.lists(
        st.sampled_from([b"\n", b"a", b"bb", b"\r\n", source.BOM, b"x" * 40]), max_size=30
    ),
    size=st.integers(1, 20),
    slack=st.sampled_from([0, 1, 3, 1 << 16]),
)
def test_chunks_through_one_buffer_are_whole_lines_numbered_right(
    pieces: list[bytes], size: int, slack: int
) -> None:
    """The reused-buffer chunker gives the plain chunker's bytes, as whole lines (the last may
    lack its newline), with the right first line numbers, from a file or a trickling pipe,
    whatever the slack it keeps for the unfinished line (lines longer than the buffer)."""
    data = b"".join(pieces)
    plain = list(source.chunks(_NoReadinto(data), "n", "none", size=size))  # type: ignore[arg-type]
    old = source._SLACK
    source._SLACK = slack
    try:
        for stream in (io.BytesIO(data), io.BufferedReader(_Trickle(data))):
            got = list(source.chunks(stream, "n", "none", size=size))
            assert b"".join(c for c, _ in got) == b"".join(c for c, _ in plain)
            line = 1
            for k, (chunk, first) in enumerate(got):
                assert chunk and (chunk.endswith(b"\n") or k == len(got) - 1)
                assert first == line
                line += chunk.count(b"\n")
    finally:
        source._SLACK = old


def test_newlines_are_counted_like_bytes_count() -> None:
    rng = np.random.default_rng(3)
    for n in (0, 1, source._COUNT_BLOCK - 1, source._COUNT_BLOCK, 3 * source._COUNT_BLOCK + 7):
        data = rng.choice(np.frombuffer(b"a\n", np.uint8), size=n).tobytes()
        assert source._newlines(data) == data.count(b"\n")
