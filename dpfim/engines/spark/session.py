"""Spark session start-up for the Spark engine: the session, quiet logs, the optional extra.

`session()` returns the active SparkSession or starts one (local[*] unless spark-submit or
--spark-master says otherwise) with Spark's console progress bars off, the web UI off for a
local run, and log4j at fatal (`_quiet_log4j`): a failed job reaches dpfim as an exception and
is printed as one line, not between Spark's stack traces. pyspark is imported only inside the
functions here, so dpfim imports without it; `require_pyspark` names the extra to install.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from dpfim.errors import ParameterError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INSTALL = "pip install 'dpfim[spark]'"
T = TypeVar("T")


def require_pyspark() -> None:
    """A usage error naming the extra when pyspark is not installed."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise ParameterError(f"--engine spark needs pyspark: {INSTALL}") from None


def session(master: str | None = None, conf: Mapping[str, str] | None = None) -> SparkSession:
    """The active SparkSession, or a new one: `master` (default local[*], or what spark-submit
    set) and extra configuration. Spark's console progress bars are off."""
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None and not conf:
        return active
    builder = SparkSession.builder.appName("dpfim")
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit
        master = "local[*]"
    if master is not None:
        builder = builder.master(master)
        if master.startswith("local") and "spark.pyspark.python" not in (conf or {}):
            builder = builder.config("spark.pyspark.python", sys.executable)
            # pyspark's SparkContext starts its workers with $PYSPARK_PYTHON, else `python3`
            # from PATH (the conf above is read only by spark-submit): without this, a dpfim
            # run from a virtualenv that is not activated crashed in every Python worker
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    if "spark.driver.extraJavaOptions" not in (conf or {}):
        # C1 only: the driver JVM starts 2x faster on a busy machine (C2 compiles compete for
        # the cores); dpfim's heavy work runs in Python, the JVM mostly moves bytes
        builder = builder.config(
            "spark.driver.extraJavaOptions", _quiet_log4j() + " -XX:TieredStopAtLevel=1"
        )
    if master is not None and master.startswith("local") and "spark.ui.enabled" not in (conf or {}):
        builder = builder.config("spark.ui.enabled", "false")  # a local run: no web UI to start
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return quiet(builder.getOrCreate)


_LOG4J = """rootLogger.level = fatal
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


def _quiet_log4j() -> str:
    """JVM options for a new driver JVM: Spark logs fatal errors only. Its default config
    prints warnings and every failed task's stack trace on stderr, around dpfim's one-line
    errors; a failed job still reaches dpfim as an exception (--debug shows Spark's trace)."""
    path = Path(tempfile.gettempdir()) / "dpfim-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J)
        tmp.replace(path)
    return f"-Dlog4j2.configurationFile={path.as_uri()}"


def quiet(call: Callable[[], T]) -> T:
    """Run a Spark call without pyspark's pandas-version FutureWarning (pandas >= 3 works for
    what dpfim does: arrow batches only)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
        return call()
