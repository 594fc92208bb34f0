"""The console's HTML shell and the small pieces every page shares.

Everything is built with MarkupSafe: text goes in through ``Markup.format`` or ``escape``, which
escape it, and only literal markup written in this package is ever trusted. The shell is plain
semantic HTML that works without JavaScript: a skip link, a banner with the navigation and a search
box, one ``<main>`` (the part live updates replace), and no inline script or style, so the
Content-Security-Policy can forbid both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from markupsafe import Markup

from navigator.access.grants import Caller
from navigator.console.assets import asset_url
from navigator.errors import NavigatorError

__all__ = [
    "NO_GRANTS",
    "RETIRED_ASSIGNMENT",
    "RETIRED_MACHINE",
    "Page",
    "assignment_href",
    "document",
    "empty_state",
    "error_page",
    "heartbeats_note",
    "join",
    "machine_href",
    "sign_in_document",
    "status_badge",
    "truncated_note",
]

NO_GRANTS = Markup(
    "Your grants let you call no tool here. Tools appear once an operator grants you some "
    "(<code>meshnav grant allow PRINCIPAL TARGET</code>)."
)
RETIRED_MACHINE = Markup(
    "This machine is retired: its tools are called by no one, and its node's registration is "
    "refused until an operator adds it again (<code>POST /api/v1/machines</code>)."
)
RETIRED_ASSIGNMENT = Markup(
    "This assignment is retired: its tools are called by no one until it is registered again, "
    "by an operator or by its node."
)
STATUS_CLASSES = {"answering": "ok", "not answering": "down", "retired": "retired"}


@dataclass(frozen=True, slots=True)
class Page:
    title: str
    main: Markup
    #: Which navigation entry is current ("mesh", "search", "grants"), if any.
    section: str | None = None
    #: The HTTP status of the answer (a page may show a refusal, e.g. a search's bad pattern).
    status: int = 200
    #: Whether the page shows audit events: fetched again on new activity, not only changes.
    activity: bool = False
    #: Whether the page follows the mesh live; not one that shows what was just done (a token
    #: shown once), which a swap would take away.
    live: bool = True


def join(parts: Iterable[Markup]) -> Markup:
    return Markup("").join(parts)


def machine_href(name: str) -> str:
    return "/console/machines/" + quote(name, safe="")


def assignment_href(address: str, tool: str | None = None) -> str:
    holder, role = address.split("/")[:2]
    href = f"/console/assignments/{quote(holder, safe='')}/{quote(role, safe='')}"
    if tool is not None:
        href += "?" + urlencode({"tool": tool}) + "#tool-" + quote(tool, safe="")
    return href


def status_badge(status: str) -> Markup:
    """A status as words (with a shape beside them), never by colour alone."""
    kind = STATUS_CLASSES.get(status, "unknown")
    return Markup('<span class="status status-{}">{}</span>').format(kind, status or "unknown")


#: What a machine's ``heartbeats`` field says, in words (ADR 0031).
HEARTBEAT_NOTES = {
    "missed": "no heartbeat for three intervals",
    "unrecorded": "heartbeats unrecorded: the registry cannot be written",
}


def heartbeats_note(heartbeats: str | None) -> Markup:
    """Why a machine's status is what it is, beside its badge; nothing while heartbeats are
    recorded as they come."""
    if heartbeats is None:
        return Markup("")
    note = HEARTBEAT_NOTES.get(heartbeats, heartbeats)
    return Markup(' <span class="muted heartbeats">{}</span>').format(note)


def empty_state(title: str, text: Markup | str) -> Markup:
    return Markup('<div class="empty"><p class="empty-title">{}</p><p>{}</p></div>').format(
        title, text
    )


def truncated_note(what: str, command: str) -> Markup:
    """Says that a listing was longer than the console reads (``Limits.console_listing_pages``),
    so that what is shown, and its counts, are not taken for all there is."""
    return Markup(
        '<p class="notice" role="note">This listing is longer than the console reads: not every '
        "{} is shown, and the counts are of those shown. <code>{}</code> lists them all.</p>"
    ).format(what, command)


def error_page(error: NavigatorError) -> Page:
    titles = {401: "Signed out", 403: "Not for you", 404: "Not found"}
    title = titles.get(error.status, "Something went wrong")
    main = Markup(
        '<h1>{}</h1><p class="notice" role="alert">{}</p>'
        '<p class="meta">Error <code>{}</code> (HTTP {})</p>'
        '<p><a href="/">Back to the mesh</a></p>'
    ).format(title, error.message, error.code, error.status)
    return Page(title=title, main=main, status=error.status)


def _head(title: str) -> Markup:
    return Markup(
        '<head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        "<title>{} · meshnav</title>"
        '<link rel="icon" href="{}" type="image/svg+xml">'
        '<link rel="stylesheet" href="{}">'
        "</head>"
    ).format(title, asset_url("favicon.svg"), asset_url("console.css"))


def _brand() -> Markup:
    return Markup(
        '<a class="brand" href="/"><img src="{}" alt="" width="24" height="24">'
        "<span>meshnav</span></a>"
    ).format(asset_url("favicon.svg"))


def _navigation(viewer: Caller, operator: bool, section: str | None) -> Markup:
    entries = [
        ("mesh", "/", "Mesh"),
        ("search", "/console/search", "Search"),
        ("activity", "/console/activity", "Activity"),
    ]
    if operator:
        entries.append(("grants", "/console/grants", "Grants"))
        entries.append(("manage", "/console/manage", "Manage"))
        entries.append(("contracts", "/console/contracts", "Contracts"))
    links = join(
        Markup('<li><a href="{}"{}>{}</a></li>').format(
            href, Markup(' aria-current="page"') if key == section else "", label
        )
        for key, href, label in entries
    )
    return Markup(
        '<nav class="nav" aria-label="Console"><ul>{}</ul></nav>'
        '<form class="quick-search" role="search" action="/console/search" method="get">'
        '<label class="visually-hidden" for="nav-q">Search tools</label>'
        '<input id="nav-q" name="q" type="search" placeholder="Search tools" '
        'maxlength="500" autocomplete="off"><button type="submit">Search</button></form>'
        '<p id="live" class="live" role="status" aria-live="polite" hidden></p>'
        '<form class="who" action="/console/sign-out" method="post">'
        "<span>Signed in as <strong>{}</strong></span>"
        '<button type="submit">Sign out</button></form>'
    ).format(links, viewer.principal)


def document(page: Page, viewer: Caller, *, operator: bool) -> str:
    """A whole console page for a signed-in viewer."""
    return Markup(
        '<!doctype html><html lang="en">{}<body>'
        '<a class="skip" href="#main">Skip to content</a>'
        '<header class="banner">{}{}</header>'
        '<main id="main" tabindex="-1"{}{}>{}</main>'
        '<footer class="footer"><p>meshnav console — the tools shown are the ones your grants '
        "let you call.</p></footer>"
        '<script src="{}" defer></script>'
        "</body></html>"
    ).format(
        _head(page.title),
        _brand(),
        _navigation(viewer, operator, page.section),
        Markup(' data-live="/console/events"') if page.live else "",
        Markup(" data-activity") if page.activity else "",
        page.main,
        asset_url("console.js"),
    )


def sign_in_document(*, message: str | None = None, next_path: str = "/") -> str:
    """The sign-in page: a form that posts the token; the token never goes into a URL."""
    notice = (
        Markup('<p class="notice" role="alert">{}</p>').format(message) if message else Markup("")
    )
    main = Markup(
        '<div class="sign-in"><h1>Sign in to the meshnav console</h1>'
        "<p>Paste your bearer token — the one <code>meshnav principal add</code> printed, or the "
        "demo's <code>demo.token</code>. It is not kept: this browser is given a session, and "
        "the navigator checks the token behind it on every request, so rotating or revoking it "
        "signs you out at once.</p>"
        "{}"
        '<form method="post" action="/console/sign-in">'
        '<label for="token">Token</label>'
        '<input id="token" name="token" type="password" required maxlength="4000" '
        'autocomplete="current-password" autocapitalize="off" spellcheck="false">'
        '<input type="hidden" name="next" value="{}">'
        '<button type="submit">Sign in</button></form></div>'
    ).format(notice, next_path)
    return Markup(
        '<!doctype html><html lang="en">{}<body>'
        '<a class="skip" href="#main">Skip to content</a>'
        '<header class="banner">{}</header>'
        '<main id="main" tabindex="-1">{}</main>'
        "</body></html>"
    ).format(_head("Sign in"), _brand(), main)
