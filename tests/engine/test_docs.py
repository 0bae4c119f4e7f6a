"""The engine's documentation matches the code it describes."""

from __future__ import annotations

import re
from pathlib import Path

from coordinator_engine.classic.state import TRANSITIONS

ROOT = Path(__file__).resolve().parents[2]


def test_transition_table_in_docs_is_the_one_in_state_py() -> None:
    text = (ROOT / "docs" / "engine.md").read_text(encoding="utf-8")
    table = text.split("<!-- transitions:start -->")[1].split("<!-- transitions:end -->")[0]
    rows = [
        tuple(cell.strip() for cell in line.strip().strip("|").split("|"))
        for line in table.strip().splitlines()[2:]
    ]
    documented = {(a, b): cause for a, b, cause in rows}
    actual = {(a.value, b.value): cause for (a, b), cause in TRANSITIONS.items()}
    assert documented == actual


def test_readme_states_the_test_command_that_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = re.search(r"^make test$", ci, re.MULTILINE)
    assert command is not None, ".ci/run must call `make test`"
    assert "make test" in readme
