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
