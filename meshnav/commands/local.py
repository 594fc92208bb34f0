"""``meshnav migrate`` and ``meshnav demo``: the commands that need no navigator running — the
registry made or brought to the newest schema, and the whole mesh started on one machine."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer

from meshnav.commands.options import DEFAULT_DATABASE, DatabaseOpt, JsonOpt
from meshnav.commands.outcome import console, emit, errors, run

__all__ = ["app"]

app = typer.Typer(rich_markup_mode=None)  # its commands stand at the root: ``meshnav migrate``


@app.command("migrate")
def migrate_command(database: DatabaseOpt = DEFAULT_DATABASE, as_json: JsonOpt = False) -> None:
    """Make the registry, or upgrade it to the newest schema; safe to repeat."""
    from registry import HEAD_REVISION, RegistryError, migrate, shown_url

    try:
        before = migrate(database)
    except RegistryError as error:
        errors.print(f"meshnav: {error}", markup=False, highlight=False)
        raise typer.Exit(1) from None
    shown = shown_url(database)  # a relative sqlite:///tmp/x.db is ./tmp/x.db: said in full
    if as_json:
        emit({"revision": HEAD_REVISION, "database": shown, "created": before is None}, True)
    elif before is None:
        console.print(
            f"made a new registry at {shown}, at the newest schema; it holds no principals: "
            "meshnav principal add NAME --scopes mesh:admin makes the first administrator",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(
            f"the registry at {shown} is at the newest schema",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


@app.command("demo")
def demo_command(
    listen: Annotated[
        str, typer.Option(help="Navigator address; nodes take the next three ports.")
    ] = "127.0.0.1:7700",
    data: Annotated[
        Path, typer.Option(help="Where the demo keeps its registry and databases.")
    ] = Path(".meshnav-demo"),
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh", help="Start over: a new registry, new data and a new token in DIR."
        ),
    ] = False,
) -> None:
    """The whole mesh on one machine: a navigator, three nodes, a mesh seat, a demo principal."""
    from meshnav.demo import run_demo

    # SIGTERM (``kill``, a service manager) stops the demo as Ctrl-C does, nodes included: left
    # to its default, it ended the process before the nodes were told, and they kept the ports
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    run(run_demo(listen, data, fresh=fresh))
