"""The spawn form's behaviour and assignor lists (``static/dashboard/spawn.js``) are the server's
(``webapp.simulation.consumer.BEHAVIOURS``, the client's and the coordinator's assignors): one
added to one side and not the other would be offered and refused, or never offered."""

from __future__ import annotations

import re
from pathlib import Path

from coordinator_engine.assignors import ASSIGNOR_NAMES
from coordinator_engine.server_assignors import SERVER_ASSIGNORS
from webapp.simulation.consumer import BEHAVIOURS

SPAWN_JS = Path(__file__).resolve().parents[3] / "static" / "dashboard" / "spawn.js"


def page_behaviours() -> dict[str, list[str]]:
    text = SPAWN_JS.read_text()
    block = re.search(r"export const BEHAVIOURS = \{(.*?)\n\};", text, re.S)
    assert block is not None, "spawn.js no longer declares BEHAVIOURS"
    lists = re.findall(r"\n  (\w+): \[(.*?)\n  \]", block.group(1), re.S)
    return {protocol: re.findall(r'name: "(\w+)"', body) for protocol, body in lists}


def test_the_page_offers_each_protocol_the_behaviours_the_server_accepts() -> None:
    assert page_behaviours() == {
        protocol: [behaviour.value for behaviour in behaviours]
        for protocol, behaviours in BEHAVIOURS.items()
    }


def test_the_page_offers_each_protocol_the_assignors_its_consumers_may_name() -> None:
    text = SPAWN_JS.read_text()
    block = re.search(r"export const ASSIGNORS = \{(.*?)\n\};", text, re.S)
    assert block is not None, "spawn.js no longer declares ASSIGNORS"
    lists = dict(re.findall(r"\n  (\w+): \[(.*?)\],", block.group(1), re.S))
    offered = {protocol: re.findall(r'"([\w-]+)"', body) for protocol, body in lists.items()}
    assert offered == {
        "classic": list(ASSIGNOR_NAMES),
        "handoff": [],
        "consumer": list(SERVER_ASSIGNORS),
    }
