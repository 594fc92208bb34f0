"""The console's Activity: recent audit events (ADR 0039) — the page ``/console/activity``, and
the recent activity a principal's and an assignment's pages show. An operator (``mesh:admin``)
sees everyone's; any other viewer only their own, whatever the filters ask. Live: the page is
fetched again whenever this navigator writes a batch of events (``activity`` in the event
stream). Shows what the audit trail holds, so never arguments, queries or results."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode

from markupsafe import Markup
from starlette.requests import Request

from navigator.api.audit import audit_filter
from navigator.console.layout import Page, empty_state
from navigator.console.tables import Cell, since_cell, table
from navigator.console.viewpoint import Viewpoint
from navigator.services import services
from registry.audit import AuditFilter, AuditRecord, AuditStore

__all__ = ["activity_page", "recent_activity", "with_activity"]

#: Events the Activity page shows, and a principal's or an assignment's page.
PAGE_EVENTS = 100
RECENT_EVENTS = 20
FILTERS = ("principal", "address", "action", "outcome")
_GOOD = {"ok": "ok", "answered": "ok", "asked": "retired"}


async def _read(request: Request, wanted: AuditFilter) -> list[AuditRecord]:
    return await services(request).read(lambda session: AuditStore(session).events(wanted))


def _own(viewpoint: Viewpoint, wanted: AuditFilter) -> AuditFilter:
    """``wanted``, held to the viewer's own events unless they are an operator."""
    if viewpoint.operator:
        return wanted
    return replace(wanted, principal=viewpoint.caller.principal)


def _rows(events: list[AuditRecord]) -> list[list[Cell]]:
    rows: list[list[Cell]] = []
    for event in events:
        e = event.entry
        outcome = Markup('<span class="status status-{}">{}</span>').format(
            _GOOD.get(e.outcome, "down"), e.outcome
        )
        rows.append(
            [
                since_cell(e.at.isoformat()) or "",
                e.principal or "—",
                e.action,
                Markup("<code>{}</code>").format(e.target),
                outcome,
                "—" if e.duration_ms is None else f"{e.duration_ms:.1f} ms",
                "—" if e.grant_id is None else f"{e.grant_id} (r{e.grant_revision})",
            ]
        )
    return rows


HEADERS = ("When", "Principal", "Action", "Address", "Outcome", "Duration", "Grant")


def _events_table(events: list[AuditRecord], nothing: str) -> Markup:
    if not events:
        return empty_state("No activity", nothing)
    return table("Activity", HEADERS, _rows(events))


async def activity_page(request: Request, viewpoint: Viewpoint) -> Page:
    given = {name: request.query_params.get(name) or None for name in FILTERS}
    wanted = _own(viewpoint, audit_filter({**given, "limit": str(PAGE_EVENTS)}))
    events = await _read(request, wanted)
    fields = Markup("").join(
        Markup(
            '<label>{} <input name="{}" value="{}" maxlength="256" autocomplete="off"></label>'
        ).format(name.capitalize(), name, given[name] or "")
        for name in FILTERS
        if viewpoint.operator or name != "principal"
    )
    scope = (
        "Every principal's calls and changes, newest first."
        if viewpoint.operator
        else "Your own calls, newest first."
    )
    main = Markup(
        '<h1>Activity</h1><p class="lede">{} Addresses take <code>*</code> for any text. '
        "Arguments, queries and results are never recorded.</p>"
        '<form class="filters" method="get" action="/console/activity">{}'
        '<button type="submit">Filter</button></form>{}'
    ).format(scope, fields, _events_table(events, "Nothing recorded matches."))
    return Page(title="Activity", main=main, section="activity", activity=True)


async def recent_activity(
    request: Request, viewpoint: Viewpoint, *, principal: str | None = None, target: str
) -> list[AuditRecord]:
    wanted = AuditFilter(principal=principal, target=target, limit=RECENT_EVENTS)
    return await _read(request, _own(viewpoint, wanted))


def with_activity(page: Page, events: list[AuditRecord], *, more: dict[str, str]) -> Page:
    """``page`` with a section of its recent activity, fetched again as activity comes."""
    section = Markup(
        '<section aria-labelledby="activity-h"><h2 id="activity-h">Recent activity</h2>{}'
        '<p><a href="/console/activity?{}">All of it</a></p></section>'
    ).format(_events_table(events, "Nothing recorded here yet."), urlencode(more))
    return replace(page, main=page.main + section, activity=True)
