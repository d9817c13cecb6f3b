"""Where results go: -o (and evaluate's --csv/--plot) never destroy what they should not.

Issue 10 #1, #2, #10, #16: regular files are replaced atomically with the umask or their old mode;
symlinks, devices, FIFOs and /dev/fd/N are written through, never replaced; -o naming the input,
the ledger or the vocabulary is a usage error before any data is read; a closed or full stdout is
an output error (exit 7). No test here passes a device path (/dev/null, /dev/stdout) to -o itself,
only symlinks and descriptors in its own directory: run as root, a writer that renames over its
target (the bug being tested) would replace the machine's /dev/null.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

import dpfim.api
import dpfim.readers

ARGS = ["--eps", "1", "--delta", "1e-6"]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "b.csv"
    path.write_text("milk,bread\n" * 900 + "milk,eggs\n" * 100)
    return path


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _result(text: str) -> dict[str, Any]:
    result = json.loads(text)
    assert result["itemset"] == ["bread", "milk"]
    return result  # type: ignore[no-any-return]


# --- #1 the writer ------------------------------------------------------------------------


def test_a_new_output_file_gets_the_umask_not_0600(
    tmp_path: Path, data: Path, umask_022: None
) -> None:
    target = tmp_path / "top.json"
    code, out, err = run(["mine", str(data), *ARGS, "-o", str(target)])
    assert code == 0 and out == "", err
    _result(target.read_text())
    assert _mode(target) == 0o644


def test_an_existing_output_file_keeps_its_mode(
    tmp_path: Path, data: Path, umask_022: None
) -> None:
    target = tmp_path / "top.json"
    target.write_text("old")
    target.chmod(0o640)
    code, _, err = run(["mine", str(data), *ARGS, "-o", str(target)])
    assert code == 0, err
    _result(target.read_text())
    assert _mode(target) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_symlinked_output_replaces_the_target_and_keeps_the_link(
    tmp_path: Path, data: Path
) -> None:
    real = tmp_path / "reports" / "top.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    code, _, err = run(["mine", str(data), *ARGS, "-o", str(link)])
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(real)
    _result(real.read_text())


def test_a_character_device_behind_a_symlink_is_written_not_replaced(
    tmp_path: Path, data: Path
) -> None:
    link = tmp_path / "sink"
    link.symlink_to(os.devnull)
    code, out, err = run(["mine", str(data), *ARGS, "-o", str(link)])
    assert code == 0 and out == "", err
    assert link.is_symlink()
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_fifo_is_written_in_place(tmp_path: Path, data: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the writer's open works
    try:
        code, _, err = run(["mine", str(data), *ARGS, "-o", str(fifo)])
        assert code == 0, err
        chunks = []
        while chunk := os.read(reader, 1 << 16):
            chunks.append(chunk)
    except BlockingIOError:
        pass
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    _result(b"".join(chunks).decode())


@pytest.mark.skipif(not Path("/dev/fd").exists(), reason="needs /dev/fd")
def test_dev_fd_n_writes_to_that_descriptor(data: Path) -> None:
    """The `-o /dev/fd/3` idiom: the result goes down the inherited pipe."""
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "dpfim", "mine", str(data), *ARGS, "-o", f"/dev/fd/{write_end}"],
            pass_fds=(write_end,),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=data.parent,
        )
        os.close(write_end)
        with os.fdopen(read_end, "rb") as fh:
            written = fh.read().decode()
    finally:
        for fd in (read_end, write_end):
            with contextlib.suppress(OSError):
                os.close(fd)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    _result(written)


def test_evaluate_csv_goes_through_the_same_writer(
    tmp_path: Path, data: Path, umask_022: None
) -> None:
    target = tmp_path / "table.csv"
    link = tmp_path / "table-link.csv"
    link.symlink_to(target)
    code, _, err = run(
        [
            "evaluate",
            str(data),
            "--eps",
            "1",
            "--mechanisms",
            "lmm",
            "--trials",
            "2",
            "--seed",
            "1",
            "--csv",
            str(link),
        ]
    )
    assert code == 0, err
    assert link.is_symlink() and _mode(target) == 0o644
    assert "lmm" in target.read_text()


def test_plot_must_be_png(tmp_path: Path, data: Path) -> None:
    """#16: a .jpg used to receive PNG bytes."""
    target = tmp_path / "x.jpg"
    code, out, err = run(["evaluate", str(data), "--trials", "1", "--plot", str(target)])
    assert code == 2 and out == ""
    assert "png" in err.lower() and err.count("\n") == 1
    assert not target.exists()


def test_an_empty_output_path_is_named_as_such(data: Path) -> None:
    """#16: -o "" used to say "is a directory"."""
    code, out, err = run(["mine", str(data), *ARGS, "-o", ""])
    assert code == 2 and out == ""
    assert "empty path" in err and "directory" not in err


# --- #2 never overwrite the input, the ledger or the vocabulary ---------------------------


@pytest.mark.parametrize("victim", ["input", "input-symlink", "ledger", "ledger-head", "universe"])
def test_output_naming_another_file_of_the_run_is_a_usage_error(
    tmp_path: Path, data: Path, victim: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def must_not_read(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the data was read before the usage error")

    monkeypatch.setattr(dpfim.readers, "read_records", must_not_read)
    ledger = tmp_path / "l.jsonl"
    ledger.write_text("")
    (tmp_path / "l.jsonl.head").write_text("")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("milk\nbread\neggs\n")
    link = tmp_path / "alias.csv"
    link.symlink_to(data)
    target = {
        "input": data,
        "input-symlink": link,
        "ledger": ledger,
        "ledger-head": tmp_path / "l.jsonl.head",
        "universe": vocab,
    }[victim]
    before = {p: p.read_bytes() for p in (data, ledger, vocab)}
    extra = ["--ledger", str(ledger), "--budget-eps", "5", "--budget-delta", "1e-5"]
    if victim == "universe":
        extra = ["--universe-items", str(vocab)]
    code, out, err = run(["mine", str(data), *ARGS, *extra, "-o", str(target)])
    assert code == 2 and out == "", err
    assert "same file" in err and err.count("\n") == 1
    assert {p: p.read_bytes() for p in before} == before


def test_output_naming_the_file_on_stdin_is_a_usage_error(data: Path) -> None:
    before = data.read_bytes()
    with data.open("rb") as stdin:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "dpfim",
                "mine",
                "-",
                "--format",
                "basket",
                *ARGS,
                "-o",
                str(data),
            ],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=data.parent,
        )
    assert proc.returncode == 2 and "same file" in proc.stderr
    assert data.read_bytes() == before


# --- #10 stdout that cannot be written ----------------------------------------------------


def _mine_to(data: Path, stdout: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dpfim", "mine", str(data), *ARGS],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        cwd=data.parent,
    )


def test_a_closed_stdout_is_an_output_error(data: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "dpfim", "mine", str(data), *ARGS],
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        cwd=data.parent,
        preexec_fn=lambda: os.close(1),  # the shell's >&-
    )
    assert proc.returncode == 7, proc.stderr
    assert proc.stderr.count("\n") == 1 and "stdout is closed" in proc.stderr
    assert "internal error" not in proc.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_on_stdout_is_an_output_error(data: Path) -> None:
    with open("/dev/full", "w") as full:
        proc = _mine_to(data, full)
    assert proc.returncode == 7, proc.stderr
    assert proc.stderr.count("\n") == 1 and "No space left" in proc.stderr
    assert "internal error" not in proc.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_on_ledger_show_is_an_output_error(tmp_path: Path, data: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    code, _, err = run(
        [
            "mine",
            str(data),
            *ARGS,
            "--ledger",
            str(ledger),
            "--budget-eps",
            "2",
            "--budget-delta",
            "1e-5",
            "-o",
            str(tmp_path / "out.json"),
        ]
    )
    assert code == 0, err
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "dpfim", "ledger", "show", str(ledger)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            cwd=data.parent,
        )
    assert proc.returncode == 7 and "No space left" in proc.stderr


def test_dev_fd_1_with_stdout_closed_is_refused(data: Path) -> None:
    """The CLI parks /dev/null on a closed fd 1; -o /dev/fd/1 must not write there silently."""
    proc = subprocess.run(
        [sys.executable, "-m", "dpfim", "mine", str(data), *ARGS, "-o", "/dev/fd/1"],
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        cwd=data.parent,
        preexec_fn=lambda: os.close(1),
    )
    assert proc.returncode == 2 and "not open" in proc.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_on_a_full_disk_is_an_output_error(tmp_path: Path, args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "dpfim", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    assert proc.returncode == 7 and "No space left" in proc.stderr
    assert proc.stderr.count("\n") == 1
