"""A handoff group created and fed from the UI alone, in a real browser against a
real server: staff name a new group on the overview, choose the handoff protocol and spawn two
steady simulated consumers; the group's page shows it Stable with the partitions split between
two lanes, refuses classic consumers for it in words, and a third consumer spawned there brings
a handoff (Stable → Closing → Starting → Stable), which the event log tells and time travel
shows. Screenshots of every step are written to test-artifacts/browser/<test>/."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.live_server import LiveServer

from .conftest import STAFF, sign_in

Shots = Callable[[Page, str], Path]
GROUP = "made-in-the-ui"
TIMEOUT_MS = 30_000
PARTITIONS = 4
HANDOFF_BEHAVIOURS = ["steady", "crash", "flapping", "graceful_leave", "slow_close"]


def options(page: Page, test_id: str) -> list[str]:
    return (
        page.get_by_test_id(test_id)
        .locator("option")
        .evaluate_all("options => options.map(o => o.value)")
    )


def owners(page: Page) -> list[str]:
    """Each tile's owner (empty: nobody), partition by partition."""
    return [
        page.get_by_test_id(f"partition-events-{p}").get_attribute("data-owner") or ""
        for p in range(PARTITIONS)
    ]


def lanes(page: Page) -> Any:
    return page.locator(".lanes-canvas [data-testid^='member-']")


def test_staff_create_a_handoff_group_from_the_ui_and_a_newcomer_brings_a_handoff(
    server: LiveServer, page: Page, shots: Shots
) -> None:
    server.post("/api/topics", {"name": "events", "partitions": PARTITIONS})
    sign_in(page, server, STAFF, "/")

    # The overview's New group: classic by default, with the classic fields.
    expect(page.get_by_test_id("new-group-form")).to_be_visible()
    protocol = page.get_by_test_id("spawn-protocol")
    expect(protocol).to_have_value("classic")
    assert "slow" in options(page, "spawn-behaviour")
    expect(page.get_by_test_id("spawn-assignor")).to_be_visible()
    # Handoff: its behaviours only, and no assignor nor instance id.
    protocol.select_option("handoff")
    assert options(page, "spawn-behaviour") == HANDOFF_BEHAVIOURS
    expect(page.get_by_test_id("spawn-assignor")).to_be_hidden()
    expect(page.get_by_test_id("spawn-instance-id")).to_be_hidden()
    expect(page.get_by_test_id("spawn-instance-id")).to_be_disabled()
    slow_close = page.get_by_test_id("spawn-behaviour").locator("option[value=slow_close]")
    expect(slow_close).to_have_attribute("title", re.compile("the group waits in Closing"))
    page.get_by_test_id("spawn-count").fill("2")
    page.get_by_test_id("spawn-topics").fill("events")
    # Without a group id nothing is sent.
    page.get_by_test_id("action-new-group").click()
    expect(page).to_have_url(f"{server.url}/")
    page.get_by_test_id("new-group-id").fill(GROUP)
    shots(page, "new-group-form")
    page.get_by_test_id("action-new-group").click()

    # Its page: a handoff group, Stable, the four partitions split between two lanes.
    page.wait_for_url(f"{server.url}/groups/{GROUP}/", timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("connection-status")).to_have_text("live", timeout=TIMEOUT_MS)
    state = page.get_by_test_id("group-state")
    expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)
    expect(page.locator("body")).to_have_attribute("data-kind", "handoff")
    expect(page.locator(".sm-svg[data-kind=handoff]")).to_have_count(1)
    expect(lanes(page)).to_have_count(2, timeout=TIMEOUT_MS)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid^=partition-events-]')]"
        ".every(t => t.dataset.owner && !t.dataset.handoff)",
        timeout=TIMEOUT_MS,
    )
    first = owners(page)
    assert len(set(first)) == 2 and "" not in first, first
    assert sorted(first.count(m) for m in set(first)) == [2, 2], first
    listed = server.get("/api/simulations")["consumers"]
    assert sorted((c["spec"]["protocol"], c["spec"]["behaviour"]) for c in listed) == [
        ("handoff", "steady"),
        ("handoff", "steady"),
    ]
    shots(page, "stable-two-lanes")

    # The page's spawn form follows the group's kind: handoff, and classic is refused in words.
    form_protocol = page.get_by_test_id("spawn-protocol")
    expect(form_protocol).to_have_value("handoff")
    expect(page.get_by_test_id("spawn-assignor")).to_be_hidden()
    assert options(page, "spawn-behaviour") == HANDOFF_BEHAVIOURS
    expect(page.get_by_test_id("spawn-topics")).to_have_value("events")
    form_protocol.select_option("classic")
    page.get_by_test_id("action-spawn").click()
    result = page.get_by_test_id("action-result")
    expect(result).to_contain_text(f"group {GROUP} is a handoff group and kinds do not mix")
    expect(result).to_contain_text("INCONSISTENT_GROUP_PROTOCOL")
    expect(page.get_by_test_id("confirm-dialog")).to_be_hidden()
    assert len(server.get("/api/simulations")["consumers"]) == 2, "nothing was started"
    shots(page, "classic-refused")

    # A third, steady: the plan moves a partition from each of the first two to it.
    seq_before = server.get(f"/api/groups/{GROUP}/events")["events"][-1]["seq"]
    form_protocol.select_option("handoff")
    page.get_by_test_id("spawn-behaviour").select_option("steady")
    page.get_by_test_id("spawn-count").fill("1")
    page.get_by_test_id("action-spawn").click()
    expect(page.get_by_test_id("confirm-dialog")).to_contain_text(
        f"Start 1 simulated steady consumer in handoff group {GROUP} (topics events)?"
    )
    page.get_by_test_id("confirm-action").click()
    expect(result).to_contain_text("started 1 steady consumer", timeout=TIMEOUT_MS)
    expect(lanes(page)).to_have_count(3, timeout=TIMEOUT_MS)
    page.wait_for_function(
        "() => { const tiles = [...document.querySelectorAll('[data-testid^=partition-events-]')];"
        " return tiles.every(t => t.dataset.owner && !t.dataset.handoff)"
        " && new Set(tiles.map(t => t.dataset.owner)).size === 3; }",
        timeout=TIMEOUT_MS,
    )
    expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)
    after = owners(page)
    newcomer = (set(after) - set(first)).pop()
    # Only what had to move moved: the newcomer's tile came from an old owner.
    assert sum(a != b for a, b in zip(first, after, strict=True)) == after.count(newcomer)
    shots(page, "stable-three-lanes")

    # The handoff, as the engine told it: Stable → Closing → Starting → Stable.
    events = server.get(f"/api/groups/{GROUP}/events")["events"]
    changes = [e for e in events if e["seq"] > seq_before and e["type"] == "StateChanged"]
    assert [(e["from_state"], e["to_state"]) for e in changes][:3] == [
        ("Stable", "Closing"),
        ("Closing", "Starting"),
        ("Starting", "Stable"),
    ], changes
    closing, starting = changes[0], changes[1]
    log = page.get_by_test_id("event-log")
    closing_row = log.locator(f"li[data-seq='{closing['seq']}']")
    expect(closing_row).to_contain_text("Stable → Closing")
    expect(log.locator(f"li[data-seq='{starting['seq']}']")).to_contain_text("Closing → Starting")

    # Click the close in the log: the group as it was then, Closing, a tile closing on its
    # old owner's lane.
    closing_row.click()
    expect(page.get_by_test_id("time-travel-label")).not_to_have_text("live")
    expect(state).to_have_text("Closing", timeout=TIMEOUT_MS)
    closing_tiles = page.locator("[data-testid^=partition-events-][data-handoff=closing]")
    expect(closing_tiles.first).to_be_visible(timeout=TIMEOUT_MS)
    for key in closing_tiles.evaluate_all("tiles => tiles.map(t => t.dataset.testid)"):
        partition = int(key.rsplit("-", 1)[1])
        expect(page.get_by_test_id(key)).to_have_attribute("data-owner", first[partition])
    shots(page, "travelled-to-closing")
    page.get_by_test_id("back-to-live").click()
    expect(page.get_by_test_id("time-travel-label")).to_have_text("live")
    expect(state).to_have_text("Stable", timeout=TIMEOUT_MS)


def test_a_new_groups_page_spawns_either_protocol_and_turns_handoff(
    server: LiveServer, page: Page, shots: Shots
) -> None:
    """`/groups/<id>/` of a group that does not exist yet: the spawn form leaves the protocol
    free (classic first); handoff consumers spawned there make it a handoff group's page."""
    server.post("/api/topics", {"name": "events", "partitions": PARTITIONS})
    sign_in(page, server, STAFF, "/groups/fresh/")
    expect(page.get_by_test_id("connection-status")).to_have_text("live", timeout=TIMEOUT_MS)
    expect(page.locator(".group-notice")).to_contain_text("There is no group “fresh” yet")
    protocol = page.get_by_test_id("spawn-protocol")
    expect(protocol).to_have_value("classic")
    expect(page.get_by_test_id("spawn-assignor")).to_be_visible()
    assert "static_restart" in options(page, "spawn-behaviour")
    protocol.select_option("handoff")
    assert options(page, "spawn-behaviour") == HANDOFF_BEHAVIOURS
    page.get_by_test_id("spawn-topics").fill("events")
    page.get_by_test_id("action-spawn").click()
    page.get_by_test_id("confirm-action").click()
    expect(page.get_by_test_id("action-result")).to_contain_text(
        "started 1 steady consumer", timeout=TIMEOUT_MS
    )
    expect(page.locator("body")).to_have_attribute("data-kind", "handoff", timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("group-state")).to_have_text("Stable", timeout=TIMEOUT_MS)
    expect(page.locator(".group-notice")).to_be_hidden()
    expect(lanes(page)).to_have_count(1)
    expect(protocol).to_have_value("handoff")
    shots(page, "fresh-is-handoff")
