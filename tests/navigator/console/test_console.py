"""The web console in process (SPEC §8, issue 7): the real ASGI app over httpx, its lifespan
running, a registry on SQLite. Sign-in and sessions, what each viewer may see, escaping, the
security headers, fragments and the event stream."""

from __future__ import annotations

import json
import math
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from sqlalchemy import update
from starlette.applications import Starlette

from navigator.access.grants import Caller
from navigator.access.tokens import hash_token, mint_token
from navigator.app import build_app
from navigator.catalog.registrar import AssignmentSpec
from navigator.console import is_console_path
from navigator.console.events import STREAMS_PER_VIEWER
from navigator.console.pages import CONSOLE_ROWS
from navigator.console.render import GrantsListing, grants_page
from navigator.console.session import COOKIE
from navigator.limits import LIMITS, Limits
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import AccessStore, PrincipalRecord, Registry
from registry.models import Machine
from tests.navigator.inprocess import LosingRegistry

HOSTILE = '<script>alert("x")</script>'
QUERY_TOOL = {
    "name": "query",
    "title": 'Run a query "><img src=x onerror=alert(1)>',
    "description": f"Runs one read-only query. {HOSTILE} More.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "sql": {"type": "string", "description": f"The statement {HOSTILE}"},
            "limit": {"type": "integer"},
        },
        "required": ["sql"],
    },
    "annotations": {"readOnlyHint": True},
}
LIST_TOOL = {
    "name": "list_tables",
    "description": "Lists tables.",
    "inputSchema": {"type": "object"},
}
UPTIME_TOOL = {
    "name": "uptime",
    "description": "How long the host has been up.",
    "inputSchema": {"type": "object"},
}
CSP = "default-src 'self'"


@dataclass
class Console:
    app: Starlette
    services: Services
    tokens: dict[str, str]

    def client(self, base_url: str = "http://testserver") -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url=base_url, follow_redirects=False
        )

    @asynccontextmanager
    async def signed_in(self, who: str) -> AsyncIterator[httpx.AsyncClient]:
        async with self.client() as client:
            answer = await client.post(
                "/console/sign-in", data={"token": self.tokens[who], "next": "/"}
            )
            assert answer.status_code == 303, answer.text
            yield client

    async def register(self, machine: str, spec: AssignmentSpec) -> None:
        await self.services.registrar.put_assignment(machine, spec)


@asynccontextmanager
async def console_app(
    tmp_path: Path,
    limits: Limits = LIMITS,
    registry: Callable[[str], Registry] = Registry,
    **settings: Any,
) -> AsyncIterator[Console]:
    """The navigator's app, serving, with three principals and a small mesh; ``settings`` are
    the navigator's settings besides its registry, ``limits`` and ``registry`` (made from its
    URL) collaborators of its services."""
    chosen = NavigatorSettings(**{"database_url": f"sqlite:///{tmp_path / 'r.db'}", **settings})
    made = Services.create(chosen, limits=limits, registry=registry(chosen.database_url))
    app = build_app(chosen, services=made)
    async with app.router.lifespan_context(app):
        services: Services = app.state.meshnav
        tokens = {name: mint_token() for name in ("alice", "nobody", "root")}

        def people(session: Any) -> None:
            store = AccessStore(session)
            store.add_principal("alice", scopes=[], token_hash=hash_token(tokens["alice"]))
            store.add_principal("nobody", scopes=[], token_hash=hash_token(tokens["nobody"]))
            store.add_principal(
                "root", scopes=["mesh:admin"], token_hash=hash_token(tokens["root"])
            )
            store.grant("alice", "*/*/*", effect="allow")
            store.grant("root", "db1/*/*", effect="allow")

        await services.transact(people)
        console = Console(app, services, tokens)
        await console.register(
            "db1", AssignmentSpec(role="sqlite", module="sqlite", tools=[QUERY_TOOL, LIST_TOOL])
        )
        for machine in ("db1", "db2"):
            await console.register(
                machine,
                AssignmentSpec(role="node", module="node", kind="node_seat", tools=[UPTIME_TOOL]),
            )
        await console.register(
            "web1", AssignmentSpec(role="notes", module="sqlite", seat="notes", tools=[LIST_TOOL])
        )
        yield console


def main_of(html: str) -> str:
    found = re.search(r"<main[^>]*>(.*)</main>", html, re.S)
    assert found, html
    return found.group(1)


# --- paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "console"),
    [
        ("/", True),
        ("/console", True),
        ("/console/", True),
        ("/console/machines/db1", True),
        ("/console/static/console.js", True),
        ("/consoles", False),
        ("/mcp", False),
        ("/api/v1/mesh", False),
        ("/healthz", False),
    ],
)
def test_console_paths_are_exactly_the_root_and_console_prefix(path: str, console: bool) -> None:
    assert is_console_path(path) is console


async def test_mcp_and_the_api_still_need_a_bearer_token(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        mcp = await client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        api = await client.get("/api/v1/mesh")
    assert mcp.status_code == 401
    assert api.status_code == 401
    assert api.json()["error"] == "unauthenticated"


# --- signing in and out --------------------------------------------------------------------


async def test_signed_out_home_is_the_sign_in_form(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.client() as client:
        home = await client.get("/")
    assert home.status_code == 200
    assert '<form method="post" action="/console/sign-in">' in home.text
    assert 'type="password"' in home.text
    assert "db1" not in home.text


async def test_sign_in_sets_a_strict_httponly_cookie(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.client() as client:
        answer = await client.post(
            "/console/sign-in", data={"token": console.tokens["alice"], "next": "/"}
        )
        home = await client.get("/")
    cookie = answer.headers["set-cookie"]
    assert answer.status_code == 303
    assert answer.headers["location"] == "/"
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/" in cookie
    assert "Secure" not in cookie  # plain http: a Secure cookie would never come back
    assert console.tokens["alice"] not in answer.headers["location"]
    assert "Signed in as <strong>alice</strong>" in home.text


async def test_sign_in_over_https_makes_the_cookie_secure(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.client("https://testserver") as client:
        answer = await client.post("/console/sign-in", data={"token": console.tokens["alice"]})
    assert "Secure" in answer.headers["set-cookie"]


async def test_sign_in_returns_to_the_page_that_asked(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.client() as client:
        asked = await client.get("/console/machines/db1")
        answer = await client.post(
            "/console/sign-in",
            data={"token": console.tokens["alice"], "next": "/console/machines/db1"},
        )
        elsewhere = await client.post(
            "/console/sign-in", data={"token": console.tokens["alice"], "next": "//evil.example/"}
        )
    assert asked.status_code == 401
    assert 'name="next" value="/console/machines/db1"' in asked.text
    assert answer.headers["location"] == "/console/machines/db1"
    assert elsewhere.headers["location"] == "/"


@pytest.mark.parametrize("token", ["mnv_not-a-real-token", "", "x" * 5000])
async def test_bad_token_is_refused_and_never_echoed(tmp_path: Path, token: str) -> None:
    async with console_app(tmp_path) as console, console.client() as client:
        answer = await client.post("/console/sign-in", data={"token": token})
        home = await client.get("/")
    assert answer.status_code == 401
    assert "set-cookie" not in answer.headers
    assert "That token was not accepted." in answer.text
    assert not token or token not in answer.text
    assert "Signed in as" not in home.text


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"origin": "http://evil.example"}, 403),
        ({"origin": "null"}, 403),
        ({"sec-fetch-site": "cross-site"}, 403),
        ({"origin": "http://testserver", "sec-fetch-site": "same-origin"}, 303),
        ({"origin": "https://console.example", "x-forwarded-host": "console.example"}, 303),
        ({}, 303),
    ],
)
async def test_sign_in_must_come_from_the_console_itself(
    tmp_path: Path, headers: dict[str, str], status: int
) -> None:
    async with console_app(tmp_path) as console, console.client() as client:
        answer = await client.post(
            "/console/sign-in", data={"token": console.tokens["alice"]}, headers=headers
        )
    assert answer.status_code == status
    assert ("set-cookie" in answer.headers) is (status == 303)


async def test_sign_out_clears_the_session(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        answer = await client.post("/console/sign-out")
        home = await client.get("/")
    assert answer.status_code == 303
    assert 'meshnav_console=""' in answer.headers["set-cookie"]
    assert "Signed in as" not in home.text
    assert "/console/sign-in" in home.text


async def test_revoked_token_is_signed_out_on_the_next_request(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        assert "Signed in as" in (await client.get("/")).text
        await console.services.transact(lambda s: AccessStore(s).revoke_principal("alice"))
        page = await client.get("/console/machines/db1")
        fragment = await client.get("/", headers={"X-Meshnav-Fragment": "1"})
        events = await client.get("/console/events")
    assert page.status_code == 401
    assert "/console/sign-in" in page.text
    assert fragment.status_code == 401
    assert fragment.json() == {
        "error": "unauthenticated",
        "status": 401,
        "message": "Missing or invalid credentials.",
    }
    assert events.status_code == 401
    assert events.json()["error"] == "unauthenticated"


async def test_the_token_appears_in_no_page(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        pages = [
            await client.get(path)
            for path in ("/", "/console/grants", "/console/machines/db1", "/console/search?q=query")
        ]
    for page in pages:
        assert page.status_code == 200
        assert console.tokens["root"] not in page.text


async def test_numbers_in_a_query_string_are_ascii_digits(tmp_path: Path) -> None:
    """``"²".isdigit()`` is true and ``int("²")`` raises: such a page number or limit answered a
    plain-text 500. A page number that is not one is the first page; a limit is refused as
    ``search`` refuses it."""
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        page = await client.get("/console/assignments/db1/sqlite", params={"page": "²"})
        found = await client.get("/console/search", params={"q": "query", "limit": "²"})
    assert page.status_code == 200
    assert found.status_code == 400
    assert "<code>invalid_arguments</code>" in main_of(found.text)


async def test_a_limit_past_the_maximum_is_refused_as_search_refuses_it(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        found = await client.get("/console/search", params={"q": "query", "limit": "20"})
    assert found.status_code == 400
    assert "&#39;maximum&#39;" in main_of(found.text)


# --- what each viewer sees -----------------------------------------------------------------


async def test_pages_are_complete_without_javascript(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        mesh = await client.get("/")
        machine = await client.get("/console/machines/db1")
        assignment = await client.get("/console/assignments/db1/sqlite")
        seat = await client.get("/console/assignments/mesh/notes")
        found = await client.get("/console/search", params={"q": "query tables"})
    assert [p.status_code for p in (mesh, machine, assignment, seat, found)] == [200] * 5
    assert '<a class="skip" href="#main">' in mesh.text
    assert '<th scope="col">' in mesh.text
    for link in (
        'href="/console/machines/db1"',
        'href="/console/machines/db2"',
        'href="/console/assignments/db1/sqlite"',
        'href="/console/assignments/mesh/notes"',
    ):
        assert link in mesh.text
    assert "5 tools you may call, on 2 machines." in mesh.text
    assert re.search(
        r"db1/sqlite</code></a></th>.*?data-label=\"Tools you may call\">2<", mesh.text, re.S
    )
    assert 'status status-ok">answering' in machine.text
    assert "<code>db1/sqlite/query</code>" in assignment.text
    assert "<code>sql</code>" in assignment.text  # the input schema, as a table and as JSON
    assert "Input schema (JSON)" in assignment.text
    assert "<code>mesh/notes/list_tables</code>" in seat.text
    assert 'href="/console/assignments/db1/sqlite?tool=query#tool-query"' in found.text


async def test_viewer_without_grants_sees_no_tools(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("nobody") as client:
        mesh = await client.get("/")
        machine = await client.get("/console/machines/db1")
        assignment = await client.get("/console/assignments/db1/sqlite")
        found = await client.get("/console/search", params={"q": "query"})
    assert "No tools to show" in mesh.text
    assert "db1" not in main_of(mesh.text)
    assert machine.status_code == 404
    assert assignment.status_code == 404
    assert "db1/sqlite" not in main_of(assignment.text)
    assert found.status_code == 200
    assert "No tool you may call matches" in found.text
    assert "db1/sqlite/query" not in found.text


async def test_operator_sees_every_machine_but_only_the_tools_granted(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        mesh = await client.get("/")
        db2 = await client.get("/console/assignments/db2/node")
        await console.services.registrar.retire("db2", None)
        after = await client.get("/console/machines/db2")
    assert 'href="/console/machines/db2"' in mesh.text  # from the operators' view
    assert 'href="/console/assignments/db2/node"' not in mesh.text  # no tool of it is granted
    assert "Runs on" in mesh.text
    assert db2.status_code == 200
    assert "No tools to show" in db2.text
    assert "db2/node/uptime" not in db2.text
    assert 'status status-retired">retired' in after.text


async def test_a_retired_machine_and_assignment_say_they_are_retired(tmp_path: Path) -> None:
    """A retired machine's page said "Your grants let you call no tool here": the operator
    looked for a missing grant. It says it is retired, and how it comes back."""
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        await console.services.transact(
            lambda session: AccessStore(session).grant("root", "*/*/*", effect="allow")
        )
        await console.services.registrar.retire("db1", "sqlite")
        await console.services.registrar.retire("db2", None)
        machine = await client.get("/console/machines/db2")
        assignment = await client.get("/console/assignments/db1/sqlite")
    for page in (machine, assignment):
        assert page.status_code == 200
        assert '<p class="empty-title">Retired</p>' in page.text
        assert "Your grants let you call no tool here" not in page.text
    assert "This machine is retired" in machine.text and "POST /api/v1/machines" in machine.text
    assert "This assignment is retired" in assignment.text


async def test_retired_machines_are_not_counted_among_those_the_tools_are_on(
    tmp_path: Path,
) -> None:
    """An operator's lede counted every machine of the operators' view — retired ones, and ones
    holding no tool of theirs: "2 tools you may call, on 3 machines"."""
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        await console.services.transact(
            lambda session: AccessStore(session).grant("root", "*/*/*", effect="allow")
        )
        await console.services.registrar.retire("db2", None)
        mesh = await client.get("/")
    # db1's three and the seat's one, on web1; the sentence counts the cards beneath it (db2's
    # retired card among them), which read "on 1 machine" above three cards
    assert "4 tools you may call, on 2 of the 3 machines below." in mesh.text


@pytest.mark.parametrize("who", ["root", "alice"])
async def test_an_unknown_machine_is_no_such_machine(tmp_path: Path, who: str) -> None:
    """A machine page for a name no machine has answered ``unknown_tool``: there is no tool
    in question. It is ``not_found``, "No such machine"; an assignment likewise."""
    async with console_app(tmp_path) as console, console.signed_in(who) as client:
        machine = await client.get("/console/machines/db9")
        bad = await client.get("/console/machines/DB9")
        assignment = await client.get("/console/assignments/db1/nothing")
        fragment = await client.get("/console/machines/db9", headers={"x-meshnav-fragment": "1"})
    for page in (machine, bad, fragment):
        assert page.status_code == 404
        assert "No such machine" in page.text
        assert "unknown_tool" not in page.text
    assert "<code>not_found</code>" in machine.text
    assert assignment.status_code == 404 and "No such assignment" in assignment.text


async def test_a_principal_with_no_rows_of_its_own_is_not_told_nobody_may_call(
    tmp_path: Path,
) -> None:
    """The grants page filtered to a principal with no rows said "Nobody may call anything yet",
    with other principals' rows in the registry. It says that principal has no rows of its own,
    and whether the rows for ``*`` apply to it."""
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        alone = await client.get("/console/grants", params={"principal": "nobody"})
        await console.services.transact(
            lambda session: AccessStore(session).grant("*", "db2/*/*", effect="allow")
        )
        with_every = await client.get("/console/grants", params={"principal": "nobody"})
        own = await client.get("/console/grants", params={"principal": "alice"})
    for page in (alone, with_every):
        assert "Nobody may call anything yet" not in page.text
        assert "No rows of its own" in page.text
        assert "No grant row names <strong>nobody</strong>" in page.text
    assert "no row for <code>*</code> applies to it either" in alone.text
    assert "the rows for <code>*</code> below apply to it" in with_every.text
    assert "<code>db2/*/*</code>" in with_every.text
    assert "No rows of its own" not in own.text


async def test_a_machines_heartbeat_is_how_long_ago_with_the_time_on_hover(
    tmp_path: Path,
) -> None:
    """The last heartbeat was an ISO timestamp with microseconds to read and subtract."""
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        at = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=3)

        def beat(session: Any) -> None:
            session.execute(
                update(Machine)
                .where(Machine.name == "db1")
                .values(last_heartbeat_at=at, heartbeat_s=30, advertise_url="http://127.0.0.1:9/")
            )

        await console.services.transact(beat)
        await console.services.catalog.refresh_heartbeats()
        page = await client.get("/console/machines/db1")
    shown = at.isoformat().replace("+00:00", "Z")
    found = re.search(
        rf'<time datetime="{shown}" title="{shown}" data-ago>(\d+) s ago</time>', page.text
    )
    assert found, page.text
    assert 3 <= int(found.group(1)) < 60


def test_how_long_ago_is_worded_in_the_largest_whole_unit() -> None:
    from navigator.console.tables import ago

    assert [ago(s) for s in (0, 3.9, 59, 60, 3_599, 3_600, 86_399, 86_400 * 5)] == [
        *["0 s ago", "3 s ago", "59 s ago", "1 min ago", "59 min ago", "1 h ago", "23 h ago"],
        "5 d ago",
    ]


async def test_the_arguments_table_shows_allowed_values_bounds_and_defaults(
    tmp_path: Path,
) -> None:
    """The arguments table showed a name, a type and a description: an agent's operator could
    not see which values a ``database`` takes, or how many rows at most, without the JSON."""
    report = {
        "name": "report",
        "inputSchema": {
            "type": "object",
            "properties": {
                "format": {"type": "string", "enum": ["csv", "json"], "default": "csv"},
                "rows": {"type": "integer", "minimum": 1, "maximum": 500},
                "name": {"type": "string", "maxLength": 40, "pattern": "^[a-z]+$"},
                "mode": {"const": "fast"},
                "plain": {"type": "boolean"},
            },
        },
    }
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        await console.register("db1", AssignmentSpec(role="reports", module="r", tools=[report]))
        page = await client.get("/console/assignments/db1/reports")
    cells = dict(
        re.findall(
            r'<th data-label="Argument" scope="row"><code>(\w+)</code></th>'
            r'.*?<td data-label="Accepts">(.*?)</td>',
            page.text,
            re.S,
        )
    )
    assert cells["format"] == (
        "one of <code>&#34;csv&#34;</code>, <code>&#34;json&#34;</code>; "
        "default <code>&#34;csv&#34;</code>"
    )
    assert cells["rows"] == "at least 1; at most 500"
    assert cells["name"] == "at most 40 characters; matching <code>&#34;^[a-z]+$&#34;</code>"
    assert cells["mode"] == "exactly <code>&#34;fast&#34;</code>"
    assert cells["plain"] == '<span class="muted">—</span>'


async def test_grants_page_needs_mesh_admin(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console:
        async with console.signed_in("alice") as client:
            refused = await client.get("/console/grants")
            home = await client.get("/")
        async with console.signed_in("root") as client:
            shown = await client.get("/console/grants")
            filtered = await client.get("/console/grants", params={"principal": "alice"})
    assert refused.status_code == 403
    assert "tool_not_granted" in refused.text
    assert 'href="/console/grants"' not in home.text
    assert shown.status_code == 200
    assert "<code>db1/*/*</code>" in shown.text
    assert "<code>*/*/*</code>" in shown.text
    assert "<code>db1/*/*</code>" not in main_of(filtered.text).split("Grant rows")[1]


async def test_the_grants_page_shows_the_first_rows_and_counts_the_rest(tmp_path: Path) -> None:
    """A review: the page rendered every row — 100,000 grants, a 23 MB page, the navigator's
    loop held for 8 s while it was built. It shows the first 500 and counts the others."""
    async with console_app(tmp_path) as console:

        def many(session: Any) -> None:
            store = AccessStore(session)
            for number in range(600):
                store.grant(f"agent{number}", f"db{number % 7}/*/*", effect="allow")

        await console.services.transact(many)
        async with console.signed_in("root") as client:
            page = main_of((await client.get("/console/grants")).text)
    rows = page.split('id="rows-h"')[1]
    assert rows.count("<tr") == CONSOLE_ROWS + 1  # and its header
    assert f"The first {CONSOLE_ROWS} of 602 grant rows" in rows


async def test_a_listing_longer_than_the_console_reads_says_it_is_cut(tmp_path: Path) -> None:
    """The console follows at most ``Limits.console_listing_pages`` pages of a ``seats``
    listing: past them, the mesh, a machine and an assignment were drawn as if that were all
    there is, with the counts of what was read. Each page now says that it is cut, as the grants
    page does."""
    one_page = replace(LIMITS, console_listing_pages=1)  # one page of 100 entries
    many = [
        {"name": f"tool_{i:03d}", "description": "A tool.", "inputSchema": {"type": "object"}}
        for i in range(120)
    ]
    async with console_app(tmp_path, one_page) as console:
        await console.register("db9", AssignmentSpec(role="big", module="big", tools=many))
        for i in range(100):
            await console.register(
                f"m{i:03d}", AssignmentSpec(role="logs", module="logs", tools=[LIST_TOOL])
            )
            await console.register(
                "db9", AssignmentSpec(role=f"r{i:03d}", module="logs", tools=[LIST_TOOL])
            )
        async with console.signed_in("alice") as client:
            whole = main_of((await client.get("/console/assignments/db9/big")).text)
            last = main_of((await client.get("/console/assignments/db9/big?page=2")).text)
            machine = main_of((await client.get("/console/machines/db9")).text)
            mesh = main_of((await client.get("/")).text)
        await console.services.transact(
            lambda s: AccessStore(s).grant("root", "*/*/*", effect="allow")
        )
        async with console.signed_in("root") as client:
            operators = main_of((await client.get("/")).text)
            operators_machine = main_of((await client.get("/console/machines/db9")).text)
    assert "Tools 1 to 50 of 100" in whole  # what was read; the page must say there is more
    assert "tool_119" not in last
    for page in (whole, last, machine, mesh, operators, operators_machine):
        assert "not every" in page and "meshnav mesh" in page, page[:400]


def test_the_grants_page_says_which_principals_have_expired() -> None:
    """An expired principal's token is refused; the page called it active."""
    made = datetime(2026, 1, 1, tzinfo=UTC)

    def principal(name: str, expires: datetime | None, revoked: bool = False) -> PrincipalRecord:
        return PrincipalRecord(name, ("mesh:call",), None, expires, revoked, made)

    people = [
        principal("dave", datetime(2026, 2, 1, tzinfo=UTC)),
        principal("erin", None),
        principal("fay", None, revoked=True),
    ]
    page = grants_page(GrantsListing(people, len(people), [], 0), None)
    cells = re.findall(r"<td[^>]*>([a-z]+)</td>", str(page.main))
    assert [c for c in cells if c in ("active", "expired", "revoked")] == [
        "expired",
        "active",
        "revoked",
    ]


async def test_search_answers_as_the_walker_tool(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        page = await client.get("/console/search", params={"q": "tables", "within": "db1/*/*"})
        answer, _ = await console.services.navigator.search(
            Caller("alice", frozenset()),
            "tables",
            limit=8,
            within="db1/*/*",
            schemas=False,
            cursor=None,
        )
        bad_pattern = await client.get(
            "/console/search", params={"q": "tables", "within": "DB1/**"}
        )
        bad_limit = await client.get("/console/search", params={"q": "tables", "limit": "99"})
    shown = re.findall(r'<li class="result"><a href="[^"]*"><code>([^<]+)</code>', page.text)
    assert shown == [r["address"] for r in answer["results"]]
    assert shown
    assert bad_pattern.status_code == 400
    assert "invalid_address" in bad_pattern.text
    assert bad_limit.status_code == 400
    assert "invalid_arguments" in bad_limit.text


async def test_tool_text_is_escaped_everywhere(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        pages = [
            await client.get("/console/assignments/db1/sqlite"),
            await client.get("/console/search", params={"q": "query"}),
            await client.get("/console/search", params={"q": HOSTILE, "within": '"><b>'}),
        ]
    for page in pages:
        assert "<script>" not in page.text.replace('<script src="/console/static/console.js', "")
        assert "<img src=x" not in page.text
        assert "<b>" not in page.text
    assert "&lt;script&gt;" in pages[0].text


async def test_a_tool_with_an_oversized_title_hides_none_of_its_neighbours(
    tmp_path: Path,
) -> None:
    """The console reads the walker tools: a 40,000-character title is cut there as in
    ``seats`` and ``search``, and the tools beside it are shown."""
    title = "Rotate logs " + "x" * 40_000
    tools = [
        {"name": name, "description": "Rotate logs.", "inputSchema": {"type": "object"}}
        for name in ("list_logs", "rotate_keys", "rotate_logs")
    ]
    tools[-1]["title"] = title
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        await console.register("web2", AssignmentSpec(role="ops", module="ops", tools=tools))
        assignment = await client.get("/console/assignments/web2/ops")
        found = await client.get("/console/search", params={"q": "rotate logs"})
    assert assignment.status_code == 200 and found.status_code == 200
    for name in ("list_logs", "rotate_keys", "rotate_logs"):
        assert f"web2/ops/{name}" in main_of(assignment.text)
    assert "web2/ops/rotate_logs" in main_of(found.text)
    for page in (assignment, found):
        assert title[:199] + "…" in page.text and title[:200] not in page.text


# --- headers, fragments, assets ------------------------------------------------------------


async def test_every_console_answer_carries_the_security_headers(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console:
        async with console.client() as anonymous:
            answers = [
                await anonymous.get("/"),
                await anonymous.get("/console/events"),
                await anonymous.get("/console/static/console.css"),
                await anonymous.post("/console/sign-in", data={"token": "nope"}),
            ]
        async with console.signed_in("alice") as client:
            answers += [
                await client.get("/"),
                await client.get("/", headers={"X-Meshnav-Fragment": "1"}),
                await client.get("/console/nothing-here"),
            ]
    for answer in answers:
        assert CSP in answer.headers["content-security-policy"], answer.url
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert answers[-1].status_code == 404
    assert answers[-3].headers["cache-control"] == "no-store"


async def test_pages_load_nothing_from_elsewhere(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        html = (await client.get("/")).text
    references = re.findall(r'(?:src|href|action)="([^"]*)"', html)
    assert references
    assert all(ref.startswith(("/", "#")) and not ref.startswith("//") for ref in references)
    assert "style=" not in html
    assert "<script>" not in html


async def test_fragment_is_the_main_content_only(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        whole = await client.get("/console/machines/db1")
        fragment = await client.get("/console/machines/db1", headers={"X-Meshnav-Fragment": "1"})
        missing = await client.get("/console/machines/nope", headers={"X-Meshnav-Fragment": "1"})
    assert fragment.status_code == 200
    assert fragment.headers["content-type"].startswith("text/html")
    assert "X-Meshnav-Fragment" in fragment.headers["vary"]
    assert fragment.text == main_of(whole.text)
    assert "<header" not in fragment.text.split("<h1>")[0]
    assert missing.status_code == 404
    assert missing.text.startswith("<h1>Not found</h1>")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("console.css", "text/css"),
        ("console.js", "text/javascript"),
        ("favicon.svg", "image/svg+xml"),
    ],
)
async def test_static_assets_are_served_by_the_navigator(
    tmp_path: Path, name: str, kind: str
) -> None:
    async with console_app(tmp_path) as console, console.client() as client:
        asset = await client.get(f"/console/static/{name}")
        again = await client.get(
            f"/console/static/{name}", headers={"if-none-match": asset.headers["etag"]}
        )
        missing = [
            await client.get(f"/console/static/{path}") for path in ("app.py", "%2e%2e%2fapp.py")
        ]
    assert asset.status_code == 200
    assert asset.headers["content-type"].startswith(kind)
    assert again.status_code == 304
    assert missing[0].status_code == 404
    assert missing[1].status_code in (401, 404)  # not an asset: the console's catch-all answers
    assert all("__future__" not in m.text for m in missing)


# --- live ----------------------------------------------------------------------------------


async def session_cookie(app: Starlette, token: str) -> str:
    """The console's session cookie for a sign-in with ``token``."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        answer = await client.post("/console/sign-in", data={"token": token})
    assert answer.status_code == 303, answer.text
    return str(client.cookies[COOKIE])


@asynccontextmanager
async def open_events(app: Starlette, token: str) -> AsyncIterator[Any]:
    """``GET /console/events`` served as a server would, signed in with ``token``: yields the
    stream of ASGI messages, and disconnects the client on the way out."""
    cookie = f"{COOKIE}={await session_cookie(app, token)}".encode()
    headers = [(b"host", b"testserver"), (b"cookie", cookie)]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/console/events",
        "raw_path": b"/console/events",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    sender, receiver = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    gone = anyio.Event()

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        await sender.send(dict(message))

    async with sender, receiver, anyio.create_task_group() as tasks:
        tasks.start_soon(app, scope, receive, send)
        try:
            yield receiver
        finally:
            gone.set()


async def test_events_stream_says_when_an_assignment_registers(tmp_path: Path) -> None:
    async with (
        console_app(tmp_path) as console,
        open_events(console.app, console.tokens["alice"]) as messages,
    ):
        with anyio.fail_after(10):
            start = await messages.receive()
            hello = await messages.receive()
            await console.register(
                "db3", AssignmentSpec(role="reports", module="reports", tools=[LIST_TOOL])
            )
            body = b""
            while b"event: change" not in body:
                body += (await messages.receive())["body"]
    headers = dict(start["headers"])
    assert start["status"] == 200
    assert headers[b"content-type"].startswith(b"text/event-stream")
    assert CSP.encode() in headers[b"content-security-policy"]
    assert b"retry: " in hello["body"]
    data = json.loads(body.split(b"data: ", 1)[1].split(b"\r\n", 1)[0])
    assert "machine" in data["kinds"]
    assert b"db3" not in body  # what changed is the page's to find out, under the viewer's grants


async def test_events_stream_ends_once_the_token_is_revoked(tmp_path: Path) -> None:
    async with (
        console_app(tmp_path) as console,
        open_events(console.app, console.tokens["alice"]) as messages,
    ):
        with anyio.fail_after(10):
            await messages.receive()  # the response starts
            await messages.receive()  # retry: ...
            await console.services.transact(lambda s: AccessStore(s).revoke_principal("alice"))
            await console.register(
                "db3", AssignmentSpec(role="reports", module="reports", tools=[LIST_TOOL])
            )
            body = b""
            while True:
                message = await messages.receive()
                body += message.get("body", b"")
                if not message.get("more_body", False):
                    break
    assert b"event: signed-out" in body
    assert b"event: change" not in body


async def test_events_stream_says_when_the_viewers_grants_change(tmp_path: Path) -> None:
    """A grant taken from a viewer changes no catalogue, yet their page shows tools they may no
    longer call: their stream says so by the next keep-alive, as does an operator's (the grants
    page lists every row); a viewer whose rows stayed is told nothing."""

    async def until(messages: Any, end: bytes) -> bytes:
        body = b""
        while end not in body:
            body += (await messages.receive()).get("body", b"")
        return body

    def revoke_alices_rows(session: Any) -> None:
        store = AccessStore(session)
        for row in store.grants("alice"):
            store.revoke_grant(row.id)

    often = replace(LIMITS, console_keepalive_s=0.2)
    async with console_app(tmp_path, often) as console, AsyncExitStack() as stack:
        streams = {
            who: await stack.enter_async_context(open_events(console.app, console.tokens[who]))
            for who in ("alice", "root", "nobody")
        }
        with anyio.fail_after(10):
            quiet = {who: await until(m, b": keep-alive") for who, m in streams.items()}
            await console.services.transact(revoke_alices_rows)
            told = {who: await until(streams[who], b"event: change") for who in ("alice", "root")}
            after = b""
            while after.count(b": keep-alive") < 3:  # nobody's stream checked again since
                after += (await streams["nobody"].receive())["body"]
    assert not any(b"event: change" in body for body in quiet.values())
    for body in told.values():
        data = json.loads(body.split(b"data: ", 1)[1].split(b"\r\n", 1)[0])
        assert data["kinds"] == ["grants"]
    assert b"event: change" not in after


async def test_events_stream_says_when_a_machine_stops_answering(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console:
        registry = console.services.registry

        def beat(at: datetime) -> None:
            with registry.transaction() as session:
                session.execute(
                    update(Machine)
                    .where(Machine.name == "db2")
                    .values(
                        last_heartbeat_at=at, heartbeat_s=1, advertise_url="http://127.0.0.1:9/"
                    )
                )

        await anyio.to_thread.run_sync(beat, datetime.now(UTC))
        await console.services.catalog.refresh_heartbeats()
        assert console.services.catalog.machine_status("db2") == "answering"
        async with open_events(console.app, console.tokens["alice"]) as messages:
            with anyio.fail_after(15):
                await messages.receive()
                await messages.receive()
                body = b""
                while b"event: change" not in body:  # no heartbeat: silent for three intervals
                    body += (await messages.receive())["body"]
        assert console.services.catalog.machine_status("db2") == "not answering"
    assert b'"status"' in body


class TokenReadsLost(LosingRegistry):
    """The registry gone for the reads of a token's holder, the check of a viewer."""

    def losing(self, params: Mapping[str, Any]) -> bool:
        return "token_hash" in params


async def test_events_stream_outlives_a_registry_it_cannot_read_for_a_while(
    tmp_path: Path,
) -> None:
    """A viewer who cannot be checked because the registry is down is not signed out: the stream
    stays, and the change it could not announce is announced once the viewer is checked again."""
    async with console_app(tmp_path, registry=TokenReadsLost) as console:
        registry = console.services.registry
        assert isinstance(registry, TokenReadsLost)
        async with open_events(console.app, console.tokens["alice"]) as messages:
            with anyio.fail_after(15):
                await messages.receive()
                await messages.receive()
                registry.lost = 1
                await console.register(
                    "db3", AssignmentSpec(role="reports", module="reports", tools=[LIST_TOOL])
                )
                body = b""
                while b"event: change" not in body and b"signed-out" not in body:
                    body += (await messages.receive())["body"]
    assert b"signed-out" not in body
    assert registry.lost == 0  # the registry was down for one check, and the stream waited it out


async def test_open_streams_are_bounded_per_viewer_and_given_back(tmp_path: Path) -> None:
    """Every open stream is woken and its viewer checked on every change, so how many are open is
    bounded: a viewer past ``STREAMS_PER_VIEWER`` is refused with a §9 body, another viewer is
    not, and a closed stream's slot is given back."""
    async with console_app(tmp_path) as console, console.client() as client:

        async def refused(viewer: str) -> None:
            await client.post("/console/sign-in", data={"token": console.tokens[viewer]})
            answer = await client.get("/console/events")  # an opened stream would not end here
            assert answer.status_code == 429
            assert answer.json()["error"] == "too_many_streams"

        with anyio.fail_after(20):
            async with AsyncExitStack() as streams:
                for _ in range(STREAMS_PER_VIEWER):
                    messages = await streams.enter_async_context(
                        open_events(console.app, console.tokens["alice"])
                    )
                    assert (await messages.receive())["status"] == 200
                async with AsyncExitStack() as last:
                    await refused("alice")
                    other = await last.enter_async_context(
                        open_events(console.app, console.tokens["root"])
                    )
                    assert (await other.receive())["status"] == 200
            async with open_events(console.app, console.tokens["alice"]) as messages:
                assert (await messages.receive())["status"] == 200
