"""Make the pictures of docs/images/ again from the browser tests' screenshots.

    .venv/bin/python scripts/docs-images.py

Runs the two browser tests whose screenshots the docs show (the real server, Daphne and a
headless Chromium, as ``make test`` runs them), then crops the top of each screenshot into
``docs/images/`` with the same Chromium. Run it after a change that alters what those pages
look like.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.chromium import launch_chromium  # noqa: E402 (the browser tests' Chromium)

ARTIFACTS = ROOT / "test-artifacts" / "browser"
IMAGES = ROOT / "docs" / "images"

#: image -> (the test that takes the screenshot, the screenshot, the height kept at 1280 px wide)
PICTURES = {
    "group-page.png": (
        "tests/browser/test_group_page.py::test_staff_spawn_consumers_force_a_leave_and_scrub_back",
        "test_staff_spawn_consumers_force_a_leave_and_scrub_back/04-member-removed-rebalancing.png",
        930,
    ),
    "analysis-page.png": (
        "tests/browser/test_analysis_page.py::test_the_analysis_page_draws_a_spark_report",
        "test_the_analysis_page_draws_a_spark_report/01-all-groups.png",
        1535,
    ),
}
WIDTH = 1280


def main() -> int:
    tests = [test for test, _, _ in PICTURES.values()]
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests])
    if ran.returncode != 0:
        print("docs-images: the browser tests failed; docs/images/ is left as it was")
        return ran.returncode
    IMAGES.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        for name, (_, screenshot, height) in PICTURES.items():
            page = browser.new_page(viewport={"width": WIDTH, "height": height})
            data = base64.b64encode((ARTIFACTS / screenshot).read_bytes()).decode()
            page.set_content(
                f'<body style="margin:0"><img src="data:image/png;base64,{data}"'
                ' style="display:block"></body>'
            )
            page.screenshot(
                path=str(IMAGES / name), clip={"x": 0, "y": 0, "width": WIDTH, "height": height}
            )
            page.close()
            print(f"docs-images: wrote docs/images/{name}")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
