"""``GET /metrics`` (webapp.dashboard.metrics): the per-group text its fast writer produces is
byte for byte what prometheus_client's ``generate_latest`` writes for the same families; a
served runtime's groups, counters and requests read back from a scrape; who may scrape."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.http import HttpResponse
from django.test import AsyncClient, RequestFactory
from django_celery_results.models import TaskResult
from prometheus_client import generate_latest
from prometheus_client.core import CollectorRegistry, Metric
from prometheus_client.registry import Collector

from coordinator_engine import MemberIdentity
from tests.engine.consumer_harness import ConsumerContext
from tests.engine.harness import Context
from tests.engine.test_handoff import HandoffContext
from tests.webapp.helpers import (
    Client,
    commit_offsets,
    hold_the_reload,
    inject_engine_fault,
    stable_group,
)
from webapp.dashboard import metrics as metrics_module
from webapp.dashboard.metrics import (
    GROUP_STATES,
    GroupSample,
    group_families,
    metrics,
    parse_counts,
    write_groups,
)
from webapp.runtime.clock import ManualClock
from webapp.runtime.control import compact_log
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.runtime.metrics import RebalanceCounts

Counts = dict[tuple[str, tuple[tuple[str, str], ...]], float]


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Any:
        return iter(self.families)


def _samples(coords_and_counts: list[tuple[Any, RebalanceCounts]]) -> list[GroupSample]:
    samples = []
    for lag, (coord, counts) in enumerate(coords_and_counts):
        for summary in coord.group_summaries():
            samples.append(
                GroupSample(summary, lag * 1_234_567, counts.groups.get(summary.group_id))
            )
    return samples


def _counting(coord: Any) -> RebalanceCounts:
    counts = RebalanceCounts(coord.group_kind)
    coord.add_listener(counts.on_event)
    return counts


def test_the_fast_writer_writes_what_generate_latest_writes() -> None:
    classic = Context()
    classic_counts = _counting(classic.coord)
    _leader, follower, _ = classic.stable_group_of_two()
    classic.leave(MemberIdentity(member_id=follower))
    classic.sleep(0)
    # A group id that needs escaping in a label value, a group without counters.
    odd = Context()
    odd.stable_group_of_one(group_id='a "quoted"\\group\nid')
    handoff = HandoffContext()
    handoff_counts = _counting(handoff.coord)
    handoff.join("a")
    handoff.settle("a")
    handoff.sleep(20)
    handoff.join("b")
    handoff.sleep(1000)
    handoff.settle("a", "b")
    consumer = ConsumerContext(topics={"foo": 4})
    consumer_counts = _counting(consumer.coord)
    consumer.join("m1")
    consumer.join("m2")
    samples = _samples(
        [
            (classic.coord, classic_counts),
            (odd.coord, RebalanceCounts(odd.coord.group_kind)),
            (handoff.coord, handoff_counts),
            (consumer.coord, consumer_counts),
        ]
    )
    assert {s.summary.kind for s in samples} == {"classic", "handoff", "consumer"}
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(group_families(samples)))
    expected = generate_latest(registry).decode()
    assert write_groups(samples) == expected
    # And what it says, read back by Prometheus' own parser.
    counts = parse_counts(expected)
    state = ("group", "groupId"), ("kind", "classic"), ("protocol", "range")
    name = "rebalance_lab_group_state"
    # The follower left: the group waits for its leader to rejoin.
    assert counts[(name, (*state, (name, "PreparingRebalance")))] == 1
    assert counts[(name, (*state, (name, "Stable")))] == 0
    assert counts[("rebalance_lab_group_lag_records", state)] == 0
    assert (
        counts[
            (
                "rebalance_lab_members_removed_total",
                (("group", "groupId"), ("kind", "classic"), ("reason", "left")),
            )
        ]
        == 1
    )
    handoff_labels = (("group", "handoff-group"), ("kind", "handoff"))
    assert counts[("rebalance_lab_rebalance_duration_seconds_count", handoff_labels)] == 2
    le_1 = (*handoff_labels, ("le", "1.0"))
    assert counts[("rebalance_lab_rebalance_duration_seconds_bucket", le_1)] == 2  # 0 s, 1 s
    assert (
        counts[
            (
                "rebalance_lab_group_lag_records",
                (("group", "handoff-group"), ("kind", "handoff"), ("protocol", "")),
            )
        ]
        == 2 * 1_234_567
    )


def test_every_kind_s_state_set_has_all_its_states() -> None:
    assert GROUP_STATES["classic"] == (
        "CompletingRebalance",
        "Dead",
        "Empty",
        "PreparingRebalance",
        "Stable",
    )
    assert set(GROUP_STATES["consumer"]) == {"Empty", "Assigning", "Reconciling", "Stable", "Dead"}
    assert "Closing" in GROUP_STATES["handoff"]


# ---------------------------------------------------------------- served


@pytest.fixture
def http() -> AsyncClient:
    return AsyncClient()


async def scrape(http: AsyncClient, **headers: str) -> Counts:
    response = await http.get("/metrics", headers=headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return parse_counts(response.content.decode())


def labels(**values: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(values.items()))


#: The labels of stable_group's group, as a scrape reads it.
MY_GROUP = {"group": "my-group", "kind": "classic", "protocol": "range"}


@pytest.mark.asyncio
async def test_a_scrape_reads_the_groups_their_counters_and_the_requests(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient, clock: ManualClock
) -> None:
    await runtime.create_topic("orders", 2, produce_rate_per_s=10)
    member = await stable_group(ws)
    clock.advance(2000)  # the log ends at 20 records per partition
    committed = await commit_offsets(ws, member, [{"topic": "orders", "partition": 0, "offset": 5}])
    assert committed["partitions"][0]["error_code"] == 0
    counts = await scrape(http)
    group = {"group": "my-group", "kind": "classic", "protocol": "range"}
    state = "rebalance_lab_group_state"
    assert counts[(state, labels(**group, rebalance_lab_group_state="Stable"))] == 1
    for other in ("Empty", "PreparingRebalance", "CompletingRebalance", "Dead"):
        assert counts[(state, labels(**group, rebalance_lab_group_state=other))] == 0
    assert counts[("rebalance_lab_group_generation", labels(**group))] == 1
    assert counts[("rebalance_lab_group_members", labels(**group))] == 1
    assert counts[("rebalance_lab_group_lag_records", labels(**group))] == 20 - 5
    counted = {"group": "my-group", "kind": "classic"}
    assert counts[("rebalance_lab_rebalances_total", labels(**counted, cause="member_joined"))] == 1
    assert counts[("rebalance_lab_rebalance_duration_seconds_count", labels(**counted))] == 1
    websocket = {"transport": "websocket"}
    assert counts[("rebalance_lab_requests_total", labels(api="JoinGroup", **websocket))] == 2
    assert counts[("rebalance_lab_requests_total", labels(api="SyncGroup", **websocket))] == 1
    errors = "rebalance_lab_response_errors_total"
    assert counts[(errors, labels(api="JoinGroup", error="MEMBER_ID_REQUIRED"))] == 1
    assert counts[(errors, labels(api="JoinGroup", error="NONE"))] == 1
    assert counts[(errors, labels(api="OffsetCommit", error="NONE"))] == 1
    assert counts[("rebalance_lab_coordinator_serving", ())] == 1
    assert counts[("rebalance_lab_engine_faults_total", ())] == 0
    assert counts[("rebalance_lab_log_size_bytes", ())] > 0
    assert ("rebalance_lab_event_loop_lag_seconds_count", ()) in counts
    assert ("process_cpu_seconds_total", ()) in counts


@pytest.mark.asyncio
async def test_a_scraper_that_accepts_gzip_gets_the_same_text_gzipped(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient
) -> None:
    await stable_group(ws)
    plain = await http.get("/metrics")
    zipped = await http.get("/metrics", headers={"Accept-Encoding": "gzip"})
    assert zipped["Content-Encoding"] == "gzip"
    assert "Content-Encoding" not in plain
    text = gzip.decompress(zipped.content).decode()
    # Two scrapes differ in the process's own numbers (CPU, the loop's lag), not in the groups.
    groups = [line for line in text.splitlines() if 'group="my-group"' in line]
    assert groups == [
        line for line in plain.content.decode().splitlines() if 'group="my-group"' in line
    ]
    assert len(groups) > 10


@pytest.mark.asyncio
async def test_a_deleted_group_s_series_go_with_it(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient
) -> None:
    member = await stable_group(ws, "short-lived")
    await stable_group(ws, "staying")
    before = await scrape(http)
    assert any(dict(key[1]).get("group") == "short-lived" for key in before)
    left = await ws.call(
        "LeaveGroup", {"group_id": "short-lived", "members": [{"member_id": member}]}
    )
    assert left["error_code"] == 0
    deleted = await ws.call("DeleteGroups", {"group_ids": ["short-lived"]})
    assert deleted["results"][0]["error_code"] == 0
    after = await scrape(http)
    assert not any(dict(key[1]).get("group") == "short-lived" for key in after)
    assert any(dict(key[1]).get("group") == "staying" for key in after)


async def scrape_from(address: str, **headers: str) -> HttpResponse:
    """The view's answer to a GET from ``address`` (Django's request factory sets the
    client's address; the async test client always says 127.0.0.1)."""
    request = RequestFactory().get("/metrics", REMOTE_ADDR=address, headers=headers)
    return await metrics(request)


@pytest.mark.asyncio
async def test_without_a_token_only_loopback_clients_may_scrape(
    runtime: CoordinatorRuntime, settings: Any
) -> None:
    settings.REBALANCE_LAB_METRICS_TOKEN = ""
    assert (await scrape_from("127.0.0.1")).status_code == 200
    assert (await scrape_from("::1")).status_code == 200
    refused = await scrape_from("10.1.2.3")
    assert refused.status_code == 403
    assert json.loads(refused.content)["error"]["code"] == "metrics_loopback_only"


@pytest.mark.asyncio
async def test_with_a_token_every_client_must_bear_it(
    runtime: CoordinatorRuntime, settings: Any
) -> None:
    settings.REBALANCE_LAB_METRICS_TOKEN = "s3cret"
    refused = await scrape_from("127.0.0.1")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"].startswith("Bearer")
    wrong = await scrape_from("127.0.0.1", Authorization="Bearer guess")
    assert wrong.status_code == 401
    allowed = await scrape_from("10.1.2.3", Authorization="Bearer s3cret")
    assert allowed.status_code == 200
    assert b"rebalance_lab_coordinator_serving 1.0" in allowed.content


@pytest.mark.asyncio
async def test_only_get_is_served(runtime: CoordinatorRuntime, http: AsyncClient) -> None:
    response = await http.post("/metrics")
    assert response.status_code == 405


#: Where the shipped Grafana dashboard is.
DASHBOARD = Path(__file__).resolve().parents[3] / "docs" / "grafana-dashboard.json"


def exprs(node: Any) -> list[str]:
    """Every ``expr`` (and templating ``query``/``definition``) string in a Grafana JSON."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "definition") and isinstance(value, str):
                found.append(value)
            elif key == "query" and isinstance(value, dict) and "query" in value:
                found.append(value["query"])
            else:
                found.extend(exprs(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(exprs(item))
    return found


@pytest.mark.asyncio
async def test_every_metric_the_grafana_dashboard_reads_is_exported(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient
) -> None:
    await stable_group(ws)
    response = await http.get("/metrics")
    exported = set()
    for line in response.content.decode().splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            exported.add(name)
            if kind == "histogram":
                exported |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    queries = exprs(json.loads(DASHBOARD.read_text()))
    assert len(queries) >= 16
    read = {name for query in queries for name in re.findall(r"rebalance_lab_\w+", query)}
    assert read, queries
    assert read - exported == set()
    # Every per-group family of the scrape is on the dashboard somewhere.
    assert {
        "rebalance_lab_group_state",
        "rebalance_lab_rebalances_total",
        "rebalance_lab_rebalance_duration_seconds_bucket",
        "rebalance_lab_partitions_moved_total",
        "rebalance_lab_partition_unavailable_seconds_total",
        "rebalance_lab_members_removed_total",
        "rebalance_lab_group_lag_records",
    } <= read


@pytest.mark.asyncio
async def test_a_scrape_reads_the_groups_a_slice_at_a_time_and_misses_none(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metrics_module, "READ_SLICE", 2)
    for index in range(5):
        await stable_group(ws, f"group-{index}")
    counts = await scrape(http)
    members = {
        dict(labels)["group"]: value
        for (name, labels), value in counts.items()
        if name == "rebalance_lab_group_members"
    }
    assert members == {f"group-{index}": 1 for index in range(5)}


@pytest.mark.asyncio
async def test_an_engine_fault_shows_while_the_engine_reloads_and_after(
    runtime: CoordinatorRuntime,
    ws: Client,
    http: AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await stable_group(ws)
    reload_may_finish = hold_the_reload(monkeypatch, runtime)
    inject_engine_fault(monkeypatch, runtime, "advance")
    runtime.tick()
    recovering = await scrape(http)
    assert recovering[("rebalance_lab_coordinator_serving", ())] == 0
    assert recovering[("rebalance_lab_engine_faults_total", ())] == 1
    assert not any(name == "rebalance_lab_group_members" for name, _ in recovering)
    reload_may_finish.set()
    assert runtime.reload_task is not None
    await runtime.reload_task
    serving = await scrape(http)
    assert serving[("rebalance_lab_coordinator_serving", ())] == 1
    assert serving[("rebalance_lab_engine_faults_total", ())] == 1
    assert serving[("rebalance_lab_group_members", labels(**MY_GROUP))] == 1


@pytest.mark.asyncio
async def test_a_compaction_is_counted_with_when_it_ended(
    runtime: CoordinatorRuntime, ws: Client, http: AsyncClient
) -> None:
    member = await stable_group(ws)
    for offset in range(5):  # superseded commits: records the compaction drops
        await commit_offsets(ws, member, [{"topic": "orders", "partition": 0, "offset": offset}])
    before = await scrape(http)
    assert before[("rebalance_lab_log_compactions_total", ())] == 0
    assert ("rebalance_lab_log_last_compaction_timestamp_seconds", ()) not in before
    started = time.time()
    result = await compact_log(runtime)
    assert result.records_dropped == 4
    after = await scrape(http)
    assert after[("rebalance_lab_log_compactions_total", ())] == 1
    assert after[("rebalance_lab_log_compacted_records_total", ())] == 4
    ended = after[("rebalance_lab_log_last_compaction_timestamp_seconds", ())]
    assert started <= ended <= time.time()


@pytest.mark.asyncio
async def test_a_busy_event_loop_shows_in_its_lag(runtime: CoordinatorRuntime) -> None:
    lag = runtime.metrics.loop_lag
    seen = lag.histogram.count
    time.sleep(0.3)  # the loop is busy: this test holds it, as a long engine call would
    while lag.histogram.count == seen:
        await asyncio.sleep(0.01)
    assert lag.last_s >= 0.04  # the probe's 0.25 s sleep ended at least this late


@pytest.mark.asyncio
async def test_celery_s_kept_task_runs_are_read_by_task_and_outcome(
    runtime: CoordinatorRuntime, http: AsyncClient
) -> None:
    done = datetime.datetime(2026, 11, 27, 10, 0, tzinfo=datetime.UTC)

    def record_runs() -> None:
        for index, (status, minutes) in enumerate(
            [("SUCCESS", 0), ("SUCCESS", 30), ("FAILURE", 10), ("STARTED", 40)]
        ):
            TaskResult.objects.create(
                task_id=f"run-{index}", task_name="housekeeping.expire_offsets", status=status
            )
            # date_done is set to now on save (auto_now): an update sets it to the past.
            TaskResult.objects.filter(task_id=f"run-{index}").update(
                date_done=done + datetime.timedelta(minutes=minutes)
            )

    await sync_to_async(record_runs)()
    counts = await scrape(http)
    task = "housekeeping.expire_offsets"
    runs = "rebalance_lab_housekeeping_task_runs"
    assert counts[(runs, labels(task=task, outcome="SUCCESS"))] == 2
    assert counts[(runs, labels(task=task, outcome="FAILURE"))] == 1
    last = "rebalance_lab_housekeeping_last_run_timestamp_seconds"
    latest_success = (done + datetime.timedelta(minutes=30)).timestamp()
    assert counts[(last, labels(task=task, outcome="SUCCESS"))] == latest_success
