"""A real Prometheus scrapes a real ``manage.py serve`` every second while real members drive a
known sequence of rebalances over the websocket protocol; PromQL over Prometheus' HTTP API then
counts exactly those rebalances by cause. The alerting rules in docs/ load into it, and pass
``promtool check rules`` and their unit tests (``promtool test rules``); every query of the
Grafana dashboard in docs/ is valid PromQL that Prometheus evaluates."""

from __future__ import annotations

import itertools
import json
import secrets
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection

from tests import ROOT
from tests.live_server import LiveServer, on_a_free_port, wait_for
from tests.webapp.dashboard.test_metrics import exprs
from tests.webapp.helpers import assignment, subscription

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
DOCS = ROOT / "docs"

pytestmark = pytest.mark.skipif(
    PROMETHEUS is None or PROMTOOL is None,
    reason="prometheus is not installed (scripts/install-system-packages.sh installs it)",
)

GROUP = "metrics-group"
SESSION_MS = 3000


class Prometheus:
    """A throwaway Prometheus scraping ``target`` every second, its storage in ``workdir``, the
    alerting rules of docs/ loaded. It cannot listen on a port of the system's choosing and
    say which, so it starts ``on_a_free_port``."""

    def __init__(
        self, workdir: Path, target: str, jobs: list[dict[str, Any]] | None = None
    ) -> None:
        self.workdir = workdir
        self.config = workdir / "prometheus.yml"
        # JSON is YAML: the config as docs/operations.md shows it, one job per entry.
        default = [{"job_name": "rebalance-lab"}]
        self.config.write_text(
            json.dumps(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(DOCS / "prometheus-alerts.yml")],
                    "scrape_configs": [
                        {
                            **job,
                            "metrics_path": "/metrics",
                            "static_configs": [{"targets": [target]}],
                        }
                        for job in (jobs or default)
                    ],
                }
            )
        )
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.output = workdir / "prometheus.log"

    def start(self) -> None:
        def start_on(port: int) -> bool:
            assert PROMETHEUS is not None
            with self.output.open("ab") as out:
                self.process = subprocess.Popen(
                    [
                        PROMETHEUS,
                        f"--config.file={self.config}",
                        f"--storage.tsdb.path={self.workdir / 'data'}",
                        f"--web.listen-address=127.0.0.1:{port}",
                        "--log.level=warn",
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            self.port = port
            wait_for(lambda: self._exited() or self._ready(), 30, "prometheus to be ready")
            return not self._exited()

        on_a_free_port(start_on, "prometheus")

    def _exited(self) -> bool:
        assert self.process is not None
        return self.process.poll() is not None

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                return bool(r.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def api(self, path: str, **parameters: str) -> Any:
        query = urllib.parse.urlencode(parameters)
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}?{query}"
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's vector: ``[{"metric": {...}, "value": [t, "v"]}, ...]``."""
        data = self.api("query", query=promql)
        assert data["resultType"] == "vector", data
        result: list[dict[str, Any]] = data["result"]
        return result

    def by(self, label: str, promql: str) -> dict[str, float]:
        return {row["metric"][label]: float(row["value"][1]) for row in self.query(promql)}

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class Member:
    """A member of ``GROUP`` over its own websocket, speaking the classic protocol."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        self.member_id = ""
        self.generation = -1

    def send(self, api: str, request: dict[str, Any]) -> int:
        frame_id = next(self._ids)
        self.ws.send(json.dumps({"id": frame_id, "api": api, "request": request}))
        return frame_id

    def receive(self, frame_id: int) -> Any:
        reply = json.loads(self.ws.recv(timeout=10))
        assert reply["id"] == frame_id, reply
        return reply["response"]

    def call(self, api: str, request: dict[str, Any]) -> Any:
        return self.receive(self.send(api, request))

    def join_request(self) -> dict[str, Any]:
        return {
            "group_id": GROUP,
            "member_id": self.member_id,
            "session_timeout_ms": SESSION_MS,
            "rebalance_timeout_ms": SESSION_MS,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": subscription("orders")}],
        }

    def get_id(self) -> None:
        first = self.call("JoinGroup", self.join_request())
        assert first["error_code"] == 79, first  # MEMBER_ID_REQUIRED (KIP-394)
        self.member_id = first["member_id"]

    def joined(self, response: Any) -> None:
        assert response["error_code"] == 0, response
        self.generation = response["generation_id"]

    def sync(self, assignments: dict[str, list[tuple[str, int]]] | None = None) -> None:
        request = {
            "group_id": GROUP,
            "generation_id": self.generation,
            "member_id": self.member_id,
            "assignments": [
                {"member_id": member_id, "assignment": assignment(*partitions)}
                for member_id, partitions in (assignments or {}).items()
            ],
        }
        synced = self.call("SyncGroup", request)
        assert synced["error_code"] == 0, synced


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    server = LiveServer(
        tmp_path,
        COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS="0",
        COORDINATOR_GROUP_MIN_SESSION_TIMEOUT_MS="100",
    )
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def prometheus(server: LiveServer, tmp_path: Path) -> Iterator[Prometheus]:
    workdir = tmp_path / "prometheus"
    workdir.mkdir()
    prometheus = Prometheus(workdir, f"127.0.0.1:{server.port}")
    try:
        prometheus.start()
        yield prometheus
    finally:
        prometheus.stop()


def test_prometheus_counts_exactly_the_rebalances_driven_by_cause(
    server: LiveServer, prometheus: Prometheus
) -> None:
    with server.websocket() as a_socket, server.websocket() as b_socket:
        a, b = Member(a_socket), Member(b_socket)
        # 1. a joins the empty group (member_joined) and leads generation 1 alone.
        a.get_id()
        a.joined(a.call("JoinGroup", a.join_request()))
        a.sync({a.member_id: [("orders", 0), ("orders", 1)]})
        # 2. b joins the Stable group (member_joined): a learns it from its heartbeat, rejoins.
        b.get_id()
        b_join = b.send("JoinGroup", b.join_request())
        # Another socket: the server may read it after a's next frame. Wait for the rebalance.
        wait_for(
            lambda: server.get(f"/api/groups/{GROUP}")["state"] == "PreparingRebalance",
            10,
            "b's JoinGroup to start a rebalance",
        )
        beat = a.call(
            "Heartbeat",
            {"group_id": GROUP, "generation_id": a.generation, "member_id": a.member_id},
        )
        assert beat["error_code"] == 27, beat  # REBALANCE_IN_PROGRESS
        a.joined(a.call("JoinGroup", a.join_request()))
        b.joined(b.receive(b_join))
        a.sync({a.member_id: [("orders", 0)], b.member_id: [("orders", 1)]})
        b.sync()
        # 3. b leaves (member_left); a rejoins and takes everything back.
        left = b.call("LeaveGroup", {"group_id": GROUP, "members": [{"member_id": b.member_id}]})
        assert left["error_code"] == 0, left
        a.joined(a.call("JoinGroup", a.join_request()))
        assert a.generation == 3
        a.sync({a.member_id: [("orders", 0), ("orders", 1)]})

    # 4. a goes silent (its socket closed): its session times out (session_timeout) and the
    # group is Empty. Prometheus has scraped after the last event once it sees the group Empty
    # (the timeout and the move to Empty are one engine call).
    wait_for(
        lambda: prometheus.query(
            f'rebalance_lab_group_state{{group="{GROUP}",rebalance_lab_group_state="Empty"}} == 1'
        ),
        30,
        "Prometheus to scrape the group Empty after the session timeout",
    )
    assert prometheus.by(
        "cause", f'sum by (cause) (rebalance_lab_rebalances_total{{group="{GROUP}"}})'
    ) == {"member_joined": 2, "member_left": 1, "session_timeout": 1}
    assert prometheus.by(
        "reason", f'sum by (reason) (rebalance_lab_members_removed_total{{group="{GROUP}"}})'
    ) == {"left": 1, "session_timeout": 1}
    assert prometheus.by(
        "kind", f'rebalance_lab_rebalance_duration_seconds_count{{group="{GROUP}"}}'
    ) == {"classic": 4}
    # Generation 2 moved orders-1 from a to b, b's leave moved it back.
    assert prometheus.by("group", f'rebalance_lab_partitions_moved_total{{group="{GROUP}"}}') == {
        GROUP: 2
    }
    assert prometheus.by(
        "api", 'sum by (api) (rebalance_lab_requests_total{transport="websocket"})'
    ) == {"JoinGroup": 6, "SyncGroup": 4, "Heartbeat": 1, "LeaveGroup": 1}
    assert prometheus.by(
        "error", 'sum by (error) (rebalance_lab_response_errors_total{api="JoinGroup"})'
    ) == {"MEMBER_ID_REQUIRED": 2, "NONE": 4}
    assert prometheus.by("job", "rebalance_lab_coordinator_serving") == {"rebalance-lab": 1}


def test_the_alerting_rules_load_and_the_dashboard_s_queries_evaluate(
    server: LiveServer, prometheus: Prometheus
) -> None:
    wait_for(lambda: prometheus.query("rebalance_lab_coordinator_serving"), 30, "a scrape")
    groups = wait_for(
        lambda: [
            group
            for group in prometheus.api("rules")["groups"]
            if all(rule.get("health") == "ok" for rule in group["rules"])
        ],
        30,
        "the alerting rules to be evaluated",
    )
    assert {rule["name"] for rule in groups[0]["rules"]} >= {
        "RebalanceLabGroupRebalancingOften",
        "RebalanceLabGroupNotStable",
    }
    queries = exprs(json.loads((DOCS / "grafana-dashboard.json").read_text()))
    for query in queries:
        if query.startswith("label_values("):
            continue  # Grafana's own function, not PromQL
        data = prometheus.api("query", query=query.replace("$group", ".*"))
        assert data["resultType"] in ("vector", "scalar"), query


def test_promtool_checks_the_alerting_rules_and_their_unit_tests() -> None:
    assert PROMTOOL is not None
    checked = subprocess.run(
        [PROMTOOL, "check", "rules", str(DOCS / "prometheus-alerts.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 5 rules found" in checked.stdout
    tested = subprocess.run(
        [PROMTOOL, "test", "rules", "prometheus-alerts.test.yml"],
        cwd=DOCS,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_with_a_token_prometheus_scrapes_only_with_its_credentials(tmp_path: Path) -> None:
    token = secrets.token_urlsafe(24)
    server = LiveServer(tmp_path, REBALANCE_LAB_METRICS_TOKEN=token)
    workdir = tmp_path / "prometheus"
    workdir.mkdir()
    (workdir / "token").write_text(token + "\n")
    try:
        server.start()
        prometheus = Prometheus(
            workdir,
            f"127.0.0.1:{server.port}",
            jobs=[
                {
                    "job_name": "with-token",
                    "authorization": {"credentials_file": str(workdir / "token")},
                },
                {"job_name": "without"},
            ],
        )
        try:
            prometheus.start()

            def both_scraped() -> dict[str, float] | None:
                jobs = prometheus.by("job", "up")
                return jobs if len(jobs) == 2 else None

            up = wait_for(both_scraped, 30, "both jobs to be scraped")
            assert up == {"with-token": 1, "without": 0}
            assert prometheus.by("job", "rebalance_lab_coordinator_serving") == {"with-token": 1}
        finally:
            prometheus.stop()
    finally:
        server.kill()
