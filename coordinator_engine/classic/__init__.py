"""Classic groups: Kafka's classic rebalance protocol (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup), one group kind of the engine.

`state` holds the state table, `group` the group's metadata, `manager` the
`ClassicGroupManager` the façade routes the kind's requests, timers and records to.
"""

from .group import ClassicGroup, GroupView, Member, MemberView
from .manager import ADMIN_REMOVAL_REASONS, TIMER_KINDS, ClassicGroupManager
from .state import GroupState

__all__ = [
    "ADMIN_REMOVAL_REASONS",
    "TIMER_KINDS",
    "ClassicGroup",
    "ClassicGroupManager",
    "GroupState",
    "GroupView",
    "Member",
    "MemberView",
]
