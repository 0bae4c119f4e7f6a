"""The event feed: engine events numbered by the runtime, and where they are published.

Every ``GroupEvent`` the engine emits gets a sequence number from the runtime (one counter per
log, continued after a restart from the highest number stored), is stored in the history table
and is published to two Channels groups: the group's own (:func:`group_channel_group`) and the
global :data:`ALL_GROUPS_CHANNEL_GROUP`. A subscriber that sees a gap in ``seq`` has missed
events and should take a new snapshot (Zulip's and this project's "snapshot, then ordered
deltas").

The Channels message (its schema is :data:`EVENT_MESSAGE_SCHEMA`) carries the events that were
ready together, in order (one message per batch, not per event: under churn a group emits
hundreds of events a second, and each ``group_send`` is several Redis commands)::

    {"type": "group.events", "events": [{"seq": 7, "prev_seq": 4, "type": "StateChanged",
                                         "group_id": "orders", "at_ms": 1700000000000,
                                         "from_state": "Empty", ...}, ...]}

Each event is exactly what ``GET /api/groups/<id>/events`` returns for it. Pure module.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from coordinator_engine import GroupEvent

__all__ = [
    "ALL_GROUPS_CHANNEL_GROUP",
    "EVENT_MESSAGE_SCHEMA",
    "EVENT_MESSAGE_TYPE",
    "SequencedEvent",
    "events_message",
    "group_channel_group",
]

#: Channels group that receives every group's events.
ALL_GROUPS_CHANNEL_GROUP = "groups"
#: The Channels message ``type`` (a consumer handles it in ``group_events``).
EVENT_MESSAGE_TYPE = "group.events"

# Channels group names: ASCII letters, digits, '-', '_', '.', shorter than 100 characters.
_KEPT = re.compile(r"[A-Za-z0-9-]")
_MAX_CHANNEL_GROUP_LENGTH = 99


@dataclass(frozen=True, slots=True)
class SequencedEvent:
    """An engine event with the runtime's sequence number."""

    seq: int
    event: GroupEvent
    #: The ``seq`` of the same group's previous event (0 for its first): a subscriber to one
    #: group sees the global numbering jump, and tells a gap from other groups' events by this.
    prev_seq: int = 0

    def to_json(self) -> dict[str, Any]:
        """``{"seq": ..., "prev_seq": ..., "type": ..., "group_id": ..., "at_ms": ...,
        <event fields>}``."""
        return {"seq": self.seq, "prev_seq": self.prev_seq, **self.event.to_json()}


def events_message(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The Channels message publishing ``events`` (``SequencedEvent.to_json()``s, in order)."""
    return {"type": EVENT_MESSAGE_TYPE, "events": events}


def group_channel_group(group_id: str) -> str:
    """The Channels group of one coordinator group: ``group.<escaped id>``.

    Letters, digits and '-' stay; every other character becomes ``_xx`` per UTF-8 byte, so
    different ids never share a name. An id whose escaped form is too long for Channels maps
    to ``group.h.<sha256 of the id>`` (an escaped form never contains '.').
    """
    escaped = "".join(
        char
        if _KEPT.fullmatch(char)
        else "".join(f"_{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
        for char in group_id
    )
    name = f"group.{escaped}"
    if len(name) <= _MAX_CHANNEL_GROUP_LENGTH:
        return name
    digest = hashlib.sha256(group_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"group.h.{digest}"


#: JSON Schema of the Channels message; each event follows ``EVENT_SCHEMAS`` plus ``seq`` and
#: ``prev_seq``.
EVENT_MESSAGE_SCHEMA: dict[str, Any] = {
    "title": "group.events",
    "type": "object",
    "properties": {
        "type": {"const": EVENT_MESSAGE_TYPE},
        "events": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "seq": {"type": "integer"},
                    "prev_seq": {"type": "integer"},
                    "type": {"type": "string"},
                    "group_id": {"type": "string"},
                    "at_ms": {"type": "integer"},
                },
                "required": ["seq", "prev_seq", "type", "group_id", "at_ms"],
            },
        },
    },
    "required": ["type", "events"],
    "additionalProperties": False,
}
