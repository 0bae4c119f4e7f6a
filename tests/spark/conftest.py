"""One small SparkSession for every Spark test (Spark's testing guide): ``local[1]``, no UI, two
shuffle partitions, and a JVM that compiles with C1 only (a short run never earns C2's
optimisations back), so a test of a transform on a dozen rows takes about a second."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_tasks.session import build_session
from spark_tasks.tuning import C1_ONLY


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session(
        "spark_tasks-tests",
        master="local[1]",
        ui_enabled=False,
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "1",
            "spark.driver.extraJavaOptions": C1_ONLY,
        },
    )
    yield session
    session.stop()
