"""The web console (SPEC §8): the mesh as one viewer may see it, at ``/`` on the navigator.

Server-rendered pages that work without JavaScript, made live by a small script listening to
server-sent events; signed in with the viewer's bearer token, which opens a session kept in the
registry (the browser's HttpOnly cookie holds only its random id) whose token is authenticated
again on every request (``session``). The console guards itself: its paths bypass
the bearer-token middleware (``is_console_path``). Every answer carries the console's security
headers; nothing is loaded from outside the navigator.

    /                                   the mesh
    /console/machines/{name}            a machine
    /console/assignments/{holder}/{role} an assignment's tools with their schemas
    /console/search?q=&within=&limit=   search, as the ``search`` walker tool answers
    /console/grants                     principals and grants (mesh:admin)
    /console/manage                     an operator's changes: principals, grants, seats,
                                        machines, assignments, tools' marks (mesh:admin)
    /console/try/{holder}/{role}/{tool} try a tool: its arguments, the call, the answer
    /console/contracts                  held contracts and refused tools (mesh:admin)
    /console/activity?principal=&address=&action=&outcome=   recent audit events (ADR 0039)
    /console/events                     server-sent events: the mesh changed
    /console/sign-in, /console/sign-out POST
    /console/static/{name}              stylesheet, script, icon

Its modules:

    pages       the page handlers: authenticate the viewer, read what they may see, render it
    session     signing in with a bearer token, and who is looking
    viewpoint   what one viewer sees, read through the walker tools' own code
    render      the main content of the mesh, machine and grants pages
    assignment  an assignment's page: its tools with their contracts
    search      the console's search page, the ``search`` walker tool's answer
    activity    recent audit events, the page and its filters
    manage      an operator's changes, each through ``navigator.operations``; manage_forms
                its page; try_tool a tool's call from a form, through the walker
    held        held contracts and refused tools (SPEC §14)
    events      live updates: the server-sent-events stream fed by the catalogue
    layout      the HTML shell and the pieces every page shares; tables the data blocks
    security    the headers every answer carries, and the same-origin checks
    assets      the stylesheet, script and icon, served by the navigator itself
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from navigator.console import events, manage, pages, session, try_tool
from navigator.console.assets import serve_asset
from navigator.console.security import ConsoleHeadersMiddleware

__all__ = ["console_routes", "is_console_path"]

PREFIX = "/console"

Endpoint = Callable[[Request], Awaitable[Response]]


def console_routes() -> list[BaseRoute]:
    """The console's routes; mount them before the MCP app, which takes everything else."""
    guarded = [Middleware(ConsoleHeadersMiddleware)]
    table: list[tuple[str, Endpoint, list[str] | None]] = [
        ("/", pages.mesh, ["GET"]),
        (PREFIX, pages.home, None),
        (PREFIX + "/", pages.home, None),
        (PREFIX + "/sign-in", session.sign_in, ["GET", "POST"]),
        (PREFIX + "/sign-out", session.sign_out, ["GET", "POST"]),
        (PREFIX + "/machines/{name}", pages.machine, ["GET"]),
        (PREFIX + "/assignments/{holder}/{role}", pages.assignment, ["GET"]),
        (PREFIX + "/grants", pages.grants, ["GET"]),
        (PREFIX + "/manage", manage.manage, ["GET", "POST"]),
        (PREFIX + "/try/{holder}/{role}/{tool}", try_tool.try_tool, ["GET", "POST"]),
        (PREFIX + "/contracts", pages.contracts, ["GET"]),
        (PREFIX + "/search", pages.search, ["GET"]),
        (PREFIX + "/activity", pages.activity, ["GET"]),
        (PREFIX + "/events", events.EventStreams().stream, ["GET"]),
        (PREFIX + "/static/{name}", serve_asset, ["GET"]),
        (PREFIX + "/{rest:path}", pages.not_found, None),
    ]
    return [
        Route(path, endpoint, methods=methods, middleware=guarded)
        for path, endpoint, methods in table
    ]


def is_console_path(path: str) -> bool:
    """The console's own paths: they authenticate their viewer themselves."""
    return path in ("/", PREFIX) or path.startswith(PREFIX + "/")
