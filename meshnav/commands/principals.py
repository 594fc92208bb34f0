"""``meshnav principal``: the principals that call the mesh, their tokens and their quotas (SPEC
§11, ADR 0041), on the registry directly or through a navigator's admin API."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from meshnav.commands.options import ConcurrencyOpt, RateOpt, SeveralValues, per_minute, words
from meshnav.commands.outcome import console, emit, run
from meshnav.commands.reach import RegistryReach, takes_registry_options
from meshnav.render import escaped

__all__ = ["app"]

app = typer.Typer(help="Principals and their tokens.", no_args_is_help=True)


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
    expires: Annotated[float | None, typer.Option(help="Days until the token expires.")] = None,
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


@app.command("quota")
@takes_registry_options
def principal_quota(
    name: str, rate: RateOpt = None, concurrency: ConcurrencyOpt = None, *, reach: RegistryReach
) -> None:
    """Set a principal's quota: what is not given is no limit. Every navigator holds it to the
    quota from its next request; a call over it is rate_limited."""
    from registry import Quota

    quota = Quota(per_minute(rate), concurrency)
    row = run(reach.access().set_quota(name, quota), reach.as_json)
    if reach.as_json:
        emit(row, True)
        return
    said = ", ".join(
        f"{value} {unit}"
        for value, unit in ((row["ratePerMinute"], "calls/min"), (row["concurrency"], "at once"))
        if value is not None
    )
    console.print(escaped(f"principal {name}: {said or 'no limit'}"), markup=False, highlight=False)


@app.command("list")
@takes_registry_options
def principal_list(*, reach: RegistryReach) -> None:
    """List principals (never their tokens): a table, or JSON with --json."""
    rows = run(reach.access().list_principals(), reach.as_json)
    if reach.as_json:
        emit(rows, True)
        return
    from meshnav.render import principals_table

    console.print(principals_table(rows))


@app.command("rotate")
@takes_registry_options
def principal_rotate(
    name: str,
    expires: Annotated[float | None, typer.Option(help="Days until the new token expires.")] = None,
    *,
    reach: RegistryReach,
) -> None:
    """Replace a principal's token; the old one stops working at once."""
    made = run(reach.access().rotate_principal(name, expires), reach.as_json)
    if reach.as_json:
        emit({"principal": made["principal"]["name"], "token": made["token"]}, True)
    else:
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
