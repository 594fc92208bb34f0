"""``meshnav contracts``: held tool contracts (SPEC §14) — what is held or refused, what changed
in one, and the operator's decision, through the navigator's admin API. Every string from the
catalogue is printed with its control characters escaped."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from meshnav.commands.outcome import console, emit, run
from meshnav.commands.reach import Reach, takes_navigator_options

__all__ = ["app", "escaped"]

app = typer.Typer(help="Tool contracts held for an operator's approval (SPEC §14).")


def escaped(text: object) -> str:
    """``text`` with every character that is not printable written as an escape (``\\u202e``):
    what a terminal shows is what the contract holds."""
    value = str(text)
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode() for c in value
    )


def _request(reach: Reach, method: str, path: str, **given: Any) -> Any:
    """One admin API request, its errors one line (SPEC §13)."""
    from meshnav.client import admin_request

    async def work() -> Any:
        return await admin_request(reach.url, reach.credential(), method, path, **given)

    return run(work(), reach.as_json)


def _say(text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


@app.command("pending")
@takes_navigator_options
def pending_command(
    pattern: Annotated[str | None, typer.Argument(help="An address, prefix or pattern.")] = None,
    *,
    reach: Reach,
) -> None:
    """Held and rejected contracts, and tools registrations refused (PATTERN narrows)."""
    params = None if pattern is None else {"pattern": pattern}
    found = _request(reach, "GET", "/contracts", params=params)
    if reach.as_json:
        emit(found, True)
        return
    if not found["held"] and not found["refused"]:
        _say("no contract is held")
    for held in found["held"]:
        before = (held["approvedDigest"] or "new")[:12]
        _say(
            f"{escaped(held['address'])}  {held['state']}  "
            f"{before} -> {held['contractDigest'][:12]}"
        )
    for refused in found["refused"]:
        _say(f"{escaped(refused['address'])}  refused: {escaped(refused['reason'])}")


@app.command("show")
@takes_navigator_options
def show_command(address: str, *, reach: Reach) -> None:
    """What changed in a held contract, beside the one approved before it."""
    found = _request(reach, "GET", "/contracts/show", params={"address": address})
    if reach.as_json:
        emit(found, True)
        return
    _say(f"{escaped(found['address'])}  {found['state']}")
    _say(f"approved: {found['approvedDigest'] or 'never'}")
    _say(f"now:      {found['contractDigest']}")
    for line in _changes(found["changes"]):
        _say(line)


def _changes(changes: dict[str, Any]) -> list[str]:
    """An operator's reading of ``changes`` (``navigator.catalog.differences``)."""
    lines: list[str] = []
    if changes.get("new"):
        lines.append("a tool never approved:")
        lines.append(f"  title: {escaped(changes.get('title') or '')}")
        lines.append(f"  description: {escaped(changes.get('description') or '')}")
        added = ", ".join(changes["inputSchema"]["added"]) or "none"
        lines.append(f"  arguments: {escaped(added)}")
        lines.append(f"  annotations: {escaped(json.dumps(changes.get('annotations')))}")
        return lines
    for field in ("name", "title"):
        if field in changes:
            lines.append(f"{field}: {escaped(json.dumps(changes[field], ensure_ascii=False))}")
    if "description" in changes:
        lines.append(f"description: {escaped(changes['description'])}")
    for field in ("inputSchema", "outputSchema"):
        schema = changes.get(field)
        if schema is None:
            continue
        for kind in ("added", "removed", "changed"):
            if schema[kind]:
                lines.append(f"{field} properties {kind}: {escaped(', '.join(schema[kind]))}")
        if "other" in schema:
            lines.append(f"{field} otherwise: {escaped(json.dumps(schema['other']))}")
    annotations = changes.get("annotations")
    if annotations is not None:
        for key, change in annotations["changed"].items():
            lines.append(
                f"annotations {escaped(key)}: {escaped(json.dumps(change['from']))}"
                f" -> {escaped(json.dumps(change['to']))}"
            )
        lines += [f"! {note}" for note in annotations["notes"]]
    if len(lines) == 0:
        lines.append("no visible difference")
    return lines


def _decide(verb: str, target: str, reach: Reach) -> None:
    found = _request(reach, "POST", f"/contracts/{verb}", body={"target": target})
    if reach.as_json:
        emit(found, True)
        return
    done = "approved" if verb == "approve" else "rejected"
    for address in found[done]:
        _say(f"{done} {escaped(address)}")


@app.command("approve")
@takes_navigator_options
def approve_command(target: str, *, reach: Reach) -> None:
    """Approve the held contracts at ADDRESS or PATTERN, on every holder of each."""
    _decide("approve", target, reach)


@app.command("reject")
@takes_navigator_options
def reject_command(target: str, *, reach: Reach) -> None:
    """Reject the held contracts at ADDRESS or PATTERN: they stay held, saying so."""
    _decide("reject", target, reach)
