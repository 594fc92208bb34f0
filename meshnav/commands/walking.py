"""``meshnav mesh``, ``search``, ``describe`` and ``call``: an agent's view of the mesh, through
the same walker tools an agent calls (SPEC §8), drawn for a terminal; and ``meshnav docs``, those
tools' reference written from their own definitions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from meshnav.commands.outcome import console, emit, errors, run, show
from meshnav.commands.reach import Reach, takes_navigator_options
from meshnav.render import escaped

__all__ = ["app"]

app = typer.Typer(rich_markup_mode=None)  # its commands stand at the root: ``meshnav search``


def _walker(tool: str, arguments: dict[str, Any], reach: Reach) -> Any:
    """What the walker tool ``tool`` answers to ``arguments``."""
    from meshnav.walker import walker_call  # an MCP client: loaded only by the commands that walk

    async def work() -> Any:
        return await walker_call(reach.url, reach.credential(), tool, arguments)

    return run(work(), reach.as_json)


@app.command("mesh")
@takes_navigator_options
def mesh_command(address: Annotated[str | None, typer.Argument()] = None, *, reach: Reach) -> None:
    """Draw the mesh (or one machine or assignment) as the caller may see it."""
    from meshnav.walker import mesh_listing

    async def work() -> Any:
        return await mesh_listing(reach.url, reach.credential(), address)

    listing = run(work(), reach.as_json)
    if reach.as_json:
        emit(listing, True)
        return
    from meshnav.render import mesh_tree

    console.print(mesh_tree(listing))
    if listing.get("note"):  # an empty mesh for want of grants
        console.print(listing["note"], markup=False, highlight=False)


@app.command("search")
@takes_navigator_options
def search_command(
    query: str,
    limit: Annotated[int, typer.Option(min=1, max=16)] = 8,
    within: Annotated[str | None, typer.Option()] = None,
    *,
    reach: Reach,
) -> None:
    """Search the mesh for tools, as an agent would."""
    arguments: dict[str, Any] = {"query": query, "limit": limit}
    if within:
        arguments["within"] = within
    found = _walker("search", arguments, reach)
    if reach.as_json:
        emit(found, True)
        return
    from meshnav.render import search_table

    show(search_table(found))


@app.command("describe")
@takes_navigator_options
def describe_command(address: str, *, reach: Reach) -> None:
    """Show one tool's full contract."""
    contract = _walker("describe", {"address": address}, reach)
    if reach.as_json:
        emit(contract, True)
        return
    from meshnav.render import contract_view

    console.print(contract_view(contract))


@app.command("call")
@takes_navigator_options
def call_command(
    address: str,
    args: Annotated[
        str, typer.Option("--args", help="The tool's arguments as a JSON object.")
    ] = "{}",
    confirm: Annotated[
        str | None, typer.Option(help="The token from confirmation_required.")
    ] = None,
    *,
    reach: Reach,
) -> None:
    """Call a tool by its address."""
    try:
        parsed = json.loads(args)
    except json.JSONDecodeError as error:  # where it breaks, never the text itself
        errors.print(
            f"meshnav: --args is not valid JSON: {error.msg.lower()} at line {error.lineno}, "
            f"column {error.colno}",
            markup=False,
        )
        raise typer.Exit(1) from None
    except ValueError:
        errors.print("meshnav: --args is not valid JSON", markup=False)
        raise typer.Exit(1) from None
    arguments: dict[str, Any] = {"address": address, "args": parsed}
    if confirm:
        arguments["confirm"] = confirm
    result = _walker("call", arguments, reach)
    if reach.as_json or not result.get("content"):
        emit(result, True)
        return
    structured = result.get("structuredContent")
    if structured is not None and structured != {"content": result["content"]}:
        emit(structured, False)
    else:
        for block in result["content"]:
            console.print(escaped(block.get("text", block), lines=True), markup=False)


@app.command("docs")
def docs_command(
    out: Annotated[Path, typer.Option(help="Where to write the reference.")] = Path(
        "docs/reference/walker-tools.md"
    ),
) -> None:
    """Write the walker tools' reference from their own definitions."""
    from meshnav.docs import walker_reference

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(walker_reference())
    console.print(f"wrote {out}")
