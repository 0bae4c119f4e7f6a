"""Building kio's responses: one handler serves every version of its API, as a response is
built from the fields its version has (``make`` drops the others)."""

from __future__ import annotations

import dataclasses
import datetime
import typing
from functools import cache
from typing import Any

from ..codec import Request, response_schema

#: No throttling, in every answer that has the field.
NO_THROTTLE = datetime.timedelta(0)
#: Metadata's, DescribeGroups' and ConsumerGroupDescribe's "authorized operations" when they
#: were not asked for (Kafka's INT32_MIN).
NO_OPERATIONS = -(2**31)


@cache
def _fields(cls: type) -> dict[str, Any]:
    return {field.name: field.type for field in dataclasses.fields(cls)}


@cache
def item_type(cls: type, name: str) -> type:
    """The entity type of the items of ``cls``'s tuple field ``name``."""
    field_type = _fields(cls)[name]
    for candidate in (field_type, *typing.get_args(field_type)):
        for argument in typing.get_args(candidate) or (candidate,):
            if dataclasses.is_dataclass(argument):
                return typing.cast(type, argument)
    raise TypeError(f"{cls.__name__}.{name} holds no entities")


def make(cls: type, **values: Any) -> Any:
    """``cls`` from those ``values`` its version has (the others are not in this version)."""
    known = _fields(cls)
    return cls(**{name: value for name, value in values.items() if name in known})


def schema_of(request: Request) -> type:
    """kio's response class for ``request``'s API and version."""
    return response_schema(request.api_key, request.api_version)


def response_to(request: Request, **values: Any) -> Any:
    """kio's response to ``request`` (its API and version) from those ``values`` its version
    has."""
    return make(schema_of(request), **values)


def milliseconds(value: datetime.timedelta | int) -> int:
    """A duration of a request (kio reads them as timedeltas) in milliseconds."""
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    return int(value)
