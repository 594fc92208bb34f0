"""``meshnav seat``: where each mesh seat is served (SPEC §5) — the one machine and role a node
serves it on — on the registry directly or through a navigator's admin API."""

from __future__ import annotations

import typer

from meshnav.commands.outcome import console, emit, run
from meshnav.commands.reach import RegistryReach, takes_registry_options
from meshnav.render import escaped

__all__ = ["app"]

app = typer.Typer(help="Where each mesh seat is served.", no_args_is_help=True)


@app.command("place")
@takes_registry_options
def seat_place(seat: str, machine: str, role: str, *, reach: RegistryReach) -> None:
    """Place a mesh seat on MACHINE's ROLE (moving it if held): the only place a node serves it."""
    placed = run(reach.access().place_seat(seat, machine, role), reach.as_json)
    if reach.as_json:
        emit(placed, True)
    else:
        console.print(escaped(f"{placed['seat']} placed on {machine}/{role}"), markup=False)
