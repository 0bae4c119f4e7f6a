"""The generic struct codec of the log's records: Kafka's primitive types, a table-driven
encoder and a strict reader, and the decoding of keys by record type.

A schema is data: a tuple of ``(field, type)`` pairs, the type one of the primitive names below
or an `Array` of a nested struct; `encode` writes an object's fields in that order and
`Reader.struct` reads them back. Every record type's module (`records.offset_commit`, and each
group kind's ``records`` module) keeps its schemas and its hand-unrolled fast paths beside its
factories, and declares a `RecordType`; the façade gathers them into one `key_decoder`.

Primitive encodings (Kafka's protocol types, big-endian):

* non-flexible versions: ``string`` = int16 length + UTF-8 (``string?`` may have length -1 =
  null); ``bytes`` = int32 length + data; array = int32 count + elements.
* flexible versions: compact forms, whose length prefix is an unsigned varint holding
  length + 1 (0 = null); every struct ends with a tagged-field section: a varint count, then
  per field a varint tag, a varint size and that many bytes. No record here defines a tag, so
  every tagged field is skipped (newer writers put their additions there).

Reading is strict: truncation, bytes after the last field, invalid UTF-8, a negative length
(only -1, and only for a nullable string, means null), an overlong varint or an unknown
version raise `CorruptRecordError`; nothing else escapes the decoders. See the package's
docstring for why.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, NoReturn, TypeVar
from uuid import UUID as _Uuid

__all__ = [
    "BYTES",
    "INT8",
    "INT32",
    "INT64",
    "NULLABLE_STRING",
    "STRING",
    "UUID",
    "Array",
    "ArrayOf",
    "CorruptRecordError",
    "Fields",
    "Reader",
    "RecordType",
    "UnknownRecordTypeError",
    "as_bytes",
    "encode",
    "key_decoder",
    "put_bytes",
    "put_string",
    "read_key",
    "read_value",
    "type_name",
]

K = TypeVar("K")


class CorruptRecordError(ValueError):
    """A key or value that is not a valid record of its kind.

    ``kind`` names what was being decoded ("key", "OffsetCommitValue", "GroupMetadataValue");
    ``detail`` says what is wrong and where.
    """

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(kind, detail)
        self.kind = kind
        self.detail = detail

    def __str__(self) -> str:
        return f"corrupt {self.kind}: {self.detail}"


class UnknownRecordTypeError(CorruptRecordError):
    """A key whose version (record type) this engine does not know, such as the share or
    streams group records (KIP-932, KIP-1071). A loader may skip such records, as Kafka's
    ``CoordinatorLoader.UnknownRecordTypeException`` is skipped."""

    def __init__(self, version: int, known: tuple[int, ...] = ()) -> None:
        knows = ""
        if known:
            names = [str(v) for v in known]
            listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
            knows = f" (this engine knows {listed})"
        super().__init__("key", f"unknown record type: key version {version}{knows}")
        self.version = version
        self.known = known

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.version, self.known))


# --------------------------------------------------------------------------------------------
# Primitive types, as schemas name them

INT8: Final = "int8"
INT32: Final = "int32"
INT64: Final = "int64"
STRING: Final = "string"
NULLABLE_STRING: Final = "nullable string"
BYTES: Final = "bytes"
#: Kafka's ``uuid``: 16 bytes, big-endian (a `uuid.UUID` here).
UUID: Final = "uuid"


@dataclass(frozen=True, slots=True)
class Array:
    """An array of structs whose elements are instances of ``element``."""

    fields: tuple[tuple[str, Any], ...]
    element: type


@dataclass(frozen=True, slots=True)
class ArrayOf:
    """An array of a primitive type (``[]int32``, ``[]string`` in Kafka's schemas), read into
    a tuple."""

    item: str


Fields = tuple[tuple[str, Any], ...]

MAX_STRING: Final = 0x7FFF
INT8_RANGE: Final = range(-(2**7), 2**7)
INT32_RANGE: Final = range(-(2**31), 2**31)
INT64_RANGE: Final = range(-(2**63), 2**63)

I8: Final = struct.Struct(">b")
I16: Final = struct.Struct(">h")
I32: Final = struct.Struct(">i")
I64: Final = struct.Struct(">q")
I16_I16: Final = struct.Struct(">hh")
I32_I32: Final = struct.Struct(">ii")
I64_I32: Final = struct.Struct(">qi")
NULL_STRING: Final = I16.pack(-1)


# --------------------------------------------------------------------------------------------
# Table-driven encoder (every version; the reference for the fast paths)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def type_name(value: object) -> str:
    return type(value).__name__


def _write_primitive(out: list[bytes], ftype: str, flexible: bool, value: Any, where: str) -> None:
    if ftype in (INT8, INT32, INT64):
        if not isinstance(value, int):
            raise TypeError(f"{where} must be int, got {type_name(value)}")
        limits = {INT8: INT8_RANGE, INT32: INT32_RANGE, INT64: INT64_RANGE}[ftype]
        if value not in limits:
            raise ValueError(f"{where} = {value} does not fit in an {ftype}")
        out.append({INT8: I8, INT32: I32, INT64: I64}[ftype].pack(value))
    elif ftype == UUID:
        if not isinstance(value, _Uuid):
            raise TypeError(f"{where} must be a UUID, got {type_name(value)}")
        out.append(value.bytes)
    elif ftype in (STRING, NULLABLE_STRING):
        if value is None:
            if ftype == STRING:
                raise TypeError(f"{where} must be str, got None")
            out.append(b"\x00" if flexible else b"\xff\xff")
            return
        if not isinstance(value, str):
            raise TypeError(f"{where} must be str, got {type_name(value)}")
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"{where} is not encodable as UTF-8: {exc}") from None
        if len(data) > MAX_STRING:
            raise ValueError(
                f"{where} is {len(data)} bytes of UTF-8; a Kafka string holds at most {MAX_STRING}"
            )
        out.append(uvarint(len(data) + 1) if flexible else I16.pack(len(data)))
        out.append(data)
    elif ftype == BYTES:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise TypeError(f"{where} must be bytes, got {type_name(value)}")
        data = bytes(value)
        if len(data) > INT32_RANGE.stop - 1:
            raise ValueError(f"{where} is {len(data)} bytes; Kafka bytes hold at most 2**31-1")
        out.append(uvarint(len(data) + 1) if flexible else I32.pack(len(data)))
        out.append(data)
    else:
        raise TypeError(f"{where}: unknown field type {ftype!r}")


def write_struct(out: list[bytes], fields: Fields, flexible: bool, obj: Any, where: str) -> None:
    for name, ftype in fields:
        value = getattr(obj, name)
        if isinstance(ftype, ArrayOf):
            if not isinstance(value, tuple | list):
                raise TypeError(f"{where}.{name} must be a tuple, got {type_name(value)}")
            out.append(uvarint(len(value) + 1) if flexible else I32.pack(len(value)))
            for index, item in enumerate(value):
                _write_primitive(out, ftype.item, flexible, item, f"{where}.{name}[{index}]")
        elif isinstance(ftype, Array):
            if not isinstance(value, tuple | list):
                raise TypeError(f"{where}.{name} must be a tuple, got {type_name(value)}")
            out.append(uvarint(len(value) + 1) if flexible else I32.pack(len(value)))
            for index, element in enumerate(value):
                if not isinstance(element, ftype.element):
                    raise TypeError(
                        f"{where}.{name}[{index}] must be {ftype.element.__name__}, "
                        f"got {type_name(element)}"
                    )
                where_element = f"{where}.{name}[{index}]"
                write_struct(out, ftype.fields, flexible, element, where_element)
        else:
            _write_primitive(out, ftype, flexible, value, f"{where}.{name}")
    if flexible:
        out.append(b"\x00")  # no tagged fields


def encode(
    versions: dict[int, tuple[Fields, bool]], version: int, obj: object, where: str
) -> bytes:
    fields, flexible = versions[version]
    out = [I16.pack(version)]
    write_struct(out, fields, flexible, obj, where)
    return b"".join(out)


def put_string(out: list[bytes], text: str | None) -> None:
    """A (nullable) string of a non-flexible version, for the fast paths."""
    if text is None:
        out.append(NULL_STRING)
        return
    if type(text) is not str:
        raise TypeError
    data = text.encode("utf-8")
    if len(data) > MAX_STRING:
        raise ValueError
    out.append(I16.pack(len(data)))
    out.append(data)


def put_bytes(out: list[bytes], data: bytes) -> None:
    if type(data) is not bytes:
        raise TypeError
    out.append(I32.pack(len(data)))
    out.append(data)


# --------------------------------------------------------------------------------------------
# Decoding


class Reader:
    """A cursor over one key or value; every failure becomes a CorruptRecordError.

    ``where`` + ``field`` name the field being read, for error messages only.
    """

    __slots__ = ("buf", "field", "kind", "label", "pos", "where")

    def __init__(self, buf: bytes, kind: str) -> None:
        self.buf = buf
        self.kind = kind
        self.label = kind
        self.pos = 0
        self.where = ""
        self.field = "version"

    def fail(self, detail: str) -> NoReturn:
        label = "" if self.label == self.kind else f"{self.label}: "
        raise CorruptRecordError(self.kind, f"{label}{self.where}{self.field}: {detail}")

    def take(self, n: int) -> bytes:
        start = self.pos
        end = start + n
        if end > len(self.buf):
            self.fail(f"truncated: needs {n} byte(s) at byte {start}, {len(self.buf) - start} left")
        self.pos = end
        return self.buf[start:end]

    def int8(self) -> int:
        value: int = I8.unpack(self.take(1))[0]
        return value

    def int16(self) -> int:
        value: int = I16.unpack(self.take(2))[0]
        return value

    def uuid(self) -> _Uuid:
        return _Uuid(bytes=self.take(16))

    def int32(self) -> int:
        value: int = I32.unpack(self.take(4))[0]
        return value

    def int64(self) -> int:
        value: int = I64.unpack(self.take(8))[0]
        return value

    def uvarint(self) -> int:
        """Kafka's unsigned varint: at most 5 bytes, the fifth without a continuation bit."""
        at = self.pos
        result = 0
        for shift in range(0, 35, 7):
            byte = self.take(1)[0]
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                if result > 0xFFFFFFFF:
                    self.fail(f"varint {result} at byte {at} does not fit in 32 bits")
                return result
        self.fail(f"varint at byte {at} is longer than 5 bytes")

    def length(self, flexible: bool, *, nullable: bool, wide: bool) -> int:
        """A length prefix: -1 means null (allowed only when ``nullable``)."""
        at = self.pos
        if flexible:
            n = self.uvarint() - 1
        elif wide:
            n = self.int32()
        else:
            n = self.int16()
        if n < -1 or (n == -1 and not nullable):
            self.fail(f"invalid length {n} at byte {at}")
        return n

    def string(self, flexible: bool, *, nullable: bool = False) -> str | None:
        at = self.pos
        n = self.length(flexible, nullable=nullable, wide=False)
        if n == -1:
            return None
        if n > MAX_STRING:
            self.fail(f"string length {n} at byte {at} exceeds {MAX_STRING}")
        data = self.take(n)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.fail(f"invalid UTF-8 in the string at byte {at}: {exc.reason}")

    def tagged_fields(self) -> None:
        # None of these records defines a tag, so every tagged field is unknown: skip it.
        self.field = "tagged fields"
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.take(self.uvarint())  # size, data

    def finish(self) -> None:
        if self.pos != len(self.buf):
            self.where, self.field = "", "end"
            self.fail(f"{len(self.buf) - self.pos} unexpected byte(s) after the last field")

    def primitive(self, ftype: str, flexible: bool) -> Any:
        if ftype == INT32:
            return self.int32()
        if ftype == INT64:
            return self.int64()
        if ftype == INT8:
            return self.int8()
        if ftype == UUID:
            return self.uuid()
        if ftype == STRING:
            return self.string(flexible)
        if ftype == NULLABLE_STRING:
            return self.string(flexible, nullable=True)
        if ftype == BYTES:
            return self.take(self.length(flexible, nullable=False, wide=True))
        raise AssertionError(f"unknown field type {ftype!r}")

    def count(self, flexible: bool) -> int:
        """An array's element count; each element takes at least one byte, so a count beyond
        what is left is corrupt (and must not make us allocate a huge list first)."""
        count = self.length(flexible, nullable=False, wide=True)
        if count > len(self.buf) - self.pos:
            self.fail(f"{count} elements cannot fit in the remaining bytes")
        return count

    def struct(self, fields: Fields, flexible: bool) -> dict[str, Any]:
        where = self.where
        out: dict[str, Any] = {}
        for name, ftype in fields:
            self.field = name
            if isinstance(ftype, ArrayOf):
                out[name] = tuple(
                    self.primitive(ftype.item, flexible) for _ in range(self.count(flexible))
                )
            elif isinstance(ftype, Array):
                elements = []
                for index in range(self.count(flexible)):
                    self.where = f"{where}{name}[{index}]."
                    elements.append(self.struct(ftype.fields, flexible))
                self.where = where
                out[name] = elements
            else:
                out[name] = self.primitive(ftype, flexible)
        if flexible:
            self.tagged_fields()
        return out


def as_bytes(data: object, what: str) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    if data is None:
        raise TypeError(f"{what} is None (a tombstone has no value to decode)")
    raise TypeError(f"{what} must be bytes, got {type_name(data)}")


def read_value(
    data: bytes, kind: str, versions: dict[int, tuple[Fields, bool]]
) -> tuple[int, dict[str, Any]]:
    reader = Reader(data, kind)
    version = reader.int16()
    if version not in versions:
        reader.fail(
            f"unknown version {version} (this engine reads {min(versions)}-{max(versions)})"
        )
    reader.label = f"{kind} v{version}"
    fields, flexible = versions[version]
    out = reader.struct(fields, flexible)
    reader.finish()
    return version, out


def read_key(data: bytes, label: str, fields: Fields, make: Callable[..., K]) -> K:
    """A key of one record type read by the table-driven reader (its version already known to
    be ``label``'s): the slow path of each type's key decoder, which names any fault."""
    reader = Reader(data, "key")
    reader.int16()
    reader.label = label
    out = reader.struct(fields, False)
    reader.finish()
    return make(**out)


# --------------------------------------------------------------------------------------------
# Record types: the key version names the type


@dataclass(frozen=True, slots=True)
class RecordType:
    """One type of record in the log: the key versions that name it (Kafka's record type id),
    the class of its decoded key (which has a ``group``), and its decoders. ``decode_key`` is
    given a key's bytes and its version; ``decode_value`` a value's bytes (never a tombstone's
    None)."""

    name: str
    key_versions: tuple[int, ...]
    key_class: type
    decode_key: Callable[[bytes, int], Any]
    decode_value: Callable[[bytes | bytearray | memoryview], Any]


#: A replay decodes the same keys over and over (a group commits the same partitions all day):
#: keys up to this size are remembered (at most 16,384 of them; the result is immutable).
REMEMBERED_KEY_BYTES: Final = 512


def key_decoder(types: Iterable[RecordType]) -> Callable[[bytes | bytearray | memoryview], Any]:
    """The decoder of a record key of any of ``types``, chosen by the key's version.

    It raises UnknownRecordTypeError for any other key version ≥ 0 (a loader may skip those,
    as Kafka's skips the types it does not know), CorruptRecordError for anything that is not a
    well-formed key."""
    decoders = {version: t.decode_key for t in types for version in t.key_versions}
    known = tuple(sorted(decoders))

    def decode(data: bytes) -> Any:
        try:
            (version,) = I16.unpack_from(data)
        except struct.error:
            Reader(data, "key").int16()  # names the truncation
            raise
        decoder = decoders.get(version)
        if decoder is not None:
            return decoder(data, version)
        if version < 0:
            Reader(data, "key").fail(f"negative key version {version}")
        raise UnknownRecordTypeError(version, known)

    remembered = functools.lru_cache(maxsize=16384)(decode)

    def decode_key(key: bytes | bytearray | memoryview) -> Any:
        data = as_bytes(key, "key")
        if len(data) <= REMEMBERED_KEY_BYTES:
            return remembered(data)
        return decode(data)

    return decode_key
