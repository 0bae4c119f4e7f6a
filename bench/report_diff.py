"""Compare two rebalance reports: ``report_diff.py OLD NEW`` (``spark_tasks.compare`` says
how: every table row for row in an order of its own, floats to 1e-9 relative, and
summary.json). Prints one line per table and exits 1 on any difference, naming the first
differing row of each table that differs."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spark_tasks.compare import report_differences  # noqa: E402


def main() -> int:
    old, new = (Path(arg) for arg in sys.argv[1:3])
    found = report_differences(old, new)
    for name, difference in found.items():
        print(f"{name}: {difference or 'equal'}")
    return 1 if any(found.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
