"""A consumer-protocol group (KIP-848) created from the UI alone, in a real browser against a
real server: staff choose the consumer protocol in the overview's New group (its behaviours,
the coordinator's assignors, an instance id), spawn two steady simulated consumers, and the
group's page opens on a consumer group that reaches Stable, whose spawn form follows its kind
and refuses classic consumers in words; the overview lists it beside a classic group without
an error in either page. (How a consumer group's page draws its members: test_consumer_page.py.)
Screenshots of every step are written to test-artifacts/browser/<test>/."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.live_server import LiveServer

from .conftest import STAFF, sign_in

Shots = Callable[[Page, str], Path]
GROUP = "kip848-from-the-ui"
TIMEOUT_MS = 30_000
CONSUMER_BEHAVIOURS = [
    "steady",
    "slow",
    "crash",
    "flapping",
    "static_restart",
    "graceful_leave",
    "slow_revoke",
]


def options(page: Page, test_id: str) -> list[str]:
    return (
        page.get_by_test_id(test_id)
        .locator("option")
        .evaluate_all("options => options.map(o => o.value)")
    )


def test_staff_create_a_consumer_protocol_group_from_the_ui(
    server: LiveServer, page: Page, shots: Shots
) -> None:
    server.post("/api/topics", {"name": "events", "partitions": 4})
    sign_in(page, server, STAFF, "/")

    protocol = page.get_by_test_id("spawn-protocol")
    expect(protocol).to_have_value("classic")
    assert options(page, "spawn-assignor") == [
        "range",
        "roundrobin",
        "sticky",
        "cooperative-sticky",
    ]
    protocol.select_option("consumer")
    assert options(page, "spawn-behaviour") == CONSUMER_BEHAVIOURS
    assert options(page, "spawn-assignor") == ["uniform", "range"]
    expect(page.get_by_test_id("spawn-assignor")).to_have_value("uniform")
    expect(page.get_by_test_id("spawn-instance-id")).to_be_visible()
    slow_revoke = page.get_by_test_id("spawn-behaviour").locator("option[value=slow_revoke]")
    expect(slow_revoke).to_have_attribute("title", re.compile("until the coordinator fences it"))
    # Back to classic: its own assignors again.
    protocol.select_option("classic")
    assert options(page, "spawn-assignor")[0] == "range"
    protocol.select_option("consumer")
    page.get_by_test_id("spawn-count").fill("2")
    page.get_by_test_id("spawn-topics").fill("events")
    page.get_by_test_id("new-group-id").fill(GROUP)
    shots(page, "new-group-form")
    page.get_by_test_id("action-new-group").click()

    page.wait_for_url(f"{server.url}/groups/{GROUP}/", timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("connection-status")).to_have_text("live", timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("group-state")).to_have_text("Stable", timeout=TIMEOUT_MS)
    listed = server.get("/api/simulations")["consumers"]
    assert sorted((c["spec"]["protocol"], c["spec"]["assignor"]) for c in listed) == [
        ("consumer", "uniform"),
        ("consumer", "uniform"),
    ]

    def split() -> bool:
        group = server.get(f"/api/groups/{GROUP}")
        return group["state"] == "Stable" and sorted(
            len(m["assignment"]) for m in group["members"]
        ) == [2, 2]

    page.wait_for_timeout(100)
    for _ in range(300):
        if split():
            break
        page.wait_for_timeout(100)
    assert split(), server.get(f"/api/groups/{GROUP}")
    assert server.get(f"/api/groups/{GROUP}")["kind"] == "consumer"
    shots(page, "consumer-group-page")

    # The page's spawn form follows the group's kind, and refuses classic consumers in words.
    form_protocol = page.get_by_test_id("spawn-protocol")
    expect(form_protocol).to_have_value("consumer", timeout=TIMEOUT_MS)
    form_protocol.select_option("classic")
    page.get_by_test_id("action-spawn").click()
    result = page.get_by_test_id("action-result")
    expect(result).to_contain_text(f"group {GROUP} is a consumer group and kinds do not mix")
    assert len(server.get("/api/simulations")["consumers"]) == 2, "nothing was started"
    shots(page, "classic-refused")

    # The overview lists it (with a classic group beside it) and its page draws without errors.
    server.post(
        "/api/simulations",
        {"group_id": "classic-beside", "topics": ["events"], "name": "classic-1"},
    )
    page.goto(f"{server.url}/")
    row = page.locator("tr", has_text=GROUP)
    expect(row.first).to_be_visible(timeout=TIMEOUT_MS)
    expect(page.locator("tr", has_text="classic-beside").first).to_be_visible(timeout=TIMEOUT_MS)
    shots(page, "overview")
