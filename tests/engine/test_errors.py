"""Kafka's error codes in words."""

from coordinator_engine import Errors


def test_a_known_code_is_named_as_kafka_names_it() -> None:
    assert Errors.name_of(27) == "REBALANCE_IN_PROGRESS"
    assert Errors.name_of(Errors.NONE) == "NONE"
    assert Errors.name_of(-1) == "UNKNOWN_SERVER_ERROR"


def test_a_code_the_enum_does_not_hold_is_named_by_its_number() -> None:
    """A newer broker's or a foreign server's code: said, never raised."""
    assert Errors.name_of(9999) == "error 9999"
    assert Errors.name_of(-42) == "error -42"
