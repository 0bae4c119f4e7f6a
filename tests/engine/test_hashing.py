"""Java's String.hashCode and Kafka's coordinator partition for a group."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator_engine.hashing import java_string_hashcode, partition_for

INT_MIN = -(2**31)


def reference_hashcode(s: str) -> int:
    """Java's definition, one UTF-16 code unit at a time: h = 31*h + unit, wrapping at 32 bits."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) % 2**32
    return h - 2**32 if h >= 2**31 else h


@pytest.mark.parametrize(
    ("group_id", "partition"),
    [("groupId", 18), ("my-group", 12), ("polygenelubricants", 0)],
)
def test_known_kafka_partitions(group_id: str, partition: int) -> None:
    assert partition_for(group_id) == partition
    assert partition_for(group_id, 50) == partition


@pytest.mark.parametrize(
    ("s", "hashcode"),
    [
        ("", 0),
        ("a", 97),
        ("ab", 97 * 31 + 98),
        ("hello", 99162322),
        ("Hello World", -862545276),
        ("polygenelubricants", INT_MIN),
    ],
)
def test_hashcode_matches_java(s: str, hashcode: int) -> None:
    assert java_string_hashcode(s) == hashcode


def test_astral_characters_hash_as_their_surrogate_pair() -> None:
    # U+1F600 is, in UTF-16, the surrogate pair 0xD83D 0xDE00:
    #   0x1F600 - 0x10000 = 0xF600
    #   high = 0xD800 + (0xF600 >> 10)  = 0xD800 + 0x3D  = 0xD83D = 55357
    #   low  = 0xDC00 + (0xF600 & 0x3FF) = 0xDC00 + 0x200 = 0xDE00 = 56832
    # hashCode = 55357 * 31 + 56832 = 1716067 + 56832 = 1772899
    assert java_string_hashcode("😀") == 1772899
    # "a😀" = 97, 55357, 56832: (97 * 31 + 55357) * 31 + 56832
    assert java_string_hashcode("a😀") == (97 * 31 + 55357) * 31 + 56832


def test_non_ascii_bmp_characters_are_one_code_unit() -> None:
    assert java_string_hashcode("é") == 0xE9
    assert java_string_hashcode("组") == 0x7EC4


def test_lone_surrogates_hash_as_the_code_unit_java_would_hold() -> None:
    assert java_string_hashcode("\ud800") == 0xD800


def test_min_value_hashcode_maps_to_partition_zero_not_its_abs() -> None:
    # abs(-2**31) would be 2**31, and 2**31 % 7 == 2 / 2**31 % 3 == 2; Utils.abs gives 0.
    assert partition_for("polygenelubricants", 7) == 0
    assert partition_for("polygenelubricants", 3) == 0


def test_negative_hashcodes_use_their_absolute_value() -> None:
    assert partition_for("Hello World", 50) == 862545276 % 50


@pytest.mark.parametrize("n", [0, -1])
def test_num_partitions_below_one_is_a_value_error(n: int) -> None:
    with pytest.raises(ValueError, match="num_partitions must be at least 1"):
        partition_for("g", n)


def test_one_partition_owns_every_group() -> None:
    assert partition_for("anything", 1) == 0


def test_non_strings_are_a_type_error() -> None:
    with pytest.raises(TypeError, match="expected a str, got bytes"):
        java_string_hashcode(b"g")  # type: ignore[arg-type]


# Any Java string: ASCII, the rest of the BMP, lone surrogates and astral characters.
code_points = st.one_of(
    st.integers(0, 0x7F),
    st.integers(0x80, 0xFFFF),
    st.integers(0xD800, 0xDFFF),
    st.integers(0x10000, 0x10FFFF),
)
java_strings = st.lists(code_points, max_size=600).map(lambda cps: "".join(map(chr, cps)))


@given(s=java_strings)
def test_hashcode_matches_the_definition_for_any_string(s: str) -> None:
    assert java_string_hashcode(s) == reference_hashcode(s)


@given(s=st.text(alphabet=st.characters(max_codepoint=127), min_size=60, max_size=1200))
def test_hashcode_matches_the_definition_for_long_ascii(s: str) -> None:
    assert java_string_hashcode(s) == reference_hashcode(s)


@given(s=st.text(), n=st.integers(1, 1000))
def test_partition_is_in_range(s: str, n: int) -> None:
    h = reference_hashcode(s)
    assert partition_for(s, n) == (0 if h == INT_MIN else abs(h)) % n
    assert 0 <= partition_for(s, n) < n
