"""The catalogue's records: the frozen values the catalogue store takes and hands out — a tool as
a module listed it, a machine, an assignment with its tools — free of the session they were read
in. The flat rows of a whole-catalogue read are ``registry.catalog_rows``'s."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from registry.models import Assignment, Machine

__all__ = [
    "AssignmentPlace",
    "AssignmentRecord",
    "MachineRecord",
    "NewTool",
    "ToolRecord",
    "assignment_record",
    "machine_record",
]


@dataclass(frozen=True, slots=True)
class NewTool:
    """A tool as a module's ``tools/list`` gave it, with its contract digest (the caller's)."""

    name: str
    definition: dict[str, Any]
    contract_digest: str
    confirmation: str = "auto"


@dataclass(frozen=True, slots=True)
class MachineRecord:
    name: str
    advertise_url: str | None
    heartbeat_s: float
    last_heartbeat_at: datetime | None
    retired_at: datetime | None
    #: The node instance serving it, and since when (``Machine.instance_id``, ``instance_since``).
    instance: str | None = None
    instance_since: datetime | None = None

    @property
    def stopped_at(self) -> datetime | None:
        """When its node stopped cleanly, if no node registered since (SPEC §6)."""
        return self.instance_since if self.instance is None else None


@dataclass(frozen=True, slots=True)
class ToolRecord:
    name: str
    definition: dict[str, Any]
    contract_digest: str
    confirmation: str


@dataclass(frozen=True, slots=True)
class AssignmentPlace:
    """Where an assignment runs and how it is addressed: ``HOLDER/ROLE`` is ``mesh/SEAT`` for a
    mesh seat, ``MACHINE/ROLE`` otherwise."""

    machine: str
    role: str
    module: str
    kind: str
    endpoint: str | None
    seat: str | None
    scopes: tuple[str, ...]
    retired: bool
    #: Why its node cannot list its tools now, when it cannot (ADR 0057).
    not_listing: str | None

    @property
    def holder(self) -> str:
        return "mesh" if self.seat else self.machine

    @property
    def address_role(self) -> str:
        return self.seat or self.role


@dataclass(frozen=True, slots=True)
class AssignmentRecord(AssignmentPlace):
    """An assignment with its tools' whole contracts."""

    tools: tuple[ToolRecord, ...]


def machine_record(machine: Machine) -> MachineRecord:
    return MachineRecord(
        name=machine.name,
        advertise_url=machine.advertise_url,
        heartbeat_s=machine.heartbeat_s,
        last_heartbeat_at=machine.last_heartbeat_at,
        retired_at=machine.retired_at,
        instance=machine.instance_id,
        instance_since=machine.instance_since,
    )


def assignment_record(assignment: Assignment, seat: str | None) -> AssignmentRecord:
    """``assignment``'s record, its tools loaded; ``seat`` is the mesh seat placed on it."""
    return AssignmentRecord(
        machine=assignment.machine.name,
        role=assignment.role,
        module=assignment.module,
        kind=assignment.kind,
        endpoint=assignment.endpoint,
        seat=seat,
        scopes=tuple(assignment.scopes),
        retired=assignment.retired_at is not None,
        not_listing=assignment.not_listing,
        tools=tuple(
            ToolRecord(
                name=t.name,
                definition=t.definition,
                contract_digest=t.contract_digest,
                confirmation=t.confirmation,
            )
            for t in assignment.tools
        ),
    )
