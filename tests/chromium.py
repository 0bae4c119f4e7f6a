"""Debian's headless Chromium as the browser tests, the dashboard benchmark and the docs'
pictures launch it: ``/usr/bin/chromium`` (installed by ``scripts/install-system-packages.sh``;
browser downloads do not work here), as root in a sandbox-less container, with nothing reaching
out to the network."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Playwright

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


class ChromiumMissing(RuntimeError):
    """No Chromium at ``CHROMIUM``."""


def launch_chromium(playwright: Playwright) -> Browser:
    """A headless Chromium from ``CHROMIUM``; ``ChromiumMissing`` naming what installs it when
    there is none."""
    if not CHROMIUM.exists():
        raise ChromiumMissing(f"{CHROMIUM} is missing: `make system` installs Debian's chromium")
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS))
