"""The console's page handlers: authenticate the viewer, read what they may see, render it.

Every page answers two ways from the same URL: the whole document, or — when the request carries
``X-Meshnav-Fragment: 1`` — only the content of ``<main>``, which ``console.js`` swaps in place
when the mesh changes. A page shown to nobody signed in is the sign-in form; a fragment or event
request without a valid session is a 401 with the SPEC §9 body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from navigator.console import render
from navigator.console.activity import activity_page, recent_activity, with_activity
from navigator.console.assignment import assignment_page
from navigator.console.held import contracts_page
from navigator.console.layout import Page, document, error_page
from navigator.console.search import run_search, search_page
from navigator.console.session import authenticate_viewer, error_json, sign_in_page
from navigator.console.viewpoint import Viewpoint
from navigator.errors import (
    InvalidArguments,
    NavigatorError,
    Unauthenticated,
    UnknownPage,
    from_registry,
)
from navigator.http.bodies import is_printable
from navigator.http.numbers import whole_number
from navigator.services import services
from registry import AccessStore, RegistryError

__all__ = [
    "FRAGMENT_HEADER",
    "activity",
    "assignment",
    "contracts",
    "grants",
    "home",
    "machine",
    "mesh",
    "not_found",
    "search",
]

FRAGMENT_HEADER = "x-meshnav-fragment"

Build = Callable[[Request, Viewpoint], Awaitable[Page]]


async def _answer(request: Request, build: Build) -> Response:
    fragment = request.headers.get(FRAGMENT_HEADER) == "1"
    headers = {"vary": "X-Meshnav-Fragment, Cookie"}
    try:
        caller = await authenticate_viewer(request, page=not fragment)
    except Unauthenticated:
        if fragment:
            return error_json()
        return sign_in_page(request, status_code=200 if request.url.path == "/" else 401)
    except NavigatorError as error:
        return error_json(error) if fragment else _plain_error(error)
    found = services(request)
    viewpoint = Viewpoint(
        found.navigator, found.catalog, caller, listing_pages=found.limits.console_listing_pages
    )
    try:
        page = await build(request, viewpoint)
    except NavigatorError as error:
        page = error_page(error)
    except RegistryError as error:
        page = error_page(from_registry(error))
    if fragment:
        return HTMLResponse(page.main, status_code=page.status, headers=headers)
    html = document(page, caller, operator=viewpoint.operator)
    return HTMLResponse(html, status_code=page.status, headers=headers)


def _plain_error(error: NavigatorError) -> Response:
    page = error_page(error)
    return HTMLResponse(
        f"<!doctype html><title>meshnav</title>{page.main}", status_code=error.status
    )


# --- pages ---------------------------------------------------------------------------------


async def _mesh(request: Request, viewpoint: Viewpoint) -> Page:
    return render.mesh_page(await viewpoint.mesh())


async def _machine(request: Request, viewpoint: Viewpoint) -> Page:
    return render.machine_page(await viewpoint.machine(request.path_params["name"]))


async def _assignment(request: Request, viewpoint: Viewpoint) -> Page:
    page_text = request.query_params.get("page", "0")
    view = await viewpoint.assignment(
        request.path_params["holder"],
        request.path_params["role"],
        page=whole_number(page_text, most=99_999) or 0,
        tool=request.query_params.get("tool"),
    )
    target = f"{view.holding.address}/*"
    events = await recent_activity(request, viewpoint, target=target)
    return with_activity(assignment_page(view), events, more={"address": target})


async def _search(request: Request, viewpoint: Viewpoint) -> Page:
    params = request.query_params
    view = await run_search(
        viewpoint.navigator,
        viewpoint.caller,
        query=params.get("q"),
        within=params.get("within", "").strip(),
        limit=params.get("limit", "").strip(),
        cursor=params.get("cursor") or None,
    )
    return search_page(view)


#: The most principals, and grant rows, a grants page shows: the first by name and by id, the
#: rest counted (a page of every row of a large registry stalled the navigator while it rendered).
CONSOLE_ROWS = 500


async def _grants(request: Request, viewpoint: Viewpoint) -> Page:
    viewpoint.require_operator()
    principal = request.query_params.get("principal") or None
    if principal is not None and not is_printable(principal):
        raise InvalidArguments("The principal holds a control character.")

    def read(session: Session) -> render.GrantsListing:
        store = AccessStore(session)
        rows = store.grants(principal, limit=CONSOLE_ROWS)
        total = store.grant_count(principal)
        if principal is not None:
            rows = sorted([*rows, *store.grants("*", limit=CONSOLE_ROWS)], key=lambda row: row.id)
            total += store.grant_count("*")
        people = store.principals(limit=CONSOLE_ROWS)
        return render.GrantsListing(people, store.principal_count(), rows[:CONSOLE_ROWS], total)

    page = render.grants_page(await services(request).read(read), principal)
    if principal is None:
        return page
    events = await recent_activity(request, viewpoint, principal=principal, target="*")
    return with_activity(page, events, more={"principal": principal})


async def _missing(request: Request, viewpoint: Viewpoint) -> Page:
    raise UnknownPage()


async def mesh(request: Request) -> Response:
    return await _answer(request, _mesh)


async def machine(request: Request) -> Response:
    return await _answer(request, _machine)


async def assignment(request: Request) -> Response:
    return await _answer(request, _assignment)


async def search(request: Request) -> Response:
    return await _answer(request, _search)


async def grants(request: Request) -> Response:
    return await _answer(request, _grants)


async def contracts(request: Request) -> Response:
    return await _answer(request, contracts_page)


async def activity(request: Request) -> Response:
    return await _answer(request, activity_page)


async def not_found(request: Request) -> Response:
    return await _answer(request, _missing)


async def home(request: Request) -> Response:
    """``/console`` and ``/console/``: the console lives at ``/``."""
    return RedirectResponse("/", status_code=307)
