"""Which node instance serves a machine: one at a time (SPEC §6, ADR 0050).

A node makes an instance id at its start (random, not a secret) and names it when it registers,
heartbeats, pushes a tool list and stops. The machine's row keeps the instance serving it and
since when. A registration from another instance takes the machine over — whether it may is the
navigator's judgement, made before (a probe of the registered instance), and checked here
against the row as it is now: the instance judged must still be the one registered. A heartbeat,
push or stop from an instance that is not the one registered is ``Replaced`` (another took over)
or ``Conflict`` (none is registered: the node stopped or the row is new; it registers again).

A node that registered without an instance id (one from before) is judged as before: any
registration takes its machine over.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from registry.audit import record_change
from registry.errors import Conflict, Replaced
from registry.models import Machine, utcnow

__all__ = ["TAKEOVER", "check_instance", "stop_instance", "take_instance"]

#: The audit action of a takeover; its outcome says why (``TAKEN_FROM_SILENT``, ``REPLACED``).
TAKEOVER = "node.takeover"
TAKEN_FROM_SILENT = "not answering"
REPLACED = "replaced"

_MOVED = "Another node registered this machine meanwhile; start this one again to register."
_NOT_REGISTERED = "This node instance is not registered (it stopped); it registers again."


def take_instance(
    session: Session, machine: Machine, instance: str | None, *, judged: str | None, replace: bool
) -> None:
    """Record ``instance`` as the one serving ``machine`` (registering it). Another instance
    registered is taken over only when it is the one the caller judged (``judged``: not
    answering, or replaced with ``replace``), each takeover an audit event."""
    registered = machine.instance_id
    if registered == instance:
        if instance is None or machine.instance_since is None:
            machine.instance_since = None if instance is None else utcnow()
        return
    if registered is not None:
        if registered != judged:
            raise Conflict(_MOVED)
        record_change(
            session,
            TAKEOVER,
            machine.name,
            outcome=REPLACED if replace else TAKEN_FROM_SILENT,
        )
    machine.instance_id = instance
    machine.instance_since = None if instance is None else utcnow()


def check_instance(machine: Machine, instance: str | None) -> None:
    """That ``instance`` is the one serving ``machine``: ``Replaced`` when another is,
    ``Conflict`` when none is (its node must register again)."""
    registered = machine.instance_id
    if registered == instance:
        return
    if registered is None:
        raise Conflict(_NOT_REGISTERED)
    raise Replaced(replaced_by(machine))


def stop_instance(machine: Machine, instance: str) -> bool:
    """``instance`` stopped cleanly: its machine is served by no instance from now (not
    answering at once). Whether it was the one serving; a stop from one that was not (replaced,
    or stopped already) changes nothing."""
    if machine.instance_id != instance:
        return False
    machine.instance_id = None
    machine.instance_since = utcnow()
    return True


def replaced_by(machine: Machine) -> str:
    """Why an instance is refused as replaced: the node serving its machine now, and since."""
    since = machine.instance_since.isoformat(timespec="seconds") if machine.instance_since else "?"
    return (
        f"Another node instance serves this machine, at {machine.advertise_url}, since {since}:"
        " this one was replaced and stops serving."
    )
