"""Who is asked to confirm a call, and what a yes (or a confirm token) is for."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import mcp_types as mt
import pytest
from fastmcp import FastMCP
from fastmcp.server.elicitation import handle_elicit_accept, parse_elicit_response_type

from navigator.access.grants import Caller
from navigator.access.tokens import hash_token, mint_token
from navigator.catalog.registrar import AssignmentSpec
from navigator.errors import (
    ConfirmationRequired,
    NodeUnavailable,
    ToolNotGranted,
    Unauthenticated,
    UnknownTool,
)
from navigator.mcp.elicitation import elicitor_for
from navigator.services import Services
from navigator.walker.confirmation import Question
from registry import AccessStore
from registry.audit import AuditFilter, AuditStore
from tests.harness import serving
from tests.navigator.inprocess import navigator_at, walker_client


def _context(elicitation: mt.ElicitationCapability | None, *, modern: bool) -> Any:
    capabilities = mt.ClientCapabilities(elicitation=elicitation)
    return SimpleNamespace(
        session=SimpleNamespace(client_capabilities=capabilities),
        _is_modern_protocol=lambda: modern,
    )


@pytest.mark.parametrize("modern", [False, True])
@pytest.mark.parametrize(
    ("declared", "asked"),
    [
        (None, False),
        (mt.ElicitationCapability(), True),  # no mode: forms, from before modes
        (mt.ElicitationCapability(form=mt.FormElicitationCapability()), True),
        (
            mt.ElicitationCapability(
                form=mt.FormElicitationCapability(), url=mt.UrlElicitationCapability()
            ),
            True,
        ),
        # a client that can only open a URL is not sent a form it would never answer: it gets
        # a confirm token instead
        (mt.ElicitationCapability(url=mt.UrlElicitationCapability()), False),
    ],
)
def test_only_a_client_that_shows_forms_is_asked(
    declared: mt.ElicitationCapability | None, asked: bool, modern: bool
) -> None:
    assert (elicitor_for(_context(declared, modern=modern)) is not None) is asked


@pytest.mark.parametrize(("answer", "allowed"), [(True, True), ("yes", False), (1, False)])
async def test_only_a_strict_yes_allows_a_legacy_call(answer: object, allowed: bool) -> None:
    """The answer read as FastMCP reads it for the form asked: pydantic's lax bool took "yes",
    1 or "on" for true."""

    async def elicit(message: str, response_type: Any) -> Any:
        config = parse_elicit_response_type(response_type)
        (field,) = config.schema["properties"]
        return handle_elicit_accept(config, {field: answer})

    capabilities = mt.ElicitationCapability(form=mt.FormElicitationCapability())
    context = _context(capabilities, modern=False)
    context.elicit = elicit
    elicitor = elicitor_for(context)
    assert elicitor is not None
    assert await elicitor.ask(Question("Run m1/r/wipe?", "Allow?"), "binding") is allowed


@asynccontextmanager
async def _wiping(tmp_path: Path) -> AsyncIterator[tuple[Services, str, list[str]]]:
    """A running navigator with ``m1/r/wipe`` (it changes things: a call is confirmed) on a real
    node; its endpoint, and the targets the node has wiped."""
    ran: list[str] = []
    node = FastMCP("node")

    @node.tool
    def wipe(target: str) -> str:
        ran.append(target)
        return "wiped"

    async with (
        serving(node.http_app(path="/mcp"), lifespan="on") as port,
        navigator_at(tmp_path) as services,
    ):
        url = f"http://127.0.0.1:{port}/mcp"
        spec = AssignmentSpec(role="r", module="x", tools=[WIPE], endpoint=url)
        await services.registrar.put_assignment("m1", spec)
        yield services, url, ran


WIPE = {"name": "wipe", "inputSchema": {"type": "object"}}
NOBODY = "http://127.0.0.1:9/mcp"  # calls get as far as forwarding, and stop there


@pytest.mark.parametrize("meanwhile", ["grant revoked", "tool retired", "contract changed"])
async def test_what_changes_while_a_person_is_asked_holds_for_the_call(
    tmp_path: Path, meanwhile: str
) -> None:
    """SPEC §3 reads the grants again for every call and calls only live tools. A legacy-era
    question holds the call for as long as the person takes; the grants and the tool were read
    before it, and a yes ran the call on them: a grant revoked, or the tool retired, while the
    person was asked did not stop it (a review). They are read again after a yes."""
    async with _wiping(tmp_path) as (services, url, ran):
        with services.registry.transaction() as session:
            grant = AccessStore(session).grant("carol", "m1/r/*", effect="allow").id

        class Person:
            async def ask(self, question: Question, binding: str) -> bool:
                if meanwhile == "grant revoked":
                    with services.registry.transaction() as session:
                        AccessStore(session).revoke_grant(grant)
                elif meanwhile == "tool retired":
                    await services.registrar.retire("m1", "r")
                else:
                    changed = {**WIPE, "description": "Now wipes the whole disk."}
                    spec = AssignmentSpec(role="r", module="x", tools=[changed], endpoint=url)
                    # an operator's own list: approved as it registers (SPEC §14)
                    await services.registrar.put_assignment("m1", spec, approves=True)
                return True

        expected = {
            "grant revoked": ToolNotGranted,
            "tool retired": UnknownTool,
            "contract changed": ConfirmationRequired,
        }[meanwhile]
        with pytest.raises(expected):
            await services.navigator.call(
                Caller("carol", frozenset()), "m1/r/wipe", {"target": "x"}, confirm=None,
                elicitor=Person(), progress=None,
            )  # fmt: skip
    assert ran == []


@pytest.mark.parametrize("meanwhile", ["revoked", "rotated", "expired"])
async def test_a_credential_that_dies_while_a_person_is_asked_runs_nothing(
    tmp_path: Path, meanwhile: str
) -> None:
    """A legacy-era question holds the call for up to 120 s; the token was checked before it.
    After a yes the grants were read again by the principal's name alone, so a principal revoked,
    a token rotated away or expired while the person was asked still ran its call (a review).
    The credential is checked again with them."""
    async with _wiping(tmp_path) as (services, _url, ran):
        token = mint_token()
        with services.registry.transaction() as session:
            AccessStore(session).add_principal(
                "carol",
                scopes=[],
                token_hash=hash_token(token),
                expires_at=datetime.now(UTC) + timedelta(seconds=1),
            )
            AccessStore(session).grant("carol", "m1/r/*", effect="allow")
        caller = await services.authenticator.verify(token)

        class Person:
            async def ask(self, question: Question, binding: str) -> bool:
                with services.registry.transaction() as session:
                    if meanwhile == "revoked":
                        AccessStore(session).revoke_principal("carol")
                    elif meanwhile == "rotated":
                        AccessStore(session).rotate_principal("carol", token_hash="0" * 64)
                if meanwhile == "expired":
                    await anyio.sleep(1.1)
                return True

        with pytest.raises(Unauthenticated):
            await services.navigator.call(
                caller, "m1/r/wipe", {"target": "x"}, confirm=None, elicitor=Person(),
                progress=None,
            )  # fmt: skip
    assert ran == []


async def test_a_confirm_token_is_for_the_contract_it_was_given_for(tmp_path: Path) -> None:
    """A token issued for a call of one contract ran the call of another put at the same address
    within its 120 s (a review: "Now wipes the whole disk."); it is bound to the contract too."""
    async with navigator_at(tmp_path) as services:
        tool = {"name": "wipe", "inputSchema": {"type": "object"}}
        nobody = "http://127.0.0.1:9/mcp"  # calls get as far as forwarding, and stop there

        async def register(description: str) -> None:
            spec = AssignmentSpec(
                role="r", module="x", tools=[{**tool, "description": description}], endpoint=nobody
            )
            await services.registrar.put_assignment("m1", spec, approves=True)  # an operator's

        async def call(confirm: str | None) -> None:
            await services.navigator.call(
                Caller("carol", frozenset()), "m1/r/wipe", {}, confirm=confirm, elicitor=None,
                progress=None,
            )  # fmt: skip

        await register("Wipes a scratch folder.")
        with services.registry.transaction() as session:
            AccessStore(session).grant("carol", "m1/r/*", effect="allow")
        with pytest.raises(ConfirmationRequired) as asked:
            await call(None)
        await register("Now wipes the whole disk.")
        with pytest.raises(ConfirmationRequired):
            await call(asked.value.extra["confirm"])
        with pytest.raises(ConfirmationRequired) as again:
            await call(None)
        with pytest.raises(NodeUnavailable):  # confirmed for this contract: on to the node
            await call(again.value.extra["confirm"])


def test_a_request_state_redeems_once_until_it_expires_and_is_then_forgotten() -> None:
    """Redeemed nonces were pruned by rebuilding the whole table on every redemption once more
    than 4,096 were live: quadratic in the live nonces, which a client grows at two requests a
    nonce. They are forgotten in expiry order now; a state still redeems once, for any name."""
    from navigator.mcp import elicitation

    clock = [1_000_000.0]
    signer = elicitation._StateSigner(clock=lambda: clock[0])
    states = [signer.sign(f"p{i}\nlone\ud800") for i in range(40_000)]
    started = time.monotonic()
    assert all(signer.redeem(s, f"p{i}\nlone\ud800") for i, s in enumerate(states))
    assert time.monotonic() - started < 20  # a runaway: ~0.5 s, and ~65 s when quadratic
    assert not signer.redeem(states[0], "p0\nlone\ud800")  # once
    assert len(signer._used) == 40_000
    clock[0] += elicitation.LIMITS.confirm_ttl_s + 1
    assert not signer.redeem(states[1], "p1\nlone\ud800")  # expired
    assert len(signer._used) == 0  # and forgotten


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_person_is_asked_in_words_not_in_code(tmp_path: Path, mode: str) -> None:
    """Issue 29: the form a client showed its user was titled ``_Allow`` and described by a
    Python docstring, and its question said a tool with no annotations "may change things". It is
    titled for the call now, and says why a yes is needed: ``wipe`` declares no read-only hint."""
    asked: list[tuple[str, dict[str, Any]]] = []

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append((message, params.requested_schema))
        return mt.ElicitResult(action="decline")

    async with _wiping(tmp_path) as (services, _url, ran):
        with services.registry.transaction() as session:
            AccessStore(session).grant("carol", "m1/r/*", effect="allow")
        carol = Caller("carol", frozenset())
        async with walker_client(services, carol, elicitation_handler=handler, mode=mode) as client:
            answer = await client.call_tool_mcp("call", {"address": "m1/r/wipe", "args": {}})
    assert answer.is_error and ran == []
    ((message, schema),) = asked
    # the sessionless era's requestedSchema carries no title or description on the wire (the
    # 2026-07-28 RequestedSchema): its form is the message and the one field
    if mode == "legacy" or "title" in schema:
        assert schema["title"] == "Run m1/r/wipe?"
        assert schema["description"] == message
    assert (
        message == "carol asks to run m1/r/wipe, which declares no read-only hint. Allow this call?"
    )
    assert schema["properties"]["allow"]["type"] == "boolean"
    assert "_Allow" not in json.dumps(schema) and "era" not in json.dumps(schema)


async def test_a_confirm_token_says_why_the_tool_needs_one(tmp_path: Path) -> None:
    """A tool with no annotations was said to change things; it declares no read-only hint,
    which is what the answer says now, beside a tool that declares it is not read-only."""
    async with navigator_at(tmp_path) as services:
        writes = {**WIPE, "name": "write", "annotations": {"readOnlyHint": False}}
        spec = AssignmentSpec(role="r", module="x", tools=[WIPE, writes], endpoint=NOBODY)
        await services.registrar.put_assignment("m1", spec)
        with services.registry.transaction() as session:
            AccessStore(session).grant("carol", "m1/r/*", effect="allow")
        reasons = []
        for name in ("wipe", "write"):
            with pytest.raises(ConfirmationRequired) as asked:
                await services.navigator.call(
                    Caller("carol", frozenset()), f"m1/r/{name}", {}, confirm=None,
                    elicitor=None, progress=None,
                )  # fmt: skip
            assert asked.value.extra["confirm"]
            reasons.append(asked.value.message)
    assert reasons[0].startswith("This tool declares no read-only hint, so a call needs")
    assert reasons[1].startswith("This tool declares it may change things (it is not read-only)")
    assert all("confirm token" in reason for reason in reasons)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_question_answered_through_elicitation_is_no_error_in_the_audit_trail(
    tmp_path: Path, mode: str
) -> None:
    """The sessionless era's ``input_required`` round was recorded as a call ending in
    ``internal_error`` beside the answered confirmation and the call that ran: the round is the
    call asking the person, recorded as ``asked``."""

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        return mt.ElicitResult(action="accept", content={"allow": True})

    async with _wiping(tmp_path) as (services, _url, ran):
        with services.registry.transaction() as session:
            AccessStore(session).grant("carol", "m1/r/*", effect="allow")
        carol = Caller("carol", frozenset())
        async with walker_client(services, carol, elicitation_handler=handler, mode=mode) as client:
            answer = await client.call_tool_mcp(
                "call", {"address": "m1/r/wipe", "args": {"target": "t"}}
            )
        await services.audit.flush(refusals=True)
        with services.registry.read_transaction() as session:
            events = AuditStore(session).events(AuditFilter(principal="carol"))
    assert not answer.is_error and ran == ["t"]
    said = sorted((event.entry.action, event.entry.outcome) for event in events)
    rounds = [("call", "asked"), ("confirm", "asked")] if mode == "auto" else []
    assert said == sorted([("call", "ok"), ("confirm", "answered"), *rounds])
