"""``GET /metrics``: the coordinator's metrics in Prometheus' text format (docs/operations.md,
"Metrics", defines every one).

A scrape reads the runtime as it is: each group's state, generation, members and lag come from
the engine's one-line summaries (``GroupCoordinator.group_summaries``) and the committed
offsets, nothing kept between scrapes; the counters are what ``webapp.runtime.metrics`` counted
from the engine's events and the transports' requests. The process's own numbers (requests,
errors, the loop's lag, faults, the log, Celery's task runs) are prometheus_client families
(:class:`ProcessCollector` of this module) written by ``generate_latest``.

The per-group families are most of a scrape: about 25 series per group, 250,000 lines at
10,000 groups, for which ``generate_latest`` takes seconds (it builds a sample object per line
and checks every label name by regular expression). They are written by :func:`write_groups`,
which writes what ``generate_latest`` would write for the families :func:`group_families`
builds with prometheus_client (``tests/webapp/dashboard/test_metrics.py`` compares the two
byte for byte), a label prefix once per group instead of once per line. The groups are read
on the event loop (their summaries, lag and a copy of their counters), ``READ_SLICE`` groups
per turn of the loop; the text is written, and gzipped when the scraper accepts it (Prometheus
does), in a worker thread, so a scrape of 10,000 groups does not hold the loop while it is
written.

The state is a state set (OpenMetrics ``StateSet``, prometheus_client's
``StateSetMetricFamily``): one series per state of the group's kind, the label named after
the metric, 1 for the current state and 0 for the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gzip
import hmac
import ipaddress
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    StateSetMetricFamily,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector as OsProcessCollector
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from coordinator_engine import (
    ConsumerGroupState,
    GroupCoordinator,
    GroupState,
    GroupSummary,
    HandoffState,
)
from coordinator_engine.records import OffsetCommitValue
from webapp.housekeeping.liveness import LIVENESS
from webapp.housekeeping.status import task_result_counts
from webapp.runtime.coordinator_runtime import CoordinatorRuntime, current_runtime
from webapp.runtime.metrics import CountsSnapshot, GroupCounts, Histogram
from webapp.runtime.topics import TopicRegistry

from .api import partition_lag

__all__ = [
    "GROUP_STATES",
    "GroupSample",
    "ProcessCollector",
    "group_families",
    "group_samples",
    "metrics",
    "parse_counts",
    "process_text",
    "runtime_samples",
    "write_groups",
]

#: Every state of each kind: the state set's members (sorted, as the exposition writes them).
GROUP_STATES: dict[str, tuple[str, ...]] = {
    "classic": tuple(sorted(state.value for state in GroupState)),
    "handoff": tuple(sorted(state.value for state in HandoffState)),
    "consumer": tuple(sorted(state.value for state in ConsumerGroupState)),
}

# The per-group families: name (as prometheus_client is given it), help.
STATE = ("rebalance_lab_group_state", "The group's state: 1 for the current one, 0 for the others.")
GENERATION = (
    "rebalance_lab_group_generation",
    "A classic group's generation, a handoff group's plan epoch, a consumer group's epoch.",
)
MEMBERS = ("rebalance_lab_group_members", "Members of the group (not counting pending ones).")
LAG = (
    "rebalance_lab_group_lag_records",
    "Records between the group's committed offsets and the log end, summed over partitions.",
)
REBALANCES = (
    "rebalance_lab_rebalances",
    "Rebalances started or restarted, by the engine's structured cause (RebalanceCause).",
)
DURATION = (
    "rebalance_lab_rebalance_duration_seconds",
    "From a rebalance's start to the group being Stable (or Empty) again, engine time.",
)
MOVED = (
    "rebalance_lab_partitions_moved",
    "Partitions the coordinator gave to a member other than their previous owner.",
)
UNAVAILABLE = (
    "rebalance_lab_partition_unavailable_seconds",
    "Per moved partition, from its owner being told to give it up to its next owner getting it.",
)
REMOVED = (
    "rebalance_lab_members_removed",
    "Members removed from the group, by reason (RemovalReason).",
)

_SCRAPE_LABELS = ("group", "kind", "protocol")
_COUNT_LABELS = ("group", "kind")


@dataclass(frozen=True, slots=True)
class GroupSample:
    """One group as a scrape reads it: its summary, its total lag, its counters as they were
    (None for a group no event was counted for since the process started)."""

    summary: GroupSummary
    lag: int
    counts: CountsSnapshot | None


def _total_lag(
    offsets: Mapping[tuple[str, int], OffsetCommitValue],
    topics: TopicRegistry,
    now_ms: int,
    ends: dict[str, list[int] | None],
) -> int:
    """The group's total lag (``webapp.dashboard.api.partition_lag`` summed, unknown
    partitions 0), each topic's log ends read once per scrape (``ends``)."""
    total = 0
    for (topic, partition), value in offsets.items():
        if topic not in ends:
            spec = topics.get(topic)
            ends[topic] = None if spec is None else spec.log_end_offsets(now_ms)
        topic_ends = ends[topic]
        if topic_ends is not None and partition < len(topic_ends):
            total += partition_lag(topic_ends[partition], value.offset) or 0
    return total


def group_samples(
    coordinator: GroupCoordinator,
    counted: Mapping[str, GroupCounts],
    topics: TopicRegistry,
    now_ms: int,
    group_ids: Iterable[str] | None = None,
) -> list[GroupSample]:
    """The groups of ``group_ids`` (default: every group ``coordinator`` holds) read now, on
    the runtime's loop thread between engine calls: their summaries, their lag from
    ``topics``, a copy of their counters from ``counted``."""
    ends: dict[str, list[int] | None] = {}
    samples = []
    for summary in coordinator.group_summaries(group_ids):
        offsets = coordinator.committed_offsets(summary.group_id)
        counts = counted.get(summary.group_id)
        samples.append(
            GroupSample(
                summary,
                _total_lag(offsets, topics, now_ms, ends),
                None if counts is None else counts.snapshot(),
            )
        )
    return samples


# ---------------------------------------------------------------- the per-group families


def _protocol(summary: GroupSummary) -> str:
    return summary.protocol or ""


def group_families(samples: Sequence[GroupSample]) -> list[Metric]:
    """The per-group families, built with prometheus_client (what :func:`write_groups` writes
    faster; the tests hold one to the other)."""
    state = StateSetMetricFamily(*STATE, labels=_SCRAPE_LABELS)
    generation = GaugeMetricFamily(*GENERATION, labels=_SCRAPE_LABELS)
    members = GaugeMetricFamily(*MEMBERS, labels=_SCRAPE_LABELS)
    lag = GaugeMetricFamily(*LAG, labels=_SCRAPE_LABELS)
    rebalances = CounterMetricFamily(*REBALANCES, labels=(*_COUNT_LABELS, "cause"))
    duration = HistogramMetricFamily(*DURATION, labels=_COUNT_LABELS)
    moved = CounterMetricFamily(*MOVED, labels=_COUNT_LABELS)
    unavailable = CounterMetricFamily(*UNAVAILABLE, labels=_COUNT_LABELS)
    removed = CounterMetricFamily(*REMOVED, labels=(*_COUNT_LABELS, "reason"))
    for sample in samples:
        s = sample.summary
        scrape = [s.group_id, s.kind, _protocol(s)]
        state.add_metric(scrape, {name: name == s.state for name in GROUP_STATES[s.kind]})
        generation.add_metric(scrape, s.generation_id)
        members.add_metric(scrape, s.member_count)
        lag.add_metric(scrape, sample.lag)
        counts = sample.counts
        if counts is None:
            continue
        labels = [s.group_id, s.kind]
        for cause, count in sorted(counts.rebalances.items()):
            rebalances.add_metric([*labels, cause], count)
        if counts.durations.count:
            duration.add_metric(labels, counts.durations.cumulative(), counts.durations.sum)
        moved.add_metric(labels, counts.partitions_moved)
        unavailable.add_metric(labels, counts.unavailable_ms / 1000)
        for reason, count in sorted(counts.members_removed.items()):
            removed.add_metric([*labels, reason], count)
    return [state, generation, members, lag, rebalances, duration, moved, unavailable, removed]


def _g(value: float) -> str:
    """A sample's value as the text format writes it (prometheus_client's
    ``floatToGoString``), integers below a million without its detour."""
    if type(value) is int and 0 <= value < 1_000_000:
        return f"{value}.0"
    return floatToGoString(value)


def _escape(value: str) -> str:
    """A label value as the text format writes it (prometheus_client's ``_escape``)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _head(name: str, documentation: str, kind: str) -> str:
    return f"# HELP {name} {documentation}\n# TYPE {name} {kind}\n"


def _histogram_lines(name: str, prefix: str, histogram: Histogram) -> Iterator[str]:
    for le, count in histogram.cumulative():
        yield f'{name}_bucket{{{prefix},le="{le}"}} {_g(count)}\n'
    yield f"{name}_count{{{prefix}}} {_g(histogram.count)}\n"
    yield f"{name}_sum{{{prefix}}} {_g(histogram.sum)}\n"


def write_groups(samples: Sequence[GroupSample]) -> str:
    """The per-group families in the text format: exactly what ``generate_latest`` writes for
    :func:`group_families`, label names sorted as it sorts them."""
    state_name = STATE[0]
    # Per group: its labels once, escaped ("group", "kind", "protocol" are in sorted order,
    # and so is every label added after them: cause, le, reason, the state set's own).
    prefixes = []
    for sample in samples:
        s = sample.summary
        counted = f'group="{_escape(s.group_id)}",kind="{s.kind}"'
        prefixes.append((counted, f'{counted},protocol="{_escape(_protocol(s))}"'))
    out = [_head(state_name, STATE[1], "gauge")]
    for sample, (_, scrape) in zip(samples, prefixes, strict=True):
        current = sample.summary.state
        for name in GROUP_STATES[sample.summary.kind]:
            value = "1.0" if name == current else "0.0"
            out.append(f'{state_name}{{{scrape},{state_name}="{_escape(name)}"}} {value}\n')
    for (name, documentation), attribute in (
        (GENERATION, "generation_id"),
        (MEMBERS, "member_count"),
    ):
        out.append(_head(name, documentation, "gauge"))
        for sample, (_, scrape) in zip(samples, prefixes, strict=True):
            out.append(f"{name}{{{scrape}}} {_g(getattr(sample.summary, attribute))}\n")
    out.append(_head(*LAG, "gauge"))
    for sample, (_, scrape) in zip(samples, prefixes, strict=True):
        out.append(f"{LAG[0]}{{{scrape}}} {_g(sample.lag)}\n")
    counted = [
        (sample.counts, prefix)
        for sample, (prefix, _) in zip(samples, prefixes, strict=True)
        if sample.counts is not None
    ]
    name = REBALANCES[0] + "_total"
    out.append(_head(name, REBALANCES[1], "counter"))
    for counts, prefix in counted:
        for cause, count in sorted(counts.rebalances.items()):
            out.append(f'{name}{{cause="{_escape(cause)}",{prefix}}} {_g(count)}\n')
    out.append(_head(*DURATION, "histogram"))
    for counts, prefix in counted:
        if counts.durations.count:
            out.extend(_histogram_lines(DURATION[0], prefix, counts.durations))
    name = MOVED[0] + "_total"
    out.append(_head(name, MOVED[1], "counter"))
    for counts, prefix in counted:
        out.append(f"{name}{{{prefix}}} {_g(counts.partitions_moved)}\n")
    name = UNAVAILABLE[0] + "_total"
    out.append(_head(name, UNAVAILABLE[1], "counter"))
    for counts, prefix in counted:
        out.append(f"{name}{{{prefix}}} {_g(counts.unavailable_ms / 1000)}\n")
    name = REMOVED[0] + "_total"
    out.append(_head(name, REMOVED[1], "counter"))
    for counts, prefix in counted:
        for reason, count in sorted(counts.members_removed.items()):
            out.append(f'{name}{{{prefix},reason="{_escape(reason)}"}} {_g(count)}\n')
    return "".join(out)


# ---------------------------------------------------------------- the process's families


def _log_size_bytes(runtime: CoordinatorRuntime) -> int:
    """The record log's files: the database, its write-ahead log."""
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):  # no WAL file: nothing written since a checkpoint
            total += os.stat(f"{runtime.log_path}{suffix}").st_size
    return total


def _timestamp(moment: datetime.datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


class ProcessCollector(Collector):
    """The serving process's families: requests, errors, the loop's lag, engine faults, the
    record log, Celery's task runs (``task_runs``: :func:`task_result_counts`' rows)."""

    def __init__(
        self,
        runtime: CoordinatorRuntime | None,
        task_runs: Iterable[tuple[str, str, int, datetime.datetime | None]],
        processes: Mapping[str, Any] | None = None,
    ) -> None:
        self.runtime = runtime
        self.task_runs = list(task_runs)
        self.processes = processes

    def collect(self) -> Iterator[Metric]:
        runtime = self.runtime
        serving = GaugeMetricFamily(
            "rebalance_lab_coordinator_serving",
            "1 while the coordinator runtime serves; 0 while it starts, reloads after an "
            "engine fault, or has stopped.",
        )
        serving.add_metric([], 1 if runtime is not None and runtime.ready else 0)
        yield serving
        runs = GaugeMetricFamily(
            "rebalance_lab_housekeeping_task_runs",
            "Celery task runs the results backend keeps (a day), by task and outcome.",
            labels=("task", "outcome"),
        )
        last = GaugeMetricFamily(
            "rebalance_lab_housekeeping_last_run_timestamp_seconds",
            "When the latest kept run of the task with that outcome ended (Unix time).",
            labels=("task", "outcome"),
        )
        for task, outcome, count, latest in self.task_runs:
            runs.add_metric([task, outcome], count)
            done = _timestamp(latest)
            if done is not None:
                last.add_metric([task, outcome], done)
        yield runs
        yield last
        up = GaugeMetricFamily(
            "rebalance_lab_housekeeping_up",
            "1 while the Celery process answers (a worker Celery's ping, beat its own "
            "announcement), 0 when it does not; no sample before the first answer "
            '(docs/operations.md, "Supervision").',
            labels=("process",),
        )
        for process in ("worker", "beat"):
            alive = (self.processes or {}).get(process, {}).get("alive")
            if alive is not None:
                up.add_metric([process], 1 if alive else 0)
        yield up
        if runtime is None:
            return
        metrics = runtime.metrics
        requests = CounterMetricFamily(
            "rebalance_lab_requests",
            "Requests received, by Kafka API and transport (websocket, kafka, simulated).",
            labels=("api", "transport"),
        )
        for (api, transport), count in sorted(metrics.requests.request_counts().items()):
            requests.add_metric([api, transport], count)
        yield requests
        errors = CounterMetricFamily(
            "rebalance_lab_response_errors",
            "Error codes in the coordinator's responses, by API and Kafka error name, as "
            "Kafka's ErrorsPerSec: every code in a response (per partition, member or group "
            "that carries one), NONE included.",
            labels=("api", "error"),
        )
        for (api, error), count in sorted(metrics.requests.error_counts().items()):
            errors.add_metric([api, error], count)
        yield errors
        lag = metrics.loop_lag
        loop = HistogramMetricFamily(
            "rebalance_lab_event_loop_lag_seconds",
            f"How late the event loop ran a timer asked for every {lag.interval_s} s.",
        )
        loop.add_metric([], lag.histogram.cumulative(), lag.histogram.sum)
        yield loop
        faults = CounterMetricFamily(
            "rebalance_lab_engine_faults",
            "Exceptions out of the engine, each followed by a reload from the log.",
        )
        faults.add_metric([], runtime.engine_faults)
        yield faults
        size = GaugeMetricFamily(
            "rebalance_lab_log_size_bytes", "The record log's files (database and WAL)."
        )
        size.add_metric([], _log_size_bytes(runtime))
        yield size
        compactions = CounterMetricFamily(
            "rebalance_lab_log_compactions", "Compactions of the record log by this process."
        )
        compactions.add_metric([], metrics.compactions)
        yield compactions
        dropped = CounterMetricFamily(
            "rebalance_lab_log_compacted_records", "Records those compactions dropped."
        )
        dropped.add_metric([], metrics.records_compacted)
        yield dropped
        compacted = GaugeMetricFamily(
            "rebalance_lab_log_last_compaction_timestamp_seconds",
            "When the latest compaction of the record log by this process ended (Unix time); "
            "no sample before the first.",
        )
        if metrics.last_compaction_s is not None:
            compacted.add_metric([], metrics.last_compaction_s)
        yield compacted


#: The operating system's and the interpreter's own families (process_*, python_*).
_STANDARD = CollectorRegistry(auto_describe=False)
OsProcessCollector(registry=_STANDARD)
PlatformCollector(registry=_STANDARD)
GCCollector(registry=_STANDARD)


def process_text(
    runtime: CoordinatorRuntime | None,
    task_runs: Iterable[tuple[str, str, int, datetime.datetime | None]],
    processes: Mapping[str, Any] | None = None,
) -> bytes:
    """The process's families (a few hundred lines): the interpreter's, then the runtime's."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ProcessCollector(runtime, task_runs, processes))
    return generate_latest(_STANDARD) + generate_latest(registry)


#: Groups read per turn of the event loop during a scrape (about 10 ms of reading).
READ_SLICE = 500


async def runtime_samples(runtime: CoordinatorRuntime | None) -> list[GroupSample]:
    """Every group of a serving runtime, read on its loop ``READ_SLICE`` groups at a time with
    the loop free in between (10,000 groups take 200 ms to read: never in one turn). Each
    group is read whole at one moment; a group made during the scrape is left for the next,
    one removed is left out. None while the runtime does not serve."""
    if runtime is None or not runtime.ready:
        return []
    group_ids = runtime.group_ids()
    samples: list[GroupSample] = []
    for start in range(0, len(group_ids), READ_SLICE):
        if start:
            await asyncio.sleep(0)
            if not runtime.ready:  # stopped, or reloading after an engine fault
                return samples
        samples += group_samples(
            runtime.coordinator,
            runtime.metrics.rebalances.groups,
            runtime.topics,
            runtime.now_ms(),
            group_ids[start : start + READ_SLICE],
        )
    return samples


def _body(head: bytes, samples: list[GroupSample], compress: bool) -> bytes:
    """The text of the groups after ``head``, gzipped if ``compress`` (a worker thread: what
    it reads is a copy, and zlib lets the loop run while it compresses)."""
    body = head + write_groups(samples).encode()
    return gzip.compress(body, compresslevel=1) if compress else body


# ---------------------------------------------------------------- the view


def _refusal(request: HttpRequest) -> JsonResponse | None:
    """Who may scrape (docs/operations.md, "Metrics"): with REBALANCE_LAB_METRICS_TOKEN set,
    bearers of it; without, loopback clients only."""
    token = settings.REBALANCE_LAB_METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "")
        scheme, _, credentials = given.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            credentials.strip().encode(), token.encode()
        ):
            return None
        response = JsonResponse(
            {
                "error": {
                    "code": "metrics_token_required",
                    "message": "send the metrics token: Authorization: Bearer <token>",
                }
            },
            status=401,
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    address = request.META.get("REMOTE_ADDR") or ""
    try:
        loopback = ipaddress.ip_address(address).is_loopback
    except ValueError:
        loopback = False
    if loopback:
        return None
    return JsonResponse(
        {
            "error": {
                "code": "metrics_loopback_only",
                "message": "without REBALANCE_LAB_METRICS_TOKEN, /metrics answers loopback "
                f"clients only, not {address or 'an unknown address'}",
            }
        },
        status=403,
    )


async def metrics(request: HttpRequest) -> HttpResponse:
    """``GET /metrics``: Prometheus' text format (version 0.0.4)."""
    if request.method not in ("GET", "HEAD"):
        response = JsonResponse(
            {"error": {"code": "method_not_allowed", "message": "use GET"}}, status=405
        )
        response["Allow"] = "GET"
        return response
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    task_runs = await sync_to_async(task_result_counts)()
    # What lives on the loop is read on the loop (the groups, the counters: a copy); the text
    # of thousands of groups is written, and compressed, in a worker thread.
    runtime = current_runtime()
    head = process_text(runtime, task_runs, LIVENESS.snapshot())
    samples = await runtime_samples(runtime)
    compress = "gzip" in request.headers.get("Accept-Encoding", "")
    body = await asyncio.to_thread(_body, head, samples, compress)
    response = HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)
    response["Vary"] = "Accept-Encoding"
    if compress:
        response["Content-Encoding"] = "gzip"
    return response


def parse_counts(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, keyed by name and sorted labels (tests, the benchmark)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out
