"""SPEC §3's call, in its order exactly: the tool exists, the grants allow it now, the arguments
satisfy the tool's own schema, confirmation when the tool changes things, then the owning node
under a deadline, with a call token that binds this tool, machine and arguments (SPEC §6).

Each call is admitted first under the caller's quota (ADR 0041) and audited however it ends
(ADR 0039, ``navigator.walker.trail``). What the node answered is relayed as it is
(``NodeAnswer``). After a person was asked, the credential is checked again through
``Caller.renew``, which the caller's authentication set: the walker never calls back up into it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import anyio

from mesh import tracing
from mesh.calltokens import sign_call_token
from mesh.digests import arguments_digest
from navigator.access.auditing import AuditLog
from navigator.access.grants import Caller
from navigator.access.quotas import Quotas
from navigator.catalog.records import CatalogTool
from navigator.catalog.view import Catalog
from navigator.errors import (
    NO_ENDPOINT_MESSAGE,
    ConfirmationRequired,
    ContractChanged,
    InvalidArguments,
    NavigatorError,
    NodeUnavailable,
)
from navigator.nodes.connections import NodeAnswer, NodeConnections, ProgressSink
from navigator.validation import NOT_UNICODE, CompiledSchema, SchemaCache, is_unicode_text
from navigator.walker.allowing import GrantChecks
from navigator.walker.confirmation import NONE as NO_CONFIRMATION
from navigator.walker.confirmation import AskingThePerson, Confirmations, Elicitor
from navigator.walker.trail import Seen, audited, record

__all__ = ["SCHEMA_CACHE_WEIGHT", "WALKER_ARGUMENTS", "Calls"]

#: Arguments the confirmation and the call token cannot bind: RFC 8785 writes I-JSON only.
_NOT_CANONICAL = (
    "The arguments hold an integer beyond 2^53 - 1, which this call's confirmation or call token "
    "cannot bind (RFC 8785)."
)

#: The walker tools' argument names (``navigator.mcp.tools`` declares these and no others): a member
#: of these names where a schema does not take it is pointed at (an agent that puts ``confirm``
#: in ``args``, or ``limit`` in ``describe``), as a name the caller was given (ADR 0035).
WALKER_ARGUMENTS = frozenset(
    {"address", "cursor", "query", "limit", "within", "schemas", "args", "confirm", "contract"}
)

#: What the compiled input schemas may hold, in ``CompiledSchema.weight`` (about bytes): tens of
#: thousands of ordinary contracts, or a few dozen at the validator's bounds.
SCHEMA_CACHE_WEIGHT = 256 << 20


class Calls:
    """The call path of one navigator: the compiled input schemas it holds by contract digest,
    and each call from the grants check to the node's answer."""

    def __init__(
        self,
        catalog: Catalog,
        connections: NodeConnections,
        grants: GrantChecks,
        confirmations: Confirmations,
        *,
        quotas: Quotas,
        audit: AuditLog | None,
        deadline_s: float,
        compile_schema: Callable[[Any], CompiledSchema],
    ) -> None:
        self.catalog = catalog
        self.connections = connections
        self.grants = grants
        self.confirmations = confirmations
        self.quotas = quotas
        self.audit = audit
        self.deadline_s = deadline_s
        self._schemas: SchemaCache[str] = SchemaCache(SCHEMA_CACHE_WEIGHT)
        self._compiling: dict[str, anyio.Event] = {}
        self._compile_schema = compile_schema

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
        """SPEC §3's call, audited (ADR 0039) and admitted first under the caller's quota
        (ADR 0041). ``contract``, when given, is the digest the caller read: the call goes on
        only while it is the approved contract's (``contract_changed``)."""
        seen = Seen()
        with audited(self.audit, caller, address, seen):
            async with self.quotas.principal(caller):
                return await self._call(
                    caller,
                    address,
                    arguments,
                    seen,
                    confirm=confirm,
                    elicitor=elicitor,
                    progress=progress,
                    contract=contract,
                )

    async def _call(
        self,
        caller: Caller,
        address: str,
        arguments: Any,
        seen: Seen,
        *,
        confirm: str | None,
        elicitor: Elicitor | None,
        progress: ProgressSink | None,
        contract: str | None,
    ) -> NodeAnswer:
        with tracing.span("grants"):
            tool = await self.grants.allowed(caller, address, seen=seen)  # 1. and 2.
        if contract is not None and contract != tool.contract_digest:  # 2., after the grants
            raise ContractChanged(extra={"contractDigest": tool.contract_digest})
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
            raise NodeUnavailable(NO_ENDPOINT_MESSAGE)  # a --tools-file assignment's, ADR 0057
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
            except AskingThePerson:  # the question went back to the client with the call
                self._confirmation(caller, tool, "asked", seen)
                raise
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
                again = await self.grants.allowed(caller, tool.address, fresh=True, seen=seen)
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

    def _confirmation(self, caller: Caller, tool: CatalogTool, outcome: str, seen: Seen) -> None:
        if self.audit is not None:
            record(self.audit, caller, "confirm", tool.address, outcome, seen)


def _digest_or_none(arguments: dict[str, Any]) -> str | None:
    try:
        return arguments_digest(arguments)
    except ValueError:  # beyond I-JSON: no digest (the call is refused only where one binds)
        return None


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
