"""The console manages the mesh, in a real browser (issue 38): Debian's Chromium driven by
Playwright against a navigator and a node started as an operator would. Each of an operator's
changes is made from ``/console/manage`` (its refusal to a viewer without ``mesh:admin`` and to
another site is in ``tests/navigator/console/test_manage.py``), and a tool is tried from its form.

Set ``MESHNAV_SCREENSHOTS=dir`` to keep screenshots of the management pages (``docs/console-
manage.png``, ``docs/console-try.png`` are made this way).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.e2e.test_console_browser import ConsoleMesh, browser, sign_in, start_mesh

expect.set_options(timeout=15_000)

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.xdist_group("browser")]

__all__ = ["browser"]  # the module's browser, shared with the console's other browser tests


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleMesh]:
    """db1 with a SQLite database, and the mesh seat ``notes`` on web1."""
    yield from start_mesh(tmp_path_factory.mktemp("manage"), {"db1": ("inventory", "products")})


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    made = browser.new_context(viewport={"width": 1200, "height": 900})
    try:
        yield made
    finally:
        made.close()


def _screenshot(page: Page, name: str) -> None:
    if folder := os.environ.get("MESHNAV_SCREENSHOTS"):
        page.screenshot(path=str(Path(folder) / name))


SECTIONS = {
    "principal": "#principals",
    "grant": "#grants",
    "seat": "#seats",
    "machine": "#machines",
    "assignment": "#machines",
    "tool": "#machines",
}


def _form(page: Page, action: str, row: str | None = None) -> Page:
    """The form of ``action`` (in the table row holding ``row``, if given)."""
    section = SECTIONS[action.split("-", maxsplit=1)[0]]
    scope = page.locator(f"{section} tr", has_text=row) if row else page
    return scope.locator(f'form[data-action="{action}"]').first  # type: ignore[return-value]


def _submit(
    page: Page, action: str, row: str | None = None, confirm: bool = False, **fields: str
) -> None:
    form = _form(page, action, row)
    for name, value in fields.items():
        control = form.locator(f'[name="{name}"]')
        if control.evaluate("e => e.tagName") == "SELECT":
            control.select_option(value)
        else:
            control.fill(value)
    form.locator('button[type="submit"]').click()
    if confirm:
        dialog = page.get_by_role("alertdialog")
        expect(dialog).to_be_visible()
        dialog.get_by_role("button", name="Yes, do it").click()
    expect(page.locator("#outcome")).to_be_visible()


def test_an_operator_manages_principals_grants_seats_and_the_mesh(
    mesh: ConsoleMesh, context: BrowserContext
) -> None:
    page = sign_in(context, mesh.url, mesh.operator)
    page.get_by_role("link", name="Manage").click()
    expect(page.get_by_role("heading", level=1, name="Manage the mesh")).to_be_visible()

    _submit(page, "principal-add", name="carol", scopes="ops", expiresDays="30")
    first = page.locator("#new-token").inner_text()
    assert first.startswith("mnv_") or len(first) > 20
    _submit(page, "grant-add", principal="carol", target="db1/*/*", effect="allow")
    expect(page.locator("#outcome")).to_contain_text("allow db1/*/*")
    _submit(page, "principal-quota", row="carol", ratePerMinute="60", concurrency="2")
    expect(page.locator("#principals tr", has_text="carol")).to_contain_text("at once 2")
    page.evaluate("window.scrollTo(0, 0)")
    _screenshot(page, "console-manage.png")
    _submit(page, "principal-rotate", row="carol", confirm=True, expiresDays="7")
    assert page.locator("#new-token").inner_text() != first

    page.goto(mesh.url + "/console/manage?principal=carol&address=db1/sqlite/query#why")
    expect(page.locator("#verdict")).to_contain_text("db1/*/*")

    _submit(page, "seat-place", seat="cache", machine="db1", role="cache")
    expect(page.locator("#seats tr", has_text="mesh/cache")).to_contain_text("db1/cache")
    _submit(page, "seat-move", row="mesh/cache", confirm=True, machine="db1", role="cache2")
    expect(page.locator("#seats tr", has_text="mesh/cache")).to_contain_text("db1/cache2")
    _submit(page, "seat-remove", row="mesh/cache", confirm=True)
    expect(page.locator("#seats tr", has_text="mesh/cache")).to_have_count(0)

    _submit(page, "tool-mark", address="db1/sqlite/query", confirmation="required")
    expect(page.locator("#outcome")).to_contain_text("marked required")
    _submit(page, "tool-mark", address="db1/sqlite/query", confirmation="auto")
    _submit(page, "assignment-retire", row="db1/cache2", confirm=True)
    expect(page.locator("#outcome")).to_contain_text("db1/cache2 retired")

    grant_row = page.locator("#grants tr", has_text="carol")
    grant_id = grant_row.locator("th").inner_text()
    _submit(page, "grant-revoke", row="carol", confirm=True)
    expect(page.locator("#outcome")).to_contain_text(f"Grant row {grant_id} revoked")
    _submit(page, "principal-revoke", row="carol", confirm=True)
    expect(page.locator("#outcome")).to_contain_text("carol revoked")


def test_a_tool_is_tried_through_the_walker(mesh: ConsoleMesh, context: BrowserContext) -> None:
    page = sign_in(context, mesh.url, mesh.operator)
    page.goto(mesh.url + "/console/assignments/db1/sqlite?tool=query#tool-query")
    page.locator('a[href="/console/try/db1/sqlite/query"]').click()
    page.locator('[name="arg.database"]').select_option('"inventory"')
    page.locator('[name="arg.sql"]').fill("select count(*) as n from products")
    page.get_by_role("button", name="Call").click()
    expect(page.locator("#answer")).to_contain_text('"n"')
    _screenshot(page, "console-try.png")

    page.goto(mesh.url + "/console/try/db1/sqlite/execute")  # destructive: the person is asked
    page.locator('[name="arg.database"]').select_option('"inventory"')
    page.locator('[name="arg.sql"]').fill("insert into products default values")
    page.get_by_role("button", name="Call").click()
    dialog = page.get_by_role("alertdialog")
    expect(dialog).to_contain_text("operator asks to run db1/sqlite/execute")
    dialog.get_by_role("button", name="Yes, do it").click()
    expect(page.locator("#answer")).to_contain_text("rowcount")
    assert re.search(r'"isError": true', page.locator("#answer").inner_text()) is None

    stranger = sign_in(context.browser.new_context(), mesh.url, mesh.stranger)  # type: ignore[union-attr]
    answer = stranger.goto(mesh.url + "/console/try/db1/sqlite/query")
    assert answer is not None and answer.status == 403
    expect(stranger.locator("main, body").first).to_contain_text("tool_not_granted")
    stranger.context.close()
