"""Every link and picture of the README and docs/ that names a file of this repository names
one that exists (a moved module or a renamed picture breaks it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: A Markdown link or picture: [text](target) or ![alt](target), the target without spaces.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _local_targets(document: Path) -> list[str]:
    text = document.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # code blocks hold no links
    return [
        target
        for target in LINK.findall(text)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")
    ]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_each_local_link_names_a_file_that_exists(document: Path) -> None:
    missing = [
        target
        for target in _local_targets(document)
        if not (document.parent / target.split("#")[0]).exists()
    ]
    assert not missing, f"{document.relative_to(ROOT)} links to files that do not exist: {missing}"


def test_the_readme_links_are_read() -> None:
    assert "docs/images/group-page.png" in _local_targets(ROOT / "README.md")
