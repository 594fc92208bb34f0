"""The walker tools apart from MCP: ``Navigator``, the four operations for one caller.

Every operation reads the caller's grants from the registry first (one indexed query) and compiles
them once for the request; nothing is answered from a grant cache (``navigator.walker.allowing``).
``seats`` and ``search`` answer a page at a time within the answer's room, behind signed cursors
bound to what the caller may see; ``describe`` gives one tool's contract; ``call`` is SPEC §3's
call (``navigator.walker.calling``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from mesh.digests import digest
from navigator.access.auditing import AuditLog
from navigator.access.grants import Caller, Permissions
from navigator.access.quotas import Quotas
from navigator.addresses import parse_pattern, parse_walk_address
from navigator.catalog.view import Catalog
from navigator.errors import InvalidAddress, ToolGrantsChanged, ToolNotGranted, ToolSchemaTooLarge
from navigator.limits import LIMITS, PENDING_CONFIRMATIONS
from navigator.nodes.connections import NodeAnswer, NodeConnections, ProgressSink
from navigator.validation import CompiledSchema, compile_schema_uncached
from navigator.walker.allowing import GrantChecks
from navigator.walker.calling import Calls
from navigator.walker.confirmation import Confirmations, Elicitor
from navigator.walker.cursors import CursorPosition, CursorSigner, Listings
from navigator.walker.results import contract, search_result
from navigator.walker.seats import authorised_contracts, walk
from navigator.walker.sizing import fit_entries, wire_size
from navigator.walker.trail import Seen, record
from registry import Registry

__all__ = ["Navigator"]

#: Room for ``nextCursor`` and ``_meta`` in a paged answer.
CURSOR_RESERVE = 1024

#: Grant sets whose authorised contracts are kept for one view of the catalogue; past this many
#: the digests are read again (one walk over the assignments each).
_GRANT_SETS = 4096


#: The top of the mesh for a caller no grant row allows anything (naming no principal).
NO_GRANTS = (
    "You hold no grants, so the mesh lists nothing for you: an operator gives them with "
    "`meshnav grant allow`."
)


class Navigator:
    def __init__(
        self,
        registry: Registry,
        catalog: Catalog,
        connections: NodeConnections,
        *,
        deadline_s: float,
        cursor_ttl_s: float = LIMITS.cursor_ttl_s,
        walk: Callable[..., dict[str, Any]] = walk,
        authorised_contracts: Callable[[Catalog, Permissions], str] = authorised_contracts,
        compile_schema: Callable[[Any], CompiledSchema] = compile_schema_uncached,
        quotas: Quotas | None = None,
        audit: AuditLog | None = None,
        pending_confirmations: int = PENDING_CONFIRMATIONS,
    ) -> None:
        """``walk``, ``authorised_contracts`` and ``compile_schema`` are
        ``navigator.walker.seats``'s and the validator's; a test passes its own to count what a
        request does."""
        self.registry = registry
        self.quotas = Quotas() if quotas is None else quotas
        #: Where each call's and each refused describe's event goes (ADR 0039); None: nowhere.
        self.audit = audit
        self.catalog = catalog
        self.connections = connections
        self.deadline_s = deadline_s
        self.cursors = CursorSigner(cursor_ttl_s)
        self._listings: Listings[dict[str, Any]] = Listings(cursor_ttl_s)
        #: Grant set (``Permissions.key``) -> ``authorised_contracts`` for the view of
        #: ``_authorised_generation``.
        self._authorised: dict[str, str] = {}
        self._authorised_generation = -1
        self.confirmations = Confirmations(
            LIMITS.confirm_ttl_s, pending_per_principal=pending_confirmations
        )
        self._grants = GrantChecks(registry, catalog)
        self._calls = Calls(
            catalog,
            connections,
            self._grants,
            self.confirmations,
            quotas=self.quotas,
            audit=audit,
            deadline_s=deadline_s,
            compile_schema=compile_schema,
        )
        self._walk = walk
        self._authorise = authorised_contracts

    async def permissions(self, caller: Caller) -> Permissions:
        """The caller's grants as the registry holds them now: read with this request's token
        when it came over HTTP, read here otherwise (stdio). Never from a cache."""
        return await self._grants.permissions(caller)

    # --- paging ----------------------------------------------------------------------------

    def _binding(
        self, kind: str, permissions: Permissions, **request: Any
    ) -> Callable[[], dict[str, Any]]:
        """What a cursor of this request binds, read when first asked: a page that neither opens
        a cursor nor issues one never reads the caller's authorised contracts."""
        return functools.cache(functools.partial(self._bound, kind, permissions, **request))

    def _bound(self, kind: str, permissions: Permissions, **request: Any) -> dict[str, Any]:
        caller = permissions.caller
        return {
            "kind": kind,
            "principal": caller.principal,
            "scopes": sorted(caller.scopes),
            "request": digest(request),
            "catalog": self._authorised_contracts(permissions),
            "grants": permissions.revision,
            "rows": permissions.rows_fingerprint,
        }

    def _authorised_contracts(self, permissions: Permissions) -> str:
        """The digest of the contracts the caller may call (SPEC §3 Cursors), read once per
        grant set and view: a change the caller cannot see leaves its cursors valid, and tells it
        nothing (ADR 0028)."""
        generation = self.catalog.generation
        if generation != self._authorised_generation or len(self._authorised) >= _GRANT_SETS:
            self._authorised.clear()
            self._authorised_generation = generation
        key = permissions.key  # equal for any two grant sets that permit alike
        found = self._authorised.get(key)
        if found is None:
            found = self._authorised[key] = self._authorise(self.catalog, permissions)
        return found

    def _position(
        self, cursor: str | None, binding: Callable[[], dict[str, Any]]
    ) -> CursorPosition:
        return self.cursors.start() if cursor is None else self.cursors.open(cursor, binding())

    async def _settled(self, permissions: Permissions) -> None:
        """Refuse a page whose grants moved while it was prepared (``tool_grants_changed``)."""
        if await self._grants.revision() != permissions.revision:
            raise ToolGrantsChanged()

    # --- seats -----------------------------------------------------------------------------

    async def seats(
        self,
        caller: Caller,
        address: str | None,
        cursor: str | None,
        *,
        answer_bytes: int = LIMITS.answer_bytes,
    ) -> dict[str, Any]:
        parsed = None if address is None else parse_walk_address(address)
        if parsed is not None and parsed.is_tool:
            raise InvalidAddress("seats walks prefixes; describe a tool by its address.")
        permissions = await self.permissions(caller)
        binding = self._binding("seats", permissions, address=address)
        position = self._position(cursor, binding)
        listing = None if cursor is None else self._listings.get(binding(), position)
        if listing is None:  # a first page, or a listing no longer kept: walked now
            listing = self._walk(self.catalog, permissions, parsed)
        head = {k: v for k, v in listing.items() if k != "entries"}
        entries = listing["entries"][position.offset :]
        taken = fit_entries(head, "entries", entries, reserve=CURSOR_RESERVE, limit=answer_bytes)
        taken = min(taken, LIMITS.seats_page)
        result = {**head, "entries": entries[:taken]}
        if parsed is None and not entries and not permissions.allows_any:
            result["note"] = NO_GRANTS  # an empty mesh is no grant, not no tools
        if taken < len(entries):
            if taken == 0:
                raise ToolSchemaTooLarge("One entry cannot fit in an answer.")
            next_position = CursorPosition(position.offset + taken, position.started)
            result["nextCursor"] = self.cursors.issue(binding(), next_position)
            self._listings.keep(binding(), position, listing)
        await self._settled(permissions)
        return result

    # --- search ----------------------------------------------------------------------------

    async def search(
        self,
        caller: Caller,
        query: str,
        *,
        limit: int,
        within: str | None,
        schemas: bool,
        cursor: str | None,
        answer_bytes: int = LIMITS.answer_bytes,
        with_text: bool = True,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Ranked results and the answer's ``_meta``, within ``answer_bytes`` on the wire: as a
        walker tool's answer, the JSON twice (``with_text``), or once as ``mesh.tools.discover``
        answers it."""
        pattern = None if within is None else parse_pattern(within)
        permissions = await self.permissions(caller)
        binding = self._binding(
            "search", permissions, query=query, limit=limit, within=within, schemas=schemas
        )
        position = self._position(cursor, binding)
        page = self.catalog.index.search(
            query,
            permits=permissions,
            within=None if pattern is None else pattern.matches_address,
            offset=position.offset,
            limit=limit,
        )
        # (the rank of each result among the page's hits, the result)
        shown = [
            (rank, result)
            for rank, hit in enumerate(page.hits)
            if (result := search_result(self.catalog, hit, schemas)) is not None
        ]
        results = [result for _, result in shown]
        taken = fit_entries(
            {},
            "results",
            results,
            reserve=CURSOR_RESERVE,
            limit=answer_bytes,
            with_text=with_text,
        )
        if taken == 0 and results:
            raise ToolSchemaTooLarge()
        answer: dict[str, Any] = {"results": results[:taken]}
        if taken < len(results) or page.has_more:
            # past every hit this page showed or passed over, and no further
            passed = shown[taken][0] if taken < len(results) else len(page.hits)
            next_position = CursorPosition(position.offset + passed, position.started)
            answer["nextCursor"] = self.cursors.issue(binding(), next_position)
        meta = {
            "contract_digest": digest(
                [[r["address"], r["contractDigest"]] for r in answer["results"]]
            )
        }
        await self._settled(permissions)
        return answer, meta

    # --- describe --------------------------------------------------------------------------

    async def describe(
        self, caller: Caller, address: str, *, answer_bytes: int = LIMITS.answer_bytes
    ) -> dict[str, Any]:
        seen = Seen()
        try:
            tool = await self._grants.allowed(caller, address, seen=seen)
        except ToolNotGranted as error:  # a refusal is recorded; a description given is not
            record(self.audit, caller, "describe", address, error.code, seen)
            raise
        described = contract(self.catalog, self.confirmations, tool)
        if wire_size(described) > answer_bytes:
            raise ToolSchemaTooLarge()
        return described

    # --- call ------------------------------------------------------------------------------

    async def call(
        self,
        caller: Caller,
        address: str,
        arguments: Any,
        *,
        confirm: str | None,
        elicitor: Elicitor | None,
        progress: ProgressSink | None,
        contract: str | None = None,
    ) -> NodeAnswer:
        """SPEC §3's call: ``navigator.walker.calling.Calls.call``."""
        return await self._calls.call(
            caller,
            address,
            arguments,
            confirm=confirm,
            elicitor=elicitor,
            progress=progress,
            contract=contract,
        )
