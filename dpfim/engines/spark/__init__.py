"""records -> exact supports on Apache Spark (`pip install 'dpfim[spark]'`). No privacy here.

The engine in four modules along its seams, data flowing one way:

    session.py   start-up: the SparkSession, quiet logs, the optional extra (driver)
    read.py      input -> cached blocks of records, truncated (runs on the executors)
    count.py     blocks -> partial supports, merged on the cluster (runs on the executors)
    driver.py    SparkCounts (the `Counts` contract, top down), planning, error translation,
                 and ENGINE, the engine table's entry

The driver never holds a record: it plans, ships module-level functions to the executors and
receives supports. Importing this package imports no pyspark (dpfim works without the extra);
pyspark is imported inside the functions that start or use a session.
"""

from __future__ import annotations

from dpfim.engines.spark.driver import ENGINE, SparkCounts, SparkInput, check_source, count_file
from dpfim.engines.spark.session import INSTALL, require_pyspark, session

__all__ = [
    "ENGINE",
    "INSTALL",
    "SparkCounts",
    "SparkInput",
    "check_source",
    "count_file",
    "require_pyspark",
    "session",
]
