"""The navigator's long-lived parts, made once at start and reached by every handler."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio.to_thread
from sqlalchemy.orm import Session
from starlette.requests import Request

from navigator.access.auditing import AuditLog, open_export
from navigator.access.authentication import Authenticator, jwt_verifier
from navigator.access.quotas import Quotas
from navigator.access.refusals import Refusals
from navigator.catalog.registrar import Registrar
from navigator.catalog.view import Catalog
from navigator.limits import LIMITS, Limits
from navigator.nodes.connections import NodeConnections
from navigator.search.ranking import RankingSettings
from navigator.settings import NavigatorSettings
from navigator.walker.operations import Navigator
from registry import Registry

__all__ = ["Services", "services"]

T = TypeVar("T")


@dataclass(slots=True)
class Services:
    settings: NavigatorSettings
    registry: Registry
    catalog: Catalog
    connections: NodeConnections
    navigator: Navigator
    registrar: Registrar
    authenticator: Authenticator
    audit: AuditLog
    limits: Limits = field(default=LIMITS)

    async def transact(self, work: Callable[[Session], T]) -> T:
        """Run ``work``, which may write, in one registry transaction, off the event loop."""

        def run() -> T:
            with self.registry.transaction() as session:
                return work(session)

        return await anyio.to_thread.run_sync(run)

    async def read(self, work: Callable[[Session], T]) -> T:
        """Run ``work``, which only reads, in one registry read transaction, off the event loop."""

        def run() -> T:
            with self.registry.read_transaction() as session:
                return work(session)

        return await anyio.to_thread.run_sync(run)

    @classmethod
    def create(
        cls,
        settings: NavigatorSettings,
        *,
        limits: Limits = LIMITS,
        registry: Registry | None = None,
        navigator: Callable[..., Navigator] = Navigator,
    ) -> Services:
        """The parts ``settings`` make; a test passes its own ``limits``, ``registry`` (made for
        ``settings.database_url``) or maker of the ``navigator`` (a ``Navigator`` with
        collaborators of its own)."""
        registry = registry or Registry(
            settings.database_url, audit_instance=settings.instance_name()
        )
        audit = AuditLog(
            registry,
            registry.audit_instance,
            retention_days=settings.audit_retention_days,
            export=open_export(settings.audit_jsonl),
            flush_s=settings.audit_flush_s,
            queue_max=settings.audit_queue_max,
            refusals=Refusals(settings.audit_refusals_per_minute, settings.audit_refusal_window_s),
        )
        decisions = audit if settings.audit_calls else None
        catalog = Catalog(
            registry, ranking=RankingSettings(relevance_floor=settings.search_relevance_floor)
        )
        connections = NodeConnections(
            verify=settings.node_trust(), destinations=settings.destinations()
        )
        return cls(
            settings=settings,
            registry=registry,
            catalog=catalog,
            connections=connections,
            navigator=navigator(
                registry,
                catalog,
                connections,
                deadline_s=settings.call_deadline_s,
                cursor_ttl_s=settings.cursor_ttl_s,
                quotas=Quotas(
                    node_concurrency=settings.node_concurrency, navigators=settings.navigators
                ),
                audit=decisions,
                pending_confirmations=settings.pending_confirmations,
            ),
            registrar=Registrar(
                registry,
                catalog,
                connections,
                node_max_assignments=settings.node_max_assignments,
                node_max_tools=settings.node_max_tools,
                approval=settings.contract_approval,
                max_description=settings.max_description,
            ),
            authenticator=Authenticator(
                registry,
                jwt_verifier(settings),
                principal_claim=settings.jwt_principal_claim,
                audit=decisions,
                allow_untyped=settings.jwt_allow_untyped,
            ),
            audit=audit,
            limits=limits,
        )


def services(request: Request) -> Services:
    found: Services = request.app.state.meshnav
    return found
