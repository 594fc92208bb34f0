"""The main content of the mesh, machine and grants pages, from what the viewer may see
(``viewpoint``). Status is always words; every tool count is the viewer's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from markupsafe import Markup

from navigator.catalog.machines import RETIRED
from navigator.console.layout import (
    NO_GRANTS,
    RETIRED_MACHINE,
    Page,
    assignment_href,
    empty_state,
    heartbeats_note,
    join,
    machine_href,
    status_badge,
    truncated_note,
)
from navigator.console.tables import Cell, breadcrumb, count_cell, facts, since_cell, table
from navigator.console.viewpoint import Holding, MachineView, MeshView
from registry import GrantRecord, PrincipalRecord
from registry.models import utcnow

__all__ = ["grants_page", "machine_page", "mesh_page"]


def _holding_link(holding: Holding) -> Markup:
    if holding.tools:
        return Markup('<a href="{}"><code>{}</code></a>').format(
            assignment_href(holding.address), holding.address
        )
    return Markup("<code>{}</code>").format(holding.address)


def _holdings_table(caption: str, holdings: Sequence[Holding]) -> Markup:
    rows = [
        (_holding_link(h), h.kind, h.module, status_badge(h.status), count_cell(h.tools))
        for h in holdings
    ]
    return table(caption, ("Assignment", "Kind", "Module", "Status", "Tools you may call"), rows)


# --- the mesh ------------------------------------------------------------------------------


def _machine_card(machine: MachineView) -> Markup:
    heading_id = f"machine-{machine.name}"
    return Markup(
        '<article class="card" aria-labelledby="{}"><header class="card-head">'
        '<h3 id="{}"><a href="{}">{}</a></h3>{}</header>'
        '<p class="meta">{} {} you may call</p>{}</article>'
    ).format(
        heading_id,
        heading_id,
        machine_href(machine.name),
        machine.name,
        status_badge(machine.status) + heartbeats_note(machine.heartbeats),
        machine.tools,
        "tool" if machine.tools == 1 else "tools",
        _holdings_table(f"Assignments on {machine.name}", machine.holdings)
        if machine.holdings
        else Markup('<p class="muted">No assignments you may call.</p>'),
    )


def _seats_table(view: MeshView) -> Markup:
    """Mesh seats; where each one runs is shown to operators only."""
    headers = ["Seat", "Module", "Status", "Tools you may call"]
    rows: list[list[Cell]] = [
        [_holding_link(s), s.module, status_badge(s.status), count_cell(s.tools)]
        for s in view.seats
    ]
    if view.operator:
        headers.insert(1, "Runs on")
        for row, seat in zip(rows, view.seats, strict=True):
            row.insert(1, seat.machine or "—")
    return table("Mesh seats", headers, rows)


def mesh_page(view: MeshView) -> Page:
    parts = [Markup("<h1>The mesh</h1>")]
    if view.tools:
        # the machines the tools are on: a retired one holds none, nor one of no tool of yours
        holders = {m.name for m in view.machines if m.tools and m.status != RETIRED}
        holding = len(holders | {s.machine for s in view.seats if s.machine and s.tools})
        shown = len(view.machines)  # the cards below: the sentence counts the same machines
        parts.append(
            Markup('<p class="lede">{} {} you may call, on {} of the {} {} below.</p>').format(
                view.tools,
                "tool" if view.tools == 1 else "tools",
                holding,
                shown,
                "machine" if shown == 1 else "machines",
            )
            if holding != shown
            else Markup('<p class="lede">{} {} you may call, on {} {}.</p>').format(
                view.tools,
                "tool" if view.tools == 1 else "tools",
                holding,
                "machine" if holding == 1 else "machines",
            )
        )
    else:
        parts.append(empty_state("No tools to show", NO_GRANTS))
    if view.truncated:
        parts.append(truncated_note("machine or assignment", "meshnav mesh"))
    if view.seats:
        parts.append(
            Markup(
                '<section aria-labelledby="seats-h"><h2 id="seats-h">Mesh seats</h2>{}</section>'
            ).format(_seats_table(view))
        )
    if view.machines:
        cards = join(_machine_card(m) for m in view.machines)
        parts.append(
            Markup(
                '<section aria-labelledby="machines-h"><h2 id="machines-h">Machines</h2>'
                '<div class="cards">{}</div></section>'
            ).format(cards)
        )
    if view.node_seats:
        seat_rows: list[tuple[Cell, ...]] = [
            (n.role, n.module, n.holder_count, n.tools) for n in view.node_seats
        ]
        parts.append(
            Markup(
                '<section aria-labelledby="node-seats-h"><h2 id="node-seats-h">Node seats</h2>'
                '<p class="meta">Roles every machine holds, addressed '
                "<code>MACHINE/ROLE</code>.</p>"
                "{}</section>"
            ).format(table("Node seats", ("Node seat", "Module", "Machines", "Tools"), seat_rows))
        )
    return Page(title="Mesh", main=join(parts), section="mesh")


# --- a machine -----------------------------------------------------------------------------


def machine_page(machine: MachineView) -> Page:
    summary = facts(
        [
            ("Status", status_badge(machine.status) + heartbeats_note(machine.heartbeats)),
            ("Tools you may call", machine.tools),
            (
                "Reached at",
                Markup("<code>{}</code>").format(machine.advertise) if machine.advertise else None,
            ),
            ("Last heartbeat", since_cell(machine.last_heartbeat)),
        ]
    )
    body = (
        _holdings_table(f"Assignments on {machine.name}", machine.holdings)
        if machine.holdings
        else empty_state("No assignments", "This machine holds no assignments.")
    )
    if machine.status == RETIRED:  # its tools are gone for everyone, not for want of grants
        body = empty_state("Retired", RETIRED_MACHINE) + body
    elif not machine.tools:
        body = empty_state("No tools to show", NO_GRANTS) + body
    if machine.truncated:
        body = truncated_note("assignment", f"meshnav mesh {machine.name}") + body
    main = Markup("{}<h1>Machine <code>{}</code></h1>{}<h2>Assignments</h2>{}").format(
        breadcrumb(("Mesh", "/"), (machine.name, None)), machine.name, summary, body
    )
    return Page(title=machine.name, main=main)


# --- grants --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrantsListing:
    """What a grants page shows: the first principals and grant rows, and how many there are."""

    principals: Sequence[PrincipalRecord]
    principal_count: int
    grants: Sequence[GrantRecord]
    grant_count: int


def _more(shown: int, total: int, what: str, command: str) -> Markup:
    """A line saying that only the first rows are shown, when they are."""
    if shown >= total:
        return Markup("")
    return Markup(
        '<p class="meta">The first {} of {} {}; <code>{}</code> lists them all.</p>'
    ).format(shown, total, what, command)


def grants_page(listing: GrantsListing, principal: str | None) -> Page:
    principals, grants = listing.principals, listing.grants
    now = utcnow()
    people = [
        (
            Markup('<a href="/console/grants?{}">{}</a>').format(
                urlencode({"principal": p.name}), p.name
            ),
            ", ".join(p.scopes) or "—",
            p.machine or "—",
            p.expires_at.isoformat(timespec="seconds") if p.expires_at else "never",
            p.status(now),
        )
        for p in principals
    ]
    rows = [
        (
            g.id,
            g.principal,
            Markup("<code>{}</code>").format(g.target),
            ", ".join(g.scopes) or "—",
            g.effect,
            g.revision,
        )
        for g in grants
    ]
    showing = (
        Markup(
            '<p class="meta">Rows naming <strong>{}</strong> or <code>*</code>. '
            '<a href="/console/grants">Show all</a></p>'
        ).format(principal)
        if principal
        else Markup("")
    )
    if principal and not any(g.principal == principal for g in grants):
        # its own rows are none; the * rows shown (if any) still apply to it
        showing += empty_state(
            "No rows of its own",
            Markup(
                "No grant row names <strong>{}</strong>; {} Add one with "
                "<code>meshnav grant allow {} TARGET</code>."
            ).format(
                principal,
                Markup("the rows for <code>*</code> below apply to it.")
                if rows
                else Markup("no row for <code>*</code> applies to it either."),
                principal,
            ),
        )
    main = Markup(
        '<h1>Grants</h1><p class="lede">Who may call what. Change them with '
        "<code>meshnav grant</code> or the admin API; the navigator reads them again on every "
        "call.</p>"
        '<section aria-labelledby="principals-h"><h2 id="principals-h">Principals</h2>{}{}'
        "</section>"
        '<section aria-labelledby="rows-h"><h2 id="rows-h">Grant rows</h2>{}{}{}</section>'
    ).format(
        table("Principals", ("Principal", "Scopes", "Machine", "Expires", "State"), people)
        if people
        else empty_state("No principals", "Add one with meshnav principal add."),
        _more(len(people), listing.principal_count, "principals", "meshnav principal list"),
        showing,
        table("Grant rows", ("ID", "Principal", "Target", "Scopes", "Effect", "Revision"), rows)
        if rows
        else Markup("")
        if principal
        else empty_state("No grant rows", "Nobody may call anything yet."),
        _more(len(rows), listing.grant_count, "grant rows", "meshnav grant list"),
    )
    return Page(title="Grants", main=main, section="grants")
