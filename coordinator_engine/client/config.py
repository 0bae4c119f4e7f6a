"""The consumer's group settings, with the Kafka consumer's defaults, checked when built.

Follows the group part of Kafka's ``ConsumerConfig`` / ``GroupRebalanceConfig``: the rebalance
timeout a consumer sends in JoinGroup is its ``max.poll.interval.ms`` (KIP-62), and the rebalance
protocol follows from the configured assignors (``ConsumerCoordinator``'s constructor picks the
newest protocol every assignor supports; only ``cooperative-sticky`` supports COOPERATIVE).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from coordinator_engine.assignors import ASSIGNOR_NAMES
from coordinator_engine.requests import INT32_MAX, check_str

#: Assignors that support the cooperative protocol (Kafka: ``supportedProtocols()`` holds
#: COOPERATIVE).
COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})

#: ``auto.offset.reset`` values. "earliest" starts a partition without a committed offset at 0;
#: with "latest" or "none" its position stays −1 and the host resolves it (it knows the log end).
OFFSET_RESET_POLICIES = ("earliest", "latest", "none")


class RebalanceProtocol(enum.Enum):
    """Kafka's ``ConsumerPartitionAssignor.RebalanceProtocol``."""

    #: Revoke every partition before rejoining; the new assignment arrives after the sync.
    EAGER = "EAGER"
    #: Keep owned partitions while rejoining; revoke only what moves, then rejoin (KIP-429).
    COOPERATIVE = "COOPERATIVE"


def _check_ms(
    name: str, value: Any, lo: int, hi: int = INT32_MAX, owner: str = "ConsumerConfig"
) -> None:
    if type(value) is not int:
        raise TypeError(f"{owner}.{name} must be an int, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{owner}.{name} must lie in {lo}..{hi}, got {value}")


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """One consumer's group settings (Kafka's consumer property in parentheses).

    group_id (``group.id``): the group to join.
    topics: the subscribed topics (``subscribe(topics)``); a list is kept as a tuple.
    assignors (``partition.assignment.strategy``): assignor names in preference order; they are
        the protocols of the JoinGroup, the coordinator picks one every member supports.
    group_instance_id (``group.instance.id``): set for a static member (KIP-345).
    client_id (``client.id``), client_host: sent in JoinGroup for display.
    session_timeout_ms (``session.timeout.ms``): the coordinator drops the member after this long
        without a heartbeat.
    heartbeat_interval_ms (``heartbeat.interval.ms``): time between heartbeats; below the session
        timeout.
    max_poll_interval_ms (``max.poll.interval.ms``): the longest the application may go without
        calling ``poll()`` before the member leaves; also the JoinGroup rebalance timeout.
    retry_backoff_ms (``retry.backoff.ms``): wait before retrying a failed request.
    enable_auto_commit / auto_commit_interval_ms (``enable.auto.commit``,
        ``auto.commit.interval.ms``): commit the consumed positions periodically from ``poll()``
        and before partitions are revoked.
    metadata_max_age_ms (``metadata.max.age.ms``): refresh topic metadata at least this often.
    request_timeout_ms (``request.timeout.ms``): a request unanswered this long counts as a lost
        connection (JoinGroup gets the rebalance timeout plus 5 s, as Kafka).
    auto_offset_reset (``auto.offset.reset``): see ``OFFSET_RESET_POLICIES``.
    """

    group_id: str
    topics: tuple[str, ...]
    assignors: tuple[str, ...] = ("range",)
    group_instance_id: str | None = None
    client_id: str = "rebalance-lab"
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    retry_backoff_ms: int = 100
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    metadata_max_age_ms: int = 300000
    request_timeout_ms: int = 30000
    auto_offset_reset: str = "earliest"
    client_host: str = ""

    def __post_init__(self) -> None:
        check_str("ConsumerConfig", "group_id", self.group_id)
        if not self.group_id:
            raise ValueError("ConsumerConfig.group_id must not be empty")
        object.__setattr__(self, "topics", _names("topics", self.topics))
        if not self.topics:
            raise ValueError("ConsumerConfig.topics must name at least one topic")
        object.__setattr__(self, "assignors", _names("assignors", self.assignors))
        if not self.assignors:
            raise ValueError("ConsumerConfig.assignors must name at least one assignor")
        unknown = [a for a in self.assignors if a not in ASSIGNOR_NAMES]
        if unknown:
            known = ", ".join(ASSIGNOR_NAMES)
            raise ValueError(f"ConsumerConfig.assignors: unknown {unknown}; known: {known}")
        check_str("ConsumerConfig", "group_instance_id", self.group_instance_id, nullable=True)
        if self.group_instance_id == "":
            raise ValueError("ConsumerConfig.group_instance_id must be None or non-empty")
        check_str("ConsumerConfig", "client_id", self.client_id)
        check_str("ConsumerConfig", "client_host", self.client_host)
        _check_ms("session_timeout_ms", self.session_timeout_ms, 1)
        _check_ms("heartbeat_interval_ms", self.heartbeat_interval_ms, 1)
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError(
                "ConsumerConfig.heartbeat_interval_ms must be lower than session_timeout_ms "
                f"({self.heartbeat_interval_ms} >= {self.session_timeout_ms})"
            )
        _check_ms("max_poll_interval_ms", self.max_poll_interval_ms, 1)
        _check_ms("retry_backoff_ms", self.retry_backoff_ms, 0)
        if type(self.enable_auto_commit) is not bool:
            raise TypeError("ConsumerConfig.enable_auto_commit must be a bool")
        _check_ms("auto_commit_interval_ms", self.auto_commit_interval_ms, 1)
        _check_ms("metadata_max_age_ms", self.metadata_max_age_ms, 1)
        _check_ms("request_timeout_ms", self.request_timeout_ms, 1)
        if self.auto_offset_reset not in OFFSET_RESET_POLICIES:
            raise ValueError(
                f"ConsumerConfig.auto_offset_reset must be one of {OFFSET_RESET_POLICIES}, "
                f"got {self.auto_offset_reset!r}"
            )

    @property
    def rebalance_timeout_ms(self) -> int:
        """The JoinGroup rebalance timeout: ``max.poll.interval.ms``, as Kafka's consumer."""
        return self.max_poll_interval_ms

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        """COOPERATIVE when every configured assignor supports it, else EAGER."""
        if all(name in COOPERATIVE_ASSIGNORS for name in self.assignors):
            return RebalanceProtocol.COOPERATIVE
        return RebalanceProtocol.EAGER


def _names(field: str, value: Any, owner: str = "ConsumerConfig") -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, tuple | list):
        raise TypeError(f"{owner}.{field} must be a tuple of names, got {value!r:.80}")
    names = tuple(value)
    for name in names:
        check_str(owner, field, name)
        if not name:
            raise ValueError(f"{owner}.{field} holds an empty name")
    if len(set(names)) != len(names):
        raise ValueError(f"{owner}.{field} names something twice: {names}")
    return names


@dataclass(frozen=True, slots=True)
class HandoffConfig:
    """One handoff group member's settings (``HandoffClient``; docs/engine.md, "The handoff
    client"). The same names and defaults as ``ConsumerConfig`` where they mean the same thing.

    group_id, topics: the handoff group and the subscribed topics.
    client_id, client_host: sent in every heartbeat, for display.
    session_timeout_ms: the coordinator removes the member after this long without a heartbeat.
    heartbeat_interval_ms: time between heartbeats; below the session timeout.
    retry_backoff_ms: wait before retrying a failed heartbeat, commit or offset fetch.
    request_timeout_ms: a request unanswered this long counts as lost.
    auto_offset_reset: where a started partition without a committed offset begins (see
        ``OFFSET_RESET_POLICIES``).
    """

    group_id: str
    topics: tuple[str, ...]
    client_id: str = "rebalance-lab"
    client_host: str = ""
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30000
    auto_offset_reset: str = "earliest"

    def __post_init__(self) -> None:
        owner = "HandoffConfig"
        check_str(owner, "group_id", self.group_id)
        if not self.group_id:
            raise ValueError("HandoffConfig.group_id must not be empty")
        object.__setattr__(self, "topics", _names("topics", self.topics, owner))
        if not self.topics:
            raise ValueError("HandoffConfig.topics must name at least one topic")
        check_str(owner, "client_id", self.client_id)
        check_str(owner, "client_host", self.client_host)
        _check_ms("session_timeout_ms", self.session_timeout_ms, 1, owner=owner)
        _check_ms("heartbeat_interval_ms", self.heartbeat_interval_ms, 1, owner=owner)
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError(
                "HandoffConfig.heartbeat_interval_ms must be lower than session_timeout_ms "
                f"({self.heartbeat_interval_ms} >= {self.session_timeout_ms})"
            )
        _check_ms("retry_backoff_ms", self.retry_backoff_ms, 0, owner=owner)
        _check_ms("request_timeout_ms", self.request_timeout_ms, 1, owner=owner)
        if self.auto_offset_reset not in OFFSET_RESET_POLICIES:
            raise ValueError(
                f"HandoffConfig.auto_offset_reset must be one of {OFFSET_RESET_POLICIES}, "
                f"got {self.auto_offset_reset!r}"
            )


@dataclass(frozen=True, slots=True)
class ConsumerProtocolConfig:
    """One consumer-protocol member's settings (``ConsumerClient``; KIP-848, Kafka's
    ``group.protocol=consumer``; docs/engine.md, "The consumer-protocol client"). The same
    names and defaults as ``ConsumerConfig`` where they mean the same thing (Kafka's consumer
    property in parentheses). There is no heartbeat interval: the coordinator gives it in
    every answer; and no session timeout of the member's own (see ``session_timeout_ms``).

    group_id (``group.id``): the consumer group to join.
    topics: the subscribed topic names (``subscribe(topics)``); a list is kept as a tuple.
    topic_regex: instead of ``topics``, a regular expression (``subscribe(Pattern)``,
        KIP-848's SubscribedTopicRegex) the coordinator matches against whole topic names.
        Exactly one of ``topics`` and ``topic_regex`` is given.
    group_instance_id (``group.instance.id``): set for a static member (KIP-345).
    server_assignor (``group.remote.assignor``): the coordinator's assignor to ask for
        ("uniform", "range"); None leaves the choice to the coordinator's default.
    rebalance_timeout_ms (``max.poll.interval.ms``): sent as the heartbeat's
        RebalanceTimeoutMs (the coordinator fences a member that takes longer to revoke), and
        the longest the application may go without ``poll()`` before the member leaves.
    client_id (``client.id``), client_host: sent in every heartbeat, for display.
    retry_backoff_ms (``retry.backoff.ms``): wait before retrying a failed request.
    request_timeout_ms (``request.timeout.ms``): a request unanswered this long counts as lost.
    auto_offset_reset (``auto.offset.reset``): see ``OFFSET_RESET_POLICIES``.
    enable_auto_commit / auto_commit_interval_ms (``enable.auto.commit``,
        ``auto.commit.interval.ms``): commit the consumed positions periodically from
        ``poll()``, before a reconciliation revokes partitions, and on close.
    session_timeout_ms: the *coordinator's* ``group.consumer.session.timeout.ms`` (45000 by
        default), which a consumer-protocol member does not choose: the client uses it only to
        take itself for removed when no heartbeat was answered for that long, and to space
        ``quiet_heartbeats``. Set it to the coordinator's value.
    """

    group_id: str
    topics: tuple[str, ...] = ()
    topic_regex: str | None = None
    group_instance_id: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = 300000
    client_id: str = "rebalance-lab"
    client_host: str = ""
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30000
    auto_offset_reset: str = "earliest"
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    session_timeout_ms: int = 45000

    def __post_init__(self) -> None:
        owner = "ConsumerProtocolConfig"
        check_str(owner, "group_id", self.group_id)
        if not self.group_id:
            raise ValueError("ConsumerProtocolConfig.group_id must not be empty")
        object.__setattr__(self, "topics", _names("topics", self.topics, owner))
        check_str(owner, "topic_regex", self.topic_regex, nullable=True)
        if bool(self.topics) == (self.topic_regex is not None):
            raise ValueError(
                "ConsumerProtocolConfig: give exactly one of topics and topic_regex "
                f"(topics={self.topics!r}, topic_regex={self.topic_regex!r})"
            )
        if self.topic_regex == "":
            raise ValueError("ConsumerProtocolConfig.topic_regex must not be empty")
        for name in ("group_instance_id", "server_assignor"):
            value = getattr(self, name)
            check_str(owner, name, value, nullable=True)
            if value == "":
                raise ValueError(f"ConsumerProtocolConfig.{name} must be None or non-empty")
        check_str(owner, "client_id", self.client_id)
        check_str(owner, "client_host", self.client_host)
        _check_ms("rebalance_timeout_ms", self.rebalance_timeout_ms, 1, owner=owner)
        _check_ms("retry_backoff_ms", self.retry_backoff_ms, 0, owner=owner)
        _check_ms("request_timeout_ms", self.request_timeout_ms, 1, owner=owner)
        if self.auto_offset_reset not in OFFSET_RESET_POLICIES:
            raise ValueError(
                f"ConsumerProtocolConfig.auto_offset_reset must be one of "
                f"{OFFSET_RESET_POLICIES}, got {self.auto_offset_reset!r}"
            )
        if type(self.enable_auto_commit) is not bool:
            raise TypeError("ConsumerProtocolConfig.enable_auto_commit must be a bool")
        _check_ms("auto_commit_interval_ms", self.auto_commit_interval_ms, 1, owner=owner)
        _check_ms("session_timeout_ms", self.session_timeout_ms, 1, owner=owner)
