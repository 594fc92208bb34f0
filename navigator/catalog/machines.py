"""A machine as the catalogue holds it: its record, its last heartbeat, and the status they make.

A machine answers while its heartbeats come (within ``LIMITS.missed_heartbeats`` intervals of the
last); one an operator registered by URL has none and answers until retired; one whose node
stopped cleanly (it said so) is not answering from then on, until a node registers it again.
The status is judged as of the last moment the registry took this navigator's writes (ADR 0031),
so that heartbeats it could not record are not taken for silence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from navigator.limits import LIMITS
from registry import MachineRecord

__all__ = [
    "ANSWERING",
    "MISSED",
    "NOT_ANSWERING",
    "NOT_LISTING",
    "NO_ENDPOINT",
    "RETIRED",
    "UNRECORDED",
    "MachineState",
    "collapsed_status",
]

ANSWERING = "answering"
NOT_ANSWERING = "not answering"
RETIRED = "retired"
#: A tool (or assignment) registered from a tools file (SPEC §13): listed, never callable — there
#: is no endpoint to forward a call to, whatever its machine's status (ADR 0057).
NO_ENDPOINT = "no endpoint"
#: An assignment whose node could not list its tools (its upstream down at the node's start, a
#: 401, a timeout): kept, with the cause, until a list comes (ADR 0057). Retired is an operator's.
NOT_LISTING = "not listing"

#: Why a machine's heartbeats say what they say (a view's ``heartbeats`` field, ADR 0031): none
#: came for three intervals, or the registry could not record those that came.
MISSED = "missed"
UNRECORDED = "unrecorded"


def collapsed_status(statuses: set[str]) -> str:
    """One contract on several holders: answering when any answers, ``no endpoint`` when none
    has one, else not answering."""
    if ANSWERING in statuses:
        return ANSWERING
    return NO_ENDPOINT if statuses == {NO_ENDPOINT} else NOT_ANSWERING


@dataclass(slots=True)
class MachineState:
    """One machine of a view: its record, its last heartbeat, and what live views were told."""

    record: MachineRecord
    heartbeat_at: datetime | None
    #: The status (and ``heartbeats``) last announced to live views; a change is an event.
    announced: tuple[str, str | None] = ("", None)

    def status(self, now: datetime) -> str:
        if self.record.retired_at is not None:
            return RETIRED
        if self.record.stopped_at is not None:
            return NOT_ANSWERING
        if self.heartbeat_at is None:
            # Registered by an operator (an HTTP MCP server by URL): no heartbeat tells otherwise,
            # so answering; a call it does not answer is node_unavailable, and changes nothing here.
            return ANSWERING if self.record.advertise_url is None else NOT_ANSWERING
        return ANSWERING if now <= self.heartbeat_at + self.limit else NOT_ANSWERING

    def heartbeats(self, now: datetime, judged: datetime) -> str | None:
        """``Catalog.heartbeats``, with ``judged`` the moment its heartbeats are judged at."""
        if self.heartbeat_at is None or self.record.retired_at is not None:
            return None
        if self.record.stopped_at is not None:  # its node said so: nothing missed
            return None
        if self.status(judged) != ANSWERING:
            return MISSED
        return UNRECORDED if self.status(now) != ANSWERING else None

    @property
    def limit(self) -> timedelta:
        """How long after its last heartbeat a machine is still answering."""
        return timedelta(seconds=self.record.heartbeat_s * LIMITS.missed_heartbeats)
