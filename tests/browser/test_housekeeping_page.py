"""The Housekeeping page in Chromium: the three tasks with the schedules the migration made,
never run yet; with no broker, no worker and no beat answer, and the page says so at its top;
staff see *Run now*, and when the broker does not answer, the page says so in words and lets
them try again. (tests/webapp/housekeeping runs the tasks, and asks live processes, for real.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.live_server import LiveServer

from .conftest import STAFF, sign_in


def test_staff_see_the_schedules_and_a_refused_run_in_words(
    server: LiveServer, page: Page, shots: Callable[[Page, str], Path]
) -> None:
    page.goto(f"{server.url}/housekeeping/")
    rows = page.locator('[data-testid="housekeeping"] tbody tr')
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("Offset expiry and group tombstoning")
    expect(rows.nth(0)).to_contain_text("every 10 minutes")
    expect(rows.nth(1)).to_contain_text("Record log compaction")
    expect(rows.nth(1)).to_contain_text("every hour")
    expect(rows.nth(2)).to_contain_text("Spark rebalance report")
    expect(rows.nth(0).locator(".hk-last")).to_have_text("never")
    expect(page.locator('[data-testid="housekeeping"] button')).to_have_count(0)
    # Nothing listens at the broker's address: neither process can answer.
    expect(page.get_by_test_id("hk-worker")).to_contain_text(
        "not answering (broker: ", timeout=20_000
    )
    expect(page.get_by_test_id("hk-beat")).to_contain_text("silent (broker: ")
    expect(page.get_by_test_id("hk-worker-dot")).to_have_class("hk-dot dead")
    shots(page, "anonymous")

    sign_in(page, server, STAFF, "/housekeeping/")
    button = page.locator('button[data-testid="run-compact-log"]')
    expect(button).to_be_enabled()
    button.click()
    message = page.locator(".housekeeping-message")
    expect(message).to_contain_text(
        "Record log compaction: the Celery broker did not take the task", timeout=30_000
    )
    expect(button).to_be_enabled()
    shots(page, "refused")

    # The report's run row, made before queueing, says why it never ran.
    page.locator('button[data-testid="run-rebalance-report"]').click()
    expect(message).to_contain_text("Spark rebalance report: the Celery broker did not take")
    page.goto(f"{server.url}/analysis/")
    expect(page.get_by_test_id("report-error")).to_contain_text(
        "Report #1 failed: the Celery broker did not take it: "
    )
    expect(page.get_by_test_id("report-progress")).to_be_hidden()
