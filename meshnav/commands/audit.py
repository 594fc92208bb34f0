"""``meshnav audit``: who called what, decided by which grant (ADR 0039) — the events, newest
first, and a check of every navigator's chain of them."""

from __future__ import annotations

from typing import Annotated

import typer

from meshnav.commands.outcome import console, emit, errors, run, show
from meshnav.commands.reach import RegistryReach, takes_registry_options
from meshnav.render import escaped

__all__ = ["app"]

app = typer.Typer(rich_markup_mode=None, help="Who called what, decided by which grant (ADR 0039).")


@app.callback(invoke_without_command=True)
@takes_registry_options
def audit_list(
    ctx: typer.Context,
    principal: Annotated[str | None, typer.Option(help="Only this principal's events.")] = None,
    address: Annotated[
        str | None, typer.Option(help="Only these addresses or targets: '*' for any text.")
    ] = None,
    action: Annotated[
        str | None, typer.Option(help="call, confirm, describe, sign-in, grant.add, …")
    ] = None,
    outcome: Annotated[str | None, typer.Option(help="ok, tool_error, or a SPEC §9 code.")] = None,
    since: Annotated[str | None, typer.Option(help="90s, 30m, 1h, 7d, or an ISO time.")] = None,
    limit: Annotated[int | None, typer.Option(help="At most this many events (100).")] = None,
    *,
    reach: RegistryReach,
) -> None:
    """Audit events, newest first: on the registry directly, or through a navigator's API."""
    if ctx.invoked_subcommand is not None:
        return
    given = {
        "principal": principal,
        "address": address,
        "action": action,
        "outcome": outcome,
        "since": since,
        "limit": None if limit is None else str(limit),
    }
    page = run(reach.access().audit(given), reach.as_json)
    if reach.as_json:
        emit(page["events"], True)
        return
    from meshnav.render import audit_table

    if not page["events"]:
        console.print("no events", markup=False, highlight=False)
        return
    show(audit_table(page["events"]))


@app.command("verify")
@takes_registry_options
def audit_verify(*, reach: RegistryReach) -> None:
    """Check every navigator's chain of audit events: exit 1 when a row was altered."""
    found = run(reach.access().audit_verify(), reach.as_json)
    if reach.as_json:
        emit(found, True)
    else:
        for instance, count in found["instances"].items():
            console.print(f"{escaped(instance)}: {count} events", markup=False, highlight=False)
        for problem in found["problems"]:
            errors.print(f"meshnav: audit chain broken at {escaped(problem)}", markup=False)
        if found["ok"]:
            console.print("the audit chains are intact")
    if not found["ok"]:
        raise typer.Exit(1)
