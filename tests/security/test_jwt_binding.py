"""Issue 35 (1, 8, 17, 18, 19, 2): a JWT's own ``scope`` claim was taken as the caller's
authority. A subject with no principal row, a revoked principal, or one registered with
``mesh:use`` alone got the admin API, enrolled a machine through the node API and saw the
console's operator pages, whenever its token said ``mesh:admin`` or ``mesh:node``; its quota
did not apply; each unregistered subject had a session budget of its own; and its subject
reached the logs raw, or failed the navigator (HTTP 500) with an ``exp`` past the calendar or a
lone surrogate. A JWT proves a name; the principal row decides (SPEC §7, ADR 0044).

Every token here is signed by a real issuer's key and verified by the navigator against its
JWKS, fetched over HTTP (``tests/jwks_issuer.py``), on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update

from meshnav.logs import configure_logging
from navigator.console.session import COOKIE
from navigator.errors import ToolNotGranted, Unauthenticated
from navigator.walker.allowing import GrantChecks
from registry import AccessStore, Conflict, Quota, Registry
from registry.models import Machine, Principal, utcnow
from tests.jwks_issuer import JwksIssuer, jwks_issuer
from tests.navigator.access.test_auth import INITIALIZE
from tests.navigator.console.test_console import Console, console_app
from tests.registry import conftest as registry_fixtures

#: A registry on SQLite, then on the session's PostgreSQL (``tests/registry/conftest.py``).
database_url = registry_fixtures.database_url
registry = registry_fixtures.registry

AUDIENCE = "meshnav"
EVERY_SCOPE = "mesh:admin mesh:node mesh:use mesh:ops"


@pytest.fixture(scope="module")
def issuer() -> Iterator[JwksIssuer]:
    with jwks_issuer() as running:
        yield running


def _people(session: Any) -> None:
    """Beside the console's alice, nobody and root (stored tokens): principals JWTs name."""
    store = AccessStore(session)
    store.add_principal("operator", scopes=["mesh:admin", "mesh:use"], token_hash="op" * 32)
    store.add_principal(
        "user", scopes=["mesh:use"], token_hash="us" * 32, quota=Quota(rate_per_minute=3)
    )
    store.add_principal("gone", scopes=EVERY_SCOPE.split(), token_hash="go" * 32)
    store.revoke_principal("gone")
    store.add_principal("lapsed", scopes=EVERY_SCOPE.split(), token_hash="la" * 32)
    session.execute(
        update(Principal)
        .where(Principal.name == "lapsed")
        .values(expires_at=utcnow() - timedelta(seconds=1))
    )
    store.add_principal("node1", scopes=["mesh:node"], token_hash="no" * 32)
    store.grant("user", "db2/*/*", effect="allow", scopes=["mesh:use"])
    store.grant("user", "db1/*/*", effect="allow", scopes=["mesh:ops"])
    store.grant("*", "db2/*/*", effect="allow", scopes=["mesh:use"])


@asynccontextmanager
async def navigator(
    tmp_path: Path, database_url: str, issuer: JwksIssuer, **settings: Any
) -> AsyncIterator[Console]:
    """The console's app (which is the whole navigator) trusting ``issuer``, with ``_people``."""
    async with console_app(
        tmp_path,
        database_url=database_url,
        jwt_jwks_uri=issuer.jwks_uri,
        jwt_issuer=issuer.issuer,
        jwt_audience=AUDIENCE,
        **settings,
    ) as console:
        await console.services.transact(_people)
        yield console


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


# --- item 1: the row decides, on every route ------------------------------------------------


@pytest.mark.parametrize(
    ("subject", "scopes"),
    [
        ("operator", {"mesh:admin", "mesh:use"}),  # the token's, within the row's
        ("user", {"mesh:use"}),
        ("node1", {"mesh:node"}),
        ("mallory", {"mesh:use"}),  # no row: mesh:use at most
        ("gone", None),  # revoked: unauthenticated, whatever the token says
        ("lapsed", None),  # expired: likewise
    ],
)
async def test_a_jwt_holds_what_its_principal_row_holds(
    tmp_path: Path,
    database_url: str,
    issuer: JwksIssuer,
    subject: str,
    scopes: set[str] | None,
) -> None:
    async with navigator(tmp_path, database_url, issuer) as console:
        verify = console.services.authenticator.verify
        token = issuer.mint(AUDIENCE, subject, scope=EVERY_SCOPE)
        if scopes is None:
            with pytest.raises(Unauthenticated):
                await verify(token)
            return
        caller = await verify(token)
    assert caller.principal == subject and caller.scopes == scopes
    assert caller.registered == (subject != "mallory")
    if subject == "mallory":  # no grant, not even the ``*`` row's
        assert caller.grants is not None and caller.grants.rows == ()


@pytest.mark.parametrize(
    ("subject", "status"),
    [("operator", 200), ("user", 403), ("mallory", 403), ("gone", 401), ("lapsed", 401)],
)
async def test_the_admin_api_is_the_rows_not_the_tokens(
    tmp_path: Path, database_url: str, issuer: JwksIssuer, subject: str, status: int
) -> None:
    """A token saying mesh:admin made its subject a mesh:admin principal with an allow */*/*."""
    token = issuer.mint(AUDIENCE, subject, scope=EVERY_SCOPE)
    async with navigator(tmp_path, database_url, issuer) as console, console.client() as client:
        listed = await client.get("/api/v1/principals", headers=_bearer(token))
        made = await client.post(
            "/api/v1/principals",
            headers=_bearer(token),
            json={"name": f"{subject}-admin", "scopes": ["mesh:admin"]},
        )
        granted = await client.post(
            "/api/v1/grants",
            headers=_bearer(token),
            json={"principal": subject, "target": "*/*/*", "effect": "allow", "force": True},
        )
        names = await console.services.read(
            lambda session: set(session.execute(select(Principal.name)).scalars())
        )
    assert listed.status_code == status, listed.text
    if status != 200:
        for answer in (listed, made, granted):
            assert answer.status_code == status, answer.text
            assert answer.json()["error"] == (
                "unauthenticated" if status == 401 else "tool_not_granted"
            )
        assert f"{subject}-admin" not in names


@pytest.mark.parametrize(
    ("subject", "status"), [("node1", 200), ("user", 403), ("mallory", 403), ("gone", 401)]
)
async def test_the_node_api_is_the_rows_not_the_tokens(
    tmp_path: Path, database_url: str, issuer: JwksIssuer, subject: str, status: int
) -> None:
    """A token saying mesh:node enrolled a machine, was given its call-token key, and bound its
    subject to it."""
    token = issuer.mint(AUDIENCE, subject, scope=EVERY_SCOPE)
    body = {
        "machine": "edge1",
        "advertise": "http://127.0.0.1:9",
        "heartbeatS": 5,
        "assignments": [],
    }
    async with navigator(tmp_path, database_url, issuer) as console, console.client() as client:
        enrolled = await client.post("/api/v1/nodes/register", headers=_bearer(token), json=body)
        beat = await client.post("/api/v1/nodes/edge1/heartbeat", headers=_bearer(token))

        def bound(session: Any) -> tuple[list[str], list[str | None]]:
            machines = list(session.execute(select(Machine.name)).scalars())
            rows = select(Principal.machine).where(Principal.name == subject)
            return machines, list(session.execute(rows).scalars())

        machines, binding = await console.services.read(bound)
    assert enrolled.status_code == status, enrolled.text
    if status == 200:
        assert enrolled.json()["key"] and binding == ["edge1"]
        return
    assert "key" not in enrolled.json() and beat.status_code == status
    assert "edge1" not in machines and binding in ([], [None])


def test_binding_a_machine_reads_the_principals_row(registry: Registry) -> None:
    """The registry's own check, whatever a caller was let in with: a revoked principal, or one
    without mesh:node, is bound to no machine."""
    with registry.transaction() as session:
        _people(session)
    for name in ("gone", "user", "lapsed"):
        with pytest.raises(Conflict), registry.transaction() as session:
            AccessStore(session).bind_machine(name, "edge1")
    with registry.transaction() as session:
        AccessStore(session).bind_machine("node1", "edge1")
        machine = session.execute(select(Principal.machine).where(Principal.name == "node1"))
        assert machine.scalar_one() == "edge1"


async def _signed_in(client: httpx.AsyncClient, token: str) -> int:
    answer = await client.post("/console/sign-in", data={"token": token, "next": "/"})
    return answer.status_code


@pytest.mark.parametrize(
    ("subject", "grants_page"),
    [("operator", 200), ("user", 403), ("mallory", 403), ("gone", None), ("lapsed", None)],
)
async def test_the_consoles_operator_flag_is_the_rows(
    tmp_path: Path,
    database_url: str,
    issuer: JwksIssuer,
    subject: str,
    grants_page: int | None,
) -> None:
    token = issuer.mint(AUDIENCE, subject, scope=EVERY_SCOPE)
    async with navigator(tmp_path, database_url, issuer) as console, console.client() as client:
        signed = await _signed_in(client, token)
        if grants_page is None:
            assert signed == 401 and COOKIE not in client.cookies
            return
        assert signed == 303
        page = await client.get("/console/grants")
    assert page.status_code == grants_page, page.text[:300]


async def test_a_console_session_loses_what_the_row_loses(
    tmp_path: Path, database_url: str, issuer: JwksIssuer
) -> None:
    """The session keeps the token's scopes as it signed in; each page reads the row again."""
    token = issuer.mint(AUDIENCE, "operator", scope=EVERY_SCOPE)
    async with navigator(tmp_path, database_url, issuer) as console, console.client() as client:
        assert await _signed_in(client, token) == 303
        before = await client.get("/console/grants")
        await console.services.transact(
            lambda session: session.execute(
                update(Principal).where(Principal.name == "operator").values(scopes=["mesh:use"])
            )
        )
        after = await client.get("/console/grants")
    assert before.status_code == 200 and after.status_code == 403


async def test_grants_read_again_after_a_wait_give_an_unregistered_subject_none(
    tmp_path: Path, database_url: str, issuer: JwksIssuer
) -> None:
    """A call that waited on a person reads its grants again: by name, that read took the ``*``
    row for a subject no principal stands behind."""
    async with navigator(tmp_path, database_url, issuer) as console:
        services = console.services
        stranger = await services.authenticator.verify(
            issuer.mint(AUDIENCE, "mallory", scope="mesh:use")
        )
        checks = GrantChecks(services.registry, services.catalog)
        with pytest.raises(ToolNotGranted):
            await checks.allowed(stranger, "db2/node/uptime", fresh=True)
        user = await services.authenticator.verify(issuer.mint(AUDIENCE, "user", scope="mesh:use"))
        assert (await checks.allowed(user, "db2/node/uptime", fresh=True)).machine == "db2"


# --- MCP: scopes and quotas (items 1 and 8) --------------------------------------------------


async def _calls(client: httpx.AsyncClient, token: str, count: int) -> list[str]:
    """``count`` walker calls in one legacy-era session: each answer's error code, or ``ok``."""
    headers = {
        **_bearer(token),
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    opened = await client.post("/mcp", headers=headers, json=INITIALIZE)
    assert opened.status_code == 200, opened.text
    headers["mcp-session-id"] = opened.headers["mcp-session-id"]
    codes = []
    for number in range(count):
        call = {
            "jsonrpc": "2.0",
            "id": number + 1,
            "method": "tools/call",
            "params": {"name": "call", "arguments": {"address": "db1/sqlite/list_tables"}},
        }
        answer = await client.post("/mcp", headers=headers, json=call)
        if answer.headers["content-type"].startswith("application/json"):
            result = answer.json()["result"]  # a refusal answered before the MCP app (ADR 0048)
        else:
            data = next(line for line in answer.text.splitlines() if line.startswith("data:"))
            result = json.loads(data.removeprefix("data:"))["result"]
        codes.append(result["structuredContent"]["error"] if result["isError"] else "ok")
    return codes


async def test_a_grant_for_a_scope_the_row_lacks_does_not_apply(
    tmp_path: Path, database_url: str, issuer: JwksIssuer
) -> None:
    """user's db1 row needs mesh:ops, which user's row does not hold: a token claiming it does not
    make the row apply. Held by the row, it does."""
    token = issuer.mint(AUDIENCE, "user", scope=EVERY_SCOPE)
    async with navigator(tmp_path, database_url, issuer) as console, console.client() as client:
        [claimed] = await _calls(client, token, 1)
        await console.services.transact(
            lambda session: session.execute(
                update(Principal)
                .where(Principal.name == "user")
                .values(scopes=["mesh:use", "mesh:ops"])
            )
        )
        [held] = await _calls(client, token, 1)
    assert claimed == "tool_not_granted" and held != "tool_not_granted"


async def test_a_principals_quota_holds_for_its_jwt(
    tmp_path: Path, database_url: str, issuer: JwksIssuer
) -> None:
    """user may make 3 calls a minute: with a JWT, 10 of 10 went through."""
    async with navigator(tmp_path, database_url, issuer) as console, console.client() as client:
        codes = await _calls(client, issuer.mint(AUDIENCE, "user", scope="mesh:use"), 5)
    assert "rate_limited" not in codes[:3] and codes[3:] == ["rate_limited"] * 2


# --- item 17: unregistered subjects share one session budget ---------------------------------


async def test_unregistered_subjects_share_one_session_budget(
    tmp_path: Path, database_url: str, issuer: JwksIssuer
) -> None:
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }

    async def opened(client: httpx.AsyncClient, subject: str) -> tuple[str, str]:
        token = issuer.mint(AUDIENCE, subject, scope="mesh:use")
        answer = await client.post("/mcp", headers={**headers, **_bearer(token)}, json=INITIALIZE)
        assert answer.status_code == 200, answer.text
        return token, answer.headers["mcp-session-id"]

    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    async with (
        navigator(tmp_path, database_url, issuer, unregistered_sessions=2) as console,
        console.client() as client,
    ):
        held = [await opened(client, f"stranger{n}") for n in range(3)]
        mine = await opened(client, "user")  # a registered principal's budget is its own
        answers = [
            await client.post(
                "/mcp", headers={**headers, **_bearer(token), "mcp-session-id": session}, json=ping
            )
            for token, session in [*held, mine]
        ]
    assert [a.status_code for a in answers] == [404, 200, 200, 200], [a.text for a in answers]


# --- items 19 and 2: what a token may say, and what it may not --------------------------------


@pytest.mark.parametrize(
    ("subject", "claims", "typ"),
    [
        ("carol", {"exp": 1e300}, "at+jwt"),
        ("carol", {"exp": 10**12}, "at+jwt"),
        ("carol", {"exp": float("inf")}, "at+jwt"),
        ("carol\ud800", {}, "at+jwt"),  # a lone surrogate
        ("carol\n2026-12-05 INFO meshnav.navigator forged", {}, "at+jwt"),
        ("carol\x1b[2J", {}, "at+jwt"),
        ("c" * 129, {}, "at+jwt"),  # longer than a principal's name
        ("carol", {}, None),  # an ID token: no typ
        ("carol", {}, "JWT"),
        ("carol", {}, "id_token+jwt"),
    ],
)
async def test_a_token_that_is_no_access_token_or_names_no_principal_is_a_401(
    tmp_path: Path,
    database_url: str,
    issuer: JwksIssuer,
    subject: str,
    claims: dict[str, Any],
    typ: str | None,
) -> None:
    token = issuer.mint(AUDIENCE, subject, scope="mesh:use", typ=typ, **claims)
    mcp_headers = {**_bearer(token), "accept": "application/json, text/event-stream"}
    async with navigator(tmp_path, database_url, issuer) as console, console.client() as client:
        answers = [
            await client.get("/api/v1/mesh", headers=_bearer(token)),
            await client.post("/mcp", headers=mcp_headers, json=INITIALIZE),
        ]
        signed = await _signed_in(client, token)
    for answer in answers:
        assert answer.status_code == 401, answer.text
        assert answer.json() == {
            "error": "unauthenticated",
            "status": 401,
            "message": "Missing or invalid credentials.",
        }
    assert signed == 401


@pytest.mark.parametrize("allowed", [False, True])
@pytest.mark.parametrize("typ", ["at+jwt", "application/at+jwt", "AT+JWT", None, "JWT"])
async def test_untyped_tokens_are_taken_only_when_allowed(
    tmp_path: Path, database_url: str, issuer: JwksIssuer, typ: str | None, allowed: bool
) -> None:
    """RFC 9068: an access token says so (``typ``); ``MESHNAV_JWT_ALLOW_UNTYPED`` takes one of an
    issuer that types its tokens nothing in particular."""
    token = issuer.mint(AUDIENCE, "user", scope="mesh:use", typ=typ)
    typed = typ is not None and typ.lower().endswith("at+jwt")
    async with navigator(tmp_path, database_url, issuer, jwt_allow_untyped=allowed) as console:
        verify = console.services.authenticator.verify
        if typed or allowed:
            assert (await verify(token)).principal == "user"
        else:
            with pytest.raises(Unauthenticated):
                await verify(token)


# --- item 18: no log line is forged ----------------------------------------------------------


def test_no_logged_field_starts_a_line_or_drives_the_terminal() -> None:
    """FastMCP's verifier logs a refused token's subject (at WARNING, through its own handler);
    the navigator's loggers log principal names: every message is written escaped."""
    root = logging.getLogger()
    kept = (logging.getLogRecordFactory(), list(root.handlers), root.level)
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    try:
        configure_logging("INFO")
        for name in ("fastmcp.server.auth.providers.jwt", "meshnav.navigator.calls"):
            logger = logging.getLogger(name)
            logger.addHandler(handler)
            try:
                logger.warning("token rejected for %s", "eve\n2026-12-05 INFO forged\x1b[2J\u2028")
            finally:
                logger.removeHandler(handler)
    finally:
        logging.setLogRecordFactory(kept[0])
        root.handlers[:] = kept[1]
        root.setLevel(kept[2])
    lines = written.getvalue().splitlines()
    assert lines == ["token rejected for eve\\x0a2026-12-05 INFO forged\\x1b[2J\\u2028"] * 2
