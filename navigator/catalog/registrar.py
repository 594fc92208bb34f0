"""Changing the catalogue: registrations from nodes and operators, retirements, seat placements,
machines added and tools marked.

One path for every change: check names against the address grammar (refusing bad tool names one by
one, keeping the rest), compute contract digests, write the registry in one transaction (its
change-log entry tells the other navigators), then bring this navigator's catalogue up to date,
and drop node clients that a re-registration made stale. This navigator's changes take their turn
here, one at a time, before they take a connection (``Registrar._changed``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from navigator.addresses import check_placement, is_machine_name, refused_name
from navigator.catalog.hidden import MAX_DESCRIPTION
from navigator.catalog.instances import NO_CLAIM, InstanceClaim
from navigator.catalog.intake import (
    MAX_DEFINITION_DEPTH,
    NOT_JSON,
    OUTSIDE_GRAMMAR,
    TOO_DEEP,
    AssignmentSpec,
    RegistrationResult,
    check_names,
    new_tools,
)
from navigator.catalog.view import Catalog
from navigator.errors import ToolNotGranted
from navigator.limits import NODE_MAX_ASSIGNMENTS, NODE_MAX_TOOLS
from navigator.nodes.connections import NodeConnections
from registry import (
    AccessStore,
    CatalogStore,
    Conflict,
    NewTool,
    NotFound,
    Registry,
    RegistryUnavailable,
    SeatNotPlaced,
)
from registry.audit import ACTOR
from registry.contracts import Approval, ContractKey, decide
from registry.database import STATEMENT_TIMEOUT_S

__all__ = [
    "MAX_DEFINITION_DEPTH",
    "NOT_JSON",
    "OUTSIDE_GRAMMAR",
    "TOO_DEEP",
    "AssignmentSpec",
    "Registrar",
    "RegistrationResult",
    "is_node_endpoint",
]

logger = logging.getLogger("meshnav.navigator.registrar")

T = TypeVar("T")


class Registrar:
    def __init__(
        self,
        registry: Registry,
        catalog: Catalog,
        connections: NodeConnections,
        *,
        node_max_assignments: int = NODE_MAX_ASSIGNMENTS,
        node_max_tools: int = NODE_MAX_TOOLS,
        approval: str = "first-use",
        max_description: int = MAX_DESCRIPTION,
    ) -> None:
        self.registry = registry
        #: ``MESHNAV_CONTRACT_APPROVAL`` and ``MESHNAV_MAX_DESCRIPTION`` (SPEC §14).
        self.approval = approval
        self.max_description = max_description
        self.catalog = catalog
        self.connections = connections
        #: What a node's machine may hold, retired assignments counted (``CatalogStore.hold_to``).
        self._node_bounds = {"assignments": node_max_assignments, "tools": node_max_tools}
        #: Held by one of this navigator's catalogue changes from its connection to its commit.
        self._turn = anyio.Lock()

    async def _changed(self, write: Callable[[], T]) -> T:
        """``write``, a change to the catalogue in a transaction of its own, run off the loop once
        this navigator's changes before it are done.

        Catalogue writers commit one at a time (``CatalogStore._write``'s lock): a second writer
        could only wait for the first, and it waited holding a pooled connection and a worker
        thread. A burst of registrations, while another navigator held the lock, held every
        connection so, and the token and grant read of every request found none: answered
        ``registry_unavailable``, the registry healthy. The others wait here, holding neither,
        as long as the registry's own lock wait (``STATEMENT_TIMEOUT_S``, then unavailable).
        """
        taken = False
        with anyio.move_on_after(STATEMENT_TIMEOUT_S):
            await self._turn.acquire()
            taken = True
        if not taken:
            raise RegistryUnavailable(writes=True)
        try:
            with self.catalog.writes.watch():
                return await anyio.to_thread.run_sync(write)  # a write is never given up
        finally:
            self._turn.release()

    async def register_node(
        self,
        machine: str,
        *,
        principal: str,
        advertise_url: str,
        heartbeat_s: float,
        assignments: Sequence[AssignmentSpec],
        claim: InstanceClaim = NO_CLAIM,
    ) -> tuple[bytes, RegistrationResult]:
        """A node (re)registers: idempotent; assignments it no longer serves are retired. Its
        ``claim`` to the machine was judged before (``navigator.catalog.instances``)."""
        result = RegistrationResult()
        prepared = []
        approval = Approval(self.approval, principal)
        for spec in assignments:
            check_names(machine, spec)
            holder = f"mesh/{spec.seat}" if spec.seat else f"{machine}/{spec.role}"
            before = len(result.refused)
            tools = new_tools(spec, result, holder, self.max_description)
            prepared.append((spec, tools, _refused(result, before)))

        unplaced: list[str] = []  # seats no operator placed here: refused, the rest registered

        def write() -> bytes:
            unplaced.clear()
            with self.registry.transaction() as session:
                _bind(AccessStore(session), principal, machine)
                store = CatalogStore(session)
                try:  # the node's own assignments may sit under the address it had before
                    before = store.machine(machine).advertise_url
                except NotFound:
                    before = None
                key = store.register_node(
                    machine, advertise_url=advertise_url, heartbeat_s=heartbeat_s, **claim.kept()
                )
                served = set()
                for spec, tools, refused in prepared:
                    try:  # the check comes before any write of the assignment
                        _write(store, machine, spec, tools, approval, refused, by_node=True)
                    except SeatNotPlaced:
                        unplaced.append(str(spec.seat))
                        continue
                    served.add(spec.role)
                for existing in store.assignments(machine=machine):
                    if (
                        existing.role not in served
                        and not existing.retired
                        and (
                            is_node_endpoint(existing.endpoint, advertise_url)
                            or is_node_endpoint(existing.endpoint, before)
                        )
                    ):
                        store.retire_assignment(machine, existing.role)
                store.hold_to(machine, **self._node_bounds)
                return key

        key = await self._changed(write)
        for seat in unplaced:
            prefix = f"mesh/{seat}/"
            result.registered = [a for a in result.registered if not a.startswith(prefix)]
            result.refused.append({"name": f"mesh/{seat}", "reason": str(SeatNotPlaced())})
        await self.connections.forget(advertise_url.rstrip("/") + "/")
        await self.catalog.catch_up_after_write()
        node_seats = tuple(f"{machine}/{s.role}/" for s in assignments if s.kind == "node_seat")
        kinds = Counter(
            "mesh seats"
            if a.startswith("mesh/")
            else "node seats"
            if a.startswith(node_seats)
            else "assignments"
            for a in result.registered
        )  # what the tree shows: under the machine, under its mesh seats, under node seats
        said = ", ".join(f"{kinds[k]} in {k}" for k in ("assignments", "mesh seats", "node seats"))
        logger.info("node %s registered %d tools: %s", machine, len(result.registered), said)
        return key, result

    async def put_assignment(
        self,
        machine: str,
        spec: AssignmentSpec,
        *,
        grant_scope_holders: bool = False,
        by_node: bool = False,
        action: str = "register",
        instance: str | None = None,
        approves: bool = False,
    ) -> RegistrationResult:
        """Register one assignment: an operator's, or a node's whose tool list changed
        (``by_node``: a retired machine, or a seat no operator placed on it, is a ``Conflict``;
        one its ``instance`` no longer serves, ``Replaced``). ``approves``: an operator's own
        tool list, whose contracts it approves (SPEC §14)."""
        check_names(machine, spec)
        result = RegistrationResult()
        holder = f"mesh/{spec.seat}" if spec.seat else f"{machine}/{spec.role}"
        tools = new_tools(spec, result, holder, self.max_description)
        approval = Approval(self.approval, ACTOR.get() or "unknown", approves)
        refused = _refused(result, 0)

        def write() -> None:
            with self.registry.transaction() as session:
                store = CatalogStore(session)
                if by_node:
                    store.check_node_instance(machine, instance)
                _write(
                    store, machine, spec, tools, approval, refused, by_node=by_node, action=action
                )
                if by_node:
                    CatalogStore(session).hold_to(machine, **self._node_bounds)
                if grant_scope_holders:
                    AccessStore(session).grant_scope_holders(f"{holder}/*", spec.scopes)

        await self._changed(write)
        # An operator's registration may point the role at another server: its client goes. A
        # node's pushed tool list changes no server (a restarted node registers first), and
        # closing the client failed every call in flight to that assignment.
        if spec.endpoint and not by_node:
            await self.connections.forget(spec.endpoint)
        await self.catalog.catch_up_after_write()
        return result

    async def decide(self, keys: Sequence[ContractKey], state: str, principal: str) -> list[str]:
        """An operator approves or rejects contracts (SPEC §14): every holder of each at once."""

        def write() -> list[str]:
            with self.registry.transaction() as session:
                return decide(session, keys, state, principal)

        changed = await self._changed(write)
        await self.catalog.catch_up_after_write()
        return changed

    async def bind(self, principal: str, machine: str) -> None:
        """Hold a node principal to its one machine (bound at its first registration)."""

        def write() -> None:
            with self.registry.transaction() as session:
                _bind(AccessStore(session), principal, machine)

        await self._changed(write)

    async def heartbeat(self, machine: str, principal: str, instance: str | None = None) -> None:
        def write() -> Any:
            with self.registry.transaction() as session:
                _bind(AccessStore(session), principal, machine)
                return CatalogStore(session).heartbeat(machine, instance)

        with self.catalog.writes.watch():  # one not recorded is no sign the node went silent
            at = await anyio.to_thread.run_sync(write)
        self.catalog.note_heartbeat(machine, at)

    async def retire(self, machine: str, role: str | None) -> None:
        """An operator retires a machine (``role`` None) or one of its assignments."""
        if role is None:
            await self._store_write(lambda store: store.retire_machine(machine))
        else:
            await self._store_write(lambda store: store.retire_assignment(machine, role))

    async def _store_write(self, change: Callable[[CatalogStore], object]) -> None:
        """One operator's change to the catalogue, written, and this navigator's view caught up."""

        def write() -> None:
            with self.registry.transaction() as session:
                change(CatalogStore(session))

        await self._changed(write)
        await self.catalog.catch_up_after_write()

    async def add_machine(self, name: str, *, advertise_url: str | None) -> None:
        """Add a machine, or bring back a retired one (an operator's act)."""
        await self._store_write(lambda store: store.add_machine(name, advertise_url=advertise_url))

    async def mark_tool(self, machine: str, role: str, tool: str, confirmation: str) -> None:
        """An operator's confirmation mark on one tool."""
        await self._store_write(lambda store: store.mark_tool(machine, role, tool, confirmation))

    async def place_seat(self, seat: str, machine: str, role: str) -> None:
        """An operator places a mesh seat: the one place a node may serve it from (ADR 0032);
        the seat's previous machine and its new one are both logged."""
        check_placement(seat, machine, role)
        # the seat's previous machine and its new one, both logged
        await self._store_write(lambda store: store.place_seat(seat, machine, role))

    async def remove_seat(self, seat: str) -> None:
        """An operator removes a mesh seat: its live instance is retired, its address gone."""
        await self._store_write(lambda store: store.remove_seat(seat))


def is_node_endpoint(endpoint: str | None, advertise_url: str | None) -> bool:
    """Whether ``endpoint`` is served by the node that advertises ``advertise_url``."""
    return (
        advertise_url is not None
        and endpoint is not None
        and endpoint.startswith(advertise_url.rstrip("/") + "/")
    )


def _bind(store: AccessStore, principal: str, machine: str) -> None:
    """Hold ``principal`` to ``machine``, a name in the grammar (SPEC §2): a registration with
    no assignment checks none of its own, and a principal bound to ``mesh`` is bound for good."""
    if not is_machine_name(machine):
        raise refused_name("machine")
    try:
        store.bind_machine(principal, machine)
    except Conflict:
        raise ToolNotGranted("This node principal may not speak for that machine.") from None


def _write(
    store: CatalogStore,
    machine: str,
    spec: AssignmentSpec,
    tools: list[NewTool],
    approval: Approval,
    refused: dict[str, str],
    *,
    by_node: bool = False,
    action: str = "register",
) -> None:
    store.put_assignment(
        machine,
        spec.role,
        module=spec.module,
        tools=tools,
        kind=spec.kind,
        endpoint=spec.endpoint,
        scopes=spec.scopes,
        seat=spec.seat,
        by_node=by_node,
        action=action,
        approval=approval,
        refused=refused,
        not_listing=spec.not_listing,
    )


def _refused(result: RegistrationResult, since: int) -> dict[str, str]:
    """The tools ``result`` refused from its ``since``-th refusal on, by name: why."""
    return {entry["name"]: entry["reason"] for entry in result.refused[since:]}
