"""The console in a real browser against real processes (SPEC §8, issue 7): Debian's Chromium
driven by Playwright, a navigator and three nodes started as an operator would.

Set ``MESHNAV_SCREENSHOT=path.png`` to keep a screenshot of the mesh page (docs/console-mesh.png
is made this way).
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect, sync_playwright

from tests.harness import MeshHarness

# The machine may be loaded (2 cores, real processes): wait generously, never forever.
expect.set_options(timeout=15_000)

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.xdist_group("browser")]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPORT_TOOLS = [
    {
        "name": "monthly_revenue",
        "title": "Monthly revenue",
        "description": "Revenue per month from the orders table.",
        "inputSchema": {
            "type": "object",
            "properties": {"year": {"type": "integer", "description": "Calendar year."}},
            "required": ["year"],
        },
        "annotations": {"readOnlyHint": True},
    }
]


@dataclass
class ConsoleMesh:
    harness: MeshHarness
    operator: str
    stranger: str

    @property
    def url(self) -> str:
        return self.harness.navigator_url


def _seed(path: Path, statements: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as connection:
        for statement in statements:
            connection.execute(statement)


def _wait_registered(harness: MeshHarness, name: str, attempts: int = 4) -> None:
    """The harness's wait, repeated while the node is still starting (a loaded machine)."""
    process = harness.nodes[name].process
    for attempt in range(attempts):
        try:
            harness.wait_registered(name, process)
            return
        except RuntimeError:
            if process.poll() is not None or attempt == attempts - 1:
                raise


def start_mesh(root: Path, databases: dict[str, tuple[str, str]]) -> Iterator[ConsoleMesh]:
    """A navigator; a node for each machine of ``databases`` with its SQLite database (its name
    and its one table) and web1 holding the mesh seat ``notes``; an operator and a stranger."""
    for machine, (database, table) in databases.items():
        create = f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, name TEXT)"
        _seed(root / machine / f"{database}.db", [create])
    _seed(root / "web1" / "notes.db", ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"])
    harness = MeshHarness(root / "run")
    operator = harness.principal("operator", ["mesh:admin"])
    harness.grant("operator", "*/*/*")
    stranger = harness.principal("stranger")
    try:
        harness.start_navigator()
        for machine in databases:
            harness.start_node(machine, ["node", f"sqlite:{root / machine}"], wait=False)
        harness.start_node(
            "web1", ["node"], seats=[f"notes=sqlite:{root / 'web1' / 'notes.db'}"], wait=False
        )
        for name in (*databases, "web1"):
            _wait_registered(harness, name)
        yield ConsoleMesh(harness, operator, stranger)
    finally:
        harness.close()


@pytest.fixture(scope="module")
def console_mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleMesh]:
    """The demo's shape: db1 and db2 with SQLite data, web1 holding the mesh seat ``notes``."""
    root = tmp_path_factory.mktemp("console")
    yield from start_mesh(
        root, {"db1": ("inventory", "products"), "db2": ("customers", "customers")}
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (scripts/system-deps installs it)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@dataclass
class Recorded:
    """A fresh browser profile, and every URL its pages asked for."""

    context: BrowserContext
    urls: list[str]


@pytest.fixture
def recorded(browser: Browser, console_mesh: ConsoleMesh) -> Iterator[Recorded]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    urls: list[str] = []
    context.on("request", lambda request: urls.append(request.url))
    try:
        yield Recorded(context, urls)
    finally:
        context.close()
    origin = urlsplit(console_mesh.url)
    elsewhere = [
        url
        for url in urls
        if (urlsplit(url).scheme, urlsplit(url).netloc) != (origin.scheme, origin.netloc)
    ]
    assert urls, "the page made no requests at all"
    assert elsewhere == [], "the console loaded something from outside the navigator"


def sign_in(context: BrowserContext, url: str, token: str) -> Page:
    page = context.new_page()
    page.goto(url + "/")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1, name="The mesh")).to_be_visible()
    assert token not in page.url
    return page


def machine_status(page: Page, machine: str) -> Locator:
    return page.locator("article.card", has=page.locator(f"#machine-{machine}")).locator(
        ".card-head .status"
    )


def test_console_shows_the_mesh_and_follows_it_live(
    console_mesh: ConsoleMesh, recorded: Recorded
) -> None:
    page = sign_in(recorded.context, console_mesh.url, console_mesh.operator)
    for machine in ("db1", "db2", "web1"):
        expect(machine_status(page, machine)).to_have_text("answering")
    for assignment in (
        "db1/sqlite",
        "db1/node",
        "db2/sqlite",
        "db2/node",
        "web1/node",
        "mesh/notes",
    ):
        expect(page.locator(f'a[href="/console/assignments/{assignment}"]').first).to_be_visible()
    expect(page.locator("#live")).to_have_text("Live")
    if screenshot := os.environ.get("MESHNAV_SCREENSHOT"):
        page.screenshot(path=screenshot, full_page=True)
    page.evaluate("window.meshnavTestMarker = 'still the same page'")

    registered = time.monotonic()
    httpx.post(
        console_mesh.url + "/api/v1/assignments",
        json={"machine": "db1", "role": "reports", "tools": REPORT_TOOLS},
        headers={"Authorization": f"Bearer {console_mesh.operator}"},
        timeout=10,
    ).raise_for_status()
    expect(page.locator('a[href="/console/assignments/db1/reports"]')).to_be_visible(timeout=2000)
    assert time.monotonic() - registered < 2.5

    heartbeat_s = console_mesh.harness.heartbeat_s
    killed = time.monotonic()
    console_mesh.harness.kill_node("db2")
    expect(machine_status(page, "db2")).to_have_text(
        "not answering", timeout=(3 * heartbeat_s + 1.5) * 1000
    )
    assert time.monotonic() - killed < 3 * heartbeat_s + 1.5
    expect(machine_status(page, "db1")).to_have_text("answering")
    assert page.evaluate("window.meshnavTestMarker") == "still the same page"  # never reloaded


def test_assignment_page_shows_tools_with_their_schemas(
    console_mesh: ConsoleMesh, recorded: Recorded
) -> None:
    page = sign_in(recorded.context, console_mesh.url, console_mesh.operator)
    link = page.locator('a[href="/console/assignments/db1/sqlite"]').first
    expect(link).to_be_visible()
    # A live update may swap the page under a click; following the link's own URL cannot miss.
    page.goto(console_mesh.url + str(link.get_attribute("href")))
    expect(page.get_by_role("heading", level=1, name="db1/sqlite")).to_be_visible()
    query = page.locator("section.tool#tool-query")
    expect(query.get_by_role("heading", name="db1/sqlite/query")).to_be_visible()
    schema = query.locator("details", has=page.get_by_text("Input schema (JSON)"))
    schema.get_by_text("Input schema (JSON)").click()
    expect(schema.locator("pre")).to_be_visible()
    expect(schema.locator("pre")).to_contain_text('"type": "object"')


def test_viewer_without_grants_sees_no_tools(console_mesh: ConsoleMesh, recorded: Recorded) -> None:
    page = sign_in(recorded.context, console_mesh.url, console_mesh.stranger)
    expect(page.get_by_text("No tools to show")).to_be_visible()
    assert page.locator('main a[href^="/console/assignments/"]').count() == 0
    assert page.locator("main article.card").count() == 0
    page.get_by_label("Search tools").fill("list tables")
    page.get_by_label("Search tools").press("Enter")
    expect(page.get_by_text("No tool you may call matches that search.")).to_be_visible()
    expect(page.locator("main .result")).to_have_count(0)


def test_signing_out_ends_the_session_the_browser_held(
    console_mesh: ConsoleMesh, recorded: Recorded
) -> None:
    """The browser holds a session's id, never the token, out of the page's reach; signing out
    ends the session itself, so a copy of the cookie taken before is worth nothing (issue 26)."""
    page = sign_in(recorded.context, console_mesh.url, console_mesh.operator)
    [cookie] = [c for c in recorded.context.cookies() if c["name"] == "meshnav_console"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert console_mesh.operator not in cookie["value"]
    assert "meshnav_console" not in page.evaluate("document.cookie")
    copied = {"meshnav_console": cookie["value"]}
    assert "Signed in as" in httpx.get(console_mesh.url + "/", cookies=copied, timeout=10).text
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert "Signed in as" not in httpx.get(console_mesh.url + "/", cookies=copied, timeout=10).text


def test_a_heartbeat_reads_how_long_ago_and_shows_its_time_on_hover(
    console_mesh: ConsoleMesh, recorded: Recorded
) -> None:
    """A machine's last heartbeat was a raw ISO timestamp. It reads "3 s ago", kept current by
    the page between updates, with the moment itself on hover (its title)."""
    page = sign_in(recorded.context, console_mesh.url, console_mesh.operator)
    page.goto(console_mesh.url + "/console/machines/db1")
    beat = page.locator("main time[data-ago]")
    expect(beat).to_have_text(re.compile(r"^\d+ s ago$"))
    moment = str(beat.get_attribute("datetime"))
    assert beat.get_attribute("title") == moment
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", moment), moment
    beat.hover()
    expect(beat).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\dT"))
    # a page left open: the words follow the clock, not only the next live update (a moment
    # of its own, outside <main>, which a live update would replace)
    page.evaluate(
        "() => { const t = document.createElement('time'); t.id = 'probe';"
        " t.dataset.ago = ''; t.textContent = 'just now';"
        " t.setAttribute('datetime', new Date(Date.now() - 125000).toISOString());"
        " document.body.append(t); }"
    )
    expect(page.locator("#probe")).to_have_text("2 min ago")


def test_an_operator_reads_retired_unknown_and_what_an_argument_accepts(
    console_mesh: ConsoleMesh, recorded: Recorded
) -> None:
    """Issue 29's console answers, as an operator meets them in a browser: a retired machine says
    it is retired and how it comes back; a machine that is not there is "No such machine", not
    ``unknown_tool``; an argument's allowed values are in its table."""
    auth = {"Authorization": f"Bearer {console_mesh.operator}"}
    httpx.post(
        console_mesh.url + "/api/v1/assignments",
        json={"machine": "old1", "role": "reports", "tools": REPORT_TOOLS},
        headers=auth,
        timeout=10,
    ).raise_for_status()
    httpx.post(
        console_mesh.url + "/api/v1/machines/old1/retire", headers=auth, timeout=10
    ).raise_for_status()
    page = sign_in(recorded.context, console_mesh.url, console_mesh.operator)

    page.goto(console_mesh.url + "/console/machines/old1")
    expect(page.locator("main")).to_contain_text("This machine is retired")
    expect(page.locator("main")).not_to_contain_text("Your grants let you call no tool here")

    answer = page.goto(console_mesh.url + "/console/machines/nosuch1")
    assert answer is not None and answer.status == 404
    expect(page.locator("main")).to_contain_text("No such machine")
    expect(page.locator("main")).not_to_contain_text("unknown_tool")

    page.goto(console_mesh.url + "/console/assignments/db1/sqlite")
    accepts = page.locator("main table", has=page.locator("th", has_text="Accepts")).first
    expect(accepts).to_contain_text('one of "inventory"')  # the database enum, as accepted


def _call(url: str, token: str, address: str) -> None:
    """One call through MCP, as an agent makes it (in a thread of its own: Playwright's loop
    runs in this one)."""
    from concurrent.futures import ThreadPoolExecutor

    import anyio

    from tests.harness import mcp_client

    async def call() -> None:
        async with mcp_client(url, token) as client:
            result = await client.call_tool_mcp("call", {"address": address, "args": {}})
            assert not result.is_error, result

    with ThreadPoolExecutor(1) as pool:
        pool.submit(anyio.run, call).result(timeout=60)


def test_activity_shows_calls_live_and_a_viewer_only_their_own(
    console_mesh: ConsoleMesh, recorded: Recorded, browser: Browser
) -> None:
    harness = console_mesh.harness
    name = f"viewer-{time.monotonic_ns()}"
    viewer = harness.principal(name)
    harness.grant(name, "db1/*/*")
    page = sign_in(recorded.context, console_mesh.url, console_mesh.operator)
    page.get_by_role("link", name="Activity").click()
    expect(page.get_by_role("heading", level=1, name="Activity")).to_be_visible()
    expect(page.locator("#live")).to_have_text("Live")
    page.evaluate("window.meshnavTestMarker = 'still the same page'")

    called = time.monotonic()
    _call(console_mesh.url, viewer, "db1/sqlite/list_databases")
    row = page.locator("tbody tr", has_text=name)
    expect(row.first).to_be_visible(timeout=2000)
    assert time.monotonic() - called < 2.5
    expect(row.first).to_contain_text("db1/sqlite/list_databases")
    expect(row.first).to_contain_text("ok")
    assert page.evaluate("window.meshnavTestMarker") == "still the same page", "no reload"
    _call(console_mesh.url, console_mesh.operator, "db1/sqlite/list_databases")
    expect(page.locator("tbody tr", has_text="operator").first).to_be_visible(timeout=2000)

    other = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        own = sign_in(other, console_mesh.url, viewer)
        own.goto(console_mesh.url + "/console/activity?principal=operator")
        expect(own.get_by_role("heading", level=1, name="Activity")).to_be_visible()
        expect(own.locator("tbody tr", has_text=name).first).to_be_visible()
        principals = own.locator('tbody td[data-label="Principal"]').all_inner_texts()
        assert principals and set(principals) == {name}, "a viewer sees only their own"
        _call(console_mesh.url, viewer, "db1/sqlite/list_databases")
        expect(own.locator("tbody tr", has_text=name)).to_have_count(2, timeout=2000)
    finally:
        other.close()
