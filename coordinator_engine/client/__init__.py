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
"""

from __future__ import annotations

from .config import COOPERATIVE_ASSIGNORS, OFFSET_RESET_POLICIES, ConsumerConfig, RebalanceProtocol
from .events import (
    ClientEvent,
    CommitCompleted,
    CommitFailed,
    ConsumerRebalanceListener,
    CoordinatorDiscovered,
    CoordinatorLost,
    FatalError,
    JoinedGroup,
    LeftGroup,
    MemberStateChanged,
    OffsetsFetched,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    RebalanceStarted,
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
from .state import TRANSITIONS, MemberState

__all__ = [
    "CLOSE_REASON",
    "COOPERATIVE_ASSIGNORS",
    "NO_GENERATION",
    "OFFSET_RESET_POLICIES",
    "POLL_TIMEOUT_REASON",
    "TRANSITIONS",
    "ClientEvent",
    "ClientRequest",
    "ClientResponse",
    "CommitCompleted",
    "CommitFailed",
    "ConsumerConfig",
    "ConsumerRebalanceListener",
    "CoordinatorDiscovered",
    "CoordinatorLost",
    "FatalError",
    "Generation",
    "GroupClient",
    "JoinedGroup",
    "LeftGroup",
    "MemberState",
    "MemberStateChanged",
    "Node",
    "OffsetsFetched",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
    "RebalanceProtocol",
    "RebalanceStarted",
]
