"""The analysis page in Chromium over a real report: a synthetic history from the engine
(``generate_history``), the Spark job run on it as the worker runs it, and its run recorded as
the worker records it; then what a visitor sees: the totals, a dot per rebalance, the causes,
the assignors compared, every group with a link to its own page, and, while a newer run is
under way, its progress bar and the Spark UI link."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from playwright.sync_api import Page, expect

from tests import ROOT
from tests.live_server import LiveServer
from webapp.simulation.history import generate_history

pytestmark = pytest.mark.slow


def assert_tables_fit(page: Page) -> None:
    """At the page's 1280 px, every table of the report fits its panel: no column (the
    counts beside long member ids) is cut off behind a scroll."""
    overflowing = page.evaluate(
        """() => [...document.querySelectorAll("table")]
            .filter((t) => t.offsetParent !== null)
            .filter((t) => {
                const wrap = t.parentElement;
                const right = wrap.getBoundingClientRect().right;
                return t.getBoundingClientRect().right > right + 1
                    || t.scrollWidth > wrap.clientWidth + 1;
            })
            .map((t) => t.dataset.testid)"""
    )
    assert overflowing == []
    who = page.get_by_test_id("top-members")
    for cell in who.locator("tbody tr:first-child td").all():
        box, panel = cell.bounding_box(), who.bounding_box()
        assert box is not None and panel is not None
        assert box["x"] + box["width"] <= panel["x"] + panel["width"] + 1


def test_the_analysis_page_draws_a_spark_report(
    server: LiveServer, page: Page, shots: Callable[[Page, str], Path], tmp_path: Path
) -> None:
    history = tmp_path / "history"
    generated = generate_history(history, 6_000, seed=3, jobs=1)
    output = tmp_path / "report"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "spark_tasks",
            "rebalance_report",
            "--input",
            str(history),
            "--output",
            str(output),
            "--master",
            "local[1]",
            "--no-ui",
        ],
        cwd=ROOT,
        check=True,
        timeout=300,
        capture_output=True,
    )
    summary = json.loads((output / "summary.json").read_text())
    server.manage(
        "shell",
        "-c",
        "import json, sys\n"
        "from django.utils import timezone\n"
        "from webapp.models import ReportRun\n"
        f"ReportRun.objects.create(status='succeeded', trigger='staff', finished_at=timezone.now(),"
        f" events_total={generated.events}, output_dir={str(output)!r},"
        f" summary=json.load(open({str(output / 'summary.json')!r})))\n",
    )

    page.goto(f"{server.url}/analysis/")
    status = page.get_by_test_id("report-status")
    expect(status).to_contain_text(f"over {generated.events:,} events")
    totals = page.get_by_test_id("report-totals")
    expect(totals).to_contain_text(f"{summary['totals']['rebalances']:,}")
    # A dot per rebalance that has a duration (it ended), the most recent 3,000.
    rebalances = pq.read_table(output / "rebalances", columns=["group_id", "duration_ms"])
    timed = [r for r in rebalances.to_pylist() if r["duration_ms"] is not None]
    assert 0 < len(timed) < 3_000
    assert page.locator('[data-testid="chart-durations"] .dots circle').count() == len(timed)
    cause_bars = page.locator('[data-testid="chart-causes"] rect')
    causes = {c for g in summary["groups"].values() for c, n in g["causes"].items() if n}
    assert cause_bars.count() == len(causes)
    assert page.locator('[data-testid="chart-assignor-moved"] rect').count() == len(
        summary["assignors"]
    )
    groups = page.locator('[data-testid="report-groups"] tbody tr')
    assert groups.count() == len(summary["groups"])
    # The four ways to rebalance side by side, those without rebalances in this history too.
    protocols = page.locator('[data-testid="protocols"] tbody tr')
    four = ("eager", "cooperative", "handoff", "consumer")
    others = sorted(set(summary["protocols"]) - set(four))
    assert protocols.count() == len(four) + len(others)
    for row, (key, label) in enumerate(
        zip(
            (*four, *others),
            (
                "eager (classic)",
                "cooperative (KIP-429)",
                "handoff (seed 004)",
                "consumer (KIP-848)",
                *others,
            ),
            strict=True,
        )
    ):
        cells = protocols.nth(row).locator("td")
        expect(cells.nth(0)).to_have_text(label)
        figures = summary["protocols"].get(key)
        expect(cells.nth(1)).to_have_text(f"{figures['rebalances'] if figures else 0:,}")
    expect(page.get_by_test_id("report-progress")).to_be_hidden()
    assert_tables_fit(page)
    shots(page, "all-groups")

    busiest = max(summary["groups"], key=lambda g: summary["groups"][g]["rebalances"])
    page.locator(f'[data-testid="report-groups"] a:text-is("{busiest}")').click()
    page.wait_for_url(f"**/analysis/groups/{busiest}/")
    expect(page.get_by_test_id("report-totals")).to_contain_text(
        f"{summary['groups'][busiest]['rebalances']:,}"
    )
    points = page.locator('[data-testid="chart-durations"] .dots circle')
    assert points.count() == len([r for r in timed if r["group_id"] == busiest])
    assert_tables_fit(page)
    shots(page, "one-group")

    server.manage(
        "shell",
        "-c",
        "from django.utils import timezone\n"
        "from webapp.models import ReportRun\n"
        "ReportRun.objects.create(status='running', started_at=timezone.now(),"
        " spark_master='local[2]', spark_ui_url='http://127.0.0.1:4040',"
        " progress={'phase': 'writing rebalances', 'stages_done': 3, 'stages_total': 8,"
        " 'tasks_done': 6, 'tasks_total': 24, 'ui_url': 'http://127.0.0.1:4040'})\n",
    )
    page.goto(f"{server.url}/analysis/")
    progress = page.get_by_test_id("report-progress")
    expect(progress).to_be_visible()
    expect(progress).to_contain_text("writing rebalances: stage 3 of 8, 6 of 24 tasks")
    expect(page.get_by_test_id("spark-ui-link")).to_have_attribute("href", "http://127.0.0.1:4040")
    width = page.locator(".progress-fill").evaluate("node => node.style.width")
    assert width == "25%"
    expect(page.get_by_test_id("report-status")).to_contain_text("is running on Spark")
    shots(page, "running")
