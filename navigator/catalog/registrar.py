"""Changing the catalogue: registrations from nodes and operators, retirements, seat placements,
machines added and tools marked.

One path for every change: check names against the address grammar (refusing bad tool names one by
one, keeping the rest), compute contract digests, write the registry in one transaction (its
change-log entry tells the other navigators), then bring this navigator's catalogue up to date,
and drop node clients that a re-registration made stale. This navigator's changes take their turn
here, one at a time, before they take a connection (``Registrar._changed``).
"""

from __future__ import annotations

import json
import logging
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from mesh.digests import contract_digest
from navigator.addresses import (
    TOOL_GRAMMAR,
    check_placement,
    is_machine_name,
    is_name,
    is_tool_name,
    refused_name,
)
from navigator.catalog.view import Catalog
from navigator.errors import InvalidArguments, ToolNotGranted
from navigator.limits import NODE_MAX_ASSIGNMENTS, NODE_MAX_TOOLS
from navigator.nodes.connections import NodeConnections
from navigator.validation.json_values import measure
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
from registry.database import STATEMENT_TIMEOUT_S

__all__ = ["AssignmentSpec", "Registrar", "RegistrationResult", "is_node_endpoint"]

logger = logging.getLogger("meshnav.navigator.registrar")

T = TypeVar("T")

MAX_TOOLS_PER_ASSIGNMENT = 4096
#: Why a tool whose name breaks the grammar is refused: the rule it breaks.
OUTSIDE_GRAMMAR = f"name outside the address grammar ({TOOL_GRAMMAR})"

#: Why a tool whose definition JSON cannot carry exactly is refused: its digest (RFC 8785) has no
#: value for it, the registry and the answers no text.
NOT_JSON = "definition holds NaN, an infinity, a lone surrogate or an integer past 2^53"
#: How deep a tool's definition may nest (objects and arrays, the definition itself the first):
#: every answer that carries it must be written, and an answer's writer stops at 255 levels.
MAX_DEFINITION_DEPTH = 128
TOO_DEEP = f"definition nests deeper than {MAX_DEFINITION_DEPTH} levels"


@dataclass(frozen=True, slots=True)
class AssignmentSpec:
    role: str
    module: str
    tools: Sequence[Mapping[str, Any]]
    kind: str = "assignment"
    endpoint: str | None = None
    seat: str | None = None
    scopes: Sequence[str] = ()
    #: Why the node could not list the tools (they are its last list, or none): ADR 0057.
    not_listing: str | None = None


@dataclass(slots=True)
class RegistrationResult:
    registered: list[str] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"registered": self.registered, "refused": self.refused}


def _check_names(machine: str, spec: AssignmentSpec) -> None:
    if not is_machine_name(machine):
        raise refused_name("machine")
    if not is_name(spec.role):
        raise refused_name("role")
    if spec.seat is not None and not is_name(spec.seat):
        raise refused_name("seat")
    if spec.kind not in ("assignment", "node_seat"):
        raise InvalidArguments("kind must be assignment or node_seat.")
    if len(spec.tools) > MAX_TOOLS_PER_ASSIGNMENT:
        raise InvalidArguments("Too many tools in one assignment.")


def _new_tools(spec: AssignmentSpec, result: RegistrationResult, prefix: str) -> list[NewTool]:
    tools: list[NewTool] = []
    seen: set[str] = set()
    for index, tool in enumerate(spec.tools):
        name = tool.get("name") if isinstance(tool, Mapping) else None
        if not isinstance(name, str) or not is_tool_name(name):
            label = (
                name
                if isinstance(name, str) and name.isprintable() and len(name) <= 128
                else f"#{index}"
            )
            result.refused.append({"name": label, "reason": OUTSIDE_GRAMMAR})
            continue
        if name in seen:
            result.refused.append({"name": name, "reason": "duplicate name"})
            continue
        if not isinstance(tool.get("inputSchema", {}), dict):
            result.refused.append({"name": name, "reason": "inputSchema is not an object"})
            continue
        if not isinstance(tool.get("annotations", {}), dict | None):
            result.refused.append({"name": name, "reason": "annotations is not an object"})
            continue
        definition = {k: v for k, v in tool.items() if k != "_meta"}
        size = measure(definition, sys.maxsize, sys.maxsize)  # no recursion, however deep
        if size is not None and size.depth > MAX_DEFINITION_DEPTH:
            result.refused.append({"name": name, "reason": TOO_DEEP})
            continue
        digest = None if size is None else _digest(definition)
        if digest is None:
            result.refused.append({"name": name, "reason": NOT_JSON})
            continue
        seen.add(name)
        tools.append(NewTool(name=name, definition=definition, contract_digest=digest))
        result.registered.append(f"{prefix}/{name}")
    return tools


def _digest(definition: Mapping[str, Any]) -> str | None:
    """The contract digest of a definition the registry can hold and every answer can write;
    ``None`` for one holding NaN or an infinity (which Python's JSON reader takes), a lone
    surrogate anywhere, or, in its contract, an integer past 2^53 (RFC 8785 refuses those)."""
    try:
        json.dumps(definition, allow_nan=False, ensure_ascii=False).encode("utf-8")
        return contract_digest(definition)
    except ValueError:  # UnicodeEncodeError and rfc8785's CanonicalizationError are ValueErrors
        return None


class Registrar:
    def __init__(
        self,
        registry: Registry,
        catalog: Catalog,
        connections: NodeConnections,
        *,
        node_max_assignments: int = NODE_MAX_ASSIGNMENTS,
        node_max_tools: int = NODE_MAX_TOOLS,
    ) -> None:
        self.registry = registry
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
    ) -> tuple[bytes, RegistrationResult]:
        """A node (re)registers: idempotent; assignments it no longer serves are retired."""
        result = RegistrationResult()
        prepared = []
        for spec in assignments:
            _check_names(machine, spec)
            holder = f"mesh/{spec.seat}" if spec.seat else f"{machine}/{spec.role}"
            prepared.append((spec, _new_tools(spec, result, holder)))

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
                    machine, advertise_url=advertise_url, heartbeat_s=heartbeat_s
                )
                served = set()
                for spec, tools in prepared:
                    try:  # the check comes before any write of the assignment
                        _write(store, machine, spec, tools, by_node=True)
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
    ) -> RegistrationResult:
        """Register one assignment: an operator's, or a node's whose tool list changed
        (``by_node``: a retired machine, or a seat no operator placed on it, is a ``Conflict``)."""
        _check_names(machine, spec)
        result = RegistrationResult()
        holder = f"mesh/{spec.seat}" if spec.seat else f"{machine}/{spec.role}"
        tools = _new_tools(spec, result, holder)

        def write() -> None:
            with self.registry.transaction() as session:
                _write(CatalogStore(session), machine, spec, tools, by_node=by_node, action=action)
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

    async def bind(self, principal: str, machine: str) -> None:
        """Hold a node principal to its one machine (bound at its first registration)."""

        def write() -> None:
            with self.registry.transaction() as session:
                _bind(AccessStore(session), principal, machine)

        await self._changed(write)

    async def heartbeat(self, machine: str, principal: str) -> None:
        def write() -> Any:
            with self.registry.transaction() as session:
                _bind(AccessStore(session), principal, machine)
                return CatalogStore(session).heartbeat(machine)

        with self.catalog.writes.watch():  # one not recorded is no sign the node went silent
            at = await anyio.to_thread.run_sync(write)
        self.catalog.note_heartbeat(machine, at)

    async def _operator_write(self, work: Callable[[CatalogStore], object]) -> None:
        """An operator's change to the catalogue (``work`` on the store, in a transaction of its
        own), followed until this navigator's view holds it."""

        def write() -> None:
            with self.registry.transaction() as session:
                work(CatalogStore(session))

        await self._changed(write)
        await self.catalog.catch_up_after_write()

    async def retire(self, machine: str, role: str | None) -> None:
        if role is None:
            await self._operator_write(lambda store: store.retire_machine(machine))
        else:
            await self._operator_write(lambda store: store.retire_assignment(machine, role))

    async def add_machine(self, name: str, *, advertise_url: str | None) -> None:
        """Add a machine, or bring back a retired one (an operator's act)."""
        await self._operator_write(
            lambda store: store.add_machine(name, advertise_url=advertise_url)
        )

    async def mark_tool(self, machine: str, role: str, tool: str, confirmation: str) -> None:
        """An operator's confirmation mark on one tool."""
        await self._operator_write(lambda store: store.mark_tool(machine, role, tool, confirmation))

    async def place_seat(self, seat: str, machine: str, role: str) -> None:
        """An operator places a mesh seat: the one place a node may serve it from (ADR 0032);
        the seat's previous machine and its new one are both logged."""
        check_placement(seat, machine, role)
        await self._operator_write(lambda store: store.place_seat(seat, machine, role))

    async def remove_seat(self, seat: str) -> None:
        """An operator removes a mesh seat; the assignment that held it is retired with it."""
        await self._operator_write(lambda store: store.remove_seat(seat))


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
        not_listing=spec.not_listing,
    )
