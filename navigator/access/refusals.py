"""Refused requests as the audit trail keeps them (ADR 0045): aggregated, and bounded.

A refused request is not an event of its own: refusals of one route, for one reason, from one
source address are counted for a window (``MESHNAV_AUDIT_REFUSAL_WINDOW_S``) and become one event
carrying the count, timed at the first. At most ``MESHNAV_AUDIT_REFUSALS_PER_MINUTE`` such events
are opened a minute (each is written when its window ends): past it, refusals of a route, reason
or address not yet counted are counted on one event of their own (``* from *: over the bound``),
the last of the minute's, written when its window ends and the minute has room — so a flood of
refused requests from any number of addresses costs the registry a bounded number of rows.

A refusal for credentials is a ``sign-in`` event; one for another reason — the registry could
not be read, the navigator was stopping — a ``request`` event, naming its principal when it was
known (ADR 0056).

The route is one of a fixed list of names (``route_name``), never the path the request asked for:
a refused request writes nothing of its choosing into the trail.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from navigator.errors import Unauthenticated
from registry.audit import AuditEntry
from registry.models import utcnow

__all__ = ["ROUTE_NAMES", "Refusals", "action", "route_name"]

#: What an ``/api/v1`` path's first segment may be (``navigator.api.routes.ROUTES``); any other
#: path under it is named ``/api/v1/(unknown)``.
API_SEGMENTS = frozenset(
    {"mesh", "machines", "assignments", "tools", "retire", "seats", "principals", "grants"}
    | {"audit", "contracts", "nodes", "openapi.json"}
)
#: Every name a refused request's route is recorded as.
ROUTE_NAMES = frozenset(
    {"/mcp", "/console/sign-in", "/api/v1/(unknown)", "(other)"}
    | {f"/api/v1/{segment}" for segment in API_SEGMENTS}
)
#: The key of the event refusals past the bound are counted on.
_OVER = ("*", "over the bound", "*", "", "")
_MINUTE_S = 60.0


def action(outcome: str) -> str:
    """A refusal's action: ``sign-in`` when its credentials were refused, else ``request`` (the
    registry could not be read, the navigator was stopping: ADR 0056)."""
    return "sign-in" if outcome == Unauthenticated.code else "request"


def route_name(path: str) -> str:
    """The name a refused request's route is recorded as: ``/mcp``, ``/api/v1/SEGMENT`` (the
    route table's first segment, ``/api/v1/(unknown)`` for another), or ``(other)``."""
    if path == "/mcp" or path.startswith("/mcp/"):
        return "/mcp"
    if path == "/console/sign-in":
        return path
    if path.startswith("/api/v1/"):
        segment = path.removeprefix("/api/v1/").partition("/")[0]
        return f"/api/v1/{segment}" if segment in API_SEGMENTS else "/api/v1/(unknown)"
    return "(other)"


@dataclass(slots=True)
class _Counted:
    at: datetime
    opened: float
    count: int = 0
    #: The first refused token's hash prefix, and whether others were refused in the window.
    token: str | None = None
    others: bool = False

    def target(self, route: str, reason: str, source: str) -> str:
        if reason != "token":
            return f"{route} from {source}: {reason}"
        more = " and others" if self.others else ""
        return f"{route} from {source}: token {self.token}{more}"


class Refusals:
    """Refusals counted per (route, reason, source address) for ``window_s``; at most
    ``per_minute`` events out of them a minute. ``clock`` is monotonic seconds (a test's own)."""

    def __init__(
        self,
        per_minute: int,
        window_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_minute = per_minute
        self.window_s = window_s
        self.clock = clock
        #: By (route name, reason, source address, outcome, principal).
        self._counted: dict[tuple[str, str, str, str, str], _Counted] = {}
        #: When each event of the last minute was given room (its key first counted).
        self._spent: deque[float] = deque()

    def _room(self, now: float, *, keep: int = 0) -> bool:
        """Whether another event fits in the last minute, ``keep`` of it left for others."""
        while self._spent and now - self._spent[0] >= _MINUTE_S:
            self._spent.popleft()
        return len(self._spent) < self.per_minute - keep

    def refuse(
        self,
        route: str,
        source: str,
        token_shown: str | None,
        outcome: str = Unauthenticated.code,
        *,
        principal: str = "",
        reason: str | None = None,
    ) -> None:
        """Count one request refused with ``outcome`` (a SPEC §9 code) before the audited path:
        ``token_shown`` the first 12 hex digits of its token's hash, None for no token; or, when
        its caller was known, its ``principal`` and what it asked (``reason``, a fixed name)."""
        now = self.clock()
        reason = reason or ("no token" if token_shown is None else "token")
        key = (route_name(route), reason, source or "?", outcome, principal)
        counted = self._counted.get(key)
        if counted is None and not self._room(now, keep=1):  # one left for the event past it
            key = _OVER
            counted = self._counted.get(key)
        elif counted is None:
            self._spent.append(now)
        if counted is None:
            counted = self._counted[key] = _Counted(utcnow(), now, token=token_shown)
        counted.count += 1
        if token_shown is not None and token_shown != counted.token:
            counted.others = True

    def due(self, *, everything: bool = False) -> list[AuditEntry]:
        """The events of the windows that ended (``everything``: of all, at a stop)."""
        now = self.clock()
        entries: list[AuditEntry] = []
        for key, counted in list(self._counted.items()):
            if not everything and now - counted.opened < self.window_s:
                continue
            if key == _OVER and not everything:
                if not self._room(now):
                    continue  # counted on until the minute has room for it
                self._spent.append(now)
            del self._counted[key]
            target = "* from *: over the bound" if key == _OVER else counted.target(*key[:3])
            outcome = key[3] or Unauthenticated.code
            entries.append(
                AuditEntry(
                    counted.at, key[4], action(outcome), target, outcome, count=counted.count
                )
            )
        return entries
