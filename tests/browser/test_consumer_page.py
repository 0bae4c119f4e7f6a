"""A consumer group's page (Kafka 4's consumer protocol, KIP-848) in a real browser against a
real server: members speak ConsumerGroupHeartbeat over the websocket consumer protocol, one
heartbeat at a time, and the page draws each step (the group epoch and the target epoch, each
member's epoch and state, a partition revoked on its old owner's lane, waiting with nobody,
then landing on its new owner's); the epochs panel says why each epoch began and when it was
Stable; time travel shows the group at its first event and at an earlier epoch; staff remove a
member and spawn a consumer there. Then a real librdkafka consumer (``group.protocol=consumer``)
over the Kafka wire: a second one joins and a partition moves, the first leaves.
Screenshots of every step are written to test-artifacts/browser/<test>/."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from playwright.sync_api import Locator, Page, expect
from websockets.sync.client import ClientConnection

from tests.live_server import LiveServer

from .conftest import NEXT_FRAME, STAFF, serving, sign_in
from .test_group_page import NO_SIDEWAYS_SCROLL, PHONE

Shots = Callable[[Page, str], Path]
GROUP = "kip848-page"
TOPIC = "orders"
TIMEOUT_MS = 30_000


class Member:
    """One consumer-group member's side of ConsumerGroupHeartbeat over its own websocket."""

    def __init__(self, ws: ClientConnection, member_id: str) -> None:
        self.ws = ws
        self.member_id = member_id
        self.frame = 0
        self.epoch = 0

    def beat(self, owned: list[int] | None = None) -> Any:
        """A heartbeat: a join at epoch 0, else one that reports `owned` (None: unchanged)."""
        request: dict[str, Any] = {
            "group_id": GROUP,
            "member_id": self.member_id,
            "member_epoch": self.epoch,
            "client_id": f"client-{self.member_id}",
        }
        if self.epoch == 0:
            request |= {
                "rebalance_timeout_ms": 300_000,
                "subscribed_topic_names": [TOPIC],
                "topic_partitions": [],
            }
        elif owned is not None:
            request["topic_partitions"] = [{"topic": TOPIC, "partitions": owned}]
        self.frame += 1
        self.ws.send(
            json.dumps({"id": self.frame, "api": "ConsumerGroupHeartbeat", "request": request})
        )
        reply = json.loads(self.ws.recv(timeout=5))
        assert reply["id"] == self.frame, reply
        answer = reply["response"]
        assert answer["error_code"] == 0, answer
        self.epoch = answer["member_epoch"]
        return answer


def tile(page: Page, partition: int) -> Locator:
    return page.get_by_test_id(f"partition-{TOPIC}-{partition}")


def confirm(page: Page, button: str) -> str:
    result = page.get_by_test_id("action-result")
    page.get_by_test_id(button).click()
    page.get_by_test_id("confirm-action").click()
    expect(result).not_to_have_text(re.compile(r"^$|sending"), timeout=TIMEOUT_MS)
    return result.inner_text()


def target_of(server: LiveServer, member_id: str) -> list[int]:
    group = server.get(f"/api/groups/{GROUP}")
    (member,) = [m for m in group["members"] if m["member_id"] == member_id]
    return sorted(p for _, p in member["target"])


def expect_member(page: Page, member_id: str, epoch: int, state: str) -> None:
    shown = page.get_by_test_id(f"consumer-member-{member_id}")
    expect(shown).to_have_attribute("data-member-epoch", str(epoch), timeout=TIMEOUT_MS)
    expect(shown).to_have_attribute("data-member-state", state, timeout=TIMEOUT_MS)


def test_a_consumer_group_page_draws_epochs_reconciliation_and_time_travel(
    server: LiveServer, page: Page, shots: Shots
) -> None:
    server.post("/api/topics", {"name": TOPIC, "partitions": 4})
    with server.websocket() as ws_a, server.websocket() as ws_b:
        a, b = Member(ws_a, "a"), Member(ws_b, "b")
        assert a.beat()["assignment"] == {TOPIC: [0, 1, 2, 3]}
        a.beat([0, 1, 2, 3])

        sign_in(page, server, STAFF, f"/groups/{GROUP}/")
        expect(page.get_by_test_id("connection-status")).to_have_text("live", timeout=TIMEOUT_MS)
        state = page.get_by_test_id("group-state")
        expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)
        # The consumer group's own diagram, not the classic one.
        drawn = page.locator(".sm-svg[data-kind=consumer] .sm-node")
        expect(drawn).to_have_count(5)
        assert sorted(drawn.evaluate_all("nodes => nodes.map(n => n.dataset.state)")) == [
            "Assigning",
            "Dead",
            "Empty",
            "Reconciling",
            "Stable",
        ]
        expect(page.locator(".sm-node.is-current")).to_have_attribute("data-state", "Stable")
        expect(page.get_by_test_id("group-generation")).to_have_text("1")
        expect(page.get_by_test_id("group-target-epoch")).to_have_text("1")
        expect_member(page, "a", 1, "STABLE")
        expect(page.get_by_test_id("consumer-member-a")).to_contain_text("epoch 1 · Stable")
        for p in range(4):
            expect(tile(page, p)).to_have_attribute("data-owner", "a")
        # Classic-only panels and actions are not shown; removing a member is.
        expect(page.get_by_test_id("action-rebalance")).to_be_hidden()
        expect(page.get_by_test_id("action-remove-member")).to_be_visible()
        expect(page.get_by_test_id("spawn-protocol")).to_have_value("consumer")
        expect(page.get_by_test_id("epoch-1")).to_contain_text("member joined")
        shots(page, "a-alone-stable")

        # b joins: epoch 2, whose target moves partitions a still owns; b waits for them.
        b.beat()
        moved = target_of(server, "b")
        assert moved and len(moved) < 4, moved
        expect(state).to_have_text("Reconciling", timeout=TIMEOUT_MS)
        expect(page.get_by_test_id("group-generation")).to_have_text("2")
        expect(page.get_by_test_id("group-target-epoch")).to_have_text("2")
        expect(page.get_by_test_id("last-transition")).to_contain_text("Stable → Reconciling")
        expect(page.get_by_test_id("last-transition")).to_contain_text("member joined")
        expect_member(page, "b", 2, "UNRELEASED_PARTITIONS")
        expect(page.get_by_test_id("consumer-member-b")).to_have_attribute(
            "data-target", " ".join(f"{TOPIC}-{p}" for p in moved)
        )
        expect(page.get_by_test_id("epoch-2")).to_contain_text("member joined · b")
        expect(page.get_by_test_id("epoch-2")).to_contain_text("not Stable yet")
        shots(page, "b-joined-unreleased")

        # a's heartbeat: it must revoke them; they stay on its lane, drawn revoking.
        kept = sorted(set(range(4)) - set(moved))
        assert a.beat([0, 1, 2, 3])["assignment"] == {TOPIC: kept}
        expect_member(page, "a", 1, "UNREVOKED_PARTITIONS")
        for p in moved:
            expect(tile(page, p)).to_have_attribute("data-consumer", "revoking")
            expect(tile(page, p)).to_have_attribute("data-owner", "a")
            expect(tile(page, p)).to_have_class(re.compile(r"\bis-revoking\b"))
        expect(tile(page, kept[0])).to_have_attribute("data-consumer", "")
        shots(page, "a-revoking")

        # a let go: nobody owns them until b's next heartbeat.
        a.beat(kept)
        expect_member(page, "a", 2, "STABLE")
        for p in moved:
            expect(tile(page, p)).to_have_attribute("data-owner", "")
            expect(tile(page, p)).to_have_attribute("data-consumer", "waiting")
        expect(page.get_by_test_id("unassigned-partitions")).to_contain_text(
            f"{len(moved)} waiting"
        )
        shots(page, "waiting-unowned")

        # b's heartbeat: they land on b's lane; every member is Stable at epoch 2.
        assert b.beat([])["assignment"] == {TOPIC: moved}
        for p in moved:
            expect(tile(page, p)).to_have_attribute("data-owner", "b")
            expect(tile(page, p)).to_have_attribute("data-consumer", "")
        expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)
        expect_member(page, "b", 2, "STABLE")
        expect(page.get_by_test_id("epoch-2")).to_contain_text("Stable after")
        log = page.get_by_test_id("event-log")
        expect(log).to_contain_text(f"a must revoke {TOPIC}-{moved[0]}")
        expect(log).to_contain_text(f"b was given {TOPIC}-{moved[0]}")
        shots(page, "b-landed-stable")

        # Time travel: the first event shows the group as the engine created it (Empty, not
        # "none"); the end of epoch 1 shows a with every partition and no b.
        scrubber = page.get_by_test_id("scrubber")
        expect(scrubber).to_be_enabled(timeout=TIMEOUT_MS)
        scrubber.focus()
        page.keyboard.press("Home")
        expect(page.get_by_test_id("time-travel-label")).not_to_have_text("live")
        expect(state).to_have_text("Empty")
        expect(page.get_by_test_id("group-generation")).to_have_text("0")
        expect(page.get_by_test_id("member-a")).to_be_visible()
        shots(page, "travel-first-event")
        log.locator("li", has_text="Empty → Stable").click()
        expect(state).to_have_text("Stable")
        expect(page.get_by_test_id("group-generation")).to_have_text("1")
        expect(page.get_by_test_id("member-b")).to_have_count(0)
        for p in moved:
            expect(tile(page, p)).to_have_attribute("data-owner", "a")
        shots(page, "travel-epoch-1")
        page.get_by_test_id("back-to-live").click()
        expect(page.get_by_test_id("time-travel-label")).to_have_text("live")
        for p in moved:
            expect(tile(page, p)).to_have_attribute("data-owner", "b")

        # Staff remove b: its lane goes, the epoch goes up; a takes everything at its next
        # heartbeat.
        page.get_by_test_id("remove-member-select").select_option("b")
        assert "removed" in confirm(page, "action-remove-member")
        expect(page.get_by_test_id("member-b")).to_have_count(0, timeout=TIMEOUT_MS)
        expect(page.get_by_test_id("group-generation")).to_have_text("3")
        expect(state).to_have_text("Assigning")
        expect(page.get_by_test_id("epoch-3")).to_contain_text("b")
        for p in moved:
            expect(tile(page, p)).to_have_attribute("data-owner", "")
        shots(page, "b-removed")
        assert a.beat(kept)["assignment"] == {TOPIC: [0, 1, 2, 3]}
        expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)
        expect(page.get_by_test_id("group-target-epoch")).to_have_text("3")
        expect_member(page, "a", 3, "STABLE")
        for p in range(4):
            expect(tile(page, p)).to_have_attribute("data-owner", "a")
        removed = [
            e
            for e in server.get(f"/api/groups/{GROUP}/events?limit=1000")["events"]
            if e["type"] == "MemberRemoved"
        ]
        assert [e["member_id"] for e in removed] == ["b"]

        # A simulated consumer spawned from the page joins the group as a consumer member.
        page.get_by_test_id("spawn-behaviour").select_option("steady")
        page.get_by_test_id("spawn-count").fill("1")
        assert "started 1" in confirm(page, "action-spawn")
        expect(page.locator(".lanes-canvas .lane")).to_have_count(2, timeout=TIMEOUT_MS)
        expect(page.get_by_test_id("group-generation")).to_have_text("4", timeout=TIMEOUT_MS)
        expect(state).to_have_text("Reconciling")
        shots(page, "spawned")

    # The overview lists it under its own states, and its legend explains them.
    page.goto(f"{server.url}/")
    row = page.get_by_test_id(f"group-row-{GROUP}")
    expect(row).to_be_visible(timeout=TIMEOUT_MS)
    legend = page.get_by_test_id("state-legend-consumer")
    assert legend.locator(".state-badge").all_inner_texts() == [
        "Empty",
        "Assigning",
        "Reconciling",
        "Stable",
        "Dead",
    ]
    expect(legend).to_contain_text("the coordinator computes a new target assignment")
    # a, which owns everything, has not heartbeaten since the newcomer joined: Reconciling.
    page.get_by_test_id("state-filter").select_option("Reconciling")
    expect(row).to_be_visible()
    expect(row.locator(".state-badge")).to_have_class(re.compile(r"\bstate-Reconciling\b"))
    page.get_by_test_id("state-filter").select_option("Stable")
    expect(row).to_have_count(0)
    shots(page, "overview-legend")


@contextmanager
def librdkafka_member(server: LiveServer, name: str) -> Iterator[None]:
    """A librdkafka consumer (``group.protocol=consumer``) polling in a thread of its own (its
    rebalance callbacks run in poll); closed, so it leaves the group (epoch -1), on exit."""
    done = threading.Event()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            consumer = Consumer(
                {
                    "bootstrap.servers": f"127.0.0.1:{server.kafka_port}",
                    "group.id": GROUP,
                    "group.protocol": "consumer",
                    "client.id": name,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                }
            )
            consumer.subscribe([TOPIC])
            while not done.is_set():
                consumer.poll(0.1)
            consumer.close()
        except BaseException as exc:  # reported by the test's thread
            failures.append(exc)

    thread = threading.Thread(target=run, name=f"librdkafka-{name}")
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=30)
        assert not thread.is_alive(), f"{name} did not close"
        assert not failures, failures


@pytest.fixture
def fast_server(
    tmp_path: Path, closed_port: int, site_database: Path | None
) -> Iterator[LiveServer]:
    """The site with heartbeats every 300 ms (Kafka's 5 s would make each move take seconds)."""
    yield from serving(
        tmp_path,
        closed_port,
        site_database,
        COORDINATOR_CONSUMER_GROUP_MIN_HEARTBEAT_INTERVAL_MS="100",
        COORDINATOR_CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS="300",
    )


def lane_ids(page: Page) -> list[str]:
    return page.locator(".lanes-canvas .lane").evaluate_all(
        "lanes => lanes.map(l => l.dataset.box)"
    )


def test_a_librdkafka_consumer_group_on_the_page(
    fast_server: LiveServer, page: Page, shots: Shots
) -> None:
    server = fast_server
    server.post("/api/topics", {"name": TOPIC, "partitions": 4})
    page.goto(f"{server.url}/groups/{GROUP}/")
    state = page.get_by_test_id("group-state")
    lanes = page.locator(".lanes-canvas .lane")
    with librdkafka_member(server, "first"):
        expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)
        expect(lanes).to_have_count(1)
        (first,) = lane_ids(page)
        expect_member(page, first, 1, "STABLE")
        for p in range(4):
            expect(tile(page, p)).to_have_attribute("data-owner", first, timeout=TIMEOUT_MS)
        # Events do not say how a member is connected; the snapshot of a page opened now does.
        page.reload()
        expect(page.get_by_test_id(f"member-{first}").locator(".box-head")).to_have_attribute(
            "title", re.compile("Kafka's wire protocol"), timeout=TIMEOUT_MS
        )
        shots(page, "first-alone")

        # A second librdkafka consumer: epoch 2; the first revokes what moves, the second
        # gets it once released; both Stable.
        with librdkafka_member(server, "second"):
            expect(lanes).to_have_count(2, timeout=TIMEOUT_MS)
            expect(page.get_by_test_id("group-generation")).to_have_text("2")
            expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)
            (second,) = set(lane_ids(page)) - {first}
            expect_member(page, first, 2, "STABLE")
            expect_member(page, second, 2, "STABLE")
            page.wait_for_function(
                "id => [...document.querySelectorAll('.tile')]"
                ".filter(t => t.dataset.owner === id).length === 2",
                arg=second,
                timeout=TIMEOUT_MS,
            )
            moved = [p for p in range(4) if tile(page, p).get_attribute("data-owner") == second]
            expect(page.get_by_test_id("epoch-2")).to_contain_text("Stable after")
            shots(page, "second-joined-stable")

            # The page's history shows the move: revoking on the first's lane, then nobody's.
            log = page.get_by_test_id("event-log")
            log.locator("li", has_text=re.compile(r"must revoke")).first.click()
            expect(page.get_by_test_id("time-travel-label")).not_to_have_text("live")
            for p in moved:
                expect(tile(page, p)).to_have_attribute("data-owner", first)
                expect(tile(page, p)).to_have_attribute("data-consumer", "revoking")
            expect_member(page, first, 1, "UNREVOKED_PARTITIONS")
            shots(page, "travel-revoking")
            page.get_by_test_id("back-to-live").click()
            expect(page.get_by_test_id("time-travel-label")).to_have_text("live")

        # The second closed (epoch -1): it leaves, and the first takes everything back.
        expect(lanes).to_have_count(1, timeout=TIMEOUT_MS)
        expect(page.get_by_test_id("group-generation")).to_have_text("3")
        expect(page.get_by_test_id("epoch-3")).to_contain_text("member left")
        expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)
        for p in range(4):
            expect(tile(page, p)).to_have_attribute("data-owner", first, timeout=TIMEOUT_MS)
        shots(page, "second-left")

        # At a phone's width the page does not scroll sideways (librdkafka's ids are long).
        page.set_viewport_size(PHONE)
        page.evaluate(NEXT_FRAME)
        layout = page.evaluate(NO_SIDEWAYS_SCROLL)
        assert layout["scrollWidth"] <= layout["width"] and not layout["wide"], layout
        shots(page, "phone")
