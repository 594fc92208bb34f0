"""``meshnav grant``: who may call what (SPEC §7) — allow and deny rows, their list, and the row
that decides one call — on the registry directly or through a navigator's admin API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from meshnav.commands.options import ForceOpt, SeveralValues, words
from meshnav.commands.outcome import console, emit, run, show
from meshnav.commands.reach import RegistryReach, takes_registry_options
from meshnav.render import escaped, shown

__all__ = ["app"]

app = typer.Typer(rich_markup_mode=None, help="Who may call what.", no_args_is_help=True)

ScopesOpt = Annotated[
    list[str], typer.Option("--scopes", help="The row applies only to holders of these.")
]


def _grant_command(effect: str, summary: str) -> Callable[..., None]:
    """``grant allow`` or ``grant deny``: the same arguments and options, a row of ``effect``;
    ``summary`` is its help."""

    def grant(
        principal: str,
        target: str,
        scopes: ScopesOpt = [],  # noqa: B006
        force: ForceOpt = False,
        *,
        reach: RegistryReach,
    ) -> None:
        added = reach.access().grant(effect, principal, target, words(scopes), force=force)
        row = run(added, reach.as_json)
        if reach.as_json:
            emit(row, True)
        else:
            console.print(
                escaped(
                    f"grant {row['id']}: {effect} {target} for {principal} "
                    f"(revision {row['revision']})"
                ),
                markup=False,
                highlight=False,
            )

    grant.__doc__ = summary
    grant.__name__ = grant.__qualname__ = f"grant_{effect}"
    return takes_registry_options(grant)


app.command("allow", cls=SeveralValues)(
    _grant_command(
        "allow", "Allow PRINCIPAL (or *) to call TARGET (an address or pattern such as db1/*/*)."
    )
)
app.command("deny", cls=SeveralValues)(
    _grant_command(
        "deny", "Deny PRINCIPAL (or *) TARGET; an explicit deny stops administrators too."
    )
)


@app.command("list")
@takes_registry_options
def grant_list(*, reach: RegistryReach) -> None:
    """List grant rows."""
    rows = run(reach.access().list_grants(), reach.as_json)
    if reach.as_json:
        emit(rows, True)
        return
    from meshnav.render import grants_table

    show(grants_table(rows))


@app.command("revoke")
@takes_registry_options
def grant_revoke(grant_id: int, *, reach: RegistryReach) -> None:
    """Remove a grant row."""
    run(reach.access().revoke_grant(grant_id), reach.as_json)
    if reach.as_json:
        emit({"grant": grant_id, "revoked": True}, True)
    else:
        console.print(f"grant {grant_id} revoked")


@app.command("check")
@takes_registry_options
def grant_check(principal: str, address: str, *, reach: RegistryReach) -> None:
    """Explain which grant row decides whether PRINCIPAL may call ADDRESS."""
    verdict = run(reach.access().check(principal, address), reach.as_json)
    if reach.as_json:
        emit(verdict, True)
    else:
        line = shown(f"{verdict['principal']} → {verdict['address']}: ")
        line.append(*(("allowed", "green") if verdict["allowed"] else ("denied", "red")))
        line.append(f" — {escaped(verdict['reason'])}")
        console.print(line)
