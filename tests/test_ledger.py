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
from cli_run import run

import dpfim.api
import dpfim.readers
from dpfim import ledger
from dpfim.accounting import ApproxDP, Cost
from dpfim.errors import BudgetError, LedgerError, ParameterError
from dpfim.ledger import store


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "baskets.csv"
    path.write_text("milk,bread\n" * 3000 + "tea\n" * 20)  # clears tau at eps = 0.2
    return path


def _cost(eps: Fraction, delta: Fraction = Fraction(1, 10**7)) -> Cost:
    return Cost.of(ApproxDP(eps, delta), "replace")


def spend(path: Path, eps: str = "0.1", **kw: Any) -> ledger.DatasetState:
    fields: dict[str, Any] = {
        "path": str(path),
        "dataset": "orders",
        "cost": _cost(Fraction(eps)),
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
        "neighbours",
        "cost",
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
    shown = json.loads(out)  # one data set: one object (issue 20 #4)
    assert shown["dataset"] == "orders" and shown["accountant"] == "basic"
    assert shown["spent"]["basic"] == {"eps": 0.6, "delta": 1e-7}
    assert shown["remaining"] == {"eps": 0.4, "delta": 1e-6 - 1e-7}


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

    monkeypatch.setattr(store, "_append", full_disk)
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
            assert "counted" not in err and "recorded" not in err  # a refusal records nothing
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


# --- issue 10: budget before the data (#4), the chain's anchor (#5), ledger UX (#14) -------


def _mine_args(data: Path, path: Path, eps: str = "0.6", *extra: str) -> list[str]:
    return [
        "mine",
        str(data),
        "--eps",
        eps,
        "--delta",
        "1e-7",
        "--ledger",
        str(path),
        "--dataset",
        "orders",
        "-q",
        *extra,
    ]


BUDGET = ("--budget-eps", "1", "--budget-delta", "1e-6")


def _no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_read(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the data was read")

    monkeypatch.setattr(dpfim.readers, "read_records", must_not_read)


def test_an_exhausted_budget_stops_the_run_before_the_data_is_read(
    tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#4: the spend depends on public parameters only, so exit 4 needs no data."""
    path = tmp_path / "l.jsonl"
    code, _, err = run(_mine_args(data, path, "0.6", *BUDGET))
    assert code == 0, err
    before = (path.read_bytes(), Path(ledger.head_path(str(path))).read_bytes())
    _no_reading(monkeypatch)
    code, out, err = run(_mine_args(data, path, "0.6"))
    assert code == 4 and out == "" and "budget exhausted" in err
    assert (path.read_bytes(), Path(ledger.head_path(str(path))).read_bytes()) == before


def test_a_first_run_without_a_budget_fails_before_reading_and_creates_nothing(
    tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "l.jsonl"
    _no_reading(monkeypatch)
    code, out, err = run(_mine_args(data, path))
    assert code == 2 and out == "" and "no budget" in err
    assert not path.exists() and not Path(ledger.head_path(str(path))).exists()


def test_the_pre_check_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    spend(path, "0.5")
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir())
    fields: dict[str, Any] = {
        "path": str(path),
        "dataset": "orders",
        "cost": _cost(Fraction(1, 2)),
        "mechanism": "lmm",
        "command": ["dpfim"],
    }
    ledger.check(ledger.Spend(**fields))  # fits exactly: no error
    with pytest.raises(BudgetError):
        ledger.check(ledger.Spend(**{**fields, "cost": _cost(Fraction(6, 10))}))
    assert sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("damage", ["drop-last", "edit-last", "drop-all", "drop-head"])
def test_the_head_file_catches_a_rolled_back_tail(tmp_path: Path, damage: str) -> None:
    """#5: removing or editing the last spend used to verify "ok"."""
    path = tmp_path / "l.jsonl"
    for _ in range(3):
        spend(path)
    lines = path.read_bytes().split(b"\n")[:-1]
    if damage == "drop-last":
        path.write_bytes(b"\n".join(lines[:-1]) + b"\n")
        reason = "truncated"
    elif damage == "edit-last":
        lines[-1] = lines[-1].replace(b'"eps":"1/10"', b'"eps":"1/100"')
        path.write_bytes(b"\n".join(lines) + b"\n")
        reason = "l.jsonl:4: line 4 was rewritten"
    elif damage == "drop-all":
        path.write_bytes(b"")
        reason = "truncated"
    else:
        Path(ledger.head_path(str(path))).unlink()
        reason = "head file"
    with pytest.raises(LedgerError, match=reason):
        ledger.verify(str(path))
    code, out, err = run(["ledger", "verify", str(path)])
    assert code == 3 and out == "" and reason in err and err.count("\n") == 1
    with pytest.raises(LedgerError):  # and mine refuses to spend from it
        spend(path)


def test_ledger_head_prints_the_chain_head_and_verify_checks_it(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    spend(path)
    code, out, _ = run(["ledger", "head", str(path)])
    assert code == 0
    seq, sha = (part.split("=")[1] for part in out.split())
    assert seq == "2" and len(sha) == 64
    spend(path)  # the ledger grows: an earlier head stays in the chain
    assert run(["ledger", "verify", str(path), "--expect-head", sha])[0] == 0
    # roll back by rewriting ledger and head together from a copy taken before the spend
    lines = path.read_bytes().split(b"\n")[:-1]
    path.write_bytes(lines[0] + b"\n")
    head = json.dumps({"v": 1, "seq": 1, "sha256": store._line_hash(lines[0])})
    Path(ledger.head_path(str(path))).write_text(head + "\n")
    assert run(["ledger", "verify", str(path)])[0] == 0  # undetectable without an outside log
    code, _, err = run(["ledger", "verify", str(path), "--expect-head", sha])
    assert code == 3 and "not in the chain" in err


@pytest.mark.parametrize(
    "given", ["3f1c", "seq=2", "x" * 64, "0" * 63, "0" * 65, "", "sha256:" + "0" * 64]
)
def test_a_malformed_expected_head_is_a_usage_error_not_a_rollback(
    tmp_path: Path, given: str
) -> None:
    path = tmp_path / "l.jsonl"
    spend(path)
    code, out, err = run(["ledger", "verify", str(path), "--expect-head", given])
    assert code == 2 and out == ""
    assert err == (
        "dpfim: error: --expect-head must be a SHA-256 as `dpfim ledger head` prints it after "
        f"sha256= (64 hex digits), got {given!r}\n"
    )


def test_a_well_formed_expected_head_is_read_as_printed(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    spend(path)
    _, out, _ = run(["ledger", "head", str(path)])
    sha = out.split("sha256=")[1].strip()
    for given in (sha, sha.upper(), f"sha256={sha}", f" {sha}\n"):
        assert run(["ledger", "verify", str(path), "--expect-head", given])[0] == 0
    stale = "f" * 64  # well formed, not in the chain: the rollback diagnosis, exit 3
    code, _, err = run(["ledger", "verify", str(path), "--expect-head", stale])
    assert code == 3 and "not in the chain" in err and "rolled back" in err


def test_a_head_that_lags_after_a_crash_still_verifies(tmp_path: Path) -> None:
    """A crash between the fsynced append and the head update leaves the head one line behind."""
    path = tmp_path / "l.jsonl"
    spend(path)
    head = Path(ledger.head_path(str(path))).read_bytes()
    spend(path)
    Path(ledger.head_path(str(path))).write_bytes(head)
    assert ledger.verify(str(path)) == 3
    spend(path)  # the next spend moves the head on
    assert ledger.head(str(path)).seq == 4
    assert json.loads(Path(ledger.head_path(str(path))).read_text())["seq"] == 4


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--dataset", ""], "--dataset must not be empty"),
        (["--raise-budget"], "--raise-budget needs"),
    ],
)
def test_ledger_usage_errors_of_issue_10(
    tmp_path: Path, data: Path, extra: list[str], message: str
) -> None:
    path = tmp_path / "l.jsonl"
    args = ["mine", str(data), "--eps", "0.1", "--delta", "1e-7", "--ledger", str(path), *extra]
    code, out, err = run(args)
    assert code == 2 and out == "" and message in err


def test_stdin_with_a_ledger_needs_a_dataset_name(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    args = [
        "mine",
        "-",
        "--format",
        "basket",
        "--eps",
        "0.1",
        "--delta",
        "1e-7",
        "--ledger",
        str(path),
        *BUDGET,
    ]
    code, out, err = run(args)
    assert code == 2 and out == "" and "--dataset" in err
    assert not path.exists()


def test_a_budget_cannot_be_lowered_below_the_spend(tmp_path: Path, data: Path) -> None:
    path = tmp_path / "l.jsonl"
    assert run(_mine_args(data, path, "0.6", *BUDGET))[0] == 0
    lower = ("--raise-budget", "--budget-eps", "0.5", "--budget-delta", "1e-6")
    code, out, err = run(_mine_args(data, path, "0.1", *lower))
    assert code == 2 and out == "" and "cannot be lowered" in err and "eps=0.6" in err
    code, out, _ = run(["ledger", "show", str(path)])
    assert "=-" not in out  # never a negative remaining


def test_ledger_show_counts_runs_in_words_and_prints_decimals_eps_accepts(
    tmp_path: Path, data: Path
) -> None:
    path = tmp_path / "l.jsonl"
    budget = ("--budget-eps", "1.59", "--budget-delta", "1e-6")
    assert run(_mine_args(data, path, "1", *budget))[0] == 0
    code, out, _ = run(["ledger", "show", str(path)])
    assert code == 0 and "1 run;" in out and "eps=1.59" in out and "159/100" not in out
    remaining = out.split("remaining eps=")[1].split()[0]
    assert remaining == "0.59"
    code, _, err = run(_mine_args(data, path, remaining))  # what was printed is accepted back
    assert code == 0, err
    code, out, _ = run(["ledger", "show", str(path)])
    assert "2 runs;" in out and "remaining eps=0 " in out


def test_ledger_show_of_an_unknown_dataset_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    spend(path)
    code, out, err = run(["ledger", "show", str(path), "--dataset", "nope"])
    assert code == 2 and out == "" and "no data set 'nope'" in err and "orders" in err


def test_verify_on_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = run(["ledger", "verify", str(tmp_path / "missing.jsonl")])
    assert code == 2 and out == "" and "no such ledger file" in err


def test_verify_on_a_binary_file_names_line_1(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_bytes(bytes(range(256)) * 4)  # holds newlines (byte 10) and no final one
    code, out, err = run(["ledger", "verify", str(path)])
    assert code == 3 and out == "" and "l.jsonl:1:" in err


def test_a_ledger_from_before_head_files_is_adopted_once_with_init(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    spend(path)
    Path(ledger.head_path(str(path))).unlink()  # as written by dpfim before head files
    assert run(["ledger", "verify", str(path)])[0] == 3
    code, out, err = run(["ledger", "head", str(path), "--init"])
    assert code == 0 and out.startswith("seq=2 sha256="), err
    assert run(["ledger", "verify", str(path)])[0] == 0
    code, _, err = run(["ledger", "head", str(path), "--init"])  # an existing head is evidence
    assert code == 3 and "never replaced" in err


def test_a_crash_during_the_first_spend_leaves_a_lagging_head_not_a_missing_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head (seq 0) is written before the first line; a failure after the append lags."""
    path = tmp_path / "l.jsonl"
    real = store._write_head

    def crash_after_append(p: str, head: ledger.Head, mode: int) -> None:
        if head.seq > 0:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(p, head, mode)

    monkeypatch.setattr(store, "_write_head", crash_after_append)
    with pytest.raises(ledger.LedgerWriteError, match="the spend is recorded"):
        spend(path)
    monkeypatch.undo()
    assert ledger.verify(str(path)) == 2  # budget + spend, head still at seq 0
    assert ledger.load(str(path))["orders"].runs == 1
    spend(path)
    assert ledger.head(str(path)).seq == 3
