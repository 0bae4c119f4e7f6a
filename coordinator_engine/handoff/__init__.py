"""Handoff groups: a group kind whose coordinator plans the assignment and moves a partition
only once its old owner closed it (docs/engine.md, "Handoff groups").

`state` holds the state table, `group` the group's durable state and views, `manager` the
`HandoffGroupManager` the façade routes the kind's requests, timers and records to.
"""

from .group import (
    PROTOCOL_TYPE,
    HandoffGroup,
    HandoffGroupView,
    HandoffMember,
    HandoffMemberView,
)
from .manager import TIMER_KINDS, HandoffGroupManager, plan
from .state import TRANSITIONS, HandoffState

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
