"""``meshnav seat``: where each mesh seat is served (SPEC §5) — the one machine and role a node
serves it on — placed, listed and removed, on the registry directly or through a navigator's
admin API."""

from __future__ import annotations

import typer

from meshnav.commands.outcome import console, emit, run, show
from meshnav.commands.reach import RegistryReach, takes_registry_options
from meshnav.render import escaped

__all__ = ["app"]

app = typer.Typer(
    rich_markup_mode=None, help="Where each mesh seat is served.", no_args_is_help=True
)


@app.command("place")
@takes_registry_options
def seat_place(seat: str, machine: str, role: str, *, reach: RegistryReach) -> None:
    """Place a mesh seat on MACHINE's ROLE (moving it if held): the only place a node serves it."""
    placed = run(reach.access().place_seat(seat, machine, role), reach.as_json)
    if reach.as_json:
        emit(placed, True)
    else:
        console.print(escaped(f"{placed['seat']} placed on {machine}/{role}"), markup=False)


@app.command("list")
@takes_registry_options
def seat_list(*, reach: RegistryReach) -> None:
    """List the mesh seats and the machine and role each is placed on."""
    seats = run(reach.access().list_seats(), reach.as_json)
    if reach.as_json:
        emit(seats, True)
        return
    from meshnav.render import seats_table

    show(seats_table(seats))


@app.command("remove")
@takes_registry_options
def seat_remove(seat: str, *, reach: RegistryReach) -> None:
    """Remove a mesh seat; the assignment that held it is retired with it."""
    removed = run(reach.access().remove_seat(seat), reach.as_json)
    if reach.as_json:
        emit(removed, True)
    else:
        console.print(escaped(f"{removed['removed']} removed"), markup=False, highlight=False)
