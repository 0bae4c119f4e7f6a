"""Consumer groups: KIP-848's consumer group protocol (Kafka 4's `group.protocol=consumer`), a
group kind beside the classic one (docs/engine.md, "Consumer groups").

`state` holds the group's and the member's states and the group's transition table, `group` the
group's durable state and views, `records` Kafka's record types 3-8 and 16, `reconciliation`
Kafka's `CurrentAssignmentBuilder`, `target` its `TargetAssignmentBuilder`, and `manager` the
`ConsumerGroupManager` the façade routes the kind's requests, timers and records to.
"""

from .group import (
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupView,
    ConsumerMemberView,
    CurrentAssignment,
)
from .manager import PROTOCOL_TYPE, TIMER_KINDS, ConsumerGroupManager, validate_regex
from .reconciliation import reconcile
from .state import TRANSITIONS, ConsumerGroupState, MemberState
from .target import compute_target_assignment

__all__ = [
    "PROTOCOL_TYPE",
    "TIMER_KINDS",
    "TRANSITIONS",
    "ConsumerGroup",
    "ConsumerGroupManager",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "ConsumerGroupView",
    "ConsumerMemberView",
    "CurrentAssignment",
    "MemberState",
    "compute_target_assignment",
    "reconcile",
    "validate_regex",
]
