"""The engine's documentation matches the code it describes."""

from __future__ import annotations

import re
from typing import Any

import pytest

from coordinator_engine.classic.state import TRANSITIONS as GROUP_TRANSITIONS
from coordinator_engine.client.consumer_state import (
    CONSUMER_TRANSITIONS as CONSUMER_MEMBER_TRANSITIONS,
)
from coordinator_engine.client.state import TRANSITIONS as MEMBER_TRANSITIONS
from coordinator_engine.consumer.state import TRANSITIONS as CONSUMER_TRANSITIONS
from coordinator_engine.handoff.state import TRANSITIONS as HANDOFF_TRANSITIONS
from tests import ROOT

#: The state tables of docs/engine.md, by the marker around each: the code's table, and whether
#: the section draws it too (a Mermaid ``stateDiagram-v2`` above the table).
STATE_TABLES: dict[str, tuple[dict[Any, str], bool]] = {
    "transitions": (GROUP_TRANSITIONS, True),
    "handoff-transitions": (HANDOFF_TRANSITIONS, True),
    "consumer-transitions": (CONSUMER_TRANSITIONS, True),
    "member-transitions": (MEMBER_TRANSITIONS, True),
    "consumer-member-transitions": (CONSUMER_MEMBER_TRANSITIONS, False),
}

_EDGE = re.compile(r"^\s*(\w+) --> (\w+)\s*$")


def _section(marker: str) -> str:
    text = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    return text.split(f"<!-- {marker}:start -->")[1].split(f"<!-- {marker}:end -->")[0]


def _table(section: str) -> dict[tuple[str, ...], str]:
    """The section's table: (from, to) -> cause."""
    lines = [line.strip() for line in section.splitlines() if line.strip().startswith("|")]
    rows = [tuple(cell.strip() for cell in line.strip("|").split("|")) for line in lines[2:]]
    return {(a, b): cause for a, b, cause in rows}


def _drawn(section: str) -> set[tuple[str, ...]]:
    """The moves the section's diagram draws (the arrow from ``[*]`` is no move)."""
    return {
        (edge[1], edge[2])
        for line in section.splitlines()
        if (edge := _EDGE.match(line)) is not None
    }


@pytest.mark.parametrize("marker", STATE_TABLES)
def test_each_state_table_in_docs_is_the_one_in_the_code(marker: str) -> None:
    table, drawn = STATE_TABLES[marker]
    section = _section(marker)
    code = {(a.value, b.value): cause for (a, b), cause in table.items()}
    assert _table(section) == code
    if drawn:
        assert "```mermaid\nstateDiagram-v2\n" in section
        assert _drawn(section) == set(code), "the diagram does not draw the table's moves"
    else:
        assert not _drawn(section)


def test_readme_states_the_test_command_that_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = re.search(r"^make test$", ci, re.MULTILINE)
    assert command is not None, ".ci/run must call `make test`"
    assert "make test" in readme
