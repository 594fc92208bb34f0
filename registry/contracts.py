"""Approved contracts in the registry (SPEC §14): the state each registration leaves its tools
in, the operators' decisions, and what is held.

A decision is of (role, tool name, contract digest), one ``ContractDecision`` row however many
holders serve that contract: approving it serves every holder's tool, and a holder that registers
an approved digest later is served at once. Each tool row carries its own state (``approved``,
``held``, ``rejected``) for the catalogue's load to read without a join, and the digest it was
last approved with, for operators to compare with. Holds and decisions are audit events
(``contract.held``, ``contract.approved``, ``contract.rejected``) whose ``outcome`` is the old
approved digest (``none`` for a tool never approved) and whose ``argsDigest`` is the new one.
Nothing here commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session

from registry import changelog
from registry.audit import CLI_INSTANCE, INSTANCE_KEY, AuditEntry, AuditStore
from registry.models import Assignment, ContractDecision, Machine, Seat, Tool, utcnow

__all__ = [
    "APPROVAL_MODES",
    "APPROVED",
    "HELD",
    "REJECTED",
    "Approval",
    "ContractKey",
    "HeldTool",
    "RefusedTool",
    "approved_definition",
    "decide",
    "held_tools",
    "refused_tools",
    "settle",
]

APPROVED, HELD, REJECTED = "approved", "held", "rejected"
#: ``MESHNAV_CONTRACT_APPROVAL``'s values.
APPROVAL_MODES = ("first-use", "always", "off")
#: (role, tool name, contract digest): what an operator decides on.
ContractKey = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Approval:
    """How one registration's contracts are settled: the navigator's mode, who registers, and
    whether that registration approves what it brings (an operator's tools file)."""

    mode: str
    principal: str
    approves: bool = False


@dataclass(frozen=True, slots=True)
class HeldTool:
    """A live tool whose contract is not approved."""

    address: str
    machine: str
    role: str
    name: str
    state: str
    digest: str
    approved_digest: str | None
    definition: dict[str, Any]

    @property
    def key(self) -> ContractKey:
        return (self.role, self.name, self.digest)


@dataclass(frozen=True, slots=True)
class RefusedTool:
    """A tool a live assignment's last registration refused, and why."""

    address: str
    reason: str


def _address(machine: str, role: str, seat: str | None, name: str) -> str:
    return f"mesh/{seat}/{name}" if seat else f"{machine}/{role}/{name}"


def _event(action: str, principal: str, address: str, old: str | None, new: str) -> AuditEntry:
    return AuditEntry(
        at=utcnow(),
        principal=principal[:128],
        action=action,
        target=address[:256],
        outcome=old or "none",
        args_digest=new,
    )


def _append(session: Session, entries: list[AuditEntry]) -> None:
    if entries:
        AuditStore(session).append(session.info.get(INSTANCE_KEY, CLI_INSTANCE), entries)


def settle(
    session: Session,
    assignment: Assignment,
    previous: dict[str, tuple[str, str | None]],
    approval: Approval | None,
    address: str,
) -> None:
    """Give each of ``assignment``'s freshly written tools its contract state (SPEC §14).
    ``previous`` holds each tool name's digest and approved digest before; ``address`` is the
    assignment's ``HOLDER/ROLE``. Without ``approval`` (or ``off``), served as pushed."""
    tools = assignment.tools
    first = assignment.contracts_since is None
    if tools and first:
        assignment.contracts_since = utcnow()
    if approval is None or approval.mode == "off":
        for tool in tools:
            tool.contract_state, tool.approved_digest = APPROVED, tool.contract_digest
        return
    auto = approval.approves or (first and approval.mode == "first-use")
    role, now = assignment.role, utcnow()
    known = _decisions(session, [(role, t.name, t.contract_digest) for t in tools])
    events: list[AuditEntry] = []
    freed: list[ContractKey] = []
    for tool in tools:
        key = (role, tool.name, tool.contract_digest)
        pushed, old = previous.get(tool.name, (None, None))
        decision = known.get(key)
        if decision is None:
            decision = known[key] = ContractDecision(
                role=role,
                name=tool.name,
                digest=tool.contract_digest,
                definition=tool.definition,
                state=APPROVED if auto else HELD,
                decided_by=approval.principal[:128] if auto else None,
                decided_at=now if auto else None,
            )
            session.add(decision)
            if not auto:
                events.append(
                    _event(
                        "contract.held", approval.principal, f"{address}/{tool.name}", old, key[2]
                    )
                )
        elif decision.state != APPROVED and approval.approves:
            decision.state, decision.decided_by, decision.decided_at = (
                APPROVED,
                approval.principal[:128],
                now,
            )
            freed.append(key)
        elif decision.state == HELD and pushed != key[2]:  # held anew on this holder
            events.append(
                _event("contract.held", approval.principal, f"{address}/{tool.name}", old, key[2])
            )
        tool.contract_state = decision.state
        tool.approved_digest = key[2] if decision.state == APPROVED else old
    session.flush()
    _append(session, events)
    if freed:
        decide(session, freed, APPROVED, approval.principal)


def _decisions(
    session: Session, keys: Sequence[ContractKey]
) -> dict[ContractKey, ContractDecision]:
    """The decisions on ``keys`` the registry holds."""
    found: dict[ContractKey, ContractDecision] = {}
    wanted = sorted(set(keys))
    for start in range(0, len(wanted), 500):  # bound the statement's parameters
        chunk = wanted[start : start + 500]
        rows = session.execute(
            select(ContractDecision).where(
                tuple_(ContractDecision.role, ContractDecision.name, ContractDecision.digest).in_(
                    chunk
                )
            )
        ).scalars()
        for row in rows:
            found[(row.role, row.name, row.digest)] = row
    return found


def _live_tools(session: Session) -> Any:
    return (
        select(Tool, Assignment.role, Machine.name, Seat.name)
        .join(Assignment, Tool.assignment_id == Assignment.id)
        .join(Machine, Assignment.machine_id == Machine.id)
        .outerjoin(Seat, Seat.assignment_id == Assignment.id)
        .where(Assignment.retired_at.is_(None), Machine.retired_at.is_(None))
    )


def held_tools(session: Session) -> list[HeldTool]:
    """Every live tool whose contract is held or rejected, by address."""
    rows = session.execute(_live_tools(session).where(Tool.contract_state != APPROVED)).all()
    held = [
        HeldTool(
            address=_address(machine, role, seat, tool.name),
            machine=machine,
            role=role,
            name=tool.name,
            state=tool.contract_state,
            digest=tool.contract_digest,
            approved_digest=tool.approved_digest,
            definition=tool.definition,
        )
        for tool, role, machine, seat in rows
    ]
    return sorted(held, key=lambda h: h.address)


def refused_tools(session: Session) -> list[RefusedTool]:
    """The tools live assignments' last registrations refused, and why."""
    rows = session.execute(
        select(Assignment.role, Assignment.refused, Machine.name, Seat.name)
        .join(Machine, Assignment.machine_id == Machine.id)
        .outerjoin(Seat, Seat.assignment_id == Assignment.id)
        .where(Assignment.retired_at.is_(None), Machine.retired_at.is_(None))
    ).all()
    refused = [
        RefusedTool(_address(machine, role, seat, str(name)), str(reason))
        for role, names, machine, seat in rows
        for name, reason in sorted((names or {}).items())
    ]
    return sorted(refused, key=lambda r: r.address)


def approved_definition(session: Session, key: ContractKey) -> dict[str, Any] | None:
    """The definition of an approved (or ever seen) contract, when the registry holds it."""
    row = _decisions(session, [key]).get(key)
    return None if row is None else dict(row.definition)


def decide(session: Session, keys: Iterable[ContractKey], state: str, principal: str) -> list[str]:
    """An operator's decision on ``keys``: ``approved`` serves every holder of each contract,
    ``rejected`` keeps held ones held, saying so. Each tool it changes is an audit event and its
    machine's change is logged; returns their addresses."""
    wanted = sorted(set(keys))
    if not wanted:
        return []
    now = utcnow()
    decisions = _decisions(session, wanted)
    for key in wanted:
        decision = decisions.get(key)
        if decision is None:
            continue
        decision.state, decision.decided_by, decision.decided_at = state, principal[:128], now
    changed: list[str] = []
    machines: set[str] = set()
    events: list[AuditEntry] = []
    source = state if state == REJECTED else None
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        rows = session.execute(
            _live_tools(session).where(
                tuple_(Assignment.role, Tool.name, Tool.contract_digest).in_(chunk),
                Tool.contract_state == HELD if source else Tool.contract_state != APPROVED,
            )
        ).all()
        for tool, role, machine, seat in rows:
            address = _address(machine, role, seat, tool.name)
            events.append(
                _event(
                    f"contract.{state}",
                    principal,
                    address,
                    tool.approved_digest,
                    tool.contract_digest,
                )
            )
            tool.contract_state = state
            if state == APPROVED:
                tool.approved_digest = tool.contract_digest
            changed.append(address)
            machines.add(machine)
    session.flush()
    for machine in sorted(machines):
        changelog.append_change(session, machine)
    _append(session, events)
    return sorted(changed)
