"""``/api/analysis`` and the analysis pages over report runs made by hand: the newest run
(progress while it runs), the newest succeeded report's summary, and the rebalances and storms
read from its Parquet tables, all groups or one (tests/webapp/housekeeping/test_report.py
makes a real report with Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient
from django.utils import timezone

from webapp.analysis import results
from webapp.models import ReportRun

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

SUMMARY = {
    "input": {"events": 10},
    "parameters": {"storm_count": 3, "storm_window_ms": 60000},
    "totals": {"rebalances": 3},
    "groups": {"a": {"rebalances": 2}, "b": {"rebalances": 1}},
}


def write_tables(output: Path) -> None:
    (output / "rebalances").mkdir(parents=True)
    (output / "storms").mkdir()
    pq.write_table(
        pa.table(
            {
                "group_id": ["a", "b", "a"],
                "start_ms": [3_000, 2_000, 1_000],
                "duration_ms": [30, 20, 10],
                "cause": ["member_left", "member_joined", "member_joined"],
            }
        ),
        output / "rebalances" / "part-0.parquet",
    )
    pq.write_table(
        pa.table({"group_id": ["a"], "first_start_ms": [1_000], "rebalances": [2]}),
        output / "storms" / "part-0.parquet",
    )


async def test_no_run_yet(client: AsyncClient) -> None:
    body = (await client.get("/api/analysis")).json()
    assert body == {"run": None, "report": None, "rebalances": [], "storms": []}


@pytest.fixture
def client() -> AsyncClient:
    return AsyncClient()


async def test_the_newest_report_and_the_run_under_way(
    client: AsyncClient, tmp_path: Path, monkeypatch: Any
) -> None:
    write_tables(tmp_path / "run-1")
    done = await sync_to_async(ReportRun.objects.create)(
        status=ReportRun.Status.SUCCEEDED,
        finished_at=timezone.now(),
        summary=SUMMARY,
        output_dir=str(tmp_path / "run-1"),
    )
    running = await sync_to_async(ReportRun.objects.create)(
        status=ReportRun.Status.RUNNING,
        progress={"tasks_done": 3, "tasks_total": 9},
        spark_ui_url="http://127.0.0.1:4040",
    )
    body = (await client.get("/api/analysis")).json()
    assert body["run"]["id"] == running.pk
    assert body["run"]["progress"] == {"tasks_done": 3, "tasks_total": 9}
    assert body["run"]["spark_ui_url"] == "http://127.0.0.1:4040"
    assert body["report"]["run_id"] == done.pk
    assert body["report"]["summary"] == SUMMARY
    assert [(r["group_id"], r["start_ms"]) for r in body["rebalances"]] == [
        ("a", 1_000),
        ("b", 2_000),
        ("a", 3_000),
    ]
    assert body["storms"] == [{"group_id": "a", "first_start_ms": 1_000, "rebalances": 2}]

    group = (await client.get("/api/analysis/groups/a")).json()
    assert group["report"]["summary"]["group"] == {"rebalances": 2}
    assert "groups" not in group["report"]["summary"]
    assert [r["start_ms"] for r in group["rebalances"]] == [1_000, 3_000]

    # At most MAX_POINTS rebalances, the most recent, in time order.
    monkeypatch.setattr(results, "MAX_POINTS", 2)
    capped = (await client.get("/api/analysis")).json()
    assert [r["start_ms"] for r in capped["rebalances"]] == [2_000, 3_000]


async def test_the_pages_render_for_all_groups_and_one(client: AsyncClient) -> None:
    page = await client.get("/analysis/")
    assert page.status_code == 200
    assert b"Rebalance analysis" in page.content
    one = await client.get("/analysis/groups/orders%2Fv2/")
    assert one.status_code == 200
    assert b'href="/groups/orders/v2/"' in one.content
    housekeeping = await client.get("/housekeeping/")
    assert housekeeping.status_code == 200
    group_page = await client.get("/groups/orders/")
    assert b'href="/analysis/groups/orders/"' in group_page.content


async def test_a_report_of_the_four_modes_reaches_the_page_whole(
    client: AsyncClient, tmp_path: Path
) -> None:
    """The consumer protocol's rebalances (KIP-848) are plotted like the others, and the
    summary's comparison of the four modes is the page's as the report wrote it."""
    output = tmp_path / "run-1"
    (output / "rebalances").mkdir(parents=True)
    (output / "storms").mkdir()
    pq.write_table(
        pa.table(
            {
                "group_id": ["classic", "c"],
                "start_ms": [1_000, 2_000],
                "duration_ms": [300, 400],
                "cause": ["member_joined", "member_joined"],
                "protocol_name": ["range", "uniform"],
                "rebalance_protocol": ["eager", "consumer"],
                "unavailable_partition_ms": [600, 300],
            }
        ),
        output / "rebalances" / "part-0.parquet",
    )
    pq.write_table(
        pa.table(
            {"group_id": pa.array([], pa.string()), "first_start_ms": pa.array([], pa.int64())}
        ),
        output / "storms" / "part-0.parquet",
    )
    protocols = {
        mode: {"rebalances": n, "duration_ms": {"p50": 1.0, "p95": 2.0, "max": 3}}
        for mode, n in (("eager", 1), ("cooperative", 0), ("handoff", 0), ("consumer", 1))
    }
    summary = {**SUMMARY, "protocols": protocols, "assignors": {"uniform (consumer)": {}}}
    await sync_to_async(ReportRun.objects.create)(
        status=ReportRun.Status.SUCCEEDED,
        finished_at=timezone.now(),
        summary=summary,
        output_dir=str(output),
    )
    body = (await client.get("/api/analysis")).json()
    # The four, whole (a JSON object's keys have no order: PostgreSQL's jsonb sorts them; the
    # page orders the modes itself, protocols.js).
    assert body["report"]["summary"]["protocols"] == protocols
    assert [
        (r["group_id"], r["rebalance_protocol"], r["protocol_name"], r["unavailable_partition_ms"])
        for r in body["rebalances"]
    ] == [("classic", "eager", "range", 600), ("c", "consumer", "uniform", 300)]
    one = (await client.get("/api/analysis/groups/c")).json()
    assert [r["rebalance_protocol"] for r in one["rebalances"]] == ["consumer"]
