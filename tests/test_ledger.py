"""The persistent ledger: exact budgets, the hash chain, locking across real processes,
fail-closed crashes and unwritable ledgers."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from dpfim import ledger
from dpfim.cli import main
from dpfim.errors import BudgetError, LedgerError, ParameterError


def run(args: list[str]) -> tuple[int, str, str]:
    with CliRunner().isolation() as (out, err, *_):
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        return code, out.getvalue().decode(), err.getvalue().decode()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "baskets.csv"
    path.write_text("milk,bread\n" * 3000 + "tea\n" * 20)  # clears tau at eps = 0.2
    return path


def spend(path: Path, eps: str = "0.1", **kw: Any) -> ledger.DatasetState:
    fields: dict[str, Any] = {
        "path": str(path),
        "dataset": "orders",
        "eps": Fraction(eps),
        "delta": Fraction(1, 10**7),
        "mechanism": "lmm",
        "command": ["dpfim", "mine"],
        "budget_eps": Fraction(1),
        "budget_delta": Fraction(1, 10**6),
    }
    fields.update(kw)
    return ledger.reserve(ledger.Spend(**fields))


def test_ten_runs_at_a_tenth_fit_a_budget_of_one_exactly(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    for _ in range(10):
        st = spend(path)
    assert st.spent_eps == 1 and st.remaining_eps == 0 and st.runs == 10
    with pytest.raises(BudgetError, match="remaining eps=0"):
        spend(path)
    assert ledger.verify(str(path)) == 11  # one budget line + ten spends


def test_the_first_run_needs_a_budget_and_a_change_needs_raise_budget(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    with pytest.raises(ParameterError, match="no budget"):
        spend(path, budget_eps=None, budget_delta=None)
    spend(path)
    spend(path, budget_eps=None, budget_delta=None)  # later runs may omit the budget
    with pytest.raises(ParameterError, match="--raise-budget"):
        spend(path, budget_eps=Fraction(2))
    st = spend(path, budget_eps=Fraction(2), raise_budget=True)
    assert st.budget_eps == 2
    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert kinds == ["budget", "spend", "spend", "raise-budget", "spend"]


def test_lines_hold_no_data_derived_values(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    spend(path, note="weekly")
    entry = json.loads(path.read_text().splitlines()[-1])
    assert set(entry) == {
        "v",
        "seq",
        "prev",
        "time",
        "dataset",
        "kind",
        "eps",
        "delta",
        "mechanism",
        "command",
        "dpfim_version",
        "note",
    }


@pytest.mark.parametrize("damage", ["edit", "truncate", "garbage", "reorder"])
def test_verify_reports_the_first_broken_line(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "l.jsonl"
    for _ in range(4):
        spend(path)
    lines = path.read_bytes().split(b"\n")[:-1]
    if damage == "edit":
        lines[1] = lines[1].replace(b'"eps":"1/10"', b'"eps":"1/100"')
        expected = "l.jsonl:3"  # line 2's change breaks line 3's hash of it
        path.write_bytes(b"\n".join(lines) + b"\n")
    elif damage == "truncate":
        path.write_bytes(b"\n".join(lines)[:-10])
        expected = "l.jsonl:5: truncated"
    elif damage == "garbage":
        lines[2] = b"{not json"
        path.write_bytes(b"\n".join(lines) + b"\n")
        expected = "l.jsonl:3"
    else:
        lines[1], lines[2] = lines[2], lines[1]
        path.write_bytes(b"\n".join(lines) + b"\n")
        expected = "l.jsonl:2"
    with pytest.raises(LedgerError, match=expected):
        ledger.verify(str(path))
    code, _, err = run(["ledger", "verify", str(path)])
    assert code == 3 and expected in err


def test_a_damaged_ledger_stops_mine_with_exit_3(tmp_path: Path, data: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text('{"v":1}\n')
    code, out, err = run(
        [
            "mine",
            str(data),
            "--eps",
            "1",
            "--delta",
            "1e-7",
            "--ledger",
            str(path),
            "--budget-eps",
            "5",
            "--budget-delta",
            "1e-6",
        ]
    )
    assert code == 3 and out == "" and "l.jsonl:1" in err
    assert path.read_text() == '{"v":1}\n'  # never a silent reset


def test_cli_spends_and_refuses_with_exit_4(tmp_path: Path, data: Path) -> None:
    path = tmp_path / "l.jsonl"
    args = [
        "mine",
        str(data),
        "--eps",
        "0.6",
        "--delta",
        "1e-7",
        "--ledger",
        str(path),
        "--budget-eps",
        "1",
        "--budget-delta",
        "1e-6",
        "--dataset",
        "orders",
    ]
    code, out, err = run(args)
    assert code == 0, err
    assert json.loads(out)["itemset"] == ["bread", "milk"]
    code, out, err = run(args)
    assert code == 4 and out == ""
    assert err.strip().count("\n") == 0
    assert "requested eps=0.6" in err and "spent eps=0.6" in err and "remaining eps=0.4" in err
    code, out, _ = run(["ledger", "show", str(path), "--json"])
    assert code == 0
    assert json.loads(out)["orders"]["spent"] == {"eps": "0.6", "delta": "1e-7"}


@pytest.mark.parametrize(
    "extra",
    [
        ["--budget-eps", "1"],
        ["--ledger", "L", "--seed", "1"],
        ["--ledger", "L", "--budget-eps", "1"],
    ],
)
def test_ledger_option_conflicts_are_usage_errors(
    tmp_path: Path, data: Path, extra: list[str]
) -> None:
    extra = [str(tmp_path / "l.jsonl") if x == "L" else x for x in extra]
    code, out, err = run(["mine", str(data), "--eps", "1", "--delta", "1e-7", *extra])
    assert code == 2 and out == "" and "error" in err


def test_a_failing_writer_releases_nothing_and_leaves_a_valid_ledger(
    tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "l.jsonl"
    spend(path)
    before = path.read_bytes()

    def full_disk(fh: Any, chunk: bytes) -> None:
        fh.write(chunk[:7])  # a partial line, then the disk is full
        fh.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(ledger, "_append", full_disk)
    target = tmp_path / "out.json"
    code, out, err = run(
        [
            "mine",
            str(data),
            "--eps",
            "0.1",
            "--delta",
            "1e-7",
            "--ledger",
            str(path),
            "--dataset",
            "orders",
            "-o",
            str(target),
        ]
    )
    assert code == 5 and out == "" and "No space left" in err
    assert not target.exists()
    assert path.read_bytes() == before and ledger.verify(str(path)) == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_a_read_only_ledger_is_a_clean_error(tmp_path: Path, data: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    code, out, err = run(
        [
            "mine",
            str(data),
            "--eps",
            "1",
            "--delta",
            "1e-7",
            "--ledger",
            str(folder / "l.jsonl"),
            "--budget-eps",
            "1",
            "--budget-delta",
            "1e-6",
        ]
    )
    assert code == 5 and out == "" and "cannot open the ledger" in err


def test_a_ledger_path_that_cannot_be_opened_is_a_clean_error(tmp_path: Path, data: Path) -> None:
    """Works as root too: a directory in the way cannot be opened for writing."""
    blocker = tmp_path / "l.jsonl"
    blocker.mkdir()
    code, out, err = run(
        [
            "mine",
            str(data),
            "--eps",
            "1",
            "--delta",
            "1e-7",
            "--ledger",
            str(blocker),
            "--budget-eps",
            "1",
            "--budget-delta",
            "1e-6",
        ]
    )
    assert code == 5 and out == "" and "cannot open the ledger" in err


def _mine_process(
    data: Path, path: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dpfim",
            "mine",
            str(data),
            "--eps",
            "0.2",
            "--delta",
            "1e-7",
            "--ledger",
            str(path),
            "--dataset",
            "orders",
            "--budget-eps",
            "1",
            "--budget-delta",
            "1e-6",
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.slow
def test_sixteen_concurrent_processes_spend_exactly_the_budget(tmp_path: Path, data: Path) -> None:
    path = tmp_path / "l.jsonl"
    procs = [_mine_process(data, path) for _ in range(16)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        results.append((p.returncode, out, err))
    codes = sorted(code for code, _, _ in results)
    assert codes == [0] * 5 + [4] * 11, results
    for code, out, err in results:
        if code == 0:
            assert json.loads(out)["itemset"] == ["bread", "milk"]
        else:
            assert out == "" and "budget exhausted" in err
    st = ledger.load(str(path))["orders"]
    assert (st.runs, st.spent_eps, st.spent_delta) == (5, 1, Fraction(5, 10**7))
    assert ledger.verify(str(path)) == 6


@pytest.mark.slow
def test_sigkill_after_the_reservation_keeps_the_spend(tmp_path: Path, data: Path) -> None:
    path = tmp_path / "l.jsonl"
    env = {**os.environ, "DPFIM_TEST_PAUSE_AFTER_RESERVE": "30"}
    proc = _mine_process(data, path, env)
    deadline = time.monotonic() + 60
    while not (path.exists() and b"spend" in path.read_bytes()):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert out == ""  # nothing was released
    assert ledger.verify(str(path)) == 2
    assert ledger.load(str(path))["orders"].spent_eps == Fraction(1, 5)


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs Linux /proc")
def test_a_ledger_on_a_read_only_file_system_is_a_clean_error(data: Path) -> None:
    """/proc refuses new files even to root: a read-only path that CI's root user also hits."""
    target = "/proc/dpfim-ledger-test.jsonl"
    code, out, err = run(
        [
            "mine",
            str(data),
            "--eps",
            "1",
            "--delta",
            "1e-7",
            "--ledger",
            target,
            "--budget-eps",
            "1",
            "--budget-delta",
            "1e-6",
        ]
    )
    assert code == 5 and out == "" and "cannot open the ledger" in err
