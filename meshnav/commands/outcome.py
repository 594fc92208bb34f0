"""How a command answers and ends: its answer on standard output (a view, or JSON for scripts),
an error as one line on standard error and exit status 1 (SPEC §13)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import Any, TypeVar

import typer
from rich.console import Console

from meshnav.errors import CommandError
from meshnav.render import escaped, json_text

__all__ = ["console", "emit", "errors", "need", "run", "show"]

T = TypeVar("T")

console = Console()
# One line however long: scripts read the first line of an error (a confirm token ends it).
errors = Console(stderr=True, soft_wrap=True, highlight=False)


def run(work: Awaitable[T], as_json: bool = False) -> T:
    """Run a command's work; a ``CommandError`` is one line on stderr and exit status 1: with
    ``as_json``, the navigator's §9 error body as JSON when it answered one (a confirm token is
    then a field to read, not a line to scrape), or a node's own error answer."""
    try:
        return asyncio.run(work)  # type: ignore[arg-type]
    except CommandError as error:
        if as_json and error.body is not None:
            sys.stderr.write(json_text(error.body) + "\n")
        else:
            errors.print(f"meshnav: {escaped(error)}", markup=False, highlight=False)
        raise typer.Exit(1) from None


def emit(value: Any, as_json: bool) -> None:
    """``value`` as JSON: plain for scripts with ``as_json``, else coloured for a reader; a
    terminal is sent no character it would obey (``json_text``)."""
    if as_json:
        sys.stdout.write(json_text(value, indent=2) + "\n")
    else:
        console.print_json(json_text(value))


def need(value: str | None, what: str) -> str:
    """``value``, or the ``CommandError`` that says ``what`` is missing."""
    if not value:
        raise CommandError(f"{what} is missing")
    return value


def show(view: Any) -> None:
    """A view on standard output: on a terminal, a table fitted to its width (every column,
    values wrapped); piped, a table is tab-separated rows with every column, for scripts."""
    from rich.table import Table

    from meshnav.render import fit, tab_separated

    if isinstance(view, Table):
        if not console.is_terminal:
            sys.stdout.write(tab_separated(view))
            return
        fit(view)
    console.print(view)
