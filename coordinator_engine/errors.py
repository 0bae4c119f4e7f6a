"""Kafka's error codes and the engine's small exception hierarchy.

`Errors` holds the numeric codes of Kafka's protocol (`org.apache.kafka.common.protocol.Errors`)
that a group coordinator answers. Handlers validate with `raise_if_*` functions that raise a
`CoordinatorError` subclass; each subclass carries its `Errors` code as a class attribute (the way
h2's exceptions carry theirs), and `error_code_of` is the one place that maps an exception to a
response code. Any other exception escaping a handler is a bug and is left to surface loudly.
"""

from __future__ import annotations

import enum


class Errors(enum.IntEnum):
    """Kafka's numeric error codes, as they appear in responses."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_REGULAR_EXPRESSION = 128

    @classmethod
    def name_of(cls, code: int) -> str:
        """Kafka's name for ``code`` (``REBALANCE_IN_PROGRESS``), or ``error <code>`` for a code
        this enum does not hold: a response's code in words, whatever the server sent."""
        try:
            return cls(code).name
        except ValueError:
            return f"error {code}"


class CoordinatorError(Exception):
    """A request Kafka's coordinator would reject; `error_code` is what the response carries."""

    error_code: Errors = Errors.UNKNOWN_SERVER_ERROR


class InvalidGroupIdError(CoordinatorError):
    error_code = Errors.INVALID_GROUP_ID


class NotCoordinatorError(CoordinatorError):
    error_code = Errors.NOT_COORDINATOR


class CoordinatorNotAvailableError(CoordinatorError):
    error_code = Errors.COORDINATOR_NOT_AVAILABLE


class UnknownMemberIdError(CoordinatorError):
    error_code = Errors.UNKNOWN_MEMBER_ID


class FencedInstanceIdError(CoordinatorError):
    error_code = Errors.FENCED_INSTANCE_ID


class IllegalGenerationError(CoordinatorError):
    error_code = Errors.ILLEGAL_GENERATION


class InconsistentGroupProtocolError(CoordinatorError):
    error_code = Errors.INCONSISTENT_GROUP_PROTOCOL


class InvalidSessionTimeoutError(CoordinatorError):
    error_code = Errors.INVALID_SESSION_TIMEOUT


class RebalanceInProgressError(CoordinatorError):
    error_code = Errors.REBALANCE_IN_PROGRESS


class GroupMaxSizeReachedError(CoordinatorError):
    error_code = Errors.GROUP_MAX_SIZE_REACHED


class GroupIdNotFoundError(CoordinatorError):
    error_code = Errors.GROUP_ID_NOT_FOUND


class NonEmptyGroupError(CoordinatorError):
    error_code = Errors.NON_EMPTY_GROUP


class InvalidRequestError(CoordinatorError):
    error_code = Errors.INVALID_REQUEST


class UnsupportedVersionError(CoordinatorError):
    error_code = Errors.UNSUPPORTED_VERSION


class FencedMemberEpochError(CoordinatorError):
    error_code = Errors.FENCED_MEMBER_EPOCH


class UnreleasedInstanceIdError(CoordinatorError):
    error_code = Errors.UNRELEASED_INSTANCE_ID


class UnsupportedAssignorError(CoordinatorError):
    error_code = Errors.UNSUPPORTED_ASSIGNOR


class StaleMemberEpochError(CoordinatorError):
    error_code = Errors.STALE_MEMBER_EPOCH


class InvalidRegularExpressionError(CoordinatorError):
    error_code = Errors.INVALID_REGULAR_EXPRESSION


class UnknownServerError(CoordinatorError):
    error_code = Errors.UNKNOWN_SERVER_ERROR


def error_code_of(exc: CoordinatorError) -> Errors:
    """The response code for a rejected request (the one mapping point)."""
    return exc.error_code


class IllegalStateTransition(RuntimeError):
    """A transition a group kind's state table (its `state.py`) does not allow: always a bug
    in the engine."""


class ReplayError(RuntimeError):
    """A record in the log could not be replayed; names its position and kind."""

    def __init__(self, position: int, kind: str, detail: str) -> None:
        super().__init__(f"record #{position} ({kind}) cannot be replayed: {detail}")
        self.position = position
        self.kind = kind
        self.detail = detail
