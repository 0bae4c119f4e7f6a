"""Handoff groups: a group kind whose coordinator plans the assignment and moves a partition
only once its old owner closed it (docs/engine.md, "Handoff groups").

`manager` holds the `HandoffGroupManager` the façade routes the kind's requests, timers and
records to.
"""

from .manager import (
    PROTOCOL_TYPE,
    TIMER_KINDS,
    TRANSITIONS,
    HandoffGroup,
    HandoffGroupManager,
    HandoffGroupView,
    HandoffMember,
    HandoffMemberView,
    HandoffState,
    plan,
)

__all__ = [
    "PROTOCOL_TYPE",
    "TIMER_KINDS",
    "TRANSITIONS",
    "HandoffGroup",
    "HandoffGroupManager",
    "HandoffGroupView",
    "HandoffMember",
    "HandoffMemberView",
    "HandoffState",
    "plan",
]
