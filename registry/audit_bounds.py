"""What the audit trail's columns take (ADR 0045): every text an event stores, held to its
column's length and to characters every database stores, at the one place events are written
(``registry.audit.AuditStore.append``) — whoever made the event, whatever a caller sent.

``rejected`` tells an error that is the database refusing one event's data (a value out of a
column's range) from one that is the database not answering: the navigator's writer drops the
first kind, one event at a time, and holds its events through the second.
"""

from __future__ import annotations

import hashlib

from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, StatementError

from mesh.text import escaped

__all__ = ["COLUMN_CHARS", "INSTANCE_CHARS", "rejected", "storable"]

#: Each text field of an event and its column's length in characters (migration 0009).
COLUMN_CHARS = {
    "principal": 128,
    "action": 32,
    "target": 256,
    "outcome": 64,
    "args_digest": 64,
}
#: The instance names a chain (``audit_events.instance``, ``audit_heads.instance``).
INSTANCE_CHARS = 128
#: Hex digits of the SHA-256 a text past its column keeps after its prefix.
_HASH_DIGITS = 16


def storable(text: str, most: int) -> str:
    """``text`` as a column of ``most`` characters holds it on every database: a character that
    is not printable (NUL, which PostgreSQL refuses; a lone surrogate, which no encoding takes;
    an escape sequence meant for a terminal) written as its escape (``\\x1b``, ``\\udc80``), and
    a text then longer than ``most`` cut to a fixed-length prefix, ``~`` and 16 hex digits of the
    whole text's SHA-256 — two long names that share the prefix stay apart."""
    text = escaped(text)
    if len(text) <= most:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:_HASH_DIGITS]
    return f"{text[: most - _HASH_DIGITS - 1]}~{digest}"


def rejected(error: BaseException) -> bool:
    """Whether ``error`` (or what it was raised from) is the database refusing the data it was
    given — a value out of its column's range, a value the driver cannot send — rather than the
    database failing to answer."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, DataError | IntegrityError):
            return True
        if isinstance(seen, DBAPIError):  # any other error the database answered: not the data
            return False
        if isinstance(seen, StatementError | ValueError | TypeError | OverflowError):
            return True  # the statement could not be made of the values (UnicodeError too)
        seen = seen.__cause__
    return False
