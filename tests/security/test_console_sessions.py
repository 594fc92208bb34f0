"""Issue 26 (8): the console's cookie was the viewer's long-lived bearer token, and signing out
only cleared it in that browser. The cookie is now a session's random id; the registry keeps the
id's hash, so signing out, a rotation or revocation of the token, the principal's expiry, and the
session's own idle and lifetime limits end it — on every navigator of the registry."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from sqlalchemy import select, update

from navigator.access.tokens import hash_token
from navigator.app import build_app
from navigator.console.session import COOKIE
from navigator.settings import NavigatorSettings
from registry.models import ConsoleSession, Principal, utcnow
from tests.navigator.access.test_auth import SECRET, _jwt
from tests.navigator.console.test_console import Console, console_app
from tests.registry import conftest as registry_fixtures

#: A registry on SQLite, then on the session's PostgreSQL (``tests/registry/conftest.py``).
database_url = registry_fixtures.database_url
JWT_SETTINGS = {
    "jwt_public_key": SECRET,
    "jwt_algorithm": "HS256",
    "jwt_issuer": "https://idp.example",
    "jwt_audience": "meshnav",
}


async def _signed_in(console: Console, token: str) -> str:
    """A browser's sign-in with ``token``: its session cookie."""
    async with console.client() as client:
        answer = await client.post("/console/sign-in", data={"token": token, "next": "/"})
        assert answer.status_code == 303, answer.text
        return str(client.cookies[COOKIE])


async def _shown(console: Console, cookie: str) -> bool:
    """Whether a page is shown to the browser holding ``cookie`` (not the sign-in form)."""
    async with console.client() as client:
        client.cookies.set(COOKIE, cookie)
        page = await client.get("/")  # the mesh, or the sign-in form
    assert page.status_code == 200, page.text
    return "Signed in as" in page.text


async def _sessions(console: Console) -> list[ConsoleSession]:
    return await console.services.read(
        lambda session: list(session.execute(select(ConsoleSession)).scalars())
    )


async def _backdate(console: Console, **fields: datetime) -> None:
    """Move every session's timestamps into the past, as the clock would."""
    await console.services.transact(
        lambda session: session.execute(update(ConsoleSession).values(**fields))
    )


async def test_the_cookie_holds_a_session_id_never_the_token(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.client() as client:
        token = console.tokens["alice"]
        answer = await client.post("/console/sign-in", data={"token": token, "next": "/"})
        cookie = str(client.cookies[COOKIE])
        [kept] = await _sessions(console)
    assert token not in answer.headers["set-cookie"]
    assert token[4:] not in cookie and cookie not in token
    assert len(cookie) >= 43  # secrets.token_urlsafe(32)
    assert kept.id_hash == hash_token(cookie)  # the id's hash; the id itself is not kept
    assert cookie not in str(vars(kept)) and token not in str(vars(kept))


async def test_signing_out_ends_the_session_wherever_its_cookie_is_kept(tmp_path: Path) -> None:
    """A cookie copied before its viewer signed out (another tab's, a stolen one) is dead too."""
    async with console_app(tmp_path) as console:
        cookie = await _signed_in(console, console.tokens["alice"])
        other = await _signed_in(console, console.tokens["alice"])
        assert await _shown(console, cookie)
        async with console.client() as client:
            client.cookies.set(COOKIE, cookie)
            out = await client.post("/console/sign-out")
            fragment = await client.get("/", headers={"X-Meshnav-Fragment": "1"})
            stream = await client.get("/console/events")
        assert out.status_code == 303
        assert not await _shown(console, cookie)
        assert await _shown(console, other)  # the viewer's other browser stays signed in
    assert fragment.status_code == 401 and fragment.json()["error"] == "unauthenticated"
    assert stream.status_code == 401


def _rotate(client: httpx.AsyncClient, console: Console) -> Any:
    return client.post("/api/v1/principals/alice/rotate", json={})


def _revoke(client: httpx.AsyncClient, console: Console) -> Any:
    return client.delete("/api/v1/principals/alice")


@pytest.mark.parametrize("change", [_rotate, _revoke], ids=["rotated", "revoked"])
async def test_a_rotated_or_revoked_token_signs_its_sessions_out(
    tmp_path: Path, change: Callable[[httpx.AsyncClient, Console], Any]
) -> None:
    async with console_app(tmp_path) as console:
        cookie = await _signed_in(console, console.tokens["alice"])
        root = await _signed_in(console, console.tokens["root"])
        async with console.client() as client:
            client.headers["authorization"] = f"Bearer {console.tokens['root']}"
            assert (await change(client, console)).status_code == 200
        assert not await _shown(console, cookie)
        assert await _shown(console, root)
        assert [s.principal for s in await _sessions(console)] == ["root"]


async def test_an_expired_principal_is_signed_out(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console:
        cookie = await _signed_in(console, console.tokens["alice"])
        await console.services.transact(
            lambda session: session.execute(
                update(Principal)
                .where(Principal.name == "alice")
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
        )
        assert not await _shown(console, cookie)


async def test_a_session_idle_past_the_setting_is_over(tmp_path: Path) -> None:
    async with console_app(tmp_path, console_idle_s=60.0) as console:
        cookie = await _signed_in(console, console.tokens["alice"])
        await _backdate(console, seen_at=utcnow() - timedelta(seconds=50))
        before = utcnow()
        assert await _shown(console, cookie)  # a page load: the idle time starts again
        [seen] = await _sessions(console)
        assert seen.seen_at >= before
        await _backdate(console, seen_at=utcnow() - timedelta(seconds=61))
        assert not await _shown(console, cookie)


async def test_a_session_open_past_its_lifetime_is_over_however_busy(tmp_path: Path) -> None:
    async with console_app(tmp_path, console_lifetime_s=3600.0) as console:
        cookie = await _signed_in(console, console.tokens["alice"])
        assert await _shown(console, cookie)
        await _backdate(console, created_at=utcnow() - timedelta(seconds=3601))
        assert not await _shown(console, cookie)


async def test_a_jwt_session_lives_within_the_jwts_own_expiry(tmp_path: Path) -> None:
    """A JWT's viewer stays signed in, as the JWT is not kept either, until the JWT expires."""
    expires = int(time.time()) + 2
    async with console_app(tmp_path, **JWT_SETTINGS) as console:
        cookie = await _signed_in(console, _jwt(sub="carol", exp=expires))
        assert await _shown(console, cookie)
        [kept] = await _sessions(console)
        assert kept.expires_at == datetime.fromtimestamp(expires, UTC)
        await anyio.sleep(max(0.0, expires - time.time()) + 0.1)
        assert not await _shown(console, cookie)


# --- several navigators, one registry ------------------------------------------------------


@asynccontextmanager
async def _navigator(url: str) -> AsyncIterator[Console]:
    """A second navigator on the registry at ``url``."""
    app = build_app(NavigatorSettings(database_url=url))
    async with app.router.lifespan_context(app):
        yield Console(app, app.state.meshnav, {})


async def test_navigators_of_one_registry_share_sessions(tmp_path: Path, database_url: str) -> None:
    async with (
        console_app(tmp_path, database_url=database_url) as first,
        _navigator(database_url) as second,
    ):
        cookie = await _signed_in(first, first.tokens["alice"])
        assert await _shown(second, cookie)
        async with second.client() as client:
            client.cookies.set(COOKIE, cookie)
            assert (await client.post("/console/sign-out")).status_code == 303
        assert not await _shown(first, cookie)


async def test_signing_in_again_replaces_the_browsers_session(tmp_path: Path) -> None:
    """A new id at every sign-in, the browser's earlier session ended: none piles up, and an id
    known before the sign-in (a planted one) does not become a live session."""
    async with console_app(tmp_path) as console, console.client() as client:
        await client.post("/console/sign-in", data={"token": console.tokens["nobody"]})
        earlier = str(client.cookies[COOKIE])
        await client.post("/console/sign-in", data={"token": console.tokens["alice"]})
        later = str(client.cookies[COOKIE])
        kept = await _sessions(console)
    assert later != earlier
    assert [(s.principal, s.id_hash) for s in kept] == [("alice", hash_token(later))]
