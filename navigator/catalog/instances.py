"""One node per machine: which node instance may register a machine, and a clean stop (SPEC §6,
ADR 0050).

A registration names the node instance it comes from. When the machine is registered to another
instance, that instance's advertised URL is asked which instance answers there
(``navigator.nodes.identity``): while it is the registered one, the newcomer is refused
(``conflict``, naming that node's URL and since when, and ``--replace``); otherwise — a crashed
or stopped node started again, on the same port or another — the newcomer takes the machine over
at once. With ``--replace`` it takes over without asking. The registry records the instance,
checks that the one judged is still the one registered, and audits each takeover
(``registry.node_instances``); from then on the old instance's heartbeats and pushes are
``replaced``. A node stopping cleanly says so here: its machine is not answering from then on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from navigator.catalog.registry_reads import short_read
from navigator.errors import MachineServed
from registry import CatalogStore, MachineRecord, NotFound, Registry

if TYPE_CHECKING:
    from navigator.catalog.registrar import Registrar

__all__ = ["NO_CLAIM", "InstanceClaim", "NodeInstances"]


@dataclass(frozen=True, slots=True)
class InstanceClaim:
    """A node instance's claim to its machine, as judged before its registration is written:
    ``judged`` is the instance registered then (found not answering, or ``replace``d)."""

    instance: str | None = None
    judged: str | None = None
    replace: bool = False

    def kept(self) -> dict[str, Any]:
        """The claim as ``CatalogStore.register_node`` takes it."""
        return {"instance": self.instance, "judged": self.judged, "replace": self.replace}


#: A registration that names no instance (a node from before instance ids), as judged.
NO_CLAIM = InstanceClaim()


def _machine(registry: Registry, name: str) -> MachineRecord | None:
    with registry.read_transaction() as session:
        try:
            return CatalogStore(session).machine(name)
        except NotFound:
            return None


def machine_served(name: str, record: MachineRecord) -> MachineServed:
    since = record.instance_since.isoformat(timespec="seconds") if record.instance_since else ""
    return MachineServed(
        f"Machine {name} is served by the node at {record.advertise_url}, answering since"
        f" {since}: stop that node first, or start this one with --replace to take over.",
        extra={"answering": record.advertise_url, "since": since},
    )


class NodeInstances:
    """The node API's judgement of which instance serves a machine, over the registrar."""

    def __init__(self, registrar: Registrar) -> None:
        self.registrar = registrar

    async def claim(self, machine: str, instance: str | None, *, replace: bool) -> InstanceClaim:
        """``instance``'s claim to ``machine``; ``MachineServed`` while the instance registered
        for it answers at its URL (unless ``replace``)."""
        registry = self.registrar.registry
        record = await short_read(registry, _machine, registry, machine)
        registered = None if record is None else record.instance
        if (
            record is not None
            and registered is not None
            and registered != instance
            and record.retired_at is None
            and record.advertise_url is not None
            and not replace
        ):
            probe = self.registrar.connections.instances
            if await probe.instance_at(record.advertise_url) == registered:
                raise machine_served(machine, record)
        return InstanceClaim(instance, registered, replace)

    async def stop(self, machine: str, principal: str, instance: str) -> bool:
        """``instance`` stopped cleanly: its machine is not answering from now on. Whether it
        was the instance serving the machine (a replaced one's stop changes nothing)."""
        registrar = self.registrar
        await registrar.bind(principal, machine)

        def write() -> bool:
            with registrar.registry.transaction() as session:
                return CatalogStore(session).stop_node(machine, instance)

        with registrar.catalog.writes.watch():
            stopped = await anyio.to_thread.run_sync(write)
        if stopped:
            await registrar.catalog.catch_up_after_write()
        return stopped
