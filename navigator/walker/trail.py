"""What the walker leaves in the audit trail (ADR 0039): the event of each call however it ends,
of a confirmation asked, answered or refused, and of a refused describe, each with the grant row
that decided it.

``Seen`` gathers what an event takes from the operation as it goes: the grants check fills in
the row from the very read it decided on (``navigator.walker.allowing``), the call path the
arguments' digest, the tool's address and how it ended (``navigator.walker.calling``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

from navigator.access.auditing import AuditLog
from navigator.access.grants import Caller
from navigator.errors import NavigatorError
from navigator.walker.confirmation import AskingThePerson
from registry import GrantRecord

__all__ = ["Seen", "audited", "record"]

logger = logging.getLogger("meshnav.navigator")


@dataclass(slots=True)
class Seen:
    """What a call's audit event takes from the call as it goes: the grant row that decided (from
    the read the call used), the arguments' digest, and how it ended."""

    row: GrantRecord | None = None
    args_digest: str | None = None
    outcome: str = "ok"
    #: The tool's address once it is found and allowed: what the log may name (SPEC §10).
    address: str | None = None


def record(
    audit: AuditLog | None,
    caller: Caller,
    action: str,
    address: object,
    outcome: str,
    seen: Seen,
    started: float | None = None,
) -> None:
    """The event of a call or a refused describe, with the row that decided it; ``audit`` None:
    nowhere."""
    if audit is None:
        return
    row = seen.row
    audit.event(
        caller.principal,
        action,
        address if isinstance(address, str) else "(not an address)",
        outcome,
        grant_id=None if row is None else row.id,
        grant_revision=None if row is None else row.revision,
        duration_ms=None if started is None else (time.perf_counter() - started) * 1000,
        args_digest=seen.args_digest,
    )


@contextlib.contextmanager
def audited(audit: AuditLog | None, caller: Caller, address: str, seen: Seen) -> Iterator[None]:
    """Record the call's event however it ends: ``seen.outcome`` when it answered, the §9
    code it was refused with, ``asked`` (it went back to the client for a person's answer, the
    sessionless era's ``input_required``), ``internal_error``, or ``cancelled`` (the client went
    away, or the navigator stops)."""
    started = time.perf_counter()
    try:
        yield
    except AskingThePerson:
        seen.outcome = "asked"
        raise
    except NavigatorError as error:
        seen.outcome = error.code
        raise
    except Exception:
        seen.outcome = "internal_error"
        raise
    except BaseException:
        seen.outcome = "cancelled"
        raise
    finally:
        ended(audit, caller, address, seen, started)


def ended(audit: AuditLog | None, caller: Caller, address: str, seen: Seen, started: float) -> None:
    """A call's event recorded and its log line written, ``seen.outcome`` its outcome: the end
    of every call, ``audited``'s and one refused before the walker (``navigator.mcp.early``)."""
    record(audit, caller, "call", address, seen.outcome, seen, started)
    # a tool's address; never one the caller typed that names no tool it may call
    logger.info(
        "call %s by %s: %s in %.1f ms",
        seen.address or "of no tool it may call",
        caller.principal,
        seen.outcome,
        (time.perf_counter() - started) * 1000,
    )
