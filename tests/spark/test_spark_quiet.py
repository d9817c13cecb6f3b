"""`-q` with `--engine spark`: Spark's own start-up lines stay off stderr (issue 23, point 2).

A new process, so that a new JVM starts (the shared test session would hide its start-up).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed")

pytestmark = pytest.mark.slow  # whole-file or Spark tests: CI runs them, the quick loop does not


REPO = Path(__file__).resolve().parents[2]


def test_quiet_spark_run_prints_nothing_on_stderr(tmp_path: Path) -> None:
    data = tmp_path / "b.dat"
    data.write_text("1 2\n" * 900)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = ["mine", str(data), "--eps", "1", "--delta", "1e-6", "--engine", "spark"]
    args += ["--spark-master", "local[1]", "-q"]
    done = subprocess.run(
        [sys.executable, "-m", "dpfim", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["itemset"] == ["1", "2"]
    assert done.stderr == ""
