"""The dashboard in a real browser (Debian's headless Chromium, driven by Playwright) against a
real server: staff spawn consumers through the page and watch the group form and rebalance,
force a member out and see the state machine go round, scrub back through the history; an
anonymous visitor sees no actions and is refused if it tries; at a phone's width no page
scrolls sideways. Screenshots of every step are written to test-artifacts/browser/<test>/."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.live_server import LiveServer

from .conftest import STAFF, VIEWER, sign_in

Shots = Callable[[Page, str], Path]
GROUP = "browser-demo"
TIMEOUT_MS = 30_000


def owners(page: Page, partitions: int, topic: str = "orders") -> dict[int, str]:
    return {
        p: page.get_by_test_id(f"partition-{topic}-{p}").get_attribute("data-owner") or ""
        for p in range(partitions)
    }


def confirm(page: Page, button: str) -> str:
    """Click an action's button, confirm it in the page's dialog, return the result text."""
    result = page.get_by_test_id("action-result")
    page.get_by_test_id(button).click()
    page.get_by_test_id("confirm-action").click()
    # "<action>: sending…" while the request is in flight, then the answer in words.
    expect(result).not_to_have_text(re.compile(r"^$|sending"), timeout=TIMEOUT_MS)
    return result.inner_text()


def spawn(page: Page, count: int, behaviour: str = "steady") -> str:
    page.get_by_test_id("spawn-behaviour").select_option(behaviour)
    page.get_by_test_id("spawn-count").fill(str(count))
    page.get_by_test_id("spawn-topics").fill("orders")
    return confirm(page, "action-spawn")


def wait_stable(page: Page, generation_above: int) -> int:
    expect(page.get_by_test_id("group-state")).to_have_text("Stable", timeout=TIMEOUT_MS)
    page.wait_for_function(
        "n => Number(document.querySelector('[data-testid=group-generation]').textContent) > n",
        arg=generation_above,
        timeout=TIMEOUT_MS,
    )
    expect(page.get_by_test_id("group-state")).to_have_text("Stable", timeout=TIMEOUT_MS)
    return int(page.get_by_test_id("group-generation").inner_text())


def test_staff_spawn_consumers_force_a_leave_and_scrub_back(
    server: LiveServer, page: Page, shots: Shots
) -> None:
    server.post("/api/topics", {"name": "orders", "partitions": 6})
    sign_in(page, server, STAFF, f"/groups/{GROUP}/")
    expect(page.get_by_test_id("connection-status")).to_have_text("live", timeout=TIMEOUT_MS)
    shots(page, "empty-group-page")

    # Two consumers through the page: the group forms, every tile gets an owner.
    assert "started 2" in spawn(page, 2)
    first = wait_stable(page, 0)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid^=\"partition-orders-\"]')]"
        ".every(tile => tile.dataset.owner)",
        timeout=TIMEOUT_MS,
    )
    before = owners(page, 6)
    assert len(set(before.values())) == 2, before
    for member_id in set(before.values()):
        expect(page.get_by_test_id(f"member-{member_id}")).to_be_visible()
    shots(page, "two-consumers-stable")

    # A third: a new generation, and some tiles move to the newcomer.
    assert "started 1" in spawn(page, 1)
    second = wait_stable(page, first)
    page.wait_for_function(
        "n => new Set([...document.querySelectorAll('[data-testid^=\"partition-orders-\"]')]"
        ".map(tile => tile.dataset.owner).filter(Boolean)).size === n",
        arg=3,
        timeout=TIMEOUT_MS,
    )
    after = owners(page, 6)
    moved = [p for p in range(6) if before[p] != after[p]]
    assert moved, (before, after)
    shots(page, "three-consumers-tiles-moved")

    # Force one member out: PreparingRebalance, then Stable again without it.
    victim = after[0]
    page.get_by_test_id("remove-member-select").select_option(victim)
    assert "removed" in confirm(page, "action-remove-member")
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=event-log] *, .event-log *')]"
        ".some(row => /PreparingRebalance/.test(row.textContent))"
        " || document.querySelector('[data-testid=group-state]').textContent"
        " === 'PreparingRebalance'",
        timeout=TIMEOUT_MS,
    )
    shots(page, "member-removed-rebalancing")
    third = wait_stable(page, second)
    expect(page.get_by_test_id(f"member-{victim}")).to_have_count(0, timeout=TIMEOUT_MS)
    history = server.get(f"/api/groups/{GROUP}/events?limit=1000")["events"]
    removed = [e for e in history if e["type"] == "MemberRemoved"]
    assert [(e["member_id"], e["reason"]) for e in removed] == [(victim, "removed_by_admin")]
    transitions = [(e["from_state"], e["to_state"]) for e in history if e["type"] == "StateChanged"]
    assert ("Stable", "PreparingRebalance") in transitions[-3:]
    assert transitions[-1] == ("CompletingRebalance", "Stable")
    shots(page, "stable-again")

    # Drag the scrubber all the way back: an earlier generation is shown, then live again.
    scrubber = page.get_by_test_id("scrubber")
    expect(scrubber).to_be_enabled(timeout=TIMEOUT_MS)
    box = scrubber.bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] - 2, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2, y, steps=5)
    page.mouse.move(box["x"] + 2, y, steps=5)
    page.mouse.up()
    expect(page.get_by_test_id("time-travel-label")).not_to_have_text("live")
    shown = int(page.get_by_test_id("group-generation").inner_text())
    assert shown < third, (shown, third)
    shots(page, "scrubbed-back")
    page.get_by_test_id("back-to-live").click()
    expect(page.get_by_test_id("time-travel-label")).to_have_text("live")
    expect(page.get_by_test_id("group-generation")).to_have_text(str(third))
    shots(page, "back-to-live")


def test_anonymous_visitors_read_but_cannot_act(
    server: LiveServer, page: Page, shots: Shots
) -> None:
    server.post("/api/topics", {"name": "orders", "partitions": 2})
    server.post(
        "/api/simulations",
        {
            "group_id": GROUP,
            "topics": ["orders"],
            "behaviour": "steady",
            "assignor": "cooperative-sticky",
        },
    )
    page.goto(f"{server.url}/groups/{GROUP}/")
    expect(page.get_by_test_id("group-state")).to_have_text("Stable", timeout=TIMEOUT_MS)
    (member,) = server.get(f"/api/groups/{GROUP}")["members"]
    expect(page.get_by_test_id("partition-orders-0")).to_have_attribute(
        "data-owner", member["member_id"], timeout=TIMEOUT_MS
    )
    for action in ("rebalance", "spawn", "remove-member", "delete-group", "cleanup"):
        expect(page.get_by_test_id(f"action-{action}")).to_have_count(0)
    shots(page, "anonymous-read-only")
    # A hand-made request from the page is refused too, and nothing happens.
    status = page.evaluate(
        """async group => (await fetch('/api/admin/rebalance', {
            method: 'POST', headers: {'Content-Type': 'application/json'},
            body: JSON.stringify({group_id: group})})).status""",
        GROUP,
    )
    assert status == 401
    assert server.get(f"/api/groups/{GROUP}")["state"] == "Stable"

    # A signed-in user who is not staff sees no actions either, and is refused.
    sign_in(page, server, VIEWER, f"/groups/{GROUP}/")
    expect(page.get_by_test_id("group-state")).to_have_text("Stable", timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("action-rebalance")).to_have_count(0)
    status = page.evaluate(
        """async group => {
            const token = document.cookie.split('; ').find(c => c.startsWith('csrftoken='));
            return (await fetch('/api/admin/rebalance', {
                method: 'POST',
                headers: {'Content-Type': 'application/json',
                          'X-CSRFToken': token ? token.split('=')[1] : ''},
                body: JSON.stringify({group_id: group})})).status;
        }""",
        GROUP,
    )
    assert status == 403
    shots(page, "viewer-read-only")

    # Staff see the actions.
    page.context.clear_cookies()
    sign_in(page, server, STAFF, f"/groups/{GROUP}/")
    expect(page.get_by_test_id("action-rebalance")).to_be_visible(timeout=TIMEOUT_MS)
    # A consumer spawned here offers the group's own protocol unless staff choose another.
    expect(page.get_by_test_id("spawn-assignor")).to_have_value("cooperative-sticky")
    assert "rebalancing" in confirm(page, "action-rebalance")
    shots(page, "staff-actions")
    rows = json.dumps(server.get(f"/api/groups/{GROUP}/events?limit=1000")["events"])
    assert "an admin requested a rebalance" in rows


PHONE = {"width": 390, "height": 844}
NO_SIDEWAYS_SCROLL = """() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('body *')]
        .filter(el => el.getClientRects().length && el.getBoundingClientRect().right > width + 0.5)
        .map(el => `${el.tagName.toLowerCase()}.${el.className}`);
    return {scrollWidth: document.documentElement.scrollWidth, width, wide: wide.slice(0, 5)};
}"""


def test_a_phone_shows_every_panel_without_sideways_scrolling(
    server: LiveServer, page: Page, shots: Shots
) -> None:
    server.post("/api/topics", {"name": "orders", "partitions": 12})
    for _ in range(3):
        server.post(
            "/api/simulations", {"group_id": GROUP, "topics": ["orders"], "behaviour": "steady"}
        )
    page.set_viewport_size(PHONE)
    page.goto(f"{server.url}/groups/{GROUP}/")
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid^=\"member-\"]').length === 3"
        " && [...document.querySelectorAll('[data-testid^=\"partition-orders-\"]')]"
        ".every(tile => tile.dataset.owner)",
        timeout=TIMEOUT_MS,
    )
    expect(page.get_by_test_id("group-state")).to_have_text("Stable", timeout=TIMEOUT_MS)
    # Committed offsets and their lag are in the table once the members have committed.
    expect(page.locator(".offsets-inner .offsets-row")).to_have_count(12, timeout=TIMEOUT_MS)
    shots(page, "phone-group-page")
    # The total lag is the sum of the lags the rows show.
    lags = page.evaluate(
        """() => {
            const count = el => Number(el.textContent.replace(/,/g, '').replace('—', '0'));
            const rows = [...document.querySelectorAll('.offsets-inner .lag-cell > :last-child')];
            const total = document.querySelector('[data-field=total-lag]');
            return {rows: rows.reduce((sum, el) => sum + count(el), 0), total: count(total)};
        }"""
    )
    assert lags["rows"] == lags["total"], lags
    layout = page.evaluate(NO_SIDEWAYS_SCROLL)
    assert layout["scrollWidth"] <= layout["width"] and not layout["wide"], layout
    # Every column of the offsets table is on screen, lag included.
    header = page.locator(".offsets-header > span")
    for cell in range(header.count()):
        if header.nth(cell).is_visible():
            box = header.nth(cell).bounding_box()
            assert box is not None and box["x"] + box["width"] <= PHONE["width"], (cell, box)

    page.goto(f"{server.url}/")
    expect(page.get_by_role("link", name=GROUP)).to_be_visible(timeout=TIMEOUT_MS)
    shots(page, "phone-overview")
    layout = page.evaluate(NO_SIDEWAYS_SCROLL)
    assert layout["scrollWidth"] <= layout["width"] and not layout["wide"], layout
