"""Two rebalance reports compared, table by table (``bench/report_diff.py`` prints it; the
tests compare reports made with different settings by it).

Every table of ``rebalance_report.TABLES`` is read whole from both directories (pyarrow): its
schemas (column names, order, types and nullability) must be the same, and its rows, sorted on
every column (a table's row order is Spark's partitioning, not part of the
report), are compared row for row: texts, integers and booleans exactly, floats to 1e-9
relative (a sum's last digits depend on the order Spark adds in). ``summary.json`` is compared
whole, except ``generated_at`` and ``input.path``, floats likewise.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from .rebalance_report import TABLES

__all__ = ["RELATIVE_TOLERANCE", "report_differences", "same", "table_rows"]

RELATIVE_TOLERANCE = 1e-9


def same(a: Any, b: Any) -> bool:
    """Equal, floats (at any depth) to ``RELATIVE_TOLERANCE``."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(
            a, b, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _sort_key(row: dict[str, Any]) -> str:
    """A key on every column, floats rounded (last-digit noise must not reorder rows)."""

    def plain(value: Any) -> Any:
        if isinstance(value, float):
            return round(value, 6)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return json.dumps(plain(row), sort_keys=True, default=str)


def table_rows(report: Path, table: str) -> list[dict[str, Any]]:
    """A table's rows in an order of their own."""
    return sorted(pq.read_table(report / table).to_pylist(), key=_sort_key)


def _summary(report: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((report / "summary.json").read_text())
    data.pop("generated_at", None)
    data.get("input", {}).pop("path", None)
    return data


def report_differences(old: Path, new: Path) -> dict[str, str | None]:
    """Per table, and ``summary.json``: None when the two reports agree, else what differs
    first (row counts, or the first differing row of each)."""
    return {
        **{table: _table_difference(old, new, table) for table in TABLES},
        "summary.json": None if same(_summary(old), _summary(new)) else "differs",
    }


def _table_difference(old: Path, new: Path, table: str) -> str | None:
    schema_a, schema_b = pq.read_schema(_a_file(old / table)), pq.read_schema(_a_file(new / table))
    if not schema_a.equals(schema_b):
        return f"schemas differ:\n  {schema_a.to_string()}\n  {schema_b.to_string()}"
    a, b = table_rows(old, table), table_rows(new, table)
    if len(a) != len(b):
        return f"{len(a):,} rows against {len(b):,}"
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not same(x, y):
            return f"row {i} of {len(a):,} differs:\n  {x}\n  {y}"
    return None


def _a_file(table: Path) -> Path:
    """One Parquet file of a table's folder (Spark writes its schema into every one)."""
    return next(iter(sorted(table.glob("*.parquet"))))
