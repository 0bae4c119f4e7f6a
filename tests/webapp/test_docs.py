"""docs/protocol.md matches the code: its field tables are the dataclasses', its worked session
is what a live server answers, its feed example is what the server publishes. The README and
docs/ name only paths and modules that exist."""

from __future__ import annotations

import collections.abc
import dataclasses
import importlib
import json
import re
import types
import typing
from typing import Any

import pytest
from channels.layers import get_channel_layer

import coordinator_engine
from coordinator_engine import cluster
from tests import ROOT
from webapp.runtime.coordinator_runtime import CoordinatorRuntime
from webapp.transports.websocket.codec import APIS, to_json

from .helpers import Client

DOC = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")

REQUEST_OBJECTS = [
    "Protocol",
    "Assignment",
    "MemberIdentity",
    "PartitionOffset",
    "TopicPartition",
    "OwnedTopicPartitions",
]
RESPONSE_OBJECTS = [
    "JoinGroupMember",
    "LeaveMemberResult",
    "PartitionResult",
    "OffsetData",
    "DescribedGroup",
    "DescribedMember",
    "ListedGroup",
    "DeleteGroupResult",
    "ConsumerDescribedGroup",
    "ConsumerDescribedMember",
]


def section(name: str) -> str:
    return DOC.split(f"<!-- {name}:start -->")[1].split(f"<!-- {name}:end -->")[0].strip()


def type_name(hint: Any) -> str:
    names = {str: "string", int: "int", bool: "boolean", bytes: "base64"}
    if hint in names:
        return names[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        (inner,) = [arg for arg in args if arg is not type(None)]
        return f"{type_name(inner)} or null"
    if origin is tuple:
        return f"[{type_name(args[0])}]"
    if origin is collections.abc.Mapping:
        return f"{{{type_name(args[0])}: {type_name(args[1])}}}"
    return str(hint.__name__)


def fields_cell(cls: type, defaults: bool) -> str:
    hints = typing.get_type_hints(cls)
    parts = []
    for field in dataclasses.fields(cls):
        text = f"`{field.name}`: {type_name(hints[field.name])}"
        if defaults and field.default is not dataclasses.MISSING:
            text += f" = `{json.dumps(to_json(field.default))}`"
        parts.append(text)
    return "; ".join(parts)


def table(header: str, rows: list[tuple[str, str]]) -> str:
    lines = [f"| {header} |", "|---|---|"]
    lines += [f"| {name} | {cell} |" for name, cell in rows]
    return "\n".join(lines)


def response_class(api: str) -> type:
    found = getattr(coordinator_engine, f"{api}Response", None)
    return found if found is not None else getattr(cluster, f"{api}Response")  # type: ignore[no-any-return]


def test_the_request_table_lists_every_apis_fields_types_and_defaults() -> None:
    rows = [(api, fields_cell(cls, defaults=True)) for api, cls in APIS.items()]
    assert section("requests") == table("api | request fields", rows)


def test_the_response_table_lists_every_apis_response_fields() -> None:
    rows = [(api, fields_cell(response_class(api), defaults=False)) for api in APIS]
    assert section("responses") == table("api | response fields", rows)


def test_the_object_table_lists_every_nested_object() -> None:
    rows = [
        (name, fields_cell(getattr(coordinator_engine, name), True)) for name in REQUEST_OBJECTS
    ]
    rows += [
        (name, fields_cell(getattr(coordinator_engine, name), False)) for name in RESPONSE_OBJECTS
    ]
    rows.append(("TopicMetadata", fields_cell(cluster.TopicMetadata, False)))
    assert section("objects") == table("object | fields", rows)


@pytest.mark.asyncio
async def test_the_worked_session_is_what_the_server_answers(
    runtime: CoordinatorRuntime, ws: Client
) -> None:
    await runtime.create_topic("orders", 2)
    layer = get_channel_layer()
    assert layer is not None
    feed = await layer.new_channel()
    await layer.group_add("groups", feed)

    block = section("session").removeprefix("```text").removesuffix("```").strip()
    lines = block.splitlines()
    assert len(lines) == 20
    for line in lines:
        direction, text = line.split(" ", 1)
        if direction == "→":
            await ws.send_raw(text=text)
        else:
            assert direction == "←"
            assert await ws.recv() == json.loads(text)

    # The feed example is the event the session published with that sequence number.
    example = json.loads(DOC.split("## The event feed")[1].split("```json")[1].split("```")[0])
    assert runtime.publisher is not None
    await runtime.publisher.drain()
    (wanted,) = example["events"]
    found = None
    while found is None:
        message = await layer.receive(feed)
        assert set(message) == set(example) and message["type"] == example["type"], message
        found = next((e for e in message["events"] if e["seq"] == wanted["seq"]), None)
    assert found == wanted, json.dumps(found)


# -- names of files and modules ------------------------------------------------------------------

PROSE = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP_FOLDERS = ("webapp", "coordinator_engine", "tests", "bench", "docs", "static", "scripts")


def test_every_path_the_readme_and_docs_name_exists() -> None:
    """A moved or renamed file takes its mentions with it (`webapp/runtime/turns.py`, ...)."""
    pattern = re.compile(rf"`((?:{'|'.join(TOP_FOLDERS)})/[\w./-]*)`")
    named = {
        (doc.name, path)
        for doc in PROSE
        for path in pattern.findall(doc.read_text(encoding="utf-8"))
        if "<" not in path
    }
    assert len(named) > 10
    missing = sorted((doc, path) for doc, path in named if not (ROOT / path).exists())
    assert missing == []


def test_every_webapp_module_the_readme_and_docs_name_imports() -> None:
    """`webapp.runtime.events.group_channel_group` names a module and, maybe, what is in it."""
    named = {
        (doc.name, dotted)
        for doc in PROSE
        for dotted in re.findall(r"`(webapp(?:\.\w+)+)`", doc.read_text(encoding="utf-8"))
    }
    assert named
    unresolved = []
    for doc, dotted in sorted(named):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                target: Any = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attribute in parts[cut:]:
                    target = getattr(target, attribute)
            except AttributeError:
                unresolved.append((doc, dotted))
            break
        else:
            unresolved.append((doc, dotted))
    assert unresolved == []
