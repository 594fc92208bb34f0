"""The console's held contracts (SPEC §14, ``mesh:admin``): every tool whose contract awaits an
operator's approval or was rejected, with its digests, and the tools registrations refused,
with why. Read-only: decisions are ``meshnav contracts approve|reject`` or the admin API's.
Live like every page: fetched again when the catalogue changes (a hold, an approval)."""

from __future__ import annotations

from markupsafe import Markup
from starlette.requests import Request

from navigator.console.layout import Page, empty_state
from navigator.console.tables import Cell, table
from navigator.console.viewpoint import Viewpoint
from navigator.services import services
from registry.contracts import held_tools, refused_tools

__all__ = ["contracts_page"]

#: The most rows each table shows (the rest are counted).
CONSOLE_CONTRACTS = 500


def _code(text: str) -> Markup:
    return Markup("<code>{}</code>").format(text)


async def contracts_page(request: Request, viewpoint: Viewpoint) -> Page:
    viewpoint.require_operator()
    held, refused = await services(request).read(
        lambda session: (held_tools(session), refused_tools(session))
    )
    held_rows: list[list[Cell]] = [
        [
            _code(tool.address),
            tool.state,
            _code((tool.approved_digest or "never approved")[:16]),
            _code(tool.digest[:16]),
        ]
        for tool in held[:CONSOLE_CONTRACTS]
    ]
    refused_rows: list[list[Cell]] = [
        [_code(tool.address), tool.reason] for tool in refused[:CONSOLE_CONTRACTS]
    ]
    held_table = (
        table("Held contracts", ("Address", "State", "Approved", "Now"), held_rows)
        if held_rows
        else empty_state("No contract is held", "Every tool serves its approved contract.")
    )
    refused_table = (
        table("Refused tools", ("Address", "Reason"), refused_rows)
        if refused_rows
        else empty_state("No tool was refused", "No registration held hidden text.")
    )
    more = max(len(held), len(refused)) - CONSOLE_CONTRACTS
    main = Markup(
        '<h1>Contracts</h1><p class="lede">Tools whose contract changed, or is new, are not '
        "served until an operator approves them: <code>meshnav contracts show ADDRESS</code> "
        "shows what changed, <code>meshnav contracts approve ADDRESS</code> approves it on "
        "every holder.</p>{}{}{}"
    ).format(
        held_table,
        refused_table,
        Markup("<p>and {} more</p>").format(more) if more > 0 else "",
    )
    return Page(title="Contracts", main=main, section="contracts")
