"""The management page's HTML: an operator's forms for principals, grants, seats, machines,
assignments and tools, and the confirmation asked before a destructive change.

Every form posts to ``/console/manage`` with an ``action`` field (``manage`` says which operation
each calls); the page works without JavaScript, and its confirmation is a page of its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from navigator.catalog.registrar import is_node_endpoint
from navigator.console.layout import Page, join
from navigator.console.tables import Cell, table
from navigator.operations.mesh_ops import CONFIRMATION_MARKS
from registry import GrantRecord, PrincipalRecord

__all__ = ["MANAGE", "Listing", "Outcome", "confirm_page", "manage_page"]

MANAGE = "/console/manage"


@dataclass(frozen=True, slots=True)
class Listing:
    """What the page lists: principals, grant rows, seats and the operators' view of machines."""

    principals: Sequence[PrincipalRecord]
    grants: Sequence[GrantRecord]
    seats: Mapping[str, tuple[str, str] | None]
    machines: Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the last action did (or why it was refused), shown above the forms."""

    message: str
    token: str | None = None
    refused: bool = False
    verdict: Mapping[str, Any] | None = field(default=None)


def form(action: str, fields: Markup, button: str, *, hidden: Mapping[str, str] = {}) -> Markup:
    inputs = join(
        Markup('<input type="hidden" name="{}" value="{}">').format(name, value)
        for name, value in {"action": action, **hidden}.items()
    )
    return Markup(
        '<form class="manage" method="post" action="{}" data-action="{}">{}{}'
        '<button type="submit">{}</button></form>'
    ).format(MANAGE, action, inputs, fields, button)


def field_(label: str, name: str, *, kind: str = "text", required: bool = False) -> Markup:
    return Markup('<label>{} <input name="{}" type="{}"{}{}></label>').format(
        label,
        name,
        kind,
        Markup(' step="any" min="0"') if kind == "number" else "",
        Markup(" required") if required else "",
    )


def _select(label: str, name: str, options: Sequence[str]) -> Markup:
    choices = join(Markup('<option value="{}">{}</option>').format(o, o) for o in options)
    return Markup('<label>{} <select name="{}">{}</select></label>').format(label, name, choices)


def _principals(rows: Sequence[PrincipalRecord]) -> Markup:
    def row(p: PrincipalRecord) -> list[Cell]:
        data = p.as_json()
        quota = {"calls a minute": p.quota.rate_per_minute, "at once": p.quota.concurrency}
        keep = {"name": p.name}
        actions = join(
            [
                form(
                    "principal-rotate",
                    field_("Expires in days", "expiresDays", kind="number"),
                    "Rotate",
                    hidden=keep,
                ),
                form(
                    "principal-quota",
                    field_("Calls a minute", "ratePerMinute", kind="number")
                    + field_("At once", "concurrency", kind="number"),
                    "Set quota",
                    hidden=keep,
                ),
                form("principal-revoke", Markup(""), "Revoke", hidden=keep),
            ]
        )
        limits = ", ".join(f"{k} {v}" for k, v in quota.items() if v is not None) or "none"
        return [
            p.name,
            " ".join(data.get("scopes") or []) or "—",
            str(data.get("status", "")),
            p.expires_at.strftime("%Y-%m-%d %H:%M UTC") if p.expires_at else "never",
            limits,
            actions,
        ]

    listing = table(
        "Principals",
        ["Name", "Scopes", "Status", "Expires", "Quota", "Change"],
        [row(p) for p in rows],
    )
    add = form(
        "principal-add",
        field_("Name", "name", required=True)
        + field_("Scopes (space-separated)", "scopes")
        + field_("Bound machine", "machine")
        + field_("Expires in days", "expiresDays", kind="number")
        + field_("Calls a minute", "ratePerMinute", kind="number")
        + field_("At once", "concurrency", kind="number"),
        "Add principal",
    )
    return Markup(
        '<section id="principals"><h2>Principals</h2>{}<h3>Add a principal</h3>{}</section>'
    ).format(listing, add)


def _grants(rows: Sequence[GrantRecord], verdict: Mapping[str, Any] | None) -> Markup:
    listing = table(
        "Grant rows",
        ["Id", "Principal", "Target", "Effect", "Scopes", "Change"],
        [
            [
                str(g.id),
                g.principal,
                g.target,
                g.effect,
                " ".join(g.scopes) or "—",
                form("grant-revoke", Markup(""), "Revoke", hidden={"grant": str(g.id)}),
            ]
            for g in rows
        ],
    )
    add = form(
        "grant-add",
        field_("Principal", "principal", required=True)
        + field_("Target pattern", "target", required=True)
        + _select("Effect", "effect", ["allow", "deny"])
        + field_("Scopes (space-separated)", "scopes")
        + Markup(
            '<label><input type="checkbox" name="force" value="yes"> For a name not '
            "added yet (a JWT subject)</label>"
        ),
        "Add grant",
    )
    why = Markup(
        '<form class="manage" method="get" action="{}#why">'
        '<label>Principal <input name="principal" required></label>'
        '<label>Address <input name="address" required></label>'
        '<button type="submit">Why?</button></form>'
    ).format(MANAGE)
    answer = Markup("")
    if verdict is not None:
        answer = Markup('<pre class="verdict" id="verdict">{}</pre>').format(_json(verdict))
    return Markup(
        '<section id="grants"><h2>Grants</h2>{}<h3>Add a grant row</h3>{}'
        '<h3 id="why">Why may (or may not) a principal call an address?</h3>{}{}</section>'
    ).format(listing, add, why, answer)


def _seats(seats: Mapping[str, tuple[str, str] | None]) -> Markup:
    def where(placed: tuple[str, str] | None) -> str:
        return "not placed" if placed is None else f"{placed[0]}/{placed[1]}"

    place_fields = field_("Machine", "machine", required=True) + field_(
        "Role", "role", required=True
    )
    listing = table(
        "Mesh seats",
        ["Seat", "Placed on", "Change"],
        [
            [
                f"mesh/{name}",
                where(placed),
                form("seat-move", place_fields, "Move", hidden={"seat": name})
                + form("seat-remove", Markup(""), "Remove", hidden={"seat": name}),
            ]
            for name, placed in seats.items()
        ],
    )
    add = form("seat-place", field_("Seat", "seat", required=True) + place_fields, "Place seat")
    return Markup(
        '<section id="seats"><h2>Mesh seats</h2>{}<h3>Place a seat</h3>{}</section>'
    ).format(listing, add)


def _machines(machines: Sequence[Mapping[str, Any]]) -> Markup:
    rows: list[list[Cell]] = []
    for machine in machines:
        name = str(machine["name"])
        rows.append(
            [
                name,
                str(machine.get("status", "")),
                form("machine-retire", Markup(""), "Retire", hidden={"machine": name}),
            ]
        )
        for entry in machine["assignments"]:
            keep = {"machine": str(entry["machine"]), "role": str(entry["role"])}
            change = form("assignment-retire", Markup(""), "Retire", hidden=keep)
            if entry.get("endpoint") and not is_node_endpoint(
                entry["endpoint"], machine.get("advertise")
            ):
                change = form("assignment-refresh", Markup(""), "Refresh", hidden=keep) + change
            rows.append([f"{entry['machine']}/{entry['role']}", str(entry["status"]), change])
    listing = table("Machines and assignments", ["Address", "Status", "Change"], rows)
    mark = form(
        "tool-mark",
        field_("Tool address (MACHINE/ROLE/TOOL)", "address", required=True)
        + _select("Confirmation", "confirmation", CONFIRMATION_MARKS),
        "Set mark",
    )
    return Markup(
        '<section id="machines"><h2>Machines and assignments</h2>{}'
        '<h3 id="marks">A tool\'s confirmation mark</h3>{}</section>'
    ).format(listing, mark)


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def _outcome(outcome: Outcome | None) -> Markup:
    if outcome is None:
        return Markup("")
    role = "alert" if outcome.refused else "status"
    shown = Markup('<p class="notice" role="{}" id="outcome">{}</p>').format(role, outcome.message)
    if outcome.token is not None:
        shown += Markup(
            '<p class="token">The token, shown this once — copy it now: '
            '<code id="new-token">{}</code></p>'
        ).format(outcome.token)
    return shown


def manage_page(listing: Listing, outcome: Outcome | None = None, status: int = 200) -> Page:
    verdict = outcome.verdict if outcome is not None else None
    main = Markup("<h1>Manage the mesh</h1>{}{}{}{}{}").format(
        _outcome(outcome),
        _principals(listing.principals),
        _grants(listing.grants, verdict),
        _seats(listing.seats),
        _machines(listing.machines),
    )
    return Page(title="Manage", main=main, section="manage", status=status, live=outcome is None)


def confirm_page(question: str, fields: Mapping[str, str], *, to: str = MANAGE) -> Page:
    """The confirmation asked before a destructive change: the same form again, with a yes."""
    hidden = join(
        Markup('<input type="hidden" name="{}" value="{}">').format(name, value)
        for name, value in {**fields, "confirmed": "yes"}.items()
    )
    main = Markup(
        '<div class="confirm" role="alertdialog" aria-labelledby="confirm-q">'
        '<h1 id="confirm-q">{}</h1><form method="post" action="{}">{}'
        '<button type="submit" class="danger">Yes, do it</button> '
        '<a href="{}">Cancel</a></form></div>'
    ).format(question, to, hidden, to)
    return Page(title="Confirm", main=main, section="manage", live=False)
