"""Compare two rebalance reports table by table: ``report_diff.py OLD NEW``.

Every table of ``spark_tasks.rebalance_report.TABLES`` is read whole from both directories
(pyarrow), its rows sorted on every column (a table's row order is Spark's partitioning, not
part of the report), and compared row for row: texts, integers and booleans exactly, floats to
1e-9 relative (a sum's last digits depend on the order Spark adds in). ``summary.json`` is
compared whole, except ``generated_at`` and ``input.path``, floats likewise. Prints one line
per table and exits 1 on any difference, naming the first differing row.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spark_tasks.rebalance_report import TABLES  # noqa: E402

REL = 1e-9


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=REL, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _key(row: dict[str, Any]) -> str:
    """A sort key on every column (floats rounded, so last-digit noise does not reorder)."""

    def plain(value: Any) -> Any:
        if isinstance(value, float):
            return round(value, 6)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return json.dumps(plain(row), sort_keys=True, default=str)


def rows(directory: Path, table: str) -> list[dict[str, Any]]:
    return sorted(pq.read_table(directory / table).to_pylist(), key=_key)


def summary(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / "summary.json").read_text())
    data.pop("generated_at", None)
    data.get("input", {}).pop("path", None)
    return data


def main() -> int:
    old, new = (Path(arg) for arg in sys.argv[1:3])
    failed = False
    for table in TABLES:
        a, b = rows(old, table), rows(new, table)
        if len(a) != len(b):
            print(f"{table}: {len(a):,} rows against {len(b):,}")
            failed = True
            continue
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if not _same(x, y):
                print(f"{table}: row {i} differs:\n  {x}\n  {y}")
                failed = True
                break
        else:
            print(f"{table}: {len(a):,} rows, equal")
    same = _same(summary(old), summary(new))
    print(f"summary.json: {'equal' if same else 'DIFFERS'}")
    return 1 if failed or not same else 0


if __name__ == "__main__":
    sys.exit(main())
