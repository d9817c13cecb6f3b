"""--engine: without pyspark, --engine spark is a one-line usage error naming the extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpfim.cli import main


def test_engine_spark_without_pyspark_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark now raises ImportError
    path = tmp_path / "b.csv"
    path.write_text("a,b\n")
    runner = CliRunner()
    with runner.isolation() as (out, err, *_):
        with pytest.raises(SystemExit) as exc:
            main(["mine", str(path), "--eps", "1", "--delta", "1e-6", "--engine", "spark"])
        assert exc.value.code == 2
        assert out.getvalue() == b""
        message = err.getvalue().decode()
    assert message.count("\n") == 1
    assert "pip install 'dpfim[spark]'" in message


@pytest.mark.parametrize("engine", ["local", "spark"])
@pytest.mark.parametrize("command", ["mine", "evaluate"])
def test_a_format_the_engine_does_not_read_is_a_usage_error(
    engine: str, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine that does not read a format refuses it with exit 2 and one line naming the
    engine and what it reads, before any data is read and before a Spark session starts."""
    from dpfim import engines
    from dpfim.engines.spark import driver

    def no_session(*_: object, **__: object) -> None:
        raise AssertionError("a session was started")

    monkeypatch.setattr(driver, "session", no_session)
    monkeypatch.setattr(engines.get(engine), "formats", frozenset({"basket", "long", "jsonl"}))
    path = tmp_path / "b.dat"
    path.write_text("1 2\n1 2 3\n")
    args = [command, str(path), "--eps", "1", "--delta", "1e-6", "--engine", engine]
    runner = CliRunner()
    with runner.isolation() as (out, err, *_):
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code == 2
        assert out.getvalue() == b""
        message = err.getvalue().decode()
    refused = f"--engine {engine} does not read --format fimi (it reads basket, long, jsonl)"
    assert message == f"dpfim: error: {refused}\n"
    assert "Traceback" not in message
