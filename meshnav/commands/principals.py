"""``meshnav principal``: the principals that call the mesh, their tokens and their quotas (SPEC
§11, ADR 0041), on the registry directly or through a navigator's admin API."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from meshnav.commands.options import ConcurrencyOpt, RateOpt, SeveralValues, per_minute, words
from meshnav.commands.outcome import console, emit, run, show
from meshnav.commands.reach import RegistryReach, takes_registry_options
from meshnav.errors import CommandError
from meshnav.render import escaped

if TYPE_CHECKING:
    from meshnav.access import Access

__all__ = ["app"]

app = typer.Typer(rich_markup_mode=None, help="Principals and their tokens.", no_args_is_help=True)


def _days(value: float | None) -> float | None:
    """``--expires`` as the admin API takes it: refused here in the option's own words."""
    if value is not None and not 0 < value <= 3650:
        raise typer.BadParameter("days until the token expires: more than 0, at most 3650")
    return value


ExpiresOpt = Annotated[
    float | None,
    typer.Option("--expires", callback=_days, help="Days until the token expires (none: never)."),
]


@app.command("add", cls=SeveralValues)
@takes_registry_options
def principal_add(
    name: str,
    scopes: Annotated[
        list[str], typer.Option("--scopes", help="Scopes, e.g. mesh:admin mesh:node.")
    ] = [],  # noqa: B006
    machine: Annotated[
        str | None, typer.Option(help="Bind a node principal to this machine.")
    ] = None,
    expires: ExpiresOpt = None,
    rate: RateOpt = None,
    concurrency: ConcurrencyOpt = None,
    *,
    reach: RegistryReach,
) -> None:
    """Add a principal; its token is printed once and only its hash is kept."""
    from registry import Quota

    quota = Quota(per_minute(rate), concurrency)
    made = run(
        reach.access().add_principal(name, words(scopes), machine, expires, quota), reach.as_json
    )
    if reach.as_json:
        emit({"principal": made["principal"]["name"], "token": made["token"]}, True)
    else:
        console.print(escaped(f"principal {name} added; its token (shown once):"), markup=False)
        sys.stdout.write(made["token"] + "\n")


#: ``--rate none`` / ``--concurrency none``: the limit removed.
NO_LIMIT = "none"
QuotaRateOpt = Annotated[
    str | None,
    typer.Option("--rate", help="Calls per minute, e.g. 600/min or 10/s; 'none': no limit."),
]
QuotaConcurrencyOpt = Annotated[
    str | None, typer.Option("--concurrency", help="Calls at once; 'none': no limit.")
]


def _at_once(text: str) -> int | None:
    if text.strip().lower() == NO_LIMIT:
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise typer.BadParameter("calls at once is a whole number of at least 1, or 'none'")
    return int(text)


def _rate(text: str) -> int | None:
    return None if text.strip().lower() == NO_LIMIT else per_minute(text)


@app.command("quota")
@takes_registry_options
def principal_quota(
    name: str,
    rate: QuotaRateOpt = None,
    concurrency: QuotaConcurrencyOpt = None,
    *,
    reach: RegistryReach,
) -> None:
    """Change a principal's quota: only the limit given changes; 'none' removes it. Every
    navigator holds it to the quota from its next request; a call over it is rate_limited."""
    from registry import Quota

    async def change() -> dict[str, Any]:
        if rate is None and concurrency is None:
            raise CommandError(
                "give --rate or --concurrency ('none' removes a limit); to see the quota: "
                f"meshnav principal show {name}"
            )
        access = reach.access()
        held = await _principal(access, name)
        quota = Quota(
            held.get("ratePerMinute") if rate is None else _rate(rate),
            held.get("concurrency") if concurrency is None else _at_once(concurrency),
        )
        return await access.set_quota(name, quota)

    row = run(change(), reach.as_json)
    if reach.as_json:
        emit(row, True)
        return
    said = ", ".join(
        f"{value} {unit}"
        for value, unit in ((row["ratePerMinute"], "calls/min"), (row["concurrency"], "at once"))
        if value is not None
    )
    console.print(escaped(f"principal {name}: {said or 'no limit'}"), markup=False, highlight=False)


async def _principal(access: Access, name: str) -> dict[str, Any]:
    """The principal ``name`` as ``principal list`` gives it; an error naming the list if none."""
    for row in await access.list_principals():
        if row["name"] == name:
            return row
    raise CommandError("no such principal: see meshnav principal list")


@app.command("show")
@takes_registry_options
def principal_show(name: str, *, reach: RegistryReach) -> None:
    """Show a principal: scopes, machine, expiry, quota, and when it was last seen (its newest
    audit event). Never its token."""
    from meshnav.render import principal_view

    async def gather() -> dict[str, Any]:
        access = reach.access()
        row = await _principal(access, name)
        newest = await access.audit({"principal": name, "limit": "1"})
        events = newest.get("events") or []
        return {**row, "lastSeen": events[0]["at"] if events else None}

    shown = run(gather(), reach.as_json)
    if reach.as_json:
        emit(shown, True)
    else:
        console.print(principal_view(shown))


@app.command("list")
@takes_registry_options
def principal_list(*, reach: RegistryReach) -> None:
    """List principals (never their tokens): a table, or JSON with --json."""
    rows = run(reach.access().list_principals(), reach.as_json)
    if reach.as_json:
        emit(rows, True)
        return
    from meshnav.render import principals_table

    show(principals_table(rows))


@app.command("rotate")
@takes_registry_options
def principal_rotate(
    name: str,
    expires: ExpiresOpt = None,
    *,
    reach: RegistryReach,
) -> None:
    """Replace a principal's token; the old one stops working at once."""
    made = run(reach.access().rotate_principal(name, expires), reach.as_json)
    if reach.as_json:
        emit({"principal": made["principal"]["name"], "token": made["token"]}, True)
    else:
        console.print(
            f"principal {name}: new token (shown once; the old one no longer works):",
            markup=False,
        )
        sys.stdout.write(made["token"] + "\n")


@app.command("revoke")
@takes_registry_options
def principal_revoke(name: str, *, reach: RegistryReach) -> None:
    """Revoke a principal: its token stops working."""
    run(reach.access().revoke_principal(name), reach.as_json)
    if reach.as_json:
        emit({"principal": name, "revoked": True}, True)
    else:
        console.print(escaped(f"principal {name} revoked"), markup=False, highlight=False)
