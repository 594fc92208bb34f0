"""The navigator as an OAuth 2.1 resource server (ADR 0037): its RFC 9728 metadata, the challenge
every 401 carries, ``insufficient_scope`` on the admin API, the RFC 8707 audience, and a signed-in
subject the registry does not know holding no grant."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import OctKey

from navigator.access.authentication import Authenticator, jwt_verifier
from navigator.access.tokens import hash_token, mint_token
from navigator.app import build_app
from navigator.errors import Unauthenticated
from navigator.settings import NavigatorSettings
from registry import AccessStore, Registry, migrate, read_snapshot, read_subject_holder

SECRET = "a-shared-secret-of-sufficient-length-for-hs256"
ISSUER = "https://idp.example"
PUBLIC = "https://nav.example.com"
RESOURCE = PUBLIC + "/mcp"
METADATA = PUBLIC + "/.well-known/oauth-protected-resource/mcp"


def _settings(tmp_path: Path, **overrides: object) -> NavigatorSettings:
    fields: dict[str, object] = {
        "database_url": f"sqlite:///{tmp_path / 'r.db'}",
        "jwt_public_key": SECRET,
        "jwt_algorithm": "HS256",
        "jwt_issuer": ISSUER,
        "public_url": PUBLIC + "/",
        "oauth_scopes": "mesh:use, mesh:admin",
        **overrides,
    }
    return NavigatorSettings(**fields)  # type: ignore[arg-type]


def _jwt(**claims: object) -> str:
    body = {"iss": ISSUER, "aud": RESOURCE, "exp": int(time.time()) + 60, "sub": "carol", **claims}
    return jwt.encode({"alg": "HS256", "typ": "at+jwt"}, body, OctKey.import_key(SECRET))


@contextlib.asynccontextmanager
async def serving(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = build_app(_settings(tmp_path))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            yield client


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource/mcp",
                                  "/.well-known/oauth-protected-resource"])  # fmt: skip
async def test_the_metadata_names_the_resource_and_its_authorization_server(
    tmp_path: Path, path: str
) -> None:
    async with serving(tmp_path) as client:
        # any Host: a client reads it by whatever name it reached the navigator
        answer = await client.get(path, headers={"host": "nav.example.com"})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {
            "resource": RESOURCE,
            "authorization_servers": [ISSUER],
            "scopes_supported": ["mesh:use", "mesh:admin"],
            "bearer_methods_supported": ["header"],
            "resource_name": "meshnav navigator",
        }
        assert answer.headers["access-control-allow-origin"] == "*"


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("POST", "/mcp", {"accept": "application/json, text/event-stream"}),
        ("GET", "/api/v1/mesh", {}),
        ("POST", "/api/v1/nodes/register", {}),
        ("GET", "/console/machines/db1", {"x-meshnav-fragment": "1"}),
    ],
)
async def test_every_401_points_at_the_metadata(
    tmp_path: Path, method: str, path: str, headers: dict[str, str]
) -> None:
    """MCP, the admin API, the node API and the console's data alike."""
    async with serving(tmp_path) as client:
        bare = await client.request(method, path, headers=headers, json={})
        assert bare.status_code == 401
        assert bare.json()["error"] == "unauthenticated"
        assert bare.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{METADATA}", scope="mesh:use mesh:admin"'
        )
        refused = await client.request(
            method, path, headers={**headers, "authorization": "Bearer nonsense"}, json={}
        )
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].endswith(', error="invalid_token"')
        assert "nonsense" not in refused.text + refused.headers["www-authenticate"]


async def test_a_missing_admin_scope_asks_for_it(tmp_path: Path) -> None:
    async with serving(tmp_path) as client:
        answer = await client.get(
            "/api/v1/mesh", headers={"authorization": f"Bearer {_jwt(scope='mesh:use')}"}
        )
        assert answer.status_code == 403 and answer.json()["error"] == "tool_not_granted"
        assert answer.headers["www-authenticate"] == (
            f'Bearer error="insufficient_scope", scope="mesh:admin", resource_metadata="{METADATA}"'
        )
        assert "x-meshnav-scope-needed" not in answer.headers


@pytest.mark.parametrize("audience", ["https://other.example.com/mcp", PUBLIC, "meshnav"])
async def test_the_audience_is_the_resource_when_none_is_set(tmp_path: Path, audience: str) -> None:
    """RFC 8707: without MESHNAV_JWT_AUDIENCE the public URL's ``/mcp`` is the one audience."""
    migrate(f"sqlite:///{tmp_path / 'r.db'}")
    settings = _settings(tmp_path)
    authenticator = Authenticator(Registry(settings.database_url), jwt_verifier(settings))
    assert (await authenticator.verify(_jwt(aud=[RESOURCE, "x"]))).principal == "carol"
    with pytest.raises(Unauthenticated):
        await authenticator.verify(_jwt(aud=audience))


def test_without_an_audience_or_public_url_a_verifier_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="MESHNAV_PUBLIC_URL"):
        _settings(tmp_path, public_url=None)


@pytest.mark.parametrize("url", ["ftp://nav", "https://nav.example.com/?a=1", "nav.example.com"])
def test_a_public_url_is_a_base_url(tmp_path: Path, url: str) -> None:
    with pytest.raises(ValueError, match="MESHNAV_PUBLIC_URL"):
        _settings(tmp_path, public_url=url)


async def test_the_principal_claim_is_configurable(tmp_path: Path) -> None:
    migrate(f"sqlite:///{tmp_path / 'r.db'}")
    settings = _settings(tmp_path, jwt_principal_claim="preferred_username")
    authenticator = Authenticator(
        Registry(settings.database_url),
        jwt_verifier(settings),
        principal_claim="preferred_username",
    )
    caller = await authenticator.verify(_jwt(preferred_username="dana", scp=["mesh:use"]))
    assert caller.principal == "dana" and caller.scopes == {"mesh:use"}


async def test_a_subject_the_registry_does_not_know_holds_no_grant(tmp_path: Path) -> None:
    """Not even a ``*`` row's: signing in at the authorization server is not being let in. A
    revoked principal's subject is refused (ADR 0044); a registered one holds its rows."""
    settings = _settings(tmp_path)
    migrate(settings.database_url)
    registry = Registry(settings.database_url)
    with registry.transaction() as session:
        store = AccessStore(session)
        store.grant("*", "*/*/*", effect="allow", scopes=["mesh:use"])
        store.add_principal("carol", scopes=["mesh:use"], token_hash=hash_token(mint_token()))
        store.add_principal("erin", scopes=["mesh:use"], token_hash=hash_token(mint_token()))
        store.revoke_principal("erin")
    authenticator = Authenticator(registry, jwt_verifier(settings))
    callers = {
        who: await authenticator.verify(_jwt(sub=who, scope="mesh:use"))
        for who in ("carol", "mallory")
    }
    with pytest.raises(Unauthenticated):
        await authenticator.verify(_jwt(sub="erin", scope="mesh:use"))
    grants = {who: caller.grants for who, caller in callers.items()}
    assert grants["carol"] is not None and [r.target for r in grants["carol"].rows] == ["*/*/*"]
    assert grants["mallory"] is not None and grants["mallory"].rows == ()
    assert grants["mallory"].revision == grants["carol"].revision
    # the registry read itself, beside the one every stored token's and stdio caller's takes
    subject = read_subject_holder(registry, "mallory", ["mesh:use"], limit=100)
    assert subject is not None and subject.grants == grants["mallory"] and not subject.registered
    assert read_snapshot(registry, "mallory", ["mesh:use"], limit=100) == grants["carol"]


async def test_the_public_urls_host_is_one_the_navigator_answers_to(tmp_path: Path) -> None:
    """Clients reach the navigator by its public name: the Host/Origin rule takes it, and still
    refuses any other name (DNS rebinding)."""
    headers = {
        "accept": "application/json, text/event-stream",
        "origin": PUBLIC,
        "authorization": f"Bearer {_jwt(scope='mesh:use')}",
    }
    async with serving(tmp_path) as client:
        public = await client.post("/mcp", headers={**headers, "host": "nav.example.com"})
        other = await client.post("/mcp", headers={**headers, "host": "evil.example"})
        api = await client.get("/api/v1/mesh", headers={"host": "nav.example.com"})
        api_other = await client.get("/api/v1/mesh", headers={"host": "evil.example"})
    assert public.status_code not in (403, 421) and api.status_code == 401
    assert other.status_code == 421 and api_other.status_code == 421
