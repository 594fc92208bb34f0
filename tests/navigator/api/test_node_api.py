"""The node API under attack (SPEC §6, §7): a node token speaks only for its own machine and
serves a seat only where an operator placed it, and no body is read past its bound."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.requests import Request

from navigator.access.tokens import hash_token, mint_token
from navigator.api.base import MAX_BODY_BYTES
from navigator.app import build_app
from navigator.http.bodies import read_bounded
from navigator.settings import NavigatorSettings
from registry import AccessStore, CatalogStore
from registry.errors import SEAT_NOT_PLACED

TOOL = {"name": "lookup", "description": "Look a thing up.", "inputSchema": {"type": "object"}}


def registration(machine: str, advertise: str, seat: str | None = None) -> dict[str, Any]:
    assignment: dict[str, Any] = {"role": "notes", "module": "sqlite", "tools": [TOOL]}
    if seat is not None:
        assignment["seat"] = seat
    return {
        "machine": machine,
        "advertise": advertise,
        "heartbeatS": 5,
        "assignments": [assignment],
    }


@asynccontextmanager
async def navigator(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str], Any]]:
    """An in-process navigator with two node principals, neither bound to a machine yet, and an
    operator ("root")."""
    app = build_app(NavigatorSettings(database_url=f"sqlite:///{tmp_path / 'r.db'}"))
    async with app.router.lifespan_context(app):
        services = app.state.meshnav
        tokens = {name: mint_token() for name in ("node-a", "node-b", "root")}

        def principals(session: Any) -> None:
            for name, token in tokens.items():
                AccessStore(session).add_principal(
                    name,
                    scopes=["mesh:admin" if name == "root" else "mesh:node"],
                    token_hash=hash_token(token),
                )

        await services.transact(principals)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            yield client, tokens, services


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def register_db1(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    """node-a registers db1 at 10.0.0.1, with one assignment, ``notes``."""
    registered = await client.post(
        "/api/v1/nodes/register",
        json=registration("db1", "http://10.0.0.1:7801"),
        headers=bearer(tokens["node-a"]),
    )
    assert registered.status_code == 200, registered.text


async def test_a_second_node_token_cannot_take_over_a_machine(tmp_path: Path) -> None:
    async with navigator(tmp_path) as (client, tokens, services):
        await register_db1(client, tokens)
        taken = await client.post(
            "/api/v1/nodes/register",
            json=registration("db1", "http://evil:9999"),
            headers=bearer(tokens["node-b"]),
        )
        beat = await client.post("/api/v1/nodes/db1/heartbeat", headers=bearer(tokens["node-b"]))
        machine = await services.transact(lambda session: CatalogStore(session).machine("db1"))
    assert taken.status_code == 403
    assert taken.json()["error"] == "tool_not_granted"
    assert "key" not in taken.json()
    assert beat.status_code == 403
    assert machine.advertise_url == "http://10.0.0.1:7801"


@pytest.mark.parametrize("machine", ["mesh", "DB1", "db1/x", "db 1"])
async def test_a_node_token_binds_no_name_outside_the_grammar(tmp_path: Path, machine: str) -> None:
    """SPEC §2: ``mesh`` is reserved and is no machine's name. A registration with no assignment
    checked no name: a node token registered ``mesh`` (or ``db1/x``), was handed a key for it
    and bound to it, as was one whose assignment update named it (a review)."""
    async with navigator(tmp_path) as (client, tokens, services):
        body = {**registration(machine, "http://10.0.0.9:7801"), "assignments": []}
        registered = await client.post(
            "/api/v1/nodes/register", json=body, headers=bearer(tokens["node-a"])
        )
        update = {"advertise": "http://10.0.0.9:7801", "assignment": body_of_notes()}
        updated = await client.put(
            f"/api/v1/nodes/{machine}/assignments/notes",
            json=update,
            headers=bearer(tokens["node-b"]),
        )
        bound = await services.transact(
            lambda session: [AccessStore(session).principal(n).machine for n in tokens]
        )
        machines = await services.transact(lambda session: CatalogStore(session).machines())
    assert registered.status_code == 400, registered.text
    assert registered.json()["error"] == "invalid_address"
    assert "key" not in registered.json()
    assert updated.status_code in (400, 404), updated.text
    assert bound == [None, None, None]
    assert machines == []


async def node_principal(services: Any, machine: str) -> str:
    """A node principal made for ``machine`` (``principal add --machine``); its token."""
    token = mint_token()
    await services.transact(
        lambda session: AccessStore(session).add_principal(
            f"node-{machine}", scopes=["mesh:node"], token_hash=hash_token(token), machine=machine
        )
    )
    return token


async def place_seat(client: httpx.AsyncClient, token: str, seat: str, machine: str) -> None:
    """An operator places ``seat`` on ``machine``'s role of the same name."""
    placed = await client.put(
        f"/api/v1/seats/{seat}", json={"machine": machine, "role": seat}, headers=bearer(token)
    )
    assert placed.status_code == 200, placed.text


def body_of_notes() -> dict[str, Any]:
    return {"role": "notes", "module": "sqlite", "tools": [TOOL]}


async def test_a_node_registering_a_seat_another_machine_holds_keeps_the_rest(
    tmp_path: Path,
) -> None:
    async with navigator(tmp_path) as (client, tokens, services):
        await place_seat(client, tokens["root"], "notes", "web1")
        holder = await client.post(
            "/api/v1/nodes/register",
            json=registration("web1", "http://10.0.0.1:7801", seat="notes"),
            headers=bearer(await node_principal(services, "web1")),
        )
        assert holder.status_code == 200, holder.text
        body = registration("web2", "http://10.0.0.2:7801", seat="notes")
        body["assignments"].append({"role": "files", "module": "sqlite", "tools": [TOOL]})
        other = await client.post(
            "/api/v1/nodes/register", json=body, headers=bearer(tokens["node-b"])
        )
        seats = await services.transact(lambda session: CatalogStore(session).seats())
    assert other.status_code == 200, other.text
    assert other.json()["registered"] == ["web2/files/lookup"]
    assert other.json()["refused"] == [{"name": "mesh/notes", "reason": SEAT_NOT_PLACED}]
    assert seats == {"notes": ("web1", "notes")}


async def test_a_body_past_the_bound_is_refused_before_it_is_read(tmp_path: Path) -> None:
    async with navigator(tmp_path) as (client, tokens, _services):
        announced = await client.post(
            "/api/v1/nodes/register",
            content=b"{}",
            headers={**bearer(tokens["node-a"]), "Content-Length": str(MAX_BODY_BYTES + 1)},
        )
        sent = 0

        async def stream() -> AsyncIterator[bytes]:
            nonlocal sent
            for _ in range(64):  # 64 MiB if all were read
                sent += 1
                yield b" " * (1024 * 1024)

        streamed = await client.post(
            "/api/v1/nodes/register", content=stream(), headers=bearer(tokens["node-a"])
        )
    assert announced.status_code == 400
    assert announced.json()["error"] == "invalid_arguments"
    assert streamed.status_code == 400
    assert sent <= MAX_BODY_BYTES // (1024 * 1024) + 2


async def test_a_heartbeat_period_keeps_its_fraction(tmp_path: Path) -> None:
    """Three missed heartbeats of 1.4 s are 4.2 s, not the 3 s of a period rounded to 1."""
    async with navigator(tmp_path) as (client, tokens, services):
        body = {**registration("db1", "http://10.0.0.1:7801"), "heartbeatS": 1.4}
        answer = await client.post(
            "/api/v1/nodes/register", json=body, headers=bearer(tokens["node-a"])
        )
        machine = await services.transact(lambda session: CatalogStore(session).machine("db1"))
    assert answer.status_code == 200, answer.text
    assert answer.json()["heartbeatS"] == 1.4
    assert machine.heartbeat_s == 1.4


async def test_a_client_gone_before_its_body_ends_is_no_error() -> None:
    """Nobody is left to answer: no exception for the server to log as one of ours."""
    messages: list[dict[str, Any]] = [
        {"type": "http.request", "body": b'{"machine": ', "more_body": True},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    request = Request({"type": "http", "method": "POST", "headers": []}, receive)
    assert await read_bounded(request, 1024) is None


async def test_a_node_updates_only_the_assignment_its_path_names(tmp_path: Path) -> None:
    async with navigator(tmp_path) as (client, tokens, services):
        await register_db1(client, tokens)
        update = {
            "advertise": "http://10.0.0.1:7801",
            "assignment": {"role": "other", "module": "sqlite", "tools": [TOOL]},
        }
        answer = await client.put(
            "/api/v1/nodes/db1/assignments/notes", json=update, headers=bearer(tokens["node-a"])
        )
        roles = await services.transact(
            lambda session: [a.role for a in CatalogStore(session).assignments(machine="db1")]
        )
    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_arguments"
    assert answer.json()["pointer"] == "/assignment/role"
    assert roles == ["notes"]


async def test_a_body_nested_past_the_parser_is_invalid_arguments(tmp_path: Path) -> None:
    async with navigator(tmp_path) as (client, tokens, _services):
        answers = [
            await client.post(path, content=b"[" * 100_000, headers=bearer(tokens[who]))
            for path, who in (("/api/v1/nodes/register", "node-a"), ("/api/v1/grants", "root"))
        ]
    for answer in answers:
        assert answer.status_code == 400
        assert answer.json()["error"] == "invalid_arguments"


async def test_a_grant_id_is_ascii_digits_within_the_column(tmp_path: Path) -> None:
    """``int()`` took a fullwidth "１" for grant 1 and "1_0" for grant 10; past the column's
    range the registry raised (a plain-text 500). Each is no such grant."""
    async with navigator(tmp_path) as (client, tokens, services):
        made = await client.post(
            "/api/v1/grants",
            json={"principal": "root", "target": "*/*/*", "effect": "allow"},
            headers=bearer(tokens["root"]),
        )
        assert made.status_code == 200, made.text
        assert made.json()["id"] == 1
        answers = [
            await client.delete(f"/api/v1/grants/{written}", headers=bearer(tokens["root"]))
            for written in ("%EF%BC%91", "%C2%B9", "0_1", "%201", "9" * 30, str(2**31))
        ]
        left = await services.transact(lambda session: AccessStore(session).grants())
    assert [a.status_code for a in answers] == [404] * len(answers)
    assert {a.json()["error"] for a in answers} == {"not_found"}
    assert [g.id for g in left] == [1]


#: Scopes no body takes (SPEC §7): a NUL and a lone surrogate, which PostgreSQL's JSONB cannot hold,
#: written as JSON escapes; and scopes outside the grammar.
BAD_SCOPES = ["\\u0000", "ops\\ud800", "mesh admin", 'mesh\\"admin', "é", "", "s" * 257]


@pytest.mark.parametrize(
    "scope",
    BAD_SCOPES,
    ids=["nul", "lone-surrogate", "space", "quote", "non-ascii", "empty", "too-long"],
)
async def test_a_scope_outside_the_grammar_is_refused_in_every_body(
    tmp_path: Path, scope: str
) -> None:
    """A grant whose scopes held a NUL, taken with 200, made every token read fail on
    PostgreSQL: every principal, the administrator who would revoke it included, was answered
    registry_unavailable. Every body that takes scopes now refuses it, naming where, never what."""
    scopes = f'["ops", "{scope}"]'
    node = registration("db1", "http://10.0.0.1:7801")
    node["assignments"][0]["scopes"] = ["SCOPES"]
    bodies = [
        (
            "/api/v1/grants",
            "root",
            f'{{"principal": "*", "target": "db9/*/*", "effect": "deny", "scopes": {scopes}}}',
            "/scopes/1",
        ),
        ("/api/v1/principals", "root", f'{{"name": "hank", "scopes": {scopes}}}', "/scopes/1"),
        (
            "/api/v1/assignments",
            "root",
            f'{{"machine": "web9", "role": "logs", "tools": [], "scopes": {scopes}}}',
            "/scopes/1",
        ),
        (
            "/api/v1/nodes/register",
            "node-a",
            json.dumps(node).replace('["SCOPES"]', scopes),
            "/assignments/0/scopes/1",
        ),
    ]
    async with navigator(tmp_path) as (client, tokens, services):
        answers = [
            (
                await client.post(
                    path,
                    content=body.encode(),
                    headers={**bearer(tokens[who]), "content-type": "application/json"},
                ),
                pointer,
            )
            for path, who, body, pointer in bodies
        ]
        grants = await services.transact(lambda session: AccessStore(session).grants())
        principals = await services.transact(lambda session: AccessStore(session).principals())
        machines = await services.transact(lambda session: CatalogStore(session).machines())
    for answer, pointer in answers:
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == "invalid_arguments"
        assert answer.json()["pointer"] == pointer
        assert scope not in answer.text or not scope
    assert grants == []
    assert sorted(p.name for p in principals) == ["node-a", "node-b", "root"]
    assert machines == []


@pytest.mark.parametrize(
    "scope", ["mesh:admin", "api://meshnav/Tools.Read", "https://www.googleapis.com/auth/x", "a+b"]
)
async def test_the_scopes_identity_providers_issue_are_taken(tmp_path: Path, scope: str) -> None:
    """A review: the grammar first held scopes to ``[A-Za-z0-9_.:-]``, refusing the scopes JWT
    callers carry (Entra ID's ``api://APP/Scope``, Google's URLs), which a ``*`` row must name.
    It is RFC 6749's scope token."""
    body = {"principal": "*", "target": "db9/*/*", "effect": "allow", "scopes": [scope]}
    async with navigator(tmp_path) as (client, tokens, services):
        answer = await client.post("/api/v1/grants", json=body, headers=bearer(tokens["root"]))
        grants = await services.transact(lambda session: AccessStore(session).grants())
    assert answer.status_code == 200, answer.text
    assert [grant.scopes for grant in grants] == [(scope,)]


async def test_a_control_character_in_a_name_is_refused_at_the_door(tmp_path: Path) -> None:
    """A review: a NUL in a grant's principal was stored on SQLite and answered 503
    ``registry_unavailable`` on PostgreSQL (which refuses it) — an outage to monitoring, for bad
    input; so did one in a path or query. They are ``invalid_arguments`` before the registry is
    asked, on every backend; a JWT subject such as ``auth0|123`` is still a principal."""
    async with navigator(tmp_path) as (client, tokens, services):
        root = bearer(tokens["root"])
        body = {"principal": "x\u0000y", "target": "db1/*/*", "effect": "allow"}
        refused = [
            await client.post("/api/v1/grants", json=body, headers=root),
            await client.get("/api/v1/grants?principal=x%00y", headers=root),
            await client.post("/api/v1/principals/x%00y/rotate", json={}, headers=root),
            await client.post("/api/v1/machines/x%00/retire", headers=root),
        ]
        subject = {"principal": "auth0|123", "target": "db1/*/*", "effect": "allow", "force": True}
        taken = await client.post("/api/v1/grants", json=subject, headers=root)
        grants = await services.transact(lambda session: AccessStore(session).grants())
    for answer in refused:
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == "invalid_arguments"
        assert "x\\u0000y" not in answer.text and "x%00y" not in answer.text  # never echoed
    assert taken.status_code == 200
    assert [grant.principal for grant in grants] == ["auth0|123"]


async def test_a_grant_for_a_principal_the_registry_does_not_hold_is_refused(
    tmp_path: Path,
) -> None:
    """A grant naming a mistyped principal was taken with 200: a row that grants nobody
    anything, and said nothing. It is ``not_found`` naming the way on; ``force`` keeps a row for
    a name made later (a JWT's subject); ``*`` is every caller (ADR 0036)."""
    async with navigator(tmp_path) as (client, tokens, services):
        root = bearer(tokens["root"])
        body = {"principal": "r00t", "target": "db1/*/*", "effect": "allow"}
        refused = await client.post("/api/v1/grants", json=body, headers=root)
        forced = await client.post("/api/v1/grants", json={**body, "force": True}, headers=root)
        every = {"principal": "*", "target": "db2/*/*", "effect": "deny"}
        anyone = await client.post("/api/v1/grants", json=every, headers=root)
        known = {"principal": "node-a", "target": "db3/*/*", "effect": "allow"}
        named = await client.post("/api/v1/grants", json=known, headers=root)
        grants = await services.transact(lambda session: AccessStore(session).grants())
    assert refused.status_code == 404, refused.text
    answer = refused.json()
    assert (answer["error"], answer["pointer"]) == ("not_found", "/principal")
    assert answer["message"].startswith("Unknown principal")
    assert "--force" in answer["message"] and "meshnav principal add" in answer["message"]
    assert "r00t" not in refused.text
    assert [a.status_code for a in (forced, anyone, named)] == [200, 200, 200]
    assert [g.principal for g in grants] == ["r00t", "*", "node-a"]


async def test_a_control_character_in_a_url_or_module_is_refused_at_the_door(
    tmp_path: Path,
) -> None:
    """A NUL in a machine's advertised URL, an assignment's module or its endpoint was taken
    with 200 on SQLite and answered 503 ``registry_unavailable`` on PostgreSQL, whose text
    columns refuse it: an outage, for bad input, and the backends disagreeing (ADR 0013). Every
    body refuses it as ``invalid_arguments``, naming where and never what."""
    node = registration("db1", "http://10.0.0.1:7801")
    update = {"advertise": "http://10.0.0.1:7801", "assignment": node["assignments"][0]}
    bodies = [
        (
            "/api/v1/machines",
            "root",
            {"name": "web9", "advertise": "http://x\u0000y"},
            "/advertise",
        ),
        (
            "/api/v1/assignments",
            "root",
            {"machine": "web9", "role": "logs", "module": "m\u0000x", "tools": []},
            "/module",
        ),
        (
            "/api/v1/assignments",
            "root",
            {"machine": "web9", "role": "logs", "endpoint": "http://x/\u0000", "tools": []},
            "/endpoint",
        ),
        (
            "/api/v1/nodes/register",
            "node-a",
            {**node, "advertise": "http://10.0.0.1:7801/\u0000"},
            "/advertise",
        ),
        (
            "/api/v1/nodes/register",
            "node-a",
            {**node, "assignments": [{**node["assignments"][0], "module": "sq\u0000lite"}]},
            "/assignments/0/module",
        ),
    ]
    async with navigator(tmp_path) as (client, tokens, services):
        await register_db1(client, tokens)
        answers = [
            (await client.post(path, json=body, headers=bearer(tokens[who])), pointer)
            for path, who, body, pointer in bodies
        ]
        answers.append(
            (
                await client.put(
                    "/api/v1/nodes/db1/assignments/notes",
                    json={**update, "advertise": "http://10.0.0.1:7801\u0000"},
                    headers=bearer(tokens["node-a"]),
                ),
                "/advertise",
            )
        )
        machines = await services.transact(lambda session: CatalogStore(session).machines())
    for answer, pointer in answers:
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == "invalid_arguments"
        assert answer.json()["pointer"] == pointer
        assert "\\u0000" not in answer.text
    assert [m.name for m in machines] == ["db1"]
    assert machines[0].advertise_url == "http://10.0.0.1:7801"


async def test_a_node_that_moved_retires_the_modules_it_no_longer_serves(tmp_path: Path) -> None:
    """Registration retires the assignments a node no longer lists, told apart from an
    operator's by their endpoint under the node's advertise URL — its new one only. A node
    restarted on another address (a new port, a new IP) without one of its modules left that
    module live at its old endpoint: listed, answering (its machine heartbeats), and every call
    node_unavailable. An operator's assignment on the machine stays."""
    async with navigator(tmp_path) as (client, tokens, services):
        await register_db1(client, tokens)  # notes, at http://10.0.0.1:7801
        operator = await client.post(
            "/api/v1/assignments",
            json={"machine": "db1", "role": "metrics", "tools": [TOOL]},
            headers=bearer(tokens["root"]),
        )
        assert operator.status_code == 200, operator.text
        body = registration("db1", "http://10.0.0.9:7802")
        body["assignments"] = [{"role": "files", "module": "sqlite", "tools": [TOOL]}]
        moved = await client.post(
            "/api/v1/nodes/register", json=body, headers=bearer(tokens["node-a"])
        )
        assert moved.status_code == 200, moved.text
        live = await services.transact(
            lambda session: sorted(
                a.role for a in CatalogStore(session).assignments(machine="db1") if not a.retired
            )
        )
    assert live == ["files", "metrics"]


@pytest.mark.parametrize(
    "url",
    ["http://[::1", "http://db1:99999/mcp", "http://db1:0/mcp", "http:///mcp", "http://db1:x/"],
)
async def test_a_url_the_navigator_cannot_open_is_refused_at_the_door(
    tmp_path: Path, url: str
) -> None:
    """A review: an endpoint such as ``http://[::1`` was taken, then its tools' pull answered
    ``node_unavailable`` (503) — an outage, for a typo; an advertised URL so malformed was stored
    and failed every call. Both are ``invalid_arguments`` at the door, naming where, not what."""
    node = registration("db1", url)
    async with navigator(tmp_path) as (client, tokens, _services):
        answers = [
            await client.post(
                "/api/v1/assignments",
                json={"machine": "web9", "role": "logs", "endpoint": url, "tools": []},
                headers=bearer(tokens["root"]),
            ),
            await client.post(
                "/api/v1/machines",
                json={"name": "web9", "advertise": url},
                headers=bearer(tokens["root"]),
            ),
            await client.post(
                "/api/v1/nodes/register", json=node, headers=bearer(tokens["node-a"])
            ),
        ]
    for answer, pointer in zip(answers, ["/endpoint", "/advertise", "/advertise"], strict=True):
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"] == "invalid_arguments"
        assert answer.json()["pointer"] == pointer
        assert url not in answer.text
