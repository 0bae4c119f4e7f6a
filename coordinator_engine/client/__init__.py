"""The consumer's group client: Kafka's consumer-side group protocol as a sans-IO state machine.

Where ``coordinator_engine`` is the broker's group coordinator, this package is the other end:
one consumer's ``AbstractCoordinator`` + ``ConsumerCoordinator`` (with KIP-62's poll timeout,
KIP-345's static membership, KIP-394's member id requirement and KIP-429's cooperative
rebalancing), without threads, sockets or a clock. The in-process simulator, the websocket
bridge and the tests all drive it the same way::

    client = GroupClient(ConsumerConfig("orders", ("payments",)), now_ms=clock())
    while running:
        now = clock()
        client.poll(now)                         # the application's poll()
        for request in client.outgoing(now):     # what to send now
            send(request)                        # ... and later, for each answer:
        client.receive(request, response, now)   # then call outgoing() again
        for event in client.events():            # PartitionsAssigned, CommitCompleted, ...
            handle(event)
        sleep_until(client.next_deadline_ms())   # or until an answer or the next poll()

See ``group_client.py`` for the theory of operation, ``events.py`` for what the host is told,
``state.py`` for the member's state machine and ``protocol.py`` for the consumer protocol it
speaks (JoinGroup metadata, the leader's assignment).

``HandoffClient`` (``handoff_client.py``, configured by ``HandoffConfig``) is a member of a
handoff group, driven the same way; it closes and starts partitions as the
coordinator asks (``PartitionsToClose`` → ``partitions_stopped(positions)``,
``PartitionsToStart``).

``ConsumerClient`` (``consumer_client.py``, configured by ``ConsumerProtocolConfig``) is a
member of a consumer group (KIP-848: the coordinator assigns, the member reconciles), driven
the same way; ``consumer_state.py`` holds its state table. The two share their requests in
flight, timers and events (``flights.py``: one request of each kind in flight, expired after
the request timeout, answers from an earlier membership ignored).
"""

from __future__ import annotations

from .config import (
    COOPERATIVE_ASSIGNORS,
    OFFSET_RESET_POLICIES,
    ConsumerConfig,
    ConsumerProtocolConfig,
    HandoffConfig,
    RebalanceProtocol,
)
from .consumer_client import (
    CONSUMER_CLOSE_REASON,
    CONSUMER_POLL_TIMEOUT_REASON,
    LEAVE_GROUP_EPOCH,
    LEAVE_GROUP_STATIC_EPOCH,
    ConsumerClient,
    ConsumerProtocolRequest,
    ConsumerProtocolResponse,
)
from .consumer_state import CONSUMER_TRANSITIONS, ConsumerMemberState
from .events import (
    ClientEvent,
    CloseConfirmed,
    CommitCompleted,
    CommitFailed,
    ConsumerRebalanceListener,
    CoordinatorDiscovered,
    CoordinatorLost,
    FatalError,
    HandoffJoined,
    JoinedGroup,
    LeftGroup,
    MemberEpochChanged,
    MemberStateChanged,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    PartitionsToClose,
    PartitionsToStart,
    RebalanceStarted,
    StartConfirmed,
)
from .group_client import (
    CLOSE_REASON,
    NO_GENERATION,
    POLL_TIMEOUT_REASON,
    ClientRequest,
    ClientResponse,
    Generation,
    GroupClient,
    Node,
)
from .handoff_client import (
    HANDOFF_CLOSE_REASON,
    HandoffClient,
    HandoffRequest,
    HandoffResponse,
    new_member_id,
)
from .state import TRANSITIONS, MemberState

__all__ = [
    "CLOSE_REASON",
    "CONSUMER_CLOSE_REASON",
    "CONSUMER_POLL_TIMEOUT_REASON",
    "CONSUMER_TRANSITIONS",
    "COOPERATIVE_ASSIGNORS",
    "HANDOFF_CLOSE_REASON",
    "LEAVE_GROUP_EPOCH",
    "LEAVE_GROUP_STATIC_EPOCH",
    "NO_GENERATION",
    "OFFSET_RESET_POLICIES",
    "POLL_TIMEOUT_REASON",
    "TRANSITIONS",
    "ClientEvent",
    "ClientRequest",
    "ClientResponse",
    "CloseConfirmed",
    "CommitCompleted",
    "CommitFailed",
    "ConsumerClient",
    "ConsumerConfig",
    "ConsumerMemberState",
    "ConsumerProtocolConfig",
    "ConsumerProtocolRequest",
    "ConsumerProtocolResponse",
    "ConsumerRebalanceListener",
    "CoordinatorDiscovered",
    "CoordinatorLost",
    "FatalError",
    "Generation",
    "GroupClient",
    "HandoffClient",
    "HandoffConfig",
    "HandoffJoined",
    "HandoffRequest",
    "HandoffResponse",
    "JoinedGroup",
    "LeftGroup",
    "MemberEpochChanged",
    "MemberState",
    "MemberStateChanged",
    "Node",
    "OffsetsFetched",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
    "PartitionsToClose",
    "PartitionsToStart",
    "RebalanceProtocol",
    "RebalanceStarted",
    "StartConfirmed",
    "new_member_id",
]
