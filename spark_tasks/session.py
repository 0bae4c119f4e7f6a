"""The SparkSession every job runs in.

Where the master comes from, first match wins:

1. the ``master`` argument (tests pass ``local[1]``);
2. the ``SPARK_MASTER`` environment variable (``local[*]``, ``spark://host:7077``, ...);
3. under ``spark-submit``, whatever its ``--master`` said (PySpark then finds the JVM through
   ``PYSPARK_GATEWAY_PORT``; the builder leaves ``spark.master`` alone);
4. ``local[*]``.

Every session computes in UTC (``spark.sql.session.timeZone``), so a day is the same day as in
the history's ``day`` partitions whatever the machine's zone. Logging is turned down to
``log_level`` and the console progress bar is off: a job's own output is its report and, when
asked, the progress file (``spark_tasks.progress``). When this process launches the JVM (not
under spark-submit), the driver also gets ``spark_tasks/log4j2.properties``, which keeps
Spark's start-up chatter (logged before ``log_level`` applies) to errors and silences the
banner PySpark's gateway prints as a shell ("Setting default log level to ...").
``ui_enabled=None`` leaves ``spark.ui.enabled`` to Spark (on by default; its URL is what the
progress file reports); tests turn it off.

The driver's heap (``spark.driver.memory``; in local mode the driver is also the executor) is
``memory``, else ``SPARK_DRIVER_MEMORY``, else ``DEFAULT_DRIVER_MEMORY`` (4 GB): with Spark's
own default (1 GB) or 2 GB, the rebalance report on ten million events runs out of memory in
its per-event windows, which hold a whole group's events at a time. It only counts when this
process launches the JVM; under spark-submit the JVM already runs, and spark-submit's
``--driver-memory`` says it. The same goes for the driver JVM's options (``java_options``,
by default ``spark_tasks.tuning.default_java_options()``: the collector and the class
archive; a report passes those its history's size calls for; spark-submit's
``--driver-java-options``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from .tuning import default_java_options

__all__ = [
    "DEFAULT_DRIVER_MEMORY",
    "DEFAULT_MASTER",
    "build_session",
    "driver_memory",
]

DEFAULT_MASTER = "local[*]"
DEFAULT_DRIVER_MEMORY = "4g"
LOG4J_CONFIGURATION = Path(__file__).with_name("log4j2.properties")
_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def _under_spark_submit() -> bool:
    # spark-submit starts the JVM first and tells PySpark where it listens.
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


def _master(master: str | None) -> str | None:
    if master:
        return master
    if os.environ.get("SPARK_MASTER"):
        return os.environ["SPARK_MASTER"]
    if _under_spark_submit():
        return None  # its --master stands
    return DEFAULT_MASTER


def driver_memory(given: str | None = None) -> str:
    """The driver heap a session launched here gets (see the module docstring)."""
    return given or os.environ.get("SPARK_DRIVER_MEMORY") or DEFAULT_DRIVER_MEMORY


def build_session(
    app_name: str,
    *,
    master: str | None = None,
    ui_enabled: bool | None = None,
    log_level: str = "ERROR",
    memory: str | None = None,
    java_options: str | None = None,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A SparkSession for ``app_name`` (an existing one in this process is reused by Spark)."""
    builder = SparkSession.builder.appName(app_name)
    chosen = _master(master)
    if chosen is not None:
        builder = builder.master(chosen)
    settings = {
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.log.level": log_level,
    }
    if ui_enabled is not None:
        settings["spark.ui.enabled"] = "true" if ui_enabled else "false"
    settings.update(conf or {})
    if not _under_spark_submit():
        settings.setdefault("spark.driver.memory", driver_memory(memory))
        given = settings.get(_JAVA_OPTIONS, "")
        settings[_JAVA_OPTIONS] = (
            f"-Dlog4j2.configurationFile={LOG4J_CONFIGURATION} "
            f"{java_options or default_java_options()} {given}"
        ).strip()
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark
