"""Who is calling: stored tokens by hash, expiry and revocation, and JWTs when configured."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import fastmcp
import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import OctKey

from navigator.access.authentication import Authenticator, jwt_verifier
from navigator.access.tokens import hash_token, mint_token
from navigator.app import build_app
from navigator.errors import Unauthenticated
from navigator.limits import LIMITS
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import AccessStore, Registry, migrate
from tests.navigator.console.test_console import open_events

SECRET = "a-shared-secret-of-sufficient-length-for-hs256"


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    migrate(url)
    return Registry(url)


def _jwt(**claims: object) -> str:
    header = {"alg": "HS256", "typ": "at+jwt"}
    body = {"iss": "https://idp.example", "aud": "meshnav", "exp": int(time.time()) + 60, **claims}
    return jwt.encode(header, body, OctKey.import_key(SECRET))


def _authenticator(registry: Registry) -> Authenticator:
    settings = NavigatorSettings(
        jwt_public_key=SECRET,
        jwt_algorithm="HS256",
        jwt_issuer="https://idp.example",
        jwt_audience="meshnav",
    )
    return Authenticator(registry, jwt_verifier(settings))


async def test_stored_token_carries_the_principal_and_its_grants(registry: Registry) -> None:
    token = mint_token()
    with registry.transaction() as session:
        AccessStore(session).add_principal("alice", scopes=["ops"], token_hash=hash_token(token))
        AccessStore(session).grant("alice", "*/*/*", effect="allow")
    caller = await Authenticator(registry).verify(token)
    assert caller.principal == "alice" and caller.scopes == {"ops"}
    assert caller.grants is not None and [r.target for r in caller.grants.rows] == ["*/*/*"]


@pytest.mark.parametrize("state", ["unknown", "expired", "revoked", "empty"])
async def test_bad_stored_tokens_are_refused_alike(registry: Registry, state: str) -> None:
    token = mint_token()
    expires = datetime.now(UTC) - timedelta(seconds=1) if state == "expired" else None
    with registry.transaction() as session:
        if state != "unknown":
            AccessStore(session).add_principal(
                "bob", scopes=[], token_hash=hash_token(token), expires_at=expires
            )
        if state == "revoked":
            AccessStore(session).revoke_principal("bob")
    with pytest.raises(Unauthenticated) as refused:
        await Authenticator(registry).verify("" if state == "empty" else token)
    assert refused.value.message == "Missing or invalid credentials."


async def test_a_jwt_names_the_principal_by_its_subject(registry: Registry) -> None:
    with registry.transaction() as session:
        AccessStore(session).add_principal(
            "carol", scopes=["ops", "read"], token_hash=hash_token(mint_token())
        )
    caller = await _authenticator(registry).verify(_jwt(sub="carol", scope="ops read"))
    assert caller.principal == "carol"
    assert caller.scopes == {"ops", "read"}
    # its grants read with the request, as a stored token's are: dave is not registered, so
    # none apply, and of its scopes it holds mesh:use at most (ADR 0044)
    dave = await _authenticator(registry).verify(_jwt(sub="dave", scope="ops mesh:use"))
    assert dave.scopes == {"mesh:use"} and not dave.registered
    assert dave.grants is not None and dave.grants.rows == ()


@pytest.mark.parametrize(
    "claims",
    [
        {"sub": "carol", "aud": "someone-else"},
        {"sub": "carol", "iss": "https://evil.example"},
        {"sub": "carol", "exp": 1},
        {},
    ],
)
async def test_a_jwt_with_wrong_claims_is_refused(
    registry: Registry, claims: dict[str, object]
) -> None:
    with pytest.raises(Unauthenticated):
        await _authenticator(registry).verify(_jwt(**claims))


async def test_a_jwt_that_never_expires_is_refused(registry: Registry) -> None:
    header = {"alg": "HS256", "typ": "at+jwt"}
    body = {"iss": "https://idp.example", "aud": "meshnav", "sub": "carol"}  # no exp
    forever = jwt.encode(header, body, OctKey.import_key(SECRET))
    with pytest.raises(Unauthenticated):
        await _authenticator(registry).verify(forever)


@pytest.mark.parametrize("missing", ["jwt_issuer", "jwt_audience"])
def test_a_jwt_verifier_needs_its_issuer_and_audience(missing: str) -> None:
    """Without them, a token signed with the same key for any other service would do."""
    settings = {
        "jwt_public_key": SECRET,
        "jwt_algorithm": "HS256",
        "jwt_issuer": "https://idp.example",
        "jwt_audience": "meshnav",
    }
    del settings[missing]
    with pytest.raises(ValueError, match="ISSUER and MESHNAV_JWT_AUDIENCE"):
        NavigatorSettings(**settings)


async def test_without_a_verifier_jwts_are_refused(registry: Registry) -> None:
    with pytest.raises(Unauthenticated):
        await Authenticator(registry).verify(_jwt(sub="carol"))


async def test_the_console_takes_the_jwt_the_admin_api_takes(tmp_path: Path) -> None:
    """A review: the admin API verified a JWT, the console's sign-in only stored tokens, so no
    operator of a JWT deployment could use the console. And every admin API answer is
    ``no-store``: some carry a token shown once."""
    settings = NavigatorSettings(
        database_url=f"sqlite:///{tmp_path / 'r.db'}",
        jwt_public_key=SECRET,
        jwt_algorithm="HS256",
        jwt_issuer="https://idp.example",
        jwt_audience="meshnav",
    )
    app = build_app(settings)
    token = _jwt(sub="carol", scope="mesh:admin")
    async with app.router.lifespan_context(app):
        with app.state.meshnav.registry.transaction() as session:
            AccessStore(session).add_principal(
                "carol", scopes=["mesh:admin"], token_hash=hash_token(mint_token())
            )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            api = await client.get("/api/v1/mesh", headers={"authorization": f"Bearer {token}"})
            signed = await client.post("/console/sign-in", data={"token": token, "next": "/"})
            page = await client.get("/")
    assert api.status_code == 200 and api.headers["cache-control"] == "no-store"
    assert signed.status_code in (302, 303), signed.text[:300]
    assert page.status_code == 200 and "carol" in page.text


async def test_a_jwt_viewers_event_stream_says_when_their_grants_change(tmp_path: Path) -> None:
    """A JWT brings no grant rows with it: the stream reads the viewer's rows itself to notice a
    grant change, as it notices a stored token's."""
    settings = NavigatorSettings(
        database_url=f"sqlite:///{tmp_path / 'r.db'}",
        jwt_public_key=SECRET,
        jwt_algorithm="HS256",
        jwt_issuer="https://idp.example",
        jwt_audience="meshnav",
    )
    often = replace(LIMITS, console_keepalive_s=0.2)
    app = build_app(settings, services=Services.create(settings, limits=often))
    registry = Registry(settings.database_url)

    def grant(effect: str) -> None:
        with registry.transaction() as session:
            AccessStore(session).grant("carol", "*/*/*", effect=effect)

    async with app.router.lifespan_context(app):
        with registry.transaction() as session:  # a JWT's subject holds grants once registered
            AccessStore(session).add_principal("carol", scopes=[], token_hash=hash_token("t"))
        grant("allow")
        async with open_events(app, _jwt(sub="carol", scope="mesh:read")) as messages:
            with anyio.fail_after(10):
                body = b""
                while b": keep-alive" not in body:
                    body += (await messages.receive()).get("body", b"")
                grant("deny")
                while b"event: change" not in body:
                    body += (await messages.receive()).get("body", b"")
    assert b'"kinds": ["grants"]' in body


#: A legacy-era (2025-11-25) client's opening request, and a walker call in its session.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
SEATS = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "seats"}}


def legacy(token: str, session_id: str | None = None) -> dict[str, str]:
    """A legacy-era request's headers: a bearer token, and the session when one is held."""
    held = {} if session_id is None else {"mcp-session-id": session_id}
    return {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
        **held,
    }


async def test_a_legacy_session_serves_only_the_principal_that_opened_it(tmp_path: Path) -> None:
    """A legacy-era MCP session (2025-11-25) is bound to who opened it. The SDK compares the
    request's ``scope["user"]``, which the navigator's own authentication never set: any other
    principal holding the session's id was served in it — could end it, read its stream, and
    answer the question a legacy-era confirmation put to its person (a review)."""
    app = build_app(NavigatorSettings(database_url=f"sqlite:///{tmp_path / 'r.db'}"))
    alice, bob = mint_token(), mint_token()
    async with app.router.lifespan_context(app):
        with app.state.meshnav.registry.transaction() as session:
            for name, token in (("alice", alice), ("bob", bob)):
                AccessStore(session).add_principal(name, scopes=[], token_hash=hash_token(token))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            opened = await client.post("/mcp", headers=legacy(alice), json=INITIALIZE)
            held = opened.headers["mcp-session-id"]
            used = await client.post("/mcp", headers=legacy(bob, held), json=SEATS)
            ended = await client.delete("/mcp", headers=legacy(bob, held))
            still = await client.post("/mcp", headers=legacy(alice, held), json=SEATS)
    assert used.status_code == 404, used.text
    assert ended.status_code == 404, ended.text
    assert still.status_code == 200 and '"isError":false' in still.text, still.text


async def test_fastmcps_environment_does_not_change_how_mcp_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FastMCP reads ``FASTMCP_JSON_RESPONSE`` and ``FASTMCP_STATELESS_HTTP`` from the
    environment: with them, a call's answer was one JSON body (no progress on the way) and a
    legacy-era client had no session (no elicitation). The navigator pins both."""
    monkeypatch.setattr(fastmcp.settings, "json_response", True)
    monkeypatch.setattr(fastmcp.settings, "stateless_http", True)
    app = build_app(NavigatorSettings(database_url=f"sqlite:///{tmp_path / 'r.db'}"))
    token = mint_token()
    async with app.router.lifespan_context(app):
        with app.state.meshnav.registry.transaction() as session:
            AccessStore(session).add_principal("alice", scopes=[], token_hash=hash_token(token))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            opened = await client.post("/mcp", headers=legacy(token), json=INITIALIZE)
            held = opened.headers.get("mcp-session-id")
            called = await client.post("/mcp", headers=legacy(token, held), json=SEATS)
    assert held is not None, "a legacy-era client was given no session"
    assert called.headers["content-type"].startswith("text/event-stream"), called.headers
