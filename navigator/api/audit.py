"""Reading the audit trail (ADR 0039): the filters ``GET /api/v1/audit`` and ``meshnav audit``
share, and the two readers. Loads neither the server nor FastMCP: the command line stays quick."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from navigator.errors import InvalidArguments
from navigator.http.numbers import whole_number
from registry.audit import AuditFilter, AuditStore
from registry.models import utcnow

__all__ = ["AUDIT_PARAMETERS", "LIMIT_MOST", "audit_filter", "audit_page", "audit_verify"]

#: The query parameters of ``GET /api/v1/audit``, each optional; the command line's options.
AUDIT_PARAMETERS = ("principal", "address", "action", "outcome", "since", "limit", "before")
#: Events in one page at most, and when no limit is given.
LIMIT_MOST = 1000
LIMIT_DEFAULT = 100
_SPAN = re.compile(r"^(\d{1,6})([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_TEXT_MOST = 256
#: How far back ``since`` reaches at most: a span of 100 years, or a time from 1970 to 9998.
SINCE_DAYS_MOST = 36_500
_YEARS = range(1970, 9999)
_SINCE = (
    f"since is a span back from now of at most {SINCE_DAYS_MOST} days (90s, 30m, 1h, 7d, "
    f"{SINCE_DAYS_MOST}d) or an ISO 8601 time from 1970 to 9998 with its offset "
    "(2026-12-01T09:00:00+00:00)."
)


def _since(text: str) -> datetime:
    """``1h``, ``30m``, ``7d``, ``90s`` ago, or an ISO 8601 time with its offset; out of the
    accepted range (``_SINCE``) it is ``invalid_arguments`` naming the range."""
    span = _SPAN.match(text)
    if span is not None:
        seconds = int(span.group(1)) * _UNIT_S[span.group(2)]
        if seconds <= SINCE_DAYS_MOST * 86_400:
            return utcnow() - timedelta(seconds=seconds)
        at = None
    else:
        try:
            at = datetime.fromisoformat(text)
        except ValueError:
            at = None
    if at is None or at.tzinfo is None or at.year not in _YEARS:
        raise InvalidArguments(_SINCE, extra={"pointer": "/since"})
    return at


def _count(text: str, name: str, most: int) -> int:
    value = whole_number(text, most=most)
    if value is None or value == 0:
        raise InvalidArguments(
            f"{name} is a whole number from 1 to {most}.", extra={"pointer": f"/{name}"}
        )
    return value


def audit_filter(given: Mapping[str, str | None]) -> AuditFilter:
    """The events ``given`` asks for; a value that does not parse is ``invalid_arguments``
    naming it (never repeating it)."""
    values = {name: given.get(name) for name in AUDIT_PARAMETERS}
    for name, value in values.items():
        if value is not None and (len(value) > _TEXT_MOST or not value.isprintable()):
            raise InvalidArguments(
                f"{name} is at most {_TEXT_MOST} printable characters.",
                extra={"pointer": f"/{name}"},
            )
    since, limit, before = values["since"], values["limit"], values["before"]
    return AuditFilter(
        principal=values["principal"],
        target=values["address"],
        action=values["action"],
        outcome=values["outcome"],
        since=None if since is None else _since(since),
        limit=LIMIT_DEFAULT if limit is None else _count(limit, "limit", LIMIT_MOST),
        before=None if before is None else _count(before, "before", 2**63 - 1),
    )


def audit_page(session: Session, wanted: AuditFilter) -> dict[str, Any]:
    """Events newest first, and ``next``: the ``before`` of the page after, when there may be
    one."""
    events = AuditStore(session).events(wanted)
    more = len(events) == wanted.limit
    return {
        "events": [event.as_json() for event in events],
        "next": str(events[-1].id) if more and events else None,
    }


def audit_verify(session: Session) -> dict[str, Any]:
    """Every instance's chain recomputed (``AuditStore.verify``), with ``ok``."""
    found = AuditStore(session).verify()
    return {"ok": not found["problems"], **found}
