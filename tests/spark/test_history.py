"""The history's Spark schema is the Parquet contract's, and bad input is refused before Spark
starts, with a message naming the file and the problem."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql import types as T
from pyspark.testing import assertDataFrameEqual

from spark_tasks.history import HISTORY_STRUCT, HistoryError, check_history, read_history
from spark_tasks.schema import HISTORY_SCHEMA

from .scenarios import T0, History, committed


def test_the_spark_schema_spells_out_the_parquet_contract_and_its_day_partition() -> None:
    long, integer, text, boolean = T.LongType(), T.IntegerType(), T.StringType(), T.BooleanType()

    def column(name: str, kind: T.DataType, nullable: bool = True) -> T.StructField:
        return T.StructField(name, kind, nullable)

    def structure(*fields: tuple[str, T.DataType]) -> T.StructType:
        return T.StructType([column(name, kind) for name, kind in fields])

    expected = T.StructType(
        [
            column("seq", long, False),
            column("prev_seq", long, False),
            column("group_id", text, False),
            column("type", text, False),
            column("at_ms", long, False),
            column("generation_id", integer),
            column("member_id", text),
            column("old_member_id", text),
            column("group_instance_id", text),
            column("from_state", text),
            column("to_state", text),
            column("reason", text),
            column("cause", text),
            column("cause_member_id", text),
            column("detail", text),
            column("protocol_type", text),
            column("protocol_name", text),
            column("leader_id", text),
            column("member_ids", T.ArrayType(text)),
            column("join_started_ms", long),
            column("rejoined", boolean),
            column("client_id", text),
            column("client_host", text),
            column("session_timeout_ms", integer),
            column("rebalance_timeout_ms", integer),
            column("protocols", T.ArrayType(text)),
            column(
                "assignment",
                T.ArrayType(
                    structure(("member_id", text), ("topic", text), ("partition", integer))
                ),
            ),
            column("partitions", T.ArrayType(structure(("topic", text), ("partition", integer)))),
            column(
                "offsets",
                T.ArrayType(structure(("topic", text), ("partition", integer), ("offset", long))),
            ),
            column("tombstoned", boolean),
            column("member_epoch", integer),
            column("previous_member_epoch", integer),
            column("day", text),
        ]
    )
    assert expected == HISTORY_STRUCT


def test_a_missing_input_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match=r"input directory .*/nowhere does not exist"):
        check_history(tmp_path / "nowhere")


def test_a_directory_with_no_parquet_file_but_spark_bookkeeping_is_empty(tmp_path: Path) -> None:
    (tmp_path / "_SUCCESS").touch()
    (tmp_path / "day=2026-11-24").mkdir()
    (tmp_path / "day=2026-11-24" / ".part-0.parquet.crc").touch()
    with pytest.raises(HistoryError, match=r"no Parquet files under .*expected .*day=YYYY-MM-DD"):
        check_history(tmp_path)


def test_a_corrupt_file_is_named(tmp_path: Path) -> None:
    day = tmp_path / "day=2026-11-24"
    day.mkdir()
    (day / "part-0.parquet").write_bytes(b"PAR1 this is not a Parquet file PAR1")
    with pytest.raises(HistoryError, match=r"day=2026-11-24/part-0.parquet is not a readable"):
        check_history(tmp_path)


def test_a_file_lacking_columns_or_with_another_type_is_named_with_the_column(
    tmp_path: Path,
) -> None:
    pq.write_table(pa.table({"seq": [1], "group_id": ["g"]}), tmp_path / "lacking.parquet")
    with pytest.raises(HistoryError, match=r"lacking.parquet does not have the history schema: "
                       r"it lacks the columns prev_seq, type, at_ms"):  # fmt: skip
        check_history(tmp_path)

    table = History()
    table.add(committed("g", 0, "m", 1))
    typed = table.table().set_column(0, "seq", pa.array(["1"], pa.string()))
    (tmp_path / "lacking.parquet").unlink()
    pq.write_table(typed, tmp_path / "typed.parquet")
    with pytest.raises(HistoryError, match=r"column seq is string, expected int64"):
        check_history(tmp_path)


def test_another_writers_history_passes_and_reads_with_its_day(
    spark: SparkSession, tmp_path: Path
) -> None:
    """List items named ``element``, no stored Arrow schema, an extra column: still the
    contract."""
    history = History()
    history.add(committed("g", 0, "m", 1), committed("g", 86_400_000, "m", 1))
    table = history.table()
    for day, rows in (("2026-11-24", table.slice(0, 1)), ("2026-11-25", table.slice(1, 1))):
        folder = tmp_path / f"day={day}"
        folder.mkdir()
        plain = rows.drop_columns(["day"]).append_column("note", pa.array(["x"]))
        pq.write_table(plain, folder / "part-0.parquet", store_schema=False)
    written = pq.read_schema(next(tmp_path.rglob("*.parquet"))).field("member_ids").type
    assert written.value_field.name == "element"
    assert HISTORY_SCHEMA.field("member_ids").type.value_field.name == "item"
    assert len(check_history(tmp_path)) == 2
    actual = read_history(spark, tmp_path).select("seq", "at_ms", "day")
    assertDataFrameEqual(actual, [Row(1, T0, "2026-11-24"), Row(2, T0 + 86_400_000, "2026-11-25")])
