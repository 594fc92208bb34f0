"""``meshnav register``, ``meshnav retire`` and ``meshnav tool mark``: an operator changing the
mesh live through the navigator's admin API — an assignment added by its endpoint or a tools file,
a machine, an assignment or a seat retired (SPEC §6), a tool's confirmation marked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from meshnav.commands.options import words
from meshnav.commands.outcome import console, emit, run
from meshnav.commands.reach import Reach, takes_navigator_options
from meshnav.errors import CommandError
from meshnav.render import escaped

__all__ = ["app", "tool_app"]

app = typer.Typer(rich_markup_mode=None)  # its commands stand at the root: ``meshnav register``


def _tools(tools_file: Path) -> list[Any]:
    """The tools a ``tools/list`` result in ``tools_file`` lists."""
    try:
        text = tools_file.read_bytes()  # json reads UTF-8, -16 and -32; else not JSON
    except OSError as error:
        reason = error.strerror or "it cannot be read"
        raise CommandError(f"cannot read the tools file: {reason.lower()}") from None
    try:
        listing = json.loads(text)
    except ValueError:
        raise CommandError("the tools file is not JSON") from None
    if not isinstance(listing, dict) or not isinstance(listing.get("tools"), list):
        raise CommandError('the tools file must hold {"tools": [...]}')
    tools: list[Any] = listing["tools"]
    return tools


@app.command("register")
@takes_navigator_options
def register_command(
    machine: str,
    role: str,
    endpoint: Annotated[
        str | None, typer.Option(help="URL of a running MCP server (streamable HTTP).")
    ] = None,
    tools_file: Annotated[
        Path | None, typer.Option("--tools-file", help="A tools/list result as JSON.")
    ] = None,
    module: Annotated[str | None, typer.Option(help="Module name (defaults to the role).")] = None,
    scopes: Annotated[list[str], typer.Option("--scopes", help="Scopes the module declares.")] = [],  # noqa: B006
    grant_scope_holders: Annotated[
        bool,
        typer.Option(
            "--grant-scope-holders",
            help="Add * rows granting its tools to holders of the scopes it declares.",
        ),
    ] = False,
    *,
    reach: Reach,
) -> None:
    """Register an assignment live: by endpoint (its tools are pulled) or by a tools file."""

    from meshnav.client import admin_request

    async def work() -> Any:
        if endpoint is None and tools_file is None:
            raise CommandError("give --endpoint URL or --tools-file FILE")
        if endpoint is not None and tools_file is not None:
            raise CommandError("give --endpoint URL or --tools-file FILE, not both")
        body: dict[str, Any] = {
            "machine": machine,
            "role": role,
            "module": module or role,
            "scopes": words(scopes),
            "grantScopeHolders": grant_scope_holders,
        }
        if endpoint:
            body["endpoint"] = endpoint
        if tools_file:
            body["tools"] = _tools(tools_file)
        return await admin_request(reach.url, reach.credential(), "POST", "/assignments", body)

    answer = run(work(), reach.as_json)
    if reach.as_json:
        emit(answer, True)
        return
    from meshnav.render import registration_view

    console.print(registration_view(answer))


@app.command("retire")
@takes_navigator_options
def retire_command(address: str, *, reach: Reach) -> None:
    """Retire a machine (db1), an assignment (db1/postgres) or a seat (mesh/backup)."""
    from meshnav.client import admin_request

    async def work() -> Any:
        return await admin_request(
            reach.url, reach.credential(), "POST", "/retire", {"address": address}
        )

    body = run(work(), reach.as_json)
    if reach.as_json:
        emit(body, True)
    else:
        console.print(escaped(f"retired {address}"), markup=False, highlight=False)


#: An operator's confirmation marks (``auto`` clears the mark: the annotations decide).
MARKS = ("auto", "never", "required", "elicit-only")


tool_app = typer.Typer(
    rich_markup_mode=None, help="An operator's marks on one tool.", no_args_is_help=True
)


@tool_app.command("mark")
@takes_navigator_options
def mark_command(
    address: Annotated[str, typer.Argument(help="A tool's address: MACHINE/ROLE/TOOL.")],
    mark: Annotated[str, typer.Argument(help="auto, never, required or elicit-only.")],
    *,
    reach: Reach,
) -> None:
    """Mark whether a tool's calls need a person's yes: required, never, elicit-only (only a
    person's answer, never a confirm token), or auto (its annotations decide)."""
    from urllib.parse import quote

    from meshnav.client import admin_request

    async def work() -> Any:
        if mark not in MARKS:
            raise CommandError(f"the mark is one of {', '.join(MARKS)}")
        parts = address.split("/")
        if len(parts) != 3 or not all(parts):
            raise CommandError("a tool's address is MACHINE/ROLE/TOOL, e.g. db1/postgres/query")
        path = "/tools/" + "/".join(quote(part, safe="") for part in parts) + "/confirmation"
        return await admin_request(
            reach.url, reach.credential(), "PUT", path, {"confirmation": mark}
        )

    body = run(work(), reach.as_json)
    if reach.as_json:
        emit(body, True)
    else:
        console.print(escaped(f"{address}: {body['confirmation']}"), markup=False, highlight=False)
