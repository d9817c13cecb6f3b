"""One local[2] SparkSession for the whole test run (JVM start-up is the slow part)."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

pyspark = pytest.importorskip(
    "pyspark", reason="pyspark is not installed (pip install 'dpfim[spark]' or '.[test]')"
)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    # the workers start with $PYSPARK_PYTHON or `python3` from PATH (the conf below is read by
    # spark-submit only): this interpreter, also when its virtualenv is not activated
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
        session = (
            SparkSession.builder.master("local[2]")
            .appName("dpfim-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.pyspark.python", sys.executable)
            .config("spark.driver.memory", "1g")
            .getOrCreate()
        )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
