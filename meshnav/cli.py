"""``meshnav``: the one command line (SPEC §13) — the root command, its groups from
``meshnav.commands`` in the order ``--help`` lists them, and the entry point that makes every error
one line."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from mesh import handover
from meshnav.commands import (
    audit,
    catalogue,
    contracts,
    grants,
    local,
    node_serving,
    principals,
    seats,
    serving,
    walking,
)
from meshnav.commands.options import SeveralValues, spread_values
from meshnav.commands.outcome import errors
from meshnav.logs import configure_logging

__all__ = ["SeveralValues", "app", "main", "spread_values"]

app = typer.Typer(
    rich_markup_mode=None,
    name="meshnav",
    help="Find and call the one tool an agent needs across a mesh of machines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# the commands at the root (migrate, demo; register, retire; mesh, search, describe, call, docs)
for commands in (local.app, catalogue.app, walking.app):
    app.add_typer(commands)
app.add_typer(serving.navigator_app, name="navigator")
app.add_typer(node_serving.node_app, name="node")
app.add_typer(principals.app, name="principal")
app.add_typer(grants.app, name="grant")
app.add_typer(seats.app, name="seat")
app.add_typer(catalogue.tool_app, name="tool")
app.add_typer(audit.app, name="audit")
app.add_typer(contracts.app, name="contracts")


def _version(shown: bool) -> None:
    if shown:
        from importlib.metadata import version

        sys.stdout.write(f"meshnav {version('meshnav')}\n")
        raise typer.Exit()


@app.callback()
def _setup(
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level", envvar="MESHNAV_LOG_LEVEL", help="DEBUG, INFO, WARNING or ERROR."
        ),
    ] = None,
    log_format: Annotated[
        str | None,
        typer.Option(
            "--log-format",
            envvar="MESHNAV_LOG_FORMAT",
            help="text (one line an event, UTC times) or json (one object a line).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and stop."
        ),
    ] = False,
) -> None:
    """Find and call the one tool an agent needs across a mesh of machines."""
    try:
        configure_logging(log_level, log_format)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--log-format") from None


def main() -> None:
    """The ``meshnav`` command. A usage error (an unknown option, a value of the wrong type) is
    one line on stderr and exit status 2, as every other error is one line (SPEC §13)."""
    try:  # a node run anew without its secrets reads them first (ADR 0046)
        handover.take_over()
    except handover.HandoverFailed as error:
        errors.print(f"meshnav: {error}", markup=False, highlight=False)
        sys.exit(1)
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        sys.exit(130)
    except Exception as error:
        # Click's usage errors (Typer vendors Click, so they are known by their shape): the
        # message and a pointer to --help, never the boxed usage text
        exit_code = getattr(error, "exit_code", None)
        if not (hasattr(error, "format_message") and isinstance(exit_code, int)):
            raise
        message = error.format_message()  # type: ignore[attr-defined]  # Click's, by shape
        if type(error).__name__ == "NoArgsIsHelpError":  # no command given: the help, as asked
            errors.print(message, markup=False, highlight=False)
        else:
            context = getattr(error, "ctx", None)
            hint = f" (see {context.command_path} --help)" if context is not None else ""
            errors.print(f"meshnav: {message}{hint}", markup=False, highlight=False)
        sys.exit(exit_code)
    sys.exit(code if isinstance(code, int) else 0)
