"""Browser tests: a real ``manage.py serve`` (``tests.live_server``: Daphne, the runtime, the
in-memory channel layer, one process) on a free port, and Debian's headless Chromium
(``/usr/bin/chromium``, installed by ``scripts/install-system-packages.sh``) driven by
Playwright. Playwright never downloads a browser here: it is told where Chromium is.

Every test gets a ``shots`` helper that writes numbered screenshots to
``test-artifacts/browser/<test name>/`` (kept after the run, ignored by git).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from tests import ROOT
from tests.chromium import ChromiumMissing, launch_chromium
from tests.live_server import LiveServer, on_postgres

ARTIFACTS = ROOT / "test-artifacts" / "browser"
STAFF = ("staff", "staff-password-1")
VIEWER = ("viewer", "viewer-password-1")


@pytest.fixture(scope="session")
def site_database(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A SQLite database migrated and given the two users, made once per test process: each
    server starts from a copy of it instead of running ``migrate`` and a ``shell`` of its own
    (two Django processes less per test). None when this run's servers use PostgreSQL."""
    if on_postgres(os.environ.get("DATABASE", "")):
        return None
    made = tmp_path_factory.mktemp("site-database")
    prepare_site(LiveServer(made))
    return made / "db.sqlite3"


@pytest.fixture
def server(tmp_path: Path, closed_port: int, site_database: Path | None) -> Iterator[LiveServer]:
    """The site with two users: staff, and a signed-in user who is not staff."""
    yield from serving(tmp_path, closed_port, site_database)


def prepare_site(live: LiveServer) -> None:
    """``live``'s database migrated, with the two users."""
    live.manage("migrate", "--noinput", "-v", "0")
    users = (
        "from django.contrib.auth.models import User\n"
        f"User.objects.create_user({STAFF[0]!r}, password={STAFF[1]!r}, is_staff=True)\n"
        f"User.objects.create_user({VIEWER[0]!r}, password={VIEWER[1]!r})\n"
    )
    live.manage("shell", "-c", users)


def serving(
    tmp_path: Path, closed_port: int, site_database: Path | None, **settings: str
) -> Iterator[LiveServer]:
    """The `server` fixture's site, with `settings` (environment variables) added: started,
    then stopped and its output checked."""
    live = LiveServer(
        tmp_path,
        COORDINATOR_GROUP_INITIAL_REBALANCE_DELAY_MS="0",
        # No broker answers here: a task queued from a page is refused, in words.
        CELERY_BROKER_URL=f"redis://127.0.0.1:{closed_port}/0",
        **settings,
    )
    if site_database is None:
        prepare_site(live)
    else:
        shutil.copyfile(site_database, tmp_path / "db.sqlite3")
    live.start("--no-migrate")
    yield live
    try:
        assert live.stop(signal.SIGTERM) == 0
    finally:
        live.kill()
    output = live.output.read_text()
    assert "Traceback" not in output, output


# Module scope, not session: Playwright's sync API keeps an asyncio loop running in this thread
# while it is started, and the other test directories run their own loops afterwards.
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    try:
        browser = launch_chromium(playwright)
    except ChromiumMissing as missing:
        pytest.fail(str(missing))
    yield browser
    browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


NEXT_FRAME = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Callable[[Page, str], Path]:
    folder = ARTIFACTS / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    taken = [0]

    def shot(page: Page, step: str) -> Path:
        taken[0] += 1
        path = folder / f"{taken[0]:02d}-{step}.png"
        # The event log's rows are drawn only near the viewport (content-visibility: auto), and
        # a full-page capture does not grow the viewport: the viewport is made as tall as the
        # page for the capture.
        viewport = page.viewport_size
        assert viewport is not None
        height = max(viewport["height"], page.evaluate("document.documentElement.scrollHeight"))
        page.set_viewport_size({"width": viewport["width"], "height": height})
        page.evaluate(NEXT_FRAME)
        page.screenshot(path=str(path), full_page=True)
        page.set_viewport_size(viewport)
        return path

    return shot


def sign_in(page: Page, server: LiveServer, user: tuple[str, str], next_path: str = "/") -> None:
    page.goto(f"{server.url}/accounts/login/?next={next_path}")
    page.fill("input[name=username]", user[0])
    page.fill("input[name=password]", user[1])
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(f"{server.url}{next_path}")
