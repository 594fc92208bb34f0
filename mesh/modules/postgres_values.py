"""The ``postgres`` module's values as an answer carries them: psycopg's loaders for what
Python's types cannot hold, and each value as JSON."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any, cast

import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.types.datetime import DateLoader, TimeLoader, TimestampLoader, TimestamptzLoader
from psycopg.types.string import TextLoader
from pydantic import JsonValue

__all__ = ["LOADERS", "cell"]


def _as_printed(loader: type[Loader]) -> type[Loader]:
    """``loader``, giving a value Python's dates cannot hold (``infinity``, a date BC, 24:00) as
    PostgreSQL prints it: psycopg refused it, and with it the whole query."""

    class AsPrinted(loader):  # type: ignore[misc,valid-type]
        def load(self, data: Buffer) -> Any:
            try:
                return super().load(data)
            except psycopg.DataError:
                return bytes(data).decode()

    return AsPrinted


LOADERS: dict[str, type[Loader]] = {
    "date": _as_printed(DateLoader),
    "time": _as_printed(TimeLoader),
    "timestamp": _as_printed(TimestampLoader),
    "timestamptz": _as_printed(TimestamptzLoader),
    # as PostgreSQL prints it: Python's timedelta has no months ("1 mon" came back as
    # "30 days, 0:00:00") and no sign of its own ("-1 days, 23:00:00" for an hour ago)
    "interval": TextLoader,
}


def cell(value: Any) -> JsonValue:
    """A value as JSON: numbers and text as they are, the rest as PostgreSQL would print it."""
    if value is None or isinstance(value, bool | int | str):
        return cast(JsonValue, value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [cell(item) for item in value]
    if isinstance(value, dict):
        return {str(key): cell(item) for key, item in value.items()}
    if isinstance(value, Decimal):
        return str(value)
    return str(value)  # UUIDs, network addresses, ranges
