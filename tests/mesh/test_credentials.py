"""Upstream credentials (ADR 0038): read from the node's environment or files at start, kept out of
every message and ``repr``, given to their own module alone; an OAuth client's token cached,
renewed, and fetched again once when the upstream refuses it."""

from __future__ import annotations

import itertools
from pathlib import Path

import httpx2
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mesh.errors import ModuleSpecError
from mesh.modules import ModuleSpec, parse_module_spec
from mesh.modules.credentials import ClientCredentials, check_credentials, read_credentials
from mesh.modules.http import ClientCredentialsAuth
from tests.harness import serving

SECRET = "S3CRET-value-never-shown"


def test_references_are_read_and_taken_out_of_the_nodes_environment(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text(SECRET + "-file\n")
    env_file = tmp_path / "module.env"
    env_file.write_text("# tools' variables\nexport API_KEY='abc'\nREGION=eu\n")
    environ = {"GITHUB_TOKEN": SECRET, "PATH": "/bin"}
    found = read_credentials(
        headers=["github:Authorization=Bearer ${GITHUB_TOKEN}", f"github:X-Api-Key=@{key}"],
        environment=["tools:GITHUB_TOKEN", "tools:OTHER=${GITHUB_TOKEN}"],
        env_files=[f"tools:{env_file}"],
        environ=environ,
    )
    assert found["github"].headers == {
        "Authorization": f"Bearer {SECRET}",
        "X-Api-Key": SECRET + "-file",
    }
    assert found["tools"].environment == {
        "GITHUB_TOKEN": SECRET,
        "OTHER": SECRET,
        "API_KEY": "abc",
        "REGION": "eu",
    }
    assert environ == {"PATH": "/bin"}  # no subprocess of the node inherits it
    assert found["github"].sources == (
        "header Authorization from ${GITHUB_TOKEN}",
        f"header X-Api-Key from @{key}",
    )
    assert SECRET not in repr(found)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"headers": ["github:Authorization=Bearer ${MISSING}"]}, "MISSING"),
        ({"environment": ["tools:MISSING"]}, "MISSING"),
        ({"headers": ["github:X-Key=@/nonexistent/key"]}, "/nonexistent/key"),
        ({"env_files": ["tools:/nonexistent/env"]}, "/nonexistent/env"),
        ({"headers": ["github:Host=${GITHUB_TOKEN}"]}, "header name"),
        ({"headers": ["github:Accept-Encoding=gzip"]}, "header name"),  # answers read uncoded
        ({"headers": ["no-colon"]}, "ROLE:VALUE"),
        ({"oauth": ["api:https://as/token,client," + SECRET]}, "never the secret"),
        ({"oauth": ["api:ftp://as/token,client,@/k"]}, "http(s) URL"),
        ({"oauth": ["api:https://as/token"]}, "TOKEN_URL,CLIENT_ID"),
    ],
)
def test_a_reference_that_cannot_be_read_stops_the_node_naming_it(
    options: dict[str, list[str]], named: str
) -> None:
    with pytest.raises(ModuleSpecError) as refused:
        read_credentials(**options, environ={"GITHUB_TOKEN": SECRET})  # type: ignore[arg-type]
    assert named in str(refused.value)
    assert SECRET not in str(refused.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"headers": ["typo:X-Key=${GITHUB_TOKEN}"]}, "no --module serves"),
        ({"headers": ["tools:X-Key=${GITHUB_TOKEN}"]}, "for http modules"),
        ({"environment": ["github:GITHUB_TOKEN"]}, "for stdio modules"),
    ],
)
def test_credentials_fit_their_modules(options: dict[str, list[str]], message: str) -> None:
    found = read_credentials(**options, environ={"GITHUB_TOKEN": SECRET})  # type: ignore[arg-type]
    with pytest.raises(ModuleSpecError, match=message):
        check_credentials(found, {"github": "http", "tools": "stdio"})


def test_an_http_spec_names_its_role_and_holds_no_credentials() -> None:
    assert parse_module_spec("http:github=https://api.example/mcp/") == ModuleSpec(
        "http", "github", "https://api.example/mcp/"
    )
    for bad in ("http:github", "http:github=ftp://x", "http:Bad=https://x", "gh=http:a=https://x"):
        with pytest.raises(ModuleSpecError):
            parse_module_spec(bad)
    with pytest.raises(ModuleSpecError, match="--module-header") as refused:
        parse_module_spec(f"http:github=https://user:{SECRET}@api.example/mcp")
    assert SECRET not in str(refused.value)


async def test_a_token_is_cached_renewed_and_fetched_again_once_when_refused() -> None:
    """A real token endpoint and upstream on loopback: the upstream refuses the first token it
    is shown (revoked early, say); the client fetches a new one once and is let in."""
    issued = itertools.count(1)
    fetches: list[dict[str, str]] = []
    refused: set[str] = {"t1"}

    async def token(request: Request) -> Response:
        form = await request.form()
        fetches.append({k: str(v) for k, v in form.items()})
        assert request.headers["authorization"].startswith("Basic ")
        return JSONResponse({"access_token": f"t{next(issued)}", "expires_in": 3600})

    async def upstream(request: Request) -> Response:
        given = request.headers.get("authorization", "").removeprefix("Bearer ")
        return Response(status_code=401 if given in refused else 200, content=given)

    app = Starlette(routes=[Route("/token", token, methods=["POST"]), Route("/mcp", upstream)])
    async with serving(app) as port:
        base = f"http://127.0.0.1:{port}"
        client = ClientCredentials(base + "/token", "node", SECRET, "read")
        auth = ClientCredentialsAuth(client, base + "/mcp")
        async with httpx2.AsyncClient(auth=auth) as http:
            first = await http.get(base + "/mcp")
            second = await http.get(base + "/mcp")
            refused.add("t2")
            refused.add("t3")
            third = await http.get(base + "/mcp")  # refused, fetched again once, refused again
    assert (first.status_code, first.text) == (200, "t2")
    assert (second.status_code, second.text) == (200, "t2")  # cached: no fetch
    assert third.status_code == 401  # once only: no loop against a refusing upstream
    assert len(fetches) == 3
    assert fetches[0] == {
        "grant_type": "client_credentials",
        "resource": base + "/mcp",
        "scope": "read",
    }


def test_a_secret_written_on_the_command_line_is_warned_of(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A literal secret in ``--module-header`` was taken silently, where the postgres DSN's
    password is warned of: both are read by every user of the machine (ps)."""
    caplog.set_level("WARNING", logger="meshnav.node")
    read_credentials(
        headers=[
            "gh:Authorization=Bearer ghp_literal",
            "gh:X-Api-Key=${KEY}",
            "gh:X-Trace=on",
        ],
        environ={"KEY": "from-the-environment"},
    )
    said = [record.getMessage() for record in caplog.records]
    assert (
        len(said) == 1 and "header Authorization is written on the node's command line" in said[0]
    )
    assert "ghp_literal" not in said[0]
