"""Which ``__consumer_offsets`` partition (and so which coordinator) owns a group.

Kafka maps a group to a coordinator partition with
``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` (``GroupMetadataManager
.partitionFor``; ``GroupCoordinatorService.topicPartitionFor`` in the new coordinator), where
``hashCode`` is Java's ``String.hashCode``::

    s[0]*31^(n-1) + s[1]*31^(n-2) + ... + s[n-1]      (signed 32-bit, wrapping)

over the string's UTF-16 code units (a character outside the Basic Multilingual Plane counts
as its two surrogates), and ``Utils.abs`` is ``Math.abs`` except that it maps
``Integer.MIN_VALUE`` to 0 instead of leaving it negative.

ASCII strings (nearly every group id) skip the UTF-16 encoding: their bytes are their code
units. Short strings fold in a plain loop and are masked once at the end; long ones are a dot
product with precomputed powers of 31 (mod 2**32), which keeps the per-unit loop in C.
"""

from __future__ import annotations

import operator
import sys
from array import array
from collections.abc import Sequence
from typing import Final

__all__ = ["java_string_hashcode", "partition_for"]

_MASK: Final = 0xFFFFFFFF
_UTF16_NATIVE: Final = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"
_SHORT: Final = 64
_CHUNK: Final = 256
# _POWERS[i] = 31 ** (_CHUNK - 1 - i) mod 2**32: the last m entries weigh a chunk of m units.
_POWERS: Final = tuple(pow(31, _CHUNK - 1 - i, 1 << 32) for i in range(_CHUNK))


def _polynomial(units: Sequence[int]) -> int:
    """Java's ``31*h + c`` fold over ``units``, modulo 2**32 (unsigned)."""
    n = len(units)
    if n <= _SHORT:
        # Unmasked Horner: at most ~5 bits per unit of growth, cheaper than the dot product.
        h = 0
        for unit in units:
            h = 31 * h + unit
        return h & _MASK
    h = 0
    for start in range(0, n, _CHUNK):
        chunk = units[start : start + _CHUNK]
        m = len(chunk)
        dot: int = sum(map(operator.mul, chunk, _POWERS[_CHUNK - m :]))
        h = (h * pow(31, m, 1 << 32) + dot) & _MASK
    return h


def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode`` of ``s``: a signed 32-bit int."""
    if not isinstance(s, str):
        raise TypeError(f"expected a str, got {type(s).__name__}")
    if s.isascii():
        h = _polynomial(s.encode("ascii"))
    else:
        # Code units in native order; "surrogatepass" keeps lone surrogates, which Java
        # strings may hold, as the single code unit they are.
        units = array("H", s.encode(_UTF16_NATIVE, "surrogatepass"))
        h = _polynomial(units)
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int = 50) -> int:
    """The ``__consumer_offsets`` partition of ``group_id``: Kafka's
    ``Utils.abs(groupId.hashCode) % num_partitions``, where ``Utils.abs(Integer.MIN_VALUE)``
    is 0."""
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    h = java_string_hashcode(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
