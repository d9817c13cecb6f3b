"""What else than the released JSON a run puts out (issue 23): stderr, notes, files, signals.

On a file that parses, only the release and lines derived from it or from public parameters
may depend on the data (SPEC §5); every test here runs the real CLI (tests/cli_run.py) and
asserts exit code and stderr separately.
"""

from __future__ import annotations

import gzip
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

EPS = ["--eps", "1", "--delta", "1e-6"]
NOTE_LINE = (  # the text, byte for byte
    "dpfim: note: read as baskets, one record a line; a file with a header and a record-id "
    "column needs --record-col/--item-col\n"
)


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _long_looking(tmp_path: Path, first: str, name: str) -> Path:
    """A two-column file whose first line decides today's "looks like long format" guess."""
    rows = [f"{i % 300},milk" for i in range(900)]
    rows += ["7,bread"] * 600
    return _write(tmp_path / name, [first, *rows])


def test_quiet_prints_nothing_on_neighbouring_files(tmp_path: Path) -> None:
    """Replacing the first line (a header, or a record) toggled a warning that -q did not stop."""
    d = _long_looking(tmp_path, "customer,item", "d.csv")
    d2 = _long_looking(tmp_path, "milk,bread", "d2.csv")
    for path in (d, d2):
        code, out, err = run(["mine", str(path), *EPS, "-q"])
        assert code == 0
        assert json.loads(out)["schema"] == "dpfim.result/1"
        assert err == ""


def test_data_dependent_warnings_only_with_verbose(tmp_path: Path) -> None:
    """Record statistics (no usable records; delta >= 1/n) are curator-only, behind -v."""
    tiny = _write(tmp_path / "t.dat", ["1", "2"])  # n = 2 < 1/delta; no record has r items
    code, out, err = run(["mine", str(tiny), "--eps", "1", "--delta", "0.6"])
    assert code == 0 and json.loads(out)["itemset"] is None
    assert "usable" not in err and "1/n" not in err and "curator" not in err
    assert "no 2-itemset was certified" in err  # derived from the release: public
    code, out, err = run(["mine", str(tiny), "--eps", "1", "--delta", "0.6", "-v"])
    assert code == 0
    assert "warning (curator-only, not private): no usable records" in err
    assert "at least 1/n" in err
    code, out, err = run(["mine", str(tiny), "--eps", "1", "--delta", "0.6", "-q"])
    assert code == 0 and err == ""


def test_long_format_guess_is_curator_only(tmp_path: Path) -> None:
    d = _long_looking(tmp_path, "customer,item", "d.csv")
    code, _, err = run(["mine", str(d), *EPS])
    assert code == 0 and "looks like long format" not in err
    code, _, err = run(["mine", str(d), *EPS, "-v"])
    assert code == 0 and "warning (curator-only, not private)" in err
    assert "looks like long format" in err


def test_quiet_and_verbose_together_are_a_usage_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "b.dat", ["1 2"] * 10)
    code, out, err = run(["mine", str(path), *EPS, "-q", "-v"])
    assert code == 2 and out == ""
    assert err.startswith("dpfim: error: --quiet and --verbose") and err.count("\n") == 1


def test_a_csv_read_as_baskets_gets_the_same_public_note(tmp_path: Path) -> None:
    """Issue 23 point 3: the note is printed and byte-identical for a headerless basket file
    and for a four-column long file mined without --record-col/--item-col."""
    baskets = _write(tmp_path / "baskets.csv", ["milk,bread"] * 900 + ["tea"] * 20)
    long4 = _write(
        tmp_path / "orders.tsv",
        ["order\tcustomer\titem\tprice"] + [f"{i}\t{i % 50}\twhole milk\t1.5" for i in range(300)],
    )
    notes = []
    for path in (baskets, long4):
        code, out, err = run(["mine", str(path), *EPS])
        assert code == 0 and json.loads(out)["params"]["format"] == "basket"
        notes.append([line for line in err.splitlines(keepends=True) if "note:" in line])
    assert notes[0] == notes[1] == [NOTE_LINE]
    gz = tmp_path / "baskets.csv.gz"
    gz.write_bytes(gzip.compress(baskets.read_bytes()))
    code, _, err = run(["mine", str(gz), *EPS])
    assert code == 0 and NOTE_LINE in err  # named by the name without its compression suffix


@pytest.mark.parametrize(
    "extra",
    [["--format", "basket"], ["-q"], ["--record-col", "c", "--item-col", "i"]],
    ids=["format-basket", "quiet", "long-columns"],
)
def test_the_note_is_left_out_when_the_format_is_named(tmp_path: Path, extra: list[str]) -> None:
    path = _write(tmp_path / "x.csv", ["c,i"] + ["1,milk", "1,bread"] * 500)
    code, _, err = run(["mine", str(path), *EPS, *extra])
    assert code == 0, err
    assert "note:" not in err


def test_no_note_for_extensions_that_name_their_format(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.dat", ["1 2"] * 900)
    code, _, err = run(["mine", str(path), *EPS])
    assert code == 0 and "note:" not in err


def test_evaluate_prints_the_note_unless_quiet(tmp_path: Path) -> None:
    path = _write(tmp_path / "x.csv", ["milk,bread"] * 50)
    args = ["evaluate", str(path), "--eps", "1", "--mechanisms", "lmm", "--trials", "2"]
    code, _, err = run([*args, "--seed", "1"])
    assert code == 0 and NOTE_LINE in err and "NOT PRIVATE" in err
    code, _, err = run([*args, "--seed", "1", "-q"])
    assert code == 0 and "note:" not in err and "NOT PRIVATE" in err


def test_a_zst_file_names_its_compression_not_an_empty_extension(tmp_path: Path) -> None:
    path = tmp_path / "data.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd")
    code, out, err = run(["mine", str(path), *EPS])
    assert code == 2 and out == ""
    assert "zstd-compressed input is not supported" in err and "(none)" not in err


def _gz(path: Path, text: str = "milk,bread\n" * 20) -> Path:
    path.write_bytes(gzip.compress(text.encode()))
    return path


def test_gzip_bytes_on_stdin_ask_for_compression_not_a_file_name(tmp_path: Path) -> None:
    data = _gz(tmp_path / "d.gz").read_bytes()
    code, out, err = run(["mine", "-", "--format", "basket", *EPS], stdin=data)
    assert code == 3 and out == ""
    assert err == (
        "dpfim: error: <stdin>:1: not valid UTF-8 (byte 0x8b); it looks gzip-compressed and "
        "stdin is read as it is: pass --compression gzip\n"
    )
    code, _, err = run(["mine", "-", "--format", "basket", "--compression", "none", *EPS], data)
    assert code == 3 and "stdin is read as it is: pass --compression gzip" in err
    code, _, err = run(["mine", "-", "--format", "basket", "--compression", "gzip", *EPS], data)
    assert code == 0, err


def test_a_gz_file_read_with_compression_none_names_the_option(tmp_path: Path) -> None:
    path = _gz(tmp_path / "d.csv.gz")
    code, out, err = run(["mine", str(path), "--compression", "none", *EPS])
    assert code == 3 and out == ""
    assert err == (
        f"dpfim: error: {path}:1: not valid UTF-8 (byte 0x8b); it looks gzip-compressed and "
        "--compression none reads it as it is: leave --compression out (the .gz name decides) "
        "or pass --compression gzip\n"
    )
    long_args = ["--format", "long", "--record-col", "a", "--item-col", "b"]
    code, _, err = run(["mine", str(path), "--compression", "none", *long_args, *EPS])
    assert code == 3 and "--compression none reads it as it is" in err


def test_a_file_compressed_twice_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "d.csv.gz"
    path.write_bytes(gzip.compress(gzip.compress(b"milk,bread\n")))
    code, _, err = run(["mine", str(path), *EPS])
    assert code == 3
    assert "still looks gzip-compressed after gzip decompression (compressed twice?)" in err
    assert "name the file" not in err


def test_gzip_bytes_in_a_plain_name_still_suggest_the_name(tmp_path: Path) -> None:
    path = _gz(tmp_path / "d.csv")
    code, _, err = run(["mine", str(path), *EPS])
    assert code == 3
    assert err.endswith("it looks gzip-compressed: name the file .gz or pass --compression gzip\n")


def test_a_vocabulary_disjoint_from_the_data_says_what_the_run_does(tmp_path: Path) -> None:
    data = _write(tmp_path / "d.dat", ["1 2"] * 20)
    vocab = _write(tmp_path / "v.txt", ["x", "y", "z"])
    code, out, err = run(
        ["mine", str(data), *EPS, "--universe-items", str(vocab), "-v", "--mechanism", "lmm"]
    )
    assert code == 0
    assert json.loads(out)["itemset"] is not None  # a zero-count pick is named
    assert "almost surely none" not in err
    assert "uniformly random itemset of the declared vocabulary" in err


# --- point 4: no lost files ------------------------------------------------------------------


def _ledger(tmp_path: Path, data: Path) -> Path:
    path = tmp_path / "spent.jsonl"
    args = ["mine", str(data), *EPS, "--ledger", str(path), "--dataset", "d"]
    code, _, err = run([*args, "--budget-eps", "5", "--budget-delta", "1e-5", "-q"])
    assert code == 0, err
    return path


def _pairs(tmp_path: Path) -> Path:
    return _write(tmp_path / "p.dat", ["1 2"] * 900 + ["3"] * 20)


@pytest.mark.parametrize("which", ["ledger", "head", "ledger-without-head"])
def test_output_onto_a_ledger_is_a_usage_error(tmp_path: Path, which: str) -> None:
    """-o L.jsonl without --ledger replaced the ledger (exit 0; ledger verify then failed)."""
    data = _pairs(tmp_path)
    ledger = _ledger(tmp_path, data)
    target = Path(f"{ledger}.head") if which == "head" else ledger
    if which == "ledger-without-head":  # recognised by its first line alone
        other = tmp_path / "copy.jsonl"
        other.write_bytes(ledger.read_bytes())
        target = other
    before = target.read_bytes()
    code, out, err = run(["mine", str(data), *EPS, "-o", str(target)])
    assert code == 2 and out == ""
    assert err.startswith(f"dpfim: error: -o {target} is a dpfim ledger") and err.count("\n") == 1
    assert target.read_bytes() == before
    assert run(["ledger", "verify", str(ledger)])[0] == 0


@pytest.mark.parametrize("flag", ["--csv", "--plot"])
def test_evaluate_outputs_onto_a_ledger_are_usage_errors(tmp_path: Path, flag: str) -> None:
    data = _pairs(tmp_path)
    ledger = _ledger(tmp_path, data)
    target = ledger
    if flag == "--plot":  # --plot must end in .png: a ledger named so is still refused
        target = tmp_path / "l.png"
        target.write_bytes(ledger.read_bytes().split(b"\n")[0] + b"\n")
    before = target.read_bytes()
    args = ["evaluate", str(data), "--mechanisms", "lmm", "--trials", "1", flag, str(target)]
    code, out, err = run(args)
    assert code == 2 and out == ""
    assert err.startswith(f"dpfim: error: {flag} {target} is a dpfim ledger")
    assert target.read_bytes() == before


def test_an_ordinary_json_file_is_still_replaced(tmp_path: Path) -> None:
    data = _pairs(tmp_path)
    out_file = _write(tmp_path / "top.json", ['{"v": 1, "note": "an old result"}'])
    code, out, err = run(["mine", str(data), *EPS, "-o", str(out_file), "-q"])
    assert code == 0 and out == "" and err == ""
    assert json.loads(out_file.read_text())["itemset"] == ["1", "2"]


def test_a_full_disk_while_writing_the_ledger_head_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    from dpfim.ledger import store

    class FullDisk:  # the ledger store's `os`, with a disk that is full
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        def write(self, fd: int, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store, "os", FullDisk())
    data = _pairs(tmp_path)
    path = tmp_path / "new.jsonl"
    args = ["mine", str(data), *EPS, "--ledger", str(path), "--dataset", "d"]
    code, out, err = run([*args, "--budget-eps", "5", "--budget-delta", "1e-5"])
    assert code == 5 and out == ""
    assert "No space left on device" in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.jsonl", "p.dat"]


def _default_signals() -> None:
    """In the child, before exec: SIGHUP, SIGTERM and SIGINT as cron or systemd leave them. A
    suite run under `nohup` ignores SIGHUP (a script's background job, SIGINT), an ignored
    signal is inherited, and dpfim leaves it alone (an embedding program's choice): the SIGHUP
    test then waited 30 s for nothing and failed."""
    import signal

    for signum in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)  # Python installs its own SIGINT handler on start


def _paused_after_the_spend(
    tmp_path: Path, args: list[str], ledger: Path, **popen: Any
) -> subprocess.Popen[str]:
    """`dpfim ARGS` in a child process, returned once its spend is in the ledger and it waits
    (DPFIM_TEST_PAUSE_AFTER_RESERVE) after the fsync."""
    env = {**os.environ, "DPFIM_TEST_PAUSE_AFTER_RESERVE": "30"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpfim", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        preexec_fn=_default_signals,
        **popen,
    )
    deadline = time.monotonic() + 60
    while not (ledger.exists() and b"spend" in ledger.read_bytes()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(0.2)  # let it reach the pause after the fsync
    return proc


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [(15, 143, "terminated (SIGTERM)"), (1, 129, "hung up (SIGHUP)")],
    ids=["SIGTERM", "SIGHUP"],
)
def test_sigterm_and_sighup_say_what_was_charged(
    tmp_path: Path, signum: int, code: int, said: str
) -> None:
    """What cron, systemd and timeout send: one line, the spend named, no output file."""

    data = _pairs(tmp_path)
    ledger = tmp_path / "l.jsonl"
    result = tmp_path / "top.json"
    args = ["mine", str(data), "--eps", "0.5", "--delta", "1e-7", "-q", "-o", str(result)]
    args += ["--ledger", str(ledger), "--dataset", "d", "--budget-eps", "1", "--budget-delta"]
    args += ["1e-6"]
    proc = _paused_after_the_spend(tmp_path, args, ledger)
    try:
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:  # never leave the child to the next test
            proc.kill()
            proc.communicate()
    assert proc.returncode == code
    assert out == ""
    assert err == f"dpfim: {said}; the spend of eps=0.5, delta=1e-7 stays counted in {ledger}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["l.jsonl", "l.jsonl.head", "p.dat"]


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [(15, 143, "terminated (SIGTERM)"), (2, 130, "interrupted")],
    ids=["SIGTERM", "SIGINT"],
)
def test_a_signal_to_the_whole_group_of_a_rules_run_says_one_line(
    tmp_path: Path, signum: int, code: int, said: str
) -> None:
    """`dpfim rules` forks a child that loads mlxtend while the input is read. systemd and
    Ctrl-C signal the whole process group: the child stays silent and goes, the parent says
    its one line."""
    import os
    import signal
    import time

    data = _pairs(tmp_path)
    ledger = tmp_path / "l.jsonl"
    args = ["rules", str(data), "--eps", "0.5", "--delta", "1e-7", "-q", "--top", "2"]
    args += ["--ledger", str(ledger), "--dataset", "d", "--budget-eps", "1", "--budget-delta"]
    args += ["1e-6"]
    proc = _paused_after_the_spend(tmp_path, args, ledger, start_new_session=True)
    os.killpg(proc.pid, signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == code
    assert out == ""
    assert err.count("\n") == 1 and err.startswith(f"dpfim: {said}"), err
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):  # nothing of the group is left running
        os.killpg(proc.pid, signal.SIGKILL)


def test_rules_without_its_worker_give_the_same_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forked worker is an optimisation: a child that dies at once (or cannot answer)
    leaves the parent to compute the rules itself, with the same result."""
    import os

    from dpfim import rules

    data = _pairs(tmp_path)
    args = [
        "rules",
        str(data),
        "--eps",
        "4",
        "--delta",
        "1e-6",
        "--seed",
        "2",
        "--top",
        "2",
        "--mechanism",
        "lmm",
    ]
    monkeypatch.setattr(rules, "_loaded", lambda: False)  # fork even if mlxtend is loaded here
    answered = []
    real = rules._Worker.records

    def records(self: object, closure: object, request: object) -> object:
        got = real(self, closure, request)  # type: ignore[arg-type]
        answered.append(got is not None)
        return got

    monkeypatch.setattr(rules._Worker, "records", records)
    code, want, err = run([*args, "--compact"])
    assert code == 0, err
    assert answered == [True]  # the child answered
    monkeypatch.setattr(rules, "_serve", lambda conn: os._exit(0))
    code, got, err = run([*args, "--compact"])
    assert code == 0, err
    assert answered == [True, False]  # the dead child did not, the parent computed them
    strip = lambda text: {k: v for k, v in json.loads(text).items() if k != "created"}  # noqa: E731
    assert strip(got) == strip(want) and json.loads(got)["rules"]


def test_the_no_cap_warning_comes_before_reading(tmp_path: Path) -> None:
    """--max-record-items none: a run that never ends (here: stdin kept open) has shown it."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    args = ["mine", "-", "--format", "basket", *EPS, "--max-record-items", "none"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpfim", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    assert proc.stdin and proc.stdout and proc.stderr
    with proc:
        try:
            proc.stdin.write(b"milk,bread\n" * 10)
            proc.stdin.flush()  # and kept open: reading cannot end
            ready, _, _ = select.select([proc.stderr], [], [], 30)
            assert ready, "nothing on stderr while stdin is open"
            first = proc.stderr.readline()
            assert first.startswith(b"dpfim: warning: --max-record-items none keeps whole")
            assert proc.poll() is None  # still reading
        finally:
            proc.stdin.close()
            try:
                proc.wait(timeout=60)  # stdout stays small: the pipe cannot fill
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
        out, rest = proc.stdout.read(), proc.stderr.read()
    assert proc.returncode == 0
    assert b"--max-record-items none" not in rest  # once
    assert json.loads(out)["params"]["max_record_items"] == "none"


def test_the_no_cap_warning_is_silenced_by_quiet_and_shown_by_rules(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.dat", ["1 2"] * 20)
    cap = ["--max-record-items", "none"]
    code, _, err = run(["mine", str(path), *EPS, *cap, "-q"])
    assert code == 0 and err == ""
    code, _, err = run(["mine", str(path), *EPS, *cap, "--seed", "1"])
    assert code == 0
    seed, warning, *_ = err.splitlines()
    assert "--seed" in seed and warning.startswith("dpfim: warning: --max-record-items none")
    code, _, err = run(["rules", str(path), *EPS, *cap])
    assert code == 0 and err.startswith("dpfim: warning: --max-record-items none")
    code, _, err = run(["mine", str(path), *EPS])  # the default cap: no warning
    assert code == 0 and "--max-record-items" not in err


def test_verbose_timings_are_never_negative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counting done when the engine opens (item supports, numba's import) came before the
    mechanism's clock started and was subtracted from it all the same: `time mechanism: -0.064
    s`. Here that opening takes 0.2 s and the mechanism far less."""
    from dpfim.engines import local

    real = local.SupportIndex._item_supports

    def slow(self: local.SupportIndex) -> Any:
        time.sleep(0.2)
        return real(self)

    monkeypatch.setattr(local.SupportIndex, "_item_supports", slow)
    path = _write(tmp_path / "d.dat", ["1 2 3"] * 50 + ["2 4"] * 10)
    code, _, err = run(["mine", str(path), *EPS, "-v"])
    assert code == 0, err
    times = {
        line.split("time ")[1].split(":")[0]: float(line.rsplit(":", 1)[1].split()[0])
        for line in err.splitlines()
        if "] time " in line
    }
    assert set(times) == {"read", "count", "mechanism"}
    assert all(t >= 0 for t in times.values()), times
    assert times["count"] >= 0.2  # the opening's counting is still in the counting time


@pytest.mark.parametrize(
    ("name", "command"), [("data.zip", "unzip -p"), ("data.7z", "7z x -so"), ("d.lz4", "lz4 -dc")]
)
def test_unsupported_compression_hints_name_a_command_that_exists(
    tmp_path: Path, name: str, command: str
) -> None:
    """The hint is a command that writes the decompressed bytes to stdout: `zip -dc` and
    `7z -dc` (what it said before) are no such commands (issue 33)."""
    path = tmp_path / name
    path.write_bytes(b"PK\x03\x04")
    code, out, err = run(["mine", str(path), *EPS])
    assert code == 2 and out == ""
    assert f"`{command} {path} | dpfim mine - --format FORMAT ...`" in err


def _dpfim_into_a_closed_pipe(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run `python -m dpfim ARGS` with stdout a pipe whose reading end is already closed (what
    `dpfim ... | true` gives when `true` has exited), so every write fails with EPIPE."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "dpfim", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--version"],
        ["mine", "--help"],
        ["ledger", "--help"],
        ["evaluate", "SAMPLE", "--eps", "1", "--delta", "1e-6", "--trials", "1", "-q"],
    ],
)
def test_every_command_whose_output_cannot_be_written_exits_7(args: list[str]) -> None:
    """click answers EPIPE with exit 1 (our code for a bug) and no message; evaluate printed
    through click as well. Each is now exit 7 with one line, as `mine` was (issue 33)."""
    sample = str(Path(__file__).resolve().parent.parent / "sample_data" / "groceries_sample.csv")
    got = _dpfim_into_a_closed_pipe([sample if a == "SAMPLE" else a for a in args])
    lines = [x for x in got.stderr.decode().splitlines() if x.startswith("dpfim: error")]
    assert got.returncode == 7, got.stderr.decode()
    assert len(lines) == 1 and "cannot write" in lines[0] and "Traceback" not in got.stderr.decode()


def test_evaluate_with_stdout_closed_exits_7_without_pointing_at_a_missing_option() -> None:
    """`dpfim evaluate ... >&-` exited 0 with its table gone nowhere (issue 33)."""
    sample = str(Path(__file__).resolve().parent.parent / "sample_data" / "groceries_sample.csv")
    got = subprocess.run(
        [sys.executable, "-m", "dpfim", "evaluate", sample, *EPS, "--trials", "1", "-q"],
        stderr=subprocess.PIPE,
        pass_fds=(),
        preexec_fn=lambda: os.close(1),  # the child's own fd 1, before exec
        timeout=120,
    )
    err = got.stderr.decode()
    assert got.returncode == 7, err
    assert "stdout is closed" in err and "-o FILE" not in err
