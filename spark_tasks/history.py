"""Reading the rebalance history (``spark_tasks.schema``) into Spark, and refusing bad input early.

Theory of operation
===================

``spark_tasks.schema.HISTORY_SCHEMA`` (pyarrow) is the one contract between the writers of the
history and the jobs. ``HISTORY_STRUCT`` is its Spark twin, derived from it column by column by a
converter that knows only the types the contract uses, so the two cannot drift apart and Spark
never infers a schema. The Hive partition column ``day`` is added as a string (Spark would
otherwise infer a date).

Spark reports bad input late (when the first job runs) and loudly (a JVM stack trace). So
before any Spark work, ``check_history`` looks at the input the way Spark will read it: every
file Spark would list (not starting with ``_`` or ``.``, in no folder that does) must be a
Parquet file whose footer pyarrow can read, holding every contract column with the contract's
type (extra columns are allowed and ignored). Only footers are read, so the check is cheap. The
first problem found is raised as ``HistoryError`` naming the file and the column.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from .schema import HISTORY_SCHEMA, PARTITION_COLUMN

__all__ = [
    "HISTORY_STRUCT",
    "HistoryError",
    "check_history",
    "history_groups",
    "read_history",
    "spark_type_of",
]


class HistoryError(ValueError):
    """The input is not a readable rebalance history; the message names the problem."""


def spark_type_of(arrow_type: pa.DataType) -> T.DataType:
    """The Spark type of one contract type (the few kinds HISTORY_SCHEMA uses)."""
    if pa.types.is_int64(arrow_type):
        return T.LongType()
    if pa.types.is_int32(arrow_type):
        return T.IntegerType()
    if pa.types.is_string(arrow_type):
        return T.StringType()
    if pa.types.is_boolean(arrow_type):
        return T.BooleanType()
    if pa.types.is_list(arrow_type):
        return T.ArrayType(spark_type_of(arrow_type.value_type), containsNull=True)
    if pa.types.is_struct(arrow_type):
        return T.StructType(
            [T.StructField(f.name, spark_type_of(f.type), nullable=True) for f in arrow_type]
        )
    raise TypeError(f"no Spark type for the history type {arrow_type}")


#: The history's Spark schema: HISTORY_SCHEMA's columns, then the ``day`` partition column.
HISTORY_STRUCT = T.StructType(
    [
        T.StructField(field.name, spark_type_of(field.type), nullable=field.nullable)
        for field in HISTORY_SCHEMA
    ]
    + [T.StructField(PARTITION_COLUMN, T.StringType(), nullable=True)]
)


def _type_text(arrow_type: pa.DataType) -> str:
    """A type as text, blind to list item names (``item`` or ``element``, writer's choice)."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return f"list<{_type_text(arrow_type.value_type)}>"
    if pa.types.is_struct(arrow_type):
        return "struct<" + ", ".join(f"{f.name}: {_type_text(f.type)}" for f in arrow_type) + ">"
    return str(arrow_type)


_EXPECTED = {field.name: _type_text(field.type) for field in HISTORY_SCHEMA}


def _hidden(part: str) -> bool:
    # Spark's InMemoryFileIndex skips these (_SUCCESS, .crc files, _temporary folders).
    return part.startswith(("_", "."))


def history_files(input_dir: str | Path) -> list[Path]:
    """The files Spark would read under ``input_dir``, sorted; HistoryError when there is no
    such directory or no file in it."""
    root = Path(input_dir)
    if not root.exists():
        raise HistoryError(f"input directory {root} does not exist")
    if not root.is_dir():
        raise HistoryError(f"input {root} is not a directory")
    files = sorted(
        path
        for path in root.rglob("*")
        if path.is_file() and not any(_hidden(part) for part in path.relative_to(root).parts)
    )
    if not files:
        raise HistoryError(
            f"no Parquet files under {root} (expected {root}/day=YYYY-MM-DD/*.parquet)"
        )
    return files


def check_file(path: Path) -> None:
    """HistoryError unless ``path`` is a Parquet file with every contract column."""
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise HistoryError(f"{path} is not a readable Parquet file: {exc}") from None
    found = {field.name: _type_text(field.type) for field in schema}
    missing = [name for name in _EXPECTED if name not in found]
    if missing:
        raise HistoryError(
            f"{path} does not have the history schema: it lacks the columns {', '.join(missing)}"
        )
    for name, expected in _EXPECTED.items():
        if found[name] != expected:
            raise HistoryError(
                f"{path} does not have the history schema: column {name} is {found[name]}, "
                f"expected {expected}"
            )


def check_history(input_dir: str | Path) -> list[Path]:
    """The history's files, each checked (``check_file``); HistoryError names the first problem."""
    files = history_files(input_dir)
    for path in files:
        check_file(path)
    return files


def history_groups(files: list[Path]) -> tuple[list[str], int]:
    """The history's groups (sorted) and its events, read by the driver from the files'
    ``group_id`` column alone (a dictionary of a few hundred names per file): what a Spark job
    over the whole history would have said, without a job."""
    groups: set[str] = set()
    events = 0
    for path in files:
        column = pq.read_table(path, columns=["group_id"]).column(0)
        events += len(column)
        groups.update(pc.unique(column).to_pylist())
    return sorted(groups), events


def read_history(spark: SparkSession, input_dir: str | Path) -> DataFrame:
    """The history as a DataFrame with ``HISTORY_STRUCT`` (call ``check_history`` first)."""
    return spark.read.schema(HISTORY_STRUCT).parquet(str(input_dir))
