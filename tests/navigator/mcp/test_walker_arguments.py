"""What the walker tools do with arguments at and past their edges (SPEC §3, §9): each gets the
§9 code the SPEC names, none repeats what was sent, and ``call`` judges its address, the tool's
existence and the grants before the size of ``args``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from navigator.access.tokens import hash_token, mint_token
from navigator.app import build_app
from navigator.catalog.registrar import MAX_DEFINITION_DEPTH, AssignmentSpec
from navigator.errors import ToolValidationUnavailable
from navigator.limits import LIMITS
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import AccessStore, CatalogStore, NewTool
from tests.navigator.inprocess import walker_client
from tests.navigator.walker.test_paging import ALICE, Mesh, _call, mesh_at

COUNT_TOOL = {
    "name": "count_to",
    "description": "Count to n.",
    "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    "annotations": {"readOnlyHint": True},
}


def _code(answer: dict[str, Any]) -> str:
    return str(answer.get("error"))


async def test_a_limit_written_as_a_float_is_an_integer(tmp_path: Any) -> None:
    async with mesh_at(tmp_path) as mesh, mesh.client() as client:
        answer = await _call(client, "search", {"query": "rotate logs", "limit": 2.0})
    assert len(answer["results"]) == 2
    assert "nextCursor" in answer


async def test_query_with_a_c1_control_character_is_invalid(tmp_path: Any) -> None:
    async with mesh_at(tmp_path) as mesh, mesh.client() as client:
        answer = await _call(client, "search", {"query": "rot\u0085ate"})
    assert _code(answer) == "invalid_arguments"


async def test_walker_arguments_past_the_bounds_or_not_unicode_are_invalid(tmp_path: Any) -> None:
    huge = "a" * 300_000
    async with mesh_at(tmp_path) as mesh, mesh.client() as client:
        answers = [
            await _call(client, "search", {"query": huge}),
            await _call(client, "search", {"query": "rotate", "within": huge}),
            await _call(client, "seats", {"address": huge}),
            await _call(client, "describe", {"address": huge}),
            await _call(client, "search", {"query": "\ud800rotate"}),
            await _call(
                client, "call", {"address": "web1/logs/rotate_logs_1", "confirm": "\ud800"}
            ),
        ]
    assert [_code(answer) for answer in answers] == ["invalid_arguments"] * len(answers)
    assert all(huge[:100] not in json.dumps(answer) for answer in answers)


async def test_call_judges_address_tool_and_grants_before_the_size_of_args(
    tmp_path: Any,
) -> None:
    big = {"site": "x", "pad": list(range(9_000))}  # past the validator's 8,192 values
    async with mesh_at(tmp_path) as mesh:
        mesh.grant("web1/logs/rotate_logs_1", "deny")
        async with mesh.client() as client:
            codes = [
                _code(await _call(client, "call", {"address": address, "args": big}))
                for address in (
                    "BAD ADDRESS",
                    "web1/logs/nope",
                    "web1/logs/rotate_logs_1",
                    "web1/logs/rotate_logs_2",
                )
            ]
    assert codes == [
        "invalid_address",
        "unknown_tool",
        "tool_not_granted",
        "tool_validation_unavailable",
    ]


#: Where no node answers (the discard port): refused at once.
NOBODY = "http://127.0.0.1:9/mcp"


async def test_call_arguments_that_cannot_go_on_are_invalid(tmp_path: Any) -> None:
    """A lone surrogate reaches no node (no UTF-8 JSON carries it), whatever the schema says of
    the string; an integer past 2^53 - 1 has no RFC 8785 digest, so a call that must be
    confirmed or signed cannot take it, while one that needs neither passes it on."""
    patterned = {
        "name": "tag",
        "description": "Tag a site.",
        "inputSchema": {"type": "object", "properties": {"t": {"pattern": "^a"}}},
        "annotations": {"readOnlyHint": True},
    }
    changing = {**COUNT_TOOL, "name": "count_and_keep", "annotations": {"readOnlyHint": False}}
    async with mesh_at(tmp_path) as mesh:
        # an endpoint no node answers at: a call gets as far as forwarding (no endpoint at all
        # is node_unavailable before confirmation, the digest's step)
        tools = [COUNT_TOOL, changing, patterned]
        spec = AssignmentSpec(role="nums", module="nums", tools=tools, endpoint=NOBODY)
        await mesh.services.registrar.put_assignment("web1", spec)
        async with mesh.client() as client:
            lone = await _call(
                client, "call", {"address": "web1/logs/rotate_logs_1", "args": {"site": "\ud800"}}
            )
            lone_under_a_pattern = await _call(
                client, "call", {"address": "web1/nums/tag", "args": {"t": "a\ud800"}}
            )
            beyond = await _call(
                client, "call", {"address": "web1/nums/count_and_keep", "args": {"n": 2**60}}
            )
            passed_on = await _call(
                client, "call", {"address": "web1/nums/count_to", "args": {"n": 2**60}}
            )
    assert _code(lone) == "invalid_arguments"
    assert _code(lone_under_a_pattern) == "invalid_arguments"
    assert _code(beyond) == "invalid_arguments"
    assert str(2**60) not in json.dumps(beyond)
    assert _code(passed_on) == "node_unavailable"  # valid: on to a node that is not there


async def test_call_arguments_nested_past_the_bound_are_unavailable_not_a_crash(
    tmp_path: Any,
) -> None:
    """Arrays inside one another, which the tool's schema never looks into and which are far
    inside the node bound, passed validation: at 600 levels (as raw JSON over HTTP carries them)
    they crashed the digest a confirmation binds, an internal_error with a ~940-frame traceback
    in the log. The validator bounds their depth: at 200 levels (as deep as this in-memory
    client serialises) the walker answers tool_validation_unavailable too."""
    changing = {**COUNT_TOOL, "name": "count_and_keep", "annotations": {"readOnlyHint": False}}

    def nested(levels: int) -> Any:
        deep: Any = 1
        for _ in range(levels):
            deep = [deep]
        return deep

    async with mesh_at(tmp_path) as mesh:
        spec = AssignmentSpec(role="nums", module="nums", tools=[changing], endpoint=NOBODY)
        await mesh.services.registrar.put_assignment("web1", spec)
        with pytest.raises(ToolValidationUnavailable):
            await mesh.services.navigator.call(
                ALICE,
                "web1/nums/count_and_keep",
                {"deep": nested(600)},
                confirm=None,
                elicitor=None,
                progress=None,
            )
        async with mesh.client() as client:
            answer = await _call(
                client,
                "call",
                {"address": "web1/nums/count_and_keep", "args": {"deep": nested(200)}},
            )
    assert _code(answer) == "tool_validation_unavailable"


async def test_answers_with_non_ascii_text_stay_within_64_kib_as_escaped_on_the_wire(
    tmp_path: Any,
) -> None:
    """The sessionless era writes JSON with ASCII escapes: "é" is six bytes on the wire."""
    tools = [
        {
            "name": f"annoter_{i}",
            "description": "Annote les journaux.",
            "inputSchema": {
                "type": "object",
                "properties": {"site": {"type": "string", "description": "é" * 1_500}},
            },
        }
        for i in range(16)
    ]
    async with mesh_at(tmp_path) as mesh:
        await mesh.register("fr1", "journaux", tools)
        big = {"type": "object", "properties": {"site": {"description": "é" * 16_000}}}
        await mesh.register("fr2", "gros", [{**tools[0], "inputSchema": big}])
        async with mesh.client() as client:
            page = await client.call_tool_mcp(
                "search", {"query": "annote", "limit": 16, "schemas": True, "within": "fr1"}
            )
            described = await _call(client, "describe", {"address": "fr2/gros/annoter_0"})
    structured = page.structured_content or {}
    wire = json.dumps(page.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert 0 < len(structured["results"]) < 16 and "nextCursor" in structured
    assert len(wire) + 200 < 64 * 1024
    assert _code(described) == "tool_schema_too_large"


@pytest.mark.parametrize("letter", ["x", "\U0001f642"])  # an emoji is twelve bytes escaped
async def test_an_oversized_title_is_cut_in_listings_and_results_never_too_large(
    tmp_path: Any, letter: str
) -> None:
    """A title is the tool's own text, of any length: listings and search results show at most
    200 characters of it, as of the summary, so an entry without a schema always fits and every
    tool ranked or listed after it stays reachable; describe gives the whole title (or
    tool_schema_too_large when the whole contract cannot fit: it is never cut)."""
    title = "Rotate logs " + letter * 40_000
    longish = "Rotate keys " + letter * 1_000
    tools = [
        {"name": "rotate_logs", "title": title, "description": "Rotate logs."},
        {"name": "rotate_keys", "title": longish, "description": "Rotate keys."},
        {"name": "list_logs", "description": "List logs."},
    ]
    async with mesh_at(tmp_path) as mesh:
        await mesh.register(
            "web2", "ops", [{**t, "inputSchema": {"type": "object"}} for t in tools]
        )
        async with mesh.client() as client:
            found = await _call(client, "search", {"query": "rotate logs", "within": "web2"})
            listed = await _call(client, "seats", {"address": "web2/ops"})
            whole = await _call(client, "describe", {"address": "web2/ops/rotate_keys"})
            too_large = await _call(client, "describe", {"address": "web2/ops/rotate_logs"})
    assert "error" not in found and "error" not in listed
    assert {r["address"] for r in found["results"]} == {f"web2/ops/{t['name']}" for t in tools}
    assert "nextCursor" not in listed
    assert [e["address"] for e in listed["entries"]] == [
        "web2/ops/list_logs",
        "web2/ops/rotate_keys",
        "web2/ops/rotate_logs",
    ]
    shown = {r["address"].rsplit("/", 1)[1]: r["title"] for r in found["results"]}
    assert shown == {e["address"].rsplit("/", 1)[1]: e["title"] for e in listed["entries"]}
    assert shown == {
        "rotate_logs": title[:199] + "…",
        "rotate_keys": longish[:199] + "…",
        "list_logs": "list_logs",
    }
    assert whole["title"] == longish
    assert _code(too_large) == "tool_schema_too_large"


async def test_a_node_seat_listed_at_the_top_can_be_walked(tmp_path: Any) -> None:
    uptime = {
        "name": "uptime",
        "title": "Uptime",
        "description": "How long the machine has run.",
        "inputSchema": {"type": "object"},
    }
    newer = {**uptime, "description": "How long the machine has run, and since when."}
    async with mesh_at(tmp_path) as mesh:
        await _node_seats(mesh, ["n1", "n2"], uptime)
        await _node_seats(mesh, ["n3"], newer)
        async with mesh.client() as client:
            top = await _call(client, "seats", {})
            seat = await _call(client, "seats", {"address": "*/node"})
            missing = await _call(client, "seats", {"address": "*/nope"})
            bad = await _call(client, "seats", {"address": "*/*"})
            found = await _call(client, "search", {"query": "uptime"})
    assert {"address": "*/node", "kind": "node seat"}.items() <= next(
        entry for entry in top["entries"] if entry["kind"] == "node seat"
    ).items()
    assert seat["address"] == "*/node" and seat["holderCount"] == 3
    assert seat["entries"] == [
        {
            "address": "*/node/uptime",
            "kind": "tool",
            "title": "Uptime",
            "summary": "How long the machine has run.",
            "status": "no endpoint",  # registered without an endpoint (ADR 0057)
            "holders": ["n1", "n2"],
            "holderCount": 2,
        },
        {
            "address": "n3/node/uptime",  # another contract, on one machine: its own address
            "kind": "tool",
            "title": "Uptime",
            "summary": "How long the machine has run, and since when.",
            "status": "no endpoint",
        },
    ]
    assert _code(missing) == "unknown_tool"
    assert _code(bad) == "invalid_address"
    # search gives the same tools the same way, and tells a collapsed one's status from the
    # holders' tools
    results = {result["address"]: result for result in found["results"]}
    assert set(results) == {"*/node/uptime", "n3/node/uptime"}
    assert results["*/node/uptime"]["status"] == "no endpoint"


async def _node_seats(mesh: Mesh, machines: list[str], tool: dict[str, Any]) -> None:
    for machine in machines:
        await mesh.services.registrar.put_assignment(
            machine, AssignmentSpec(role="node", module="node", kind="node_seat", tools=[tool])
        )


async def test_a_stdio_navigator_reads_its_principal_again_on_every_request(
    tmp_path: Any,
) -> None:
    """Without HTTP the token is authenticated again for each request: a deny added while it
    serves holds on the next call, and so does the principal's revocation (SPEC §3: grants read
    again, never from a cache)."""
    token = mint_token()
    async with mesh_at(tmp_path) as mesh:

        def access(change: Callable[[AccessStore], object]) -> None:
            with mesh.services.registry.transaction() as session:
                change(AccessStore(session))

        access(lambda s: s.add_principal("solo", scopes=[], token_hash=hash_token(token)))
        access(lambda s: s.grant("solo", "web1/logs/*", effect="allow"))
        address = {"address": "web1/logs/rotate_logs_1"}
        async with walker_client(mesh.services, token=token) as client:
            before = await _call(client, "describe", address)
            access(lambda s: s.grant("solo", "web1/logs/rotate_logs_1", effect="deny"))
            denied = await _call(client, "describe", address)
            found = await _call(client, "search", {"query": "rotate logs"})
            access(lambda s: s.revoke_principal("solo"))
            revoked = await _call(client, "describe", {"address": "web1/logs/rotate_logs_2"})
    assert before["address"] == "web1/logs/rotate_logs_1"
    assert _code(denied) == "tool_not_granted"
    assert "web1/logs/rotate_logs_1" not in [r["address"] for r in found["results"]]
    assert _code(revoked) == "unauthenticated"


#: A request of the sessionless era: no initialize, each request says who the client is.
SESSIONLESS = "2026-07-28"
DISCOVER = "mesh.tools.discover"
CLIENT_META = {
    "io.modelcontextprotocol/protocolVersion": SESSIONLESS,
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@asynccontextmanager
async def _over_http(tmp_path: Path) -> AsyncIterator[tuple[Services, Callable[..., Any]]]:
    """The navigator's ASGI app in process, and a poster of ``tools/call`` with the JSON-RPC id
    the test chooses (FastMCP's client chooses its own)."""
    app = build_app(NavigatorSettings(database_url=f"sqlite:///{tmp_path / 'r.db'}"))
    async with app.router.lifespan_context(app):
        services: Services = app.state.meshnav
        token = mint_token()

        def alice(session: Any) -> None:
            AccessStore(session).add_principal("alice", scopes=[], token_hash=hash_token(token))
            AccessStore(session).grant("alice", "*/*/*", effect="allow")

        await services.transact(alice)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:

            async def call(tool: str, arguments: dict[str, Any], request_id: Any) -> bytes:
                """``tools/call`` of ``tool``; for ``DISCOVER``, that method itself."""
                method = DISCOVER if tool == DISCOVER else "tools/call"
                headers = {"Mcp-Method": method} | ({} if tool == DISCOVER else {"Mcp-Name": tool})
                params = arguments if tool == DISCOVER else {"name": tool, "arguments": arguments}
                answer = await http.post(
                    "/mcp",
                    headers={
                        "Authorization": f"Bearer {token}",
                        "Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": SESSIONLESS,
                        **headers,
                    },
                    json={
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "method": method,
                        "params": {**params, "_meta": CLIENT_META},
                    },
                )
                assert answer.status_code == 200, answer.text
                return answer.content

            yield services, call


def _padded(pad: int) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"s": {"type": "string", "description": "x" * pad}}}
    return [{"name": "pad", "description": "Pad the answer.", "inputSchema": schema}]


@pytest.mark.parametrize(
    "request_id",
    [7, "i" * 400, '"' * 511, "é" * 169],  # each quote is two bytes written, an é six
    ids=["number", "400 letters", "quotes", "non-ascii"],
)
@pytest.mark.parametrize("tool", ["describe", "search", DISCOVER])
async def test_an_answer_stays_within_64_kib_with_the_id_the_client_chose(
    tmp_path: Path, tool: str, request_id: Any
) -> None:
    """The envelope carries the request's id back, and the client chose it: the largest
    contract describe (or search with schemas) still answers fits in 64 KiB with it.
    ``mesh.tools.discover`` answers the JSON once, with no text block repeating it: it was sized
    as if it did, and refused a schema of 40 KB as tool_schema_too_large (a review)."""
    async with _over_http(tmp_path) as (services, call):
        lo, hi, largest = 8_000, 40_000 if tool != DISCOVER else 70_000, 0
        while hi - lo > 1:  # the longest padding that is answered, not tool_schema_too_large
            pad = (lo + hi) // 2
            machine = f"m{pad}"
            await services.registrar.put_assignment(
                machine, AssignmentSpec(role="r", module="r", tools=_padded(pad))
            )
            if tool == "describe":
                arguments: dict[str, Any] = {"address": f"{machine}/r/pad"}
            elif tool == "search":
                arguments = {"query": "pad", "within": machine, "schemas": True, "limit": 1}
            else:
                arguments = {"query": "pad", "within": machine, "limit": 1}
            body = await call(tool, arguments, request_id)
            answered = json.loads(body)
            if tool == DISCOVER:
                refused = answered.get("error", {}).get("data", {}).get("error")
                if refused is not None or not answered["result"]["results"]:
                    assert refused == "tool_schema_too_large"
                    hi = pad
                else:
                    lo, largest = pad, len(body)
                continue
            result = answered["result"]
            if result.get("isError") or not result["structuredContent"].get("results", True):
                assert result["structuredContent"]["error"] == "tool_schema_too_large"
                hi = pad
            else:
                lo, largest = pad, len(body)
    assert 60 * 1024 < largest <= LIMITS.answer_bytes


async def test_a_request_id_too_long_to_answer_within_the_bound_is_refused(
    tmp_path: Path,
) -> None:
    """An id past 1 KiB leaves too little of the 64 KiB for whole entries: seats, search and
    describe refuse it, without repeating it; call, bounded at 4 MiB, takes it."""
    long_id = "i" * (LIMITS.request_id_bytes - 1)  # 1 KiB and one byte with its quotes
    async with _over_http(tmp_path) as (services, call):
        await services.registrar.put_assignment(
            "m1", AssignmentSpec(role="r", module="r", tools=_padded(10))
        )
        answers = {
            tool: json.loads(await call(tool, arguments, long_id))["result"]
            for tool, arguments in (
                ("seats", {}),
                ("search", {"query": "pad"}),
                ("describe", {"address": "m1/r/pad"}),
                ("call", {"address": "m1/r/pad"}),
            )
        }
        just_fits = json.loads(await call("seats", {}, long_id[:-1]))["result"]
    for tool in ("seats", "search", "describe"):
        assert _code(answers[tool]["structuredContent"]) == "invalid_arguments"
        assert long_id not in answers[tool]["structuredContent"]["message"]
    assert _code(answers["call"]["structuredContent"]) == "node_unavailable"  # no endpoint
    assert "error" not in just_fits["structuredContent"]


async def test_a_stored_tool_whose_annotations_are_a_list_is_searched_and_described(
    tmp_path: Any,
) -> None:
    """A registry may hold such a tool from before the registrar refused it: with no title of
    its own, its title was read from the list as from an object, and every search that met it,
    and its describe, was internal_error, for every caller."""
    definition = {
        "name": "rotate_everything",
        "description": "Rotate every log there is.",
        "annotations": ["readOnlyHint"],
        "inputSchema": {"type": "object"},
    }
    async with mesh_at(tmp_path) as mesh, mesh.client() as client:
        with mesh.services.registry.transaction() as session:
            tool = NewTool("rotate_everything", definition, contract_digest="e" * 64)
            CatalogStore(session).put_assignment("web2", "logs", module="logs", tools=[tool])
        await mesh.services.catalog.catch_up()
        found = await _call(client, "search", {"query": "rotate everything", "limit": 3})
        described = await _call(client, "describe", {"address": "web2/logs/rotate_everything"})
    assert found["results"][0]["address"] == "web2/logs/rotate_everything"
    assert described["title"] == "rotate_everything"  # no title of its own: the name
    assert described["description"] == "Rotate every log there is."


async def test_a_definition_as_deep_as_registration_takes_is_described_and_found(
    tmp_path: Any,
) -> None:
    """The registrar refuses definitions nested past ``MAX_DEFINITION_DEPTH``; one at the bound
    fits in every answer that carries it (the answer's serialiser stops at 255 levels)."""
    deep: dict[str, Any] = {"type": "object"}
    for _ in range((MAX_DEFINITION_DEPTH - 2) // 2 - 1):
        deep = {"type": "object", "properties": {"x": deep}}
    async with mesh_at(tmp_path) as mesh:
        await mesh.register("db1", "deep", [{"name": "nest", "inputSchema": deep}])
        async with mesh.client() as client:
            described = await _call(client, "describe", {"address": "db1/deep/nest"})
            found = await _call(client, "search", {"query": "nest", "schemas": True})
    assert described["inputSchema"] == deep
    assert [hit["inputSchema"] for hit in found["results"]] == [deep]


SECRET = "hunter2-in-the-body"


@pytest.mark.parametrize("era", ["2025-11-25", SESSIONLESS])
@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": SECRET},
        {"jsonrpc": "2.0", "id": 1, "method": {"name": SECRET}},
        [{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"s": SECRET}}],
    ],
    ids=["params a string", "method an object", "a batch"],
)
async def test_a_body_that_is_not_one_json_rpc_message_is_not_repeated(
    tmp_path: Path, era: str, body: Any
) -> None:
    """The MCP SDK's legacy-era transport answered a body it could not read as one JSON-RPC
    message with pydantic's whole validation error, the body's values in it (``input_value=
    'hunter2…'``) and the library's version; the sessionless era's says only what is wrong."""
    app = build_app(NavigatorSettings(database_url=f"sqlite:///{tmp_path / 'r.db'}"))
    token = mint_token()
    async with app.router.lifespan_context(app):

        def alice(session: Any) -> None:
            AccessStore(session).add_principal("alice", scopes=[], token_hash=hash_token(token))

        await app.state.meshnav.transact(alice)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            answer = await http.post(
                "/mcp",
                headers={
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": era,
                },
                json=body,
            )
    assert answer.status_code == 400
    refused = answer.json()
    assert refused["id"] is None and refused["error"]["code"] in (-32600, -32602)
    assert SECRET not in answer.text and "pydantic" not in answer.text
