"""The console's search: the ``search`` walker tool's answer for this viewer, and its page.

The query goes through the walker tool's own argument schema first, then ``Navigator.search``,
so the console refuses, ranks, collapses and hides exactly as an agent's search would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup

from navigator.access.grants import Caller
from navigator.console.layout import Page, assignment_href, empty_state, join, status_badge
from navigator.errors import NavigatorError
from navigator.http.numbers import whole_number
from navigator.limits import LIMITS
from navigator.mcp.tools import WALKER_TOOLS, check_arguments
from navigator.validation import compile_schema
from navigator.walker.operations import Navigator

__all__ = ["SearchView", "run_search", "search_page"]


@dataclass(frozen=True, slots=True)
class SearchView:
    query: str
    within: str
    limit: int
    results: tuple[dict[str, Any], ...] = ()
    next_cursor: str | None = None
    error: NavigatorError | None = None
    asked: bool = False


async def run_search(
    navigator: Navigator,
    caller: Caller,
    *,
    query: str | None,
    within: str,
    limit: str,
    cursor: str | None,
) -> SearchView:
    """``search`` exactly as the walker tool answers it: the same argument checks first."""
    # a number past the maximum is still a number: the walker's check says "maximum" for it
    number = whole_number(limit, most=2**31)
    shown = (
        number
        if number is not None and number <= LIMITS.search_limit_max
        else (LIMITS.search_limit_default)
    )
    view = SearchView(query=query or "", within=within, limit=shown)
    if query is None or not query.strip():
        return view
    arguments: dict[str, Any] = {"query": query}
    if within:
        arguments["within"] = within
    if limit:
        arguments["limit"] = limit if number is None else number  # refused as the walker does
    if cursor:
        arguments["cursor"] = cursor
    try:
        check_arguments(
            compile_schema(WALKER_TOOLS["search"][1]["parameters"]), arguments, "search"
        )
        answer, _meta = await navigator.search(
            caller,
            query,
            limit=arguments.get("limit", LIMITS.search_limit_default),
            within=arguments.get("within"),
            schemas=False,
            cursor=arguments.get("cursor"),
        )
    except NavigatorError as error:
        return SearchView(query, within, shown, error=error, asked=True)
    return SearchView(
        query,
        within,
        shown,
        results=tuple(answer["results"]),
        next_cursor=answer.get("nextCursor"),
        asked=True,
    )


def _result(result: dict[str, Any]) -> Markup:
    address = str(result["address"])
    holder, _, tool = address.split("/", 2)
    if holder == "*":
        role = address.split("/")[1]
        holders = join(
            Markup('<li><a href="{}">{}</a></li>').format(assignment_href(f"{h}/{role}", tool), h)
            for h in result.get("holders", [])
        )
        more = result.get("holderCount", 0) - len(result.get("holders", []))
        target = Markup('<code>{}</code><ul class="holders" aria-label="Holders">{}</ul>{}').format(
            address,
            holders,
            Markup('<p class="meta">and {} more</p>').format(more) if more > 0 else "",
        )
    else:
        target = Markup('<a href="{}"><code>{}</code></a>').format(
            assignment_href(address, tool), address
        )
    return Markup('<li class="result">{}<p><strong>{}</strong> {}</p><p>{}</p></li>').format(
        target,
        result.get("title", ""),
        status_badge(str(result.get("status", ""))),
        result.get("summary", ""),
    )


def search_page(view: SearchView) -> Page:
    options = join(
        Markup('<option value="{}"{}>{}</option>').format(
            n, Markup(" selected") if n == view.limit else "", n
        )
        for n in range(1, LIMITS.search_limit_max + 1)
    )
    form = Markup(
        '<form class="search-form" role="search" action="/console/search" method="get">'
        '<p><label for="search-q">What do you need done?</label>'
        '<input id="search-q" name="q" type="search" value="{}" maxlength="{}" required></p>'
        '<p><label for="search-within">Within <span class="muted">(optional pattern, e.g. '
        "<code>db1/*/*</code>)</span></label>"
        '<input id="search-within" name="within" value="{}" maxlength="256"></p>'
        '<p><label for="search-limit">Results per page</label>'
        '<select id="search-limit" name="limit">{}</select></p>'
        '<p><button type="submit">Search</button></p></form>'
    ).format(view.query, LIMITS.query_chars, view.within, options)
    parts = [Markup("<h1>Search</h1>"), form]
    if view.error is not None:
        parts.append(
            Markup(
                '<p class="notice" role="alert">{} <span class="meta">(<code>{}</code>)</span></p>'
            ).format(view.error.message, view.error.code)
        )
    elif view.asked and not view.results:
        parts.append(empty_state("No results", "No tool you may call matches that search."))
    elif view.results:
        items = join(_result(r) for r in view.results)
        more = Markup("")
        if view.next_cursor:
            query = {
                "q": view.query,
                "within": view.within,
                "limit": view.limit,
                "cursor": view.next_cursor,
            }
            more = Markup('<p><a href="/console/search?{}" rel="next">More results</a></p>').format(
                urlencode({k: v for k, v in query.items() if v != ""})
            )
        parts.append(
            Markup(
                '<section aria-labelledby="results-h"><h2 id="results-h">Results</h2>'
                '<ol class="results">{}</ol>{}</section>'
            ).format(items, more)
        )
    status = view.error.status if view.error is not None else 200
    return Page(title="Search", main=join(parts), section="search", status=status)
