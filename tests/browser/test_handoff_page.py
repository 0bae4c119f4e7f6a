"""A handoff group's page in a real browser against a real server: members speak
HandoffHeartbeat over the websocket consumer protocol, and the page draws the handoff as it
goes (a moved partition closing on its old owner's lane, then starting on the new owner's,
then consumed there), scrubs back to the close, and lets staff switch the partition store
down and up (an outage banner meanwhile; a newcomer gets nothing until it is back).
Screenshots of every step are written to test-artifacts/browser/<test>/."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect
from websockets.sync.client import ClientConnection

from tests.live_server import LiveServer

from .conftest import STAFF, sign_in

Shots = Callable[[Page, str], Path]
GROUP = "handoff-demo"
TIMEOUT_MS = 30_000
#: The partition that moves from a to b when b joins (a keeps 0 and 1 of the three).
MOVED = {"topic": "events", "partition": 2}


class Member:
    """One handoff member's side of the protocol over its own websocket."""

    def __init__(self, ws: ClientConnection, member_id: str) -> None:
        self.ws = ws
        self.member_id = member_id
        self.frame = 0
        self.epoch = 0

    def call(self, api: str, request: dict[str, Any]) -> Any:
        self.frame += 1
        self.ws.send(json.dumps({"id": self.frame, "api": api, "request": request}))
        reply = json.loads(self.ws.recv(timeout=5))
        assert reply["id"] == self.frame, reply
        return reply["response"]

    def beat(self, **confirmed: Any) -> Any:
        answer = self.call(
            "HandoffHeartbeat",
            {
                "group_id": GROUP,
                "member_id": self.member_id,
                "member_epoch": self.epoch,
                "session_timeout_ms": 120_000,
                "topics": ["events"],
                **confirmed,
            },
        )
        assert answer["error_code"] == 0, answer
        self.epoch = answer["member_epoch"]
        return answer


def tile(page: Page, partition: int) -> Any:
    return page.get_by_test_id(f"partition-events-{partition}")


def confirm(page: Page, button: str) -> str:
    result = page.get_by_test_id("action-result")
    page.get_by_test_id(button).click()
    page.get_by_test_id("confirm-action").click()
    expect(result).not_to_have_text(re.compile(r"^$|sending"), timeout=TIMEOUT_MS)
    return result.inner_text()


def test_a_handoff_is_drawn_closing_then_starting_and_the_switches_hold_the_plan(
    server: LiveServer, page: Page, shots: Shots
) -> None:
    server.post("/api/topics", {"name": "events", "partitions": 3})
    with server.websocket() as ws_a, server.websocket() as ws_b, server.websocket() as ws_c:
        a, b, c = Member(ws_a, "a"), Member(ws_b, "b"), Member(ws_c, "c")
        first = a.beat()
        assert sorted(p["partition"] for p in first["start"]) == [0, 1, 2]
        assert a.beat(started=first["start"])["group_state"] == "Stable"

        sign_in(page, server, STAFF, f"/groups/{GROUP}/")
        expect(page.get_by_test_id("connection-status")).to_have_text("live", timeout=TIMEOUT_MS)
        state = page.get_by_test_id("group-state")
        expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)
        # The handoff diagram: the handoff states, not the classic ones.
        drawn = page.locator(".sm-svg[data-kind=handoff] .sm-node")
        expect(drawn).to_have_count(5)
        assert sorted(drawn.evaluate_all("nodes => nodes.map(n => n.dataset.state)")) == [
            "Closing",
            "Dead",
            "Initial",
            "Stable",
            "Starting",
        ]
        expect(page.locator(".sm-node.is-current")).to_have_attribute("data-state", "Stable")
        expect(page.get_by_test_id("action-rebalance")).to_be_hidden()
        expect(tile(page, 2)).to_have_attribute("data-owner", "a")
        expect(tile(page, 2)).to_have_attribute("data-handoff", "")
        shots(page, "a-consumes-both")

        # b joins: a must close events-2 first; it stays on a's lane, drawn closing.
        joined = b.beat()
        assert joined["group_state"] == "Closing" and joined["start"] == []
        expect(state).to_have_text("Closing", timeout=TIMEOUT_MS)
        expect(page.locator(".sm-node.is-current")).to_have_attribute("data-state", "Closing")
        expect(page.get_by_test_id("last-transition")).to_contain_text("Stable → Closing")
        expect(tile(page, 2)).to_have_attribute("data-owner", "a")
        expect(tile(page, 2)).to_have_attribute("data-handoff", "closing")
        expect(tile(page, 2)).to_have_class(re.compile(r"\bis-closing\b"))
        expect(tile(page, 0)).to_have_attribute("data-handoff", "")
        expect(page.get_by_test_id("handoff-sets-a")).to_have_attribute("data-to-close", "events-2")
        expect(page.get_by_test_id("handoff-sets-b")).to_have_attribute("data-to-start", "events-2")
        expect(page.get_by_test_id("handoff-sets-a")).to_contain_text("to close: events-2")
        shots(page, "closing-on-a")

        # a commits and confirms the close: b is granted it, drawn starting on b's lane.
        a.call(
            "OffsetCommit",
            {"group_id": GROUP, "member_id": "a", "offsets": [{**MOVED, "offset": 42}]},
        )
        a.beat(closed=[MOVED])
        expect(state).to_have_text("Starting", timeout=TIMEOUT_MS)
        expect(tile(page, 2)).to_have_attribute("data-owner", "b", timeout=TIMEOUT_MS)
        expect(tile(page, 2)).to_have_attribute("data-handoff", "starting")
        expect(page.get_by_test_id("handoff-sets-a")).to_have_attribute("data-to-close", "")
        shots(page, "starting-on-b")

        granted = b.beat()
        assert granted["start"] == [MOVED]
        assert b.beat(started=[MOVED])["group_state"] == "Stable"
        expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)
        expect(tile(page, 2)).to_have_attribute("data-handoff", "")
        expect(tile(page, 2)).to_have_attribute("data-owner", "b")
        expect(page.get_by_test_id("handoff-sets-b")).to_have_attribute("data-to-start", "")
        shots(page, "stable-on-b")

        # Time travel: back to the moment a was asked to close it.
        events = server.get(f"/api/groups/{GROUP}/events")["events"]
        closing = next(i for i, e in enumerate(events) if e["type"] == "HandoffPartitionsClosing")
        page.wait_for_function(
            "n => Number(document.querySelector('[data-testid=scrubber]').max) >= n",
            arg=len(events) - 1,
            timeout=TIMEOUT_MS,
        )
        page.eval_on_selector(
            "[data-testid=scrubber]",
            "(el, i) => { el.value = String(i); el.dispatchEvent(new Event('input')); }",
            closing,
        )
        expect(page.get_by_test_id("time-travel-label")).not_to_have_text("live")
        expect(tile(page, 2)).to_have_attribute("data-owner", "a", timeout=TIMEOUT_MS)
        expect(tile(page, 2)).to_have_attribute("data-handoff", "closing")
        expect(state).to_have_text("Stable")  # the state changes with the next event
        shots(page, "scrubbed-back-to-the-close")
        # Its first event: a joined a group the engine created in Initial, at epoch 0.
        assert events[0]["type"] == "HandoffMemberJoined"
        page.eval_on_selector(
            "[data-testid=scrubber]",
            "el => { el.value = '0'; el.dispatchEvent(new Event('input')); }",
        )
        expect(state).to_have_text("Initial", timeout=TIMEOUT_MS)
        expect(page.locator(".sm-node.is-current")).to_have_attribute("data-state", "Initial")
        expect(page.get_by_test_id("group-generation")).to_have_text("0")
        page.get_by_test_id("back-to-live").click()
        expect(page.get_by_test_id("time-travel-label")).to_have_text("live")
        expect(tile(page, 2)).to_have_attribute("data-owner", "b", timeout=TIMEOUT_MS)

        # The partition store goes down: a banner says so, and a newcomer gets nothing while
        # a keeps its two partitions.
        outage = page.get_by_test_id("handoff-outage")
        expect(outage).to_be_hidden()
        store = page.get_by_test_id("action-partition-store")
        expect(store).to_have_text("partition store: up")
        assert "partition store: down" in confirm(page, "action-partition-store")
        expect(outage).to_be_visible(timeout=TIMEOUT_MS)
        expect(outage).to_contain_text("the partition store is unreachable")
        expect(store).to_have_text("partition store: down")
        newcomer = c.beat()
        assert (newcomer["assignment"], newcomer["start"]) == ([], [])
        expect(page.get_by_test_id("member-c")).to_be_visible(timeout=TIMEOUT_MS)
        expect(state).to_have_text("Stable")
        expect(page.get_by_test_id("handoff-sets-c")).to_have_attribute("data-to-start", "")
        expect(tile(page, 1)).to_have_attribute("data-owner", "a")
        assert server.get("/healthz")["handoff_switches"] == {
            "partition_store": False,
            "discovery": True,
        }
        shots(page, "store-down")

        # Back up: the group plans again with c, which takes one of a's two partitions.
        assert "handoff groups plan again" in confirm(page, "action-partition-store")
        expect(outage).to_be_hidden(timeout=TIMEOUT_MS)
        expect(state).to_have_text("Closing", timeout=TIMEOUT_MS)
        expect(store).to_have_text("partition store: up")
        expect(tile(page, 1)).to_have_attribute("data-handoff", "closing", timeout=TIMEOUT_MS)
        expect(tile(page, 1)).to_have_attribute("data-owner", "a")
        expect(page.get_by_test_id("handoff-sets-c")).to_have_attribute("data-to-start", "events-1")
        shots(page, "store-back-up")

        # The overview lists it under its handoff state.
        page.goto(f"{server.url}/")
        row = page.get_by_test_id(f"group-row-{GROUP}")
        expect(row).to_be_visible(timeout=TIMEOUT_MS)
        page.get_by_test_id("state-filter").select_option("Closing")
        expect(row).to_be_visible()
        expect(row.locator(".state-badge")).to_have_class(re.compile(r"\bstate-Closing\b"))
        page.get_by_test_id("state-filter").select_option("Stable")
        expect(row).to_have_count(0)
        # The legend explains every state the table may show, each kind's under its own name.
        for kind, states in (
            ("classic", ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"]),
            ("handoff", ["Initial", "Starting", "Closing", "Stable", "Dead"]),
        ):
            legend = page.get_by_test_id(f"state-legend-{kind}")
            badges = legend.locator(".state-badge")
            assert badges.all_inner_texts() == states
        expect(page.get_by_test_id("state-legend-handoff")).to_contain_text("No plan yet")
