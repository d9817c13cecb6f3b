"""Progress on a terminal: without -v it shows only what public parameters decide.

docs/cli.md ("Streams") and docs/privacy.md §1: stderr without -v depends only on public
parameters, the file name and the released answer. A file D and D plus one record must give
the same stderr bytes on a terminal, bars included.
"""

from __future__ import annotations

import fcntl
import io
import os
import pty
import random
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from dpfim import progress
from dpfim.readers import _progress as reading_bar

ROOT = Path(__file__).resolve().parents[1]


def _baskets(path: Path, n: int, extra: str | None = None) -> None:
    """n baskets with one pair far ahead of the rest (the released answer is the same on D
    and D + 1), and optionally one more record."""
    rng = random.Random(7)
    lines = [
        ",".join(["milk", "bread", *(f"i{rng.randrange(300)}" for _ in range(3))]) for _ in range(n)
    ]
    if extra is not None:
        lines.append(extra)
    path.write_text("\n".join(lines) + "\n")


def _stderr_on_terminal(args: list[str], out: Path, rows: int = 24, cols: int = 80) -> bytes:
    """`dpfim ARGS` with stderr on a pseudo-terminal of a fixed size: the bytes it wrote."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": str(cols), "LINES": str(rows)}
    env.pop("TQDM_DISABLE", None)
    with open(out, "wb") as stdout:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dpfim", *args],
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=slave,
            env=env,
            cwd=ROOT,
        )
    os.close(slave)
    got = bytearray()
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output for 60 s")
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        got += data
    os.close(master)
    assert proc.wait(timeout=60) == 0, bytes(got).decode(errors="replace")
    return bytes(got)


def test_a_terminal_shows_the_same_bytes_for_d_and_d_plus_one_record(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    d, d1 = tmp_path / "a" / "baskets.csv", tmp_path / "b" / "baskets.csv"
    _baskets(d, 30_000)
    _baskets(d1, 30_000, extra="x,y,z")
    args = ["--eps", "1", "--delta", "1e-6", "--seed", "3"]
    # the same file name (relative, from each directory) on both runs
    err_d = _stderr_on_terminal(["mine", str(d), *args], tmp_path / "a.json")
    err_d1 = _stderr_on_terminal(["mine", str(d1), *args], tmp_path / "b.json")
    assert b"reading" in err_d  # a bar was drawn: the comparison is not vacuous
    assert err_d.replace(str(d).encode(), b"D") == err_d1.replace(str(d1).encode(), b"D")
    # the answer released on both was the same (stderr may depend on it)
    assert (tmp_path / "a.json").read_text().count("milk") == 1
    assert (tmp_path / "b.json").read_text().count("milk") == 1


def test_verbose_keeps_the_exact_figures_on_a_terminal(tmp_path: Path) -> None:
    d = tmp_path / "baskets.csv"
    _baskets(d, 2_000)
    err = _stderr_on_terminal(
        ["mine", str(d), "--eps", "1", "--delta", "1e-6", "--seed", "3", "-v"],
        tmp_path / "out.json",
    )
    size = d.stat().st_size
    assert f"/{size / 1000:.1f}k".encode() in err  # tqdm's byte total, as before


class _Raw(io.BytesIO):
    """A file whose reads come back in pieces of `step` bytes."""

    def __init__(self, data: bytes, step: int) -> None:
        super().__init__(data)
        self.step = step

    def read(self, size: int | None = -1) -> bytes:
        return super().read(self.step)


@pytest.mark.parametrize("size, step", [(0, 1), (1, 1), (999, 7), (12_345, 4_000), (10, 100)])
def test_the_public_bar_draws_every_whole_percent_once_whatever_the_size(
    tmp_path: Path, size: int, step: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "in.csv"
    path.write_bytes(b"a\n" * (size // 2) + b"a" * (size % 2))
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    raw = _Raw(path.read_bytes(), step)
    with reading_bar(raw, raw, str(path), progress.PUBLIC) as stream:
        while stream.read(step):
            pass
    assert err.getvalue() == _expected_public_stream()


def _expected_public_stream() -> str:
    err = io.StringIO()
    bar = progress.PercentBar("reading", err)
    for p in range(1, 101):
        bar.to(p)
    bar.close()
    return err.getvalue()


def test_the_public_bar_draws_each_percent_in_order_and_clears_its_line() -> None:
    err = io.StringIO()
    bar = progress.PercentBar("reading", err)
    bar.to(3)
    bar.to(2)  # never backwards
    bar.to(250)  # never past 100
    bar.close()
    frames = err.getvalue().split("\r")
    shown = [f for f in frames if f.strip()]
    assert [f.split()[1] for f in shown] == [f"{p}%" for p in range(101)]
    assert frames[-1] == "" and frames[-2].strip() == ""  # the line is blanked at the end
    assert all(not any(c.isdigit() for c in f.split("%")[-1]) for f in shown)


def test_an_input_of_unknown_size_gets_a_bar_without_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    raw = _Raw(b"a,b\n" * 1000, 100)
    with reading_bar(raw, raw, "-", progress.PUBLIC) as stream:
        while stream.read(100):
            pass
    assert err.getvalue().strip()  # something says it is reading
    assert not any(c.isdigit() for c in err.getvalue())


def test_counting_shows_no_bar_without_verbose() -> None:
    from dpfim.engines.local import SupportIndex
    from dpfim.readers.records import from_transactions

    records = from_transactions([["a", "b"], ["a", "b", "c"]])
    for setting in (progress.PUBLIC, True, progress.OFF, False):
        assert SupportIndex(records, 2, progress=setting)._bar("counting") is None
    bar = SupportIndex(records, 2, progress=progress.EXACT)._bar("counting")  # -v
    assert bar is not None
    bar.close()
