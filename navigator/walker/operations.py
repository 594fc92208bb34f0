"""What the walker tools do, apart from MCP: seats, search, describe and call for one caller.

Every operation reads the caller's grants from the registry first (one indexed query) and compiles
them once for the request; nothing is answered from a grant cache. ``call`` follows SPEC §3's order
exactly: the tool exists, the grants allow it now, the arguments satisfy the tool's own schema,
confirmation when the tool changes things, then the owning node under a deadline.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import anyio
from mcp_types import CallToolResult

from mesh import tracing
from mesh.calltokens import sign_call_token
from mesh.digests import arguments_digest, digest
from navigator.access.auditing import AuditLog
from navigator.access.grants import Caller, Permissions, compile_permissions
from navigator.access.quotas import Quotas
from navigator.addresses import (
    COLLAPSED,
    LOWER_CASE,
    parse_collapsed,
    parse_pattern,
    parse_tool_address,
    parse_walk_address,
)
from navigator.catalog.machines import ANSWERING, NOT_ANSWERING
from navigator.catalog.records import CatalogTool
from navigator.catalog.registry_reads import short_read
from navigator.catalog.view import Catalog
from navigator.errors import (
    ConfirmationRequired,
    InvalidAddress,
    InvalidArguments,
    NavigatorError,
    NodeUnavailable,
    ToolGrantsChanged,
    ToolNotGranted,
    ToolSchemaTooLarge,
    UnknownTool,
)
from navigator.limits import LIMITS
from navigator.mcp.answers import fit_entries, wire_size
from navigator.nodes.connections import NodeConnections, ProgressSink
from navigator.search import Hit, shown_holders
from navigator.validation import (
    NOT_UNICODE,
    CompiledSchema,
    SchemaCache,
    compile_schema_uncached,
    is_unicode_text,
)
from navigator.walker.confirmation import NONE as NO_CONFIRMATION
from navigator.walker.confirmation import Confirmations, Elicitor
from navigator.walker.cursors import CursorPosition, CursorSigner, Listings
from navigator.walker.nearby import holders_of, nearby
from navigator.walker.seats import authorised_contracts, walk
from registry import GrantRecord, Registry, read_grant_revision, read_snapshot

__all__ = ["WALKER_ARGUMENTS", "Navigator"]

T = TypeVar("T")

logger = logging.getLogger("meshnav.navigator")

#: Arguments the confirmation and the call token cannot bind: RFC 8785 writes I-JSON only.
_NOT_CANONICAL = (
    "The arguments hold an integer beyond 2^53 - 1, which this call's confirmation or call token "
    "cannot bind (RFC 8785)."
)

#: The walker tools' argument names (``navigator.mcp.tools`` declares these and no others): a member
#: of these names where a schema does not take it is pointed at (an agent that puts ``confirm``
#: in ``args``, or ``limit`` in ``describe``), as a name the caller was given (ADR 0035).
WALKER_ARGUMENTS = frozenset(
    {"address", "cursor", "query", "limit", "within", "schemas", "args", "confirm"}
)

#: Room for ``nextCursor`` and ``_meta`` in a paged answer.
CURSOR_RESERVE = 1024

#: Grant sets whose authorised contracts are kept for one view of the catalogue; past this many
#: the digests are read again (one walk over the assignments each).
_GRANT_SETS = 4096


#: What the compiled input schemas may hold, in ``CompiledSchema.weight`` (about bytes): tens of
#: thousands of ordinary contracts, or a few dozen at the validator's bounds.
SCHEMA_CACHE_WEIGHT = 256 << 20


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
        self.confirmations = Confirmations(LIMITS.confirm_ttl_s)
        self._schemas: SchemaCache[str] = SchemaCache(SCHEMA_CACHE_WEIGHT)
        self._compiling: dict[str, anyio.Event] = {}
        self._walk = walk
        self._authorise = authorised_contracts
        self._compile_schema = compile_schema

    # --- grants ----------------------------------------------------------------------------

    def _read_permissions(self, caller: Caller) -> Permissions:
        snapshot = read_snapshot(
            self.registry, caller.principal, caller.scopes, limit=LIMITS.grant_rows
        )
        return compile_permissions(caller, snapshot)

    async def _allowed(
        self, caller: Caller, address: str, *, fresh: bool = False, seen: _Seen | None = None
    ) -> CatalogTool:
        """SPEC §3's first two steps of a call, as ``describe`` takes them too: the address parses
        as one tool's, the caller's grants, read now, could reach it at all (else
        ``tool_not_granted`` whether a tool is there or not, ADR 0035), the tool exists and is not
        retired (``unknown_tool``, naming near addresses the caller may call), and the grants
        allow it (``tool_not_granted``). ``fresh`` reads the grants from the registry even when
        the request's token came with them: the request began long enough ago that they may
        have changed. ``seen`` is told the row that decided, from this same read."""
        try:
            parsed = parse_tool_address(address)
        except InvalidAddress as error:
            raise await self._address_help(caller, address, error) from None
        if fresh:
            permissions = await self._read(lambda: self._read_permissions(caller))
        else:
            permissions = await self.permissions(caller)
        holder, role, name = parsed.holder, str(parsed.role), str(parsed.tool)
        near = functools.partial(nearby, self.catalog, permissions, parsed)
        decision = permissions.decide(holder, role, name)
        if seen is not None:
            seen.row = decision.row
        if not permissions.covers(holder, role, name):
            raise _near(ToolNotGranted, near())
        tool = self.catalog.find_tool(str(parsed))
        if tool is None:
            raise _near(UnknownTool, near())
        if not decision.allowed:
            raise _near(ToolNotGranted, near())
        return tool

    async def _address_help(
        self, caller: Caller, address: object, error: InvalidAddress
    ) -> InvalidAddress:
        """``error`` with what the caller may use instead: for a collapsed ``*/ROLE/TOOL``, the
        first holders it may call it on; for an address in the wrong case, the address in lower
        case when it may call that. Anything else stands as it was."""
        collapsed = parse_collapsed(address)
        if collapsed is not None:
            role, name = collapsed
            permissions = await self.permissions(caller)
            holders, node_seat = holders_of(self.catalog, permissions, role, name)
            if not holders:
                return InvalidAddress(f"{COLLAPSED} {_NO_HOLDER}")
            example = f"{holders[0]}/{role}/{name}"
            seats = (
                f"seats '*/{role}' lists every holder you may call it on"
                if node_seat
                else "seats lists the machines you may call tools on"
            )
            return InvalidAddress(
                f"{COLLAPSED} Pick one of 'holders', e.g. {example}; {seats}.",
                extra={"holders": holders},
            )
        if error.message == LOWER_CASE and isinstance(address, str):
            try:
                lowered = parse_tool_address(address.lower())
            except InvalidAddress:
                return error
            permissions = await self.permissions(caller)
            if self.catalog.find_tool(str(lowered)) is not None and permissions.permits(
                str(lowered)
            ):
                return InvalidAddress(
                    f"{LOWER_CASE} Did you mean {lowered}?", extra={"suggestions": [str(lowered)]}
                )
        return error

    async def permissions(self, caller: Caller) -> Permissions:
        """The caller's grants as the registry holds them now: read with this request's token
        when it came over HTTP, read here otherwise (stdio). Never from a cache."""
        if caller.grants is not None:
            return compile_permissions(caller, caller.grants)
        return await self._read(lambda: self._read_permissions(caller))

    async def _grant_revision(self) -> int:
        return await self._read(lambda: read_grant_revision(self.registry))

    async def _read(self, read: Callable[[], T]) -> T:
        return await short_read(self.registry, read)

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
        if await self._grant_revision() != permissions.revision:
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
            if (result := self._result(hit, schemas)) is not None
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

    def _result(self, hit: Hit, schemas: bool) -> dict[str, Any] | None:
        """The hit as a result; ``None`` when its tool is no longer in the view (retired since
        the index ranked it): a hit that disappeared is passed over, never an error of the
        whole search."""
        tool = self.catalog.find_tool(hit.document.address)
        if tool is None and hit.holders:  # its first holder left: the group is the others
            others = self._without_holders_gone(hit)
            if others is None:
                return None
            hit, tool = others, self.catalog.find_tool(others.document.address)
        if tool is None:
            return None
        result: dict[str, Any] = {
            "address": hit.address,
            "title": tool.listed_title,
            "summary": tool.summary,
            "status": self.catalog.status(tool),
            "contractDigest": tool.contract_digest,
        }
        if hit.holders:
            result["holders"] = list(hit.holders)
            result["holderCount"] = hit.holder_count
            answering = any(  # any holder the caller may call, not only those shown
                self.catalog.status_at(f"{holder}/{tool.role}/{tool.name}") == ANSWERING
                for holder in hit.every_holder
            )
            result["status"] = ANSWERING if answering else NOT_ANSWERING
        if schemas:
            result["inputSchema"] = tool.input_schema
        return result

    def _without_holders_gone(self, hit: Hit) -> Hit | None:
        """A collapsed hit less the holders whose tool is no longer in the view (a rare window:
        a machine retired since the index ranked it); ``None`` when none is left."""
        role, name = hit.document.role, hit.document.name
        live = [
            tool
            for holder in hit.every_holder
            if (tool := self.catalog.find_tool(f"{holder}/{role}/{name}")) is not None
        ]
        if not live:
            return None
        first = replace(hit.document, address=live[0].address, holder=live[0].holder)
        if len(live) == 1:
            return Hit(first.address, first, (), 1, hit.score)
        holders = tuple(tool.holder for tool in live)
        still = set(holders)
        listed = [holder for holder in hit.holders if holder in still]  # in the order it listed
        shown = shown_holders(holders, listed)
        return Hit(hit.address, first, shown, len(live), hit.score, holders)

    # --- describe --------------------------------------------------------------------------

    async def describe(
        self, caller: Caller, address: str, *, answer_bytes: int = LIMITS.answer_bytes
    ) -> dict[str, Any]:
        seen = _Seen()
        try:
            tool = await self._allowed(caller, address, seen=seen)
        except ToolNotGranted as error:  # a refusal is recorded; a description given is not
            self._record(caller, "describe", address, error.code, seen)
            raise
        definition = tool.definition
        contract: dict[str, Any] = {
            "address": tool.address,
            "title": tool.title,
            "description": tool.description,
            "inputSchema": tool.input_schema,
        }
        # as the outputSchema declares them: objects (a registry may hold a tool from before
        # the registrar refused other shapes, and a typed client refuses the whole answer)
        if isinstance(definition.get("outputSchema"), dict):
            contract["outputSchema"] = definition["outputSchema"]
        if tool.annotations is not None:
            contract["annotations"] = tool.annotations
        contract["confirmation"] = self.confirmations.policy(tool)
        contract["status"] = self.catalog.status(tool)
        contract["contractDigest"] = tool.contract_digest
        if wire_size(contract) > answer_bytes:
            raise ToolSchemaTooLarge()
        return contract

    # --- call ------------------------------------------------------------------------------

    async def _compile(self, tool: CatalogTool) -> CompiledSchema:
        """The tool's input schema compiled off the event loop (a schema at the bounds takes a
        fraction of a second) and held by contract digest; concurrent calls of a new contract
        wait for one compile."""
        digest = tool.contract_digest
        while (pending := self._compiling.get(digest)) is not None:
            await pending.wait()
            held = self._schemas.lookup(digest)
            if held is not None:
                return held
        self._compiling[digest] = done = anyio.Event()
        try:
            return await anyio.to_thread.run_sync(
                self._schemas.get, digest, lambda: self._compile_schema(tool.input_schema)
            )
        finally:
            del self._compiling[digest]
            done.set()

    @contextlib.contextmanager
    def _audited(self, caller: Caller, address: str, seen: _Seen) -> Iterator[None]:
        """Record the call's event however it ends: ``seen.outcome`` when it answered, the §9
        code it was refused with, ``internal_error``, or ``cancelled`` (the client went away,
        or the navigator stops)."""
        started = time.perf_counter()
        try:
            yield
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
            self._record(caller, "call", address, seen.outcome, seen, started)
            # a tool's address; never one the caller typed that names no tool it may call
            logger.info(
                "call %s by %s: %s in %.1f ms",
                seen.address or "of no tool it may call",
                caller.principal,
                seen.outcome,
                (time.perf_counter() - started) * 1000,
            )

    def _record(
        self,
        caller: Caller,
        action: str,
        address: object,
        outcome: str,
        seen: _Seen,
        started: float | None = None,
    ) -> None:
        """The event of a call or a refused describe, with the row that decided it."""
        if self.audit is None:
            return
        row = seen.row
        self.audit.event(
            caller.principal,
            action,
            address if isinstance(address, str) else "(not an address)",
            outcome,
            grant_id=None if row is None else row.id,
            grant_revision=None if row is None else row.revision,
            duration_ms=None if started is None else (time.perf_counter() - started) * 1000,
            args_digest=seen.args_digest,
        )

    def _confirmation(self, caller: Caller, tool: CatalogTool, outcome: str, seen: _Seen) -> None:
        if self.audit is not None:
            self._record(caller, "confirm", tool.address, outcome, seen)

    async def call(
        self,
        caller: Caller,
        address: str,
        arguments: Any,
        *,
        confirm: str | None,
        elicitor: Elicitor | None,
        progress: ProgressSink | None,
    ) -> CallToolResult:
        """SPEC §3's call, audited (ADR 0039) and admitted first under the caller's quota
        (ADR 0041)."""
        seen = _Seen()
        with self._audited(caller, address, seen):
            async with self.quotas.principal(caller):
                return await self._call(
                    caller,
                    address,
                    arguments,
                    seen,
                    confirm=confirm,
                    elicitor=elicitor,
                    progress=progress,
                )

    async def _call(
        self,
        caller: Caller,
        address: str,
        arguments: Any,
        seen: _Seen,
        *,
        confirm: str | None,
        elicitor: Elicitor | None,
        progress: ProgressSink | None,
    ) -> CallToolResult:
        with tracing.span("grants"):
            tool = await self._allowed(caller, address, seen=seen)  # 1. and 2.
        seen.address = tool.address
        tracing.annotate(address=tool.address)
        if not isinstance(arguments, Mapping):  # 3. the tool's own schema
            raise InvalidArguments("The arguments must be an object.", extra={"pointer": ""})
        arguments = dict(arguments)
        with tracing.span("validation"):
            if not is_unicode_text(arguments):  # no JSON text carries it on (ADR 0022)
                raise InvalidArguments(NOT_UNICODE, extra={"pointer": ""})
            compiled = self._schemas.lookup(tool.contract_digest) or await self._compile(tool)
            compiled.validate(arguments, given_names=WALKER_ARGUMENTS)
        endpoint = tool.endpoint
        if endpoint is None:  # 5. no node to forward to, ever: no one is asked to confirm
            raise NodeUnavailable()  # a call that cannot run (a --tools-file assignment)
        silent = self.catalog.silent_since(tool.machine)
        if silent is not None:  # known not answering: at once, unless a probe finds it back
            await self.connections.probes.admit(endpoint, silent)
        # computed at most once: for the audit event, and what binds it (a confirmation, token)
        known = seen.args_digest = None if self.audit is None else _digest_or_none(arguments)
        args_digest = functools.cache(lambda: known or _signable(arguments))
        with tracing.span("confirmation"):
            try:
                asked = await self.confirmations.settle(  # 4. a person's yes, if it may change
                    tool, caller, args_digest, confirm=confirm, elicitor=elicitor
                )
            except ConfirmationRequired as error:  # a token issued is asked; anything else refused
                self._confirmation(
                    caller, tool, "asked" if "confirm" in error.extra else "refused", seen
                )
                raise
            if asked or (
                confirm is not None and self.confirmations.policy(tool) != NO_CONFIRMATION
            ):
                self._confirmation(caller, tool, "answered", seen)
            if asked:  # minutes may have passed: the credential, 1. and 2. again
                tracing.annotate(confirmation="asked")
                if caller.renew is not None:  # revoked, rotated or expired: Unauthenticated
                    caller = await caller.renew()
                again = await self._allowed(caller, tool.address, fresh=True, seen=seen)
                if (again.contract_digest, again.endpoint) != (tool.contract_digest, endpoint):
                    raise ConfirmationRequired("The tool changed while the person was asked.")
        key = self.catalog.node_keys.get(tool.machine)
        token = None if key is None else _signer(key, caller, tool, args_digest())
        with tracing.span(
            "node hop", kind="client", address=tool.address, machine=tool.machine
        ) as hop:
            try:
                async with self.quotas.node(tool.machine, self.deadline_s) as waited:
                    result = await self.connections.call(
                        endpoint,
                        tool.name,
                        arguments,
                        token=token,
                        deadline_s=self.deadline_s - waited,  # a turn waited counts
                        progress=progress,
                    )
            except NavigatorError as error:
                tracing.failed(hop, error.code)
                raise
        seen.outcome = "tool_error" if result.is_error else "ok"
        return result


@dataclass(slots=True)
class _Seen:
    """What a call's audit event takes from the call as it goes: the grant row that decided (from
    the read the call used), the arguments' digest, and how it ended."""

    row: GrantRecord | None = None
    args_digest: str | None = None
    outcome: str = "ok"
    #: The tool's address once it is found and allowed: what the log may name (SPEC §10).
    address: str | None = None


def _digest_or_none(arguments: dict[str, Any]) -> str | None:
    try:
        return arguments_digest(arguments)
    except ValueError:  # beyond I-JSON: no digest (the call is refused only where one binds)
        return None


_NO_HOLDER = "No holder you may call has it: search for the tool by what it does."


_NEAR = {
    UnknownTool: "No tool you may call is at that address.",
    ToolNotGranted: "No grant allows that address.",
}


def _near(kind: type[UnknownTool | ToolNotGranted], suggestions: list[str]) -> NavigatorError:
    """``unknown_tool`` or ``tool_not_granted`` naming the near addresses the caller may call
    (a function of the address asked and the grants alone: nothing of what is there), or
    search when there are none."""
    if not suggestions:
        return kind()
    return kind(
        f"{_NEAR[kind]} Near it you may call: {', '.join(suggestions)} (describe one), or "
        "search for the tool by what it does.",
        extra={"suggestions": suggestions},
    )


def _signable(arguments: dict[str, Any]) -> str:
    """The digest a confirmation and a call token bind (RFC 8785), computed once per call; an
    integer past 2^53 - 1 has none, and such arguments cannot be confirmed or signed."""
    try:
        return arguments_digest(arguments)
    except ValueError:
        raise InvalidArguments(_NOT_CANONICAL, extra={"pointer": ""}) from None


def _signer(key: bytes, caller: Caller, tool: CatalogTool, args_digest: str) -> Callable[[], str]:
    """A fresh call token per attempt, for exactly this tool on this machine with these arguments.

    Servers registered by URL have no key and get no token: they cannot check one (SPEC §6).
    """

    def token() -> str:
        return sign_call_token(
            key,
            principal=caller.principal,
            address=tool.address,
            machine=tool.machine,
            role=tool.endpoint_role,
            tool=tool.name,
            arguments_digest=args_digest,
        )

    return token
