r"""Terminal views of the mesh, drawn with Rich from the same walker tools an agent uses.

Every string from the mesh or the audit trail (a tool's title or description, an address, a
principal, an audit target) is drawn as ``Text``, never as Rich markup — a title of "[/]" is a
title, not a closing tag — and passes ``escaped`` first: a control character is shown as its
escape (``\x1b``, ``\u202e``), never sent to the terminal, which would obey it (move the cursor,
clear the screen, reverse the text that follows, hide a word).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from mesh.text import escaped as text_escaped

__all__ = [
    "audit_time",
    "contract_view",
    "escaped",
    "fit",
    "grants_table",
    "json_text",
    "mesh_tree",
    "principal_view",
    "principals_table",
    "registration_view",
    "search_table",
    "seats_table",
    "shown",
    "tab_separated",
]

STATUS_STYLE = {"answering": "green", "not answering": "red", "retired": "dim"}


def escaped(text: object, *, lines: bool = False) -> str:
    r"""``text`` safe to print to a terminal: each character it would obey rather than show is
    written as its escape — ``\x1b``, ``\x9b``, ``\u202e``, ``\U000e0041``. With ``lines``, a
    newline and a tab are kept (a description's paragraphs, a tool's text); otherwise they are
    escaped too, so that one string can never draw what looks like another row. The one
    function every catalogue and audit string the CLI prints passes through."""
    return text_escaped(str(text), keep="\n\t" if lines else "")


def shown(text: object, style: str = "", *, lines: bool = False) -> Text:
    """``escaped(text)`` as Rich ``Text`` (never markup), in ``style``."""
    return Text(escaped(text, lines=lines), style=style)


def json_text(value: Any, indent: int | None = None) -> str:
    r"""``value`` as JSON a terminal only shows: JSON escapes C0 controls itself, and the other
    unsafe characters (C1, bidi, zero-width, tags) are written as ``\uXXXX`` escapes too —
    the same JSON value, read back."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    if text.isprintable():
        return text
    # JSON writes no newline inside a string: a newline here is the layout's own
    return "".join(c if c.isprintable() or c == "\n" else _json_escape(c) for c in text)


def _json_escape(char: str) -> str:
    return json.dumps(char, ensure_ascii=True)[1:-1]


def fit(table: Table) -> Table:
    """``table`` drawn at any width with every column shown: values wrap (an address folds
    where it must), and no column is narrower than its header. A column that never wrapped
    left the others zero-wide at 80 columns."""
    for column in table.columns:
        column.no_wrap = False
        column.overflow = "fold"
        column.min_width = max(column.min_width or 0, len(str(column.header)))
    table.show_edge = False  # two columns more for the values
    return table


def tab_separated(table: Table) -> str:
    """``table`` as a script reads it: a header row, then one row a line, every column, cells
    separated by tabs (a tab or line break inside a value becomes a space)."""
    columns = [
        [str(column.header)] + [_plain(cell) for cell in column.cells] for column in table.columns
    ]
    return "".join("\t".join(row) + "\n" for row in zip(*columns, strict=True))


def _plain(cell: object) -> str:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return " ".join(text.replace("\t", " ").splitlines())


def audit_time(at: str) -> str:
    """An audit event's time as UTC ISO 8601 to the second, its zone written: ``...Z``."""
    try:
        moment = datetime.fromisoformat(at)
    except ValueError:
        return at
    if moment.tzinfo is None:  # the registry's times are UTC
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status(status: str | None) -> Text:
    if not status:
        return Text("")
    return shown(f"● {status}", STATUS_STYLE.get(status, "yellow"))


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _label(entry: dict[str, Any]) -> Text:
    label = shown(entry["address"], "bold")
    label.append(f"  {escaped(entry['kind'])}", style="cyan")
    if entry.get("module") and entry["kind"] != "tool":
        label.append(f"  {escaped(entry['module'])}", style="magenta")
    if "tools" in entry:
        label.append(f"  {_count(entry['tools'], 'tool')}", style="blue")
    if "holderCount" in entry:
        label.append(f"  on {_count(entry['holderCount'], 'machine')}", style="blue")
    if entry.get("status"):
        label.append("  ")
        label.append_text(_status(entry["status"]))
    if entry.get("heartbeats"):  # why the status is what it is (ADR 0031)
        label.append(f" (heartbeats {escaped(entry['heartbeats'])})", style="dim")
    if entry.get("summary"):
        label.append(f"  {escaped(entry['summary'])}", style="dim")
    return label


def mesh_tree(listing: dict[str, Any]) -> Tree:
    """The mesh (or one prefix of it) as ``walker.mesh_listing`` lists it, two levels deep."""
    root = Tree(shown(listing["address"] or "mesh", "bold underline"))
    for entry in listing["entries"]:
        branch = root.add(_label(entry))
        for inner in entry.get("entries", ()):
            branch.add(_label(inner))
    return root


def search_table(found: dict[str, Any]) -> Table:
    table = Table(title="search results", show_lines=False)
    table.add_column("#", justify="right")
    # an address is what a person copies into the next command: never broken across lines
    table.add_column("address", style="bold", no_wrap=True)
    table.add_column("title")
    table.add_column("status", no_wrap=True)
    table.add_column("summary", style="dim", ratio=1)
    for rank, result in enumerate(found.get("results", []), start=1):
        address = result["address"]
        if "holderCount" in result:
            address += f"  ({result['holderCount']} holders)"
        table.add_row(
            str(rank),
            shown(address),
            shown(result["title"]),
            _status(result["status"]),
            shown(result["summary"]),
        )
    return table


def contract_view(contract: dict[str, Any]) -> RenderableType:
    head = shown(contract["address"], "bold")
    head.append("  ")
    head.append_text(_status(contract.get("status")))
    head.append(
        f"\nconfirmation: {escaped(contract['confirmation'])}"
        f"   digest: {escaped(contract.get('contractDigest', '')[:16])}…"
    )
    description = shown(contract.get("description") or "", lines=True)
    parts: list[RenderableType] = [head, description]
    for name in ("inputSchema", "outputSchema"):
        if name in contract:  # wrapped, never cut: a schema is read, and copied, whole
            schema = Syntax(json_text(contract[name], indent=2), "json", word_wrap=True)
            parts.append(Panel(schema, title=name))
    if "annotations" in contract:
        parts.append(shown("annotations: " + json_text(contract["annotations"]), "dim"))
    return Panel(Group(*parts), title=shown(contract["title"]))


def grants_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="grants")
    for column in ("id", "principal", "effect", "target", "scopes", "revision"):
        table.add_column(column, no_wrap=column in ("principal", "target"))
    for row in rows:
        effect = shown(row["effect"], "green" if row["effect"] == "allow" else "red")
        table.add_row(
            shown(row["id"]),
            shown(row["principal"]),
            effect,
            shown(row["target"]),
            shown(" ".join(row["scopes"])),
            shown(row["revision"]),
        )
    return table


PRINCIPAL_STYLE = {"active": "green", "expired": "yellow", "revoked": "red"}


def principals_table(rows: list[dict[str, Any]]) -> Table:
    """Principals as ``principal list`` gives them: never a token, only what it may do."""
    table = Table(title="principals")
    quotas = [_quota(row) for row in rows]
    columns = ["name", "scopes", "machine", "expires", "status"]
    if any(quotas):  # a column only where some principal has a quota (ADR 0041)
        columns.insert(4, "quota")
    for column in columns:
        table.add_column(column, no_wrap=column == "name")
    for row, quota in zip(rows, quotas, strict=True):
        status = row.get("status") or ("revoked" if row.get("revoked") else "active")
        cells = [
            shown(row["name"]),
            shown(" ".join(row["scopes"])),
            shown(row.get("machine") or "—"),
            shown(row.get("expiresAt") or "never"),
            shown(status, PRINCIPAL_STYLE.get(status, "")),
        ]
        if "quota" in columns:
            cells.insert(4, shown(quota or "—"))
        table.add_row(*cells)
    return table


def principal_view(row: dict[str, Any]) -> Table:
    """One principal as ``principal show`` gives it: what it may do, and when it was last seen."""
    status = row.get("status") or ("revoked" if row.get("revoked") else "active")
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for field, value in (
        ("principal", Text(row["name"])),
        ("scopes", Text(" ".join(row["scopes"]) or "—")),
        ("machine", Text(row.get("machine") or "—")),
        ("expires", Text(row.get("expiresAt") or "never")),
        ("quota", Text(_quota(row) or "no limit")),
        ("status", Text(status, style=PRINCIPAL_STYLE.get(status, ""))),
        ("last seen", Text(row.get("lastSeen") or "never")),
    ):
        table.add_row(field, value)
    return table


def _quota(row: dict[str, Any]) -> str:
    """A principal's quota as ``principal add`` takes it, e.g. ``600/min, 8 at once``."""
    rate, at_once = row.get("ratePerMinute"), row.get("concurrency")
    said = [f"{rate}/min"] if rate is not None else []
    said += [f"{at_once} at once"] if at_once is not None else []
    return ", ".join(said)


def seats_table(seats: dict[str, Any]) -> Table:
    """The mesh seats as ``seat list`` gives them, each with where it is placed."""
    table = Table(title="seats")
    for column in ("seat", "machine", "role"):
        table.add_column(column)
    for name, where in seats.items():
        placed = where or {}
        table.add_row(
            Text(f"mesh/{name}"),
            Text(placed.get("machine") or "—"),
            Text(placed.get("role") or "—"),
        )
    return table


def registration_view(answer: dict[str, Any]) -> RenderableType:
    """What ``register`` did: the tools registered, and each refused one with its reason."""
    registered = answer.get("registered", [])
    head = shown(f"{answer.get('assignment', '')}: registered {_count(len(registered), 'tool')}")
    refused = answer.get("refused", [])
    if not refused:
        return head
    table = Table(title="refused")
    table.add_column("name", no_wrap=True)
    table.add_column("reason")
    for row in refused:
        table.add_row(shown(row["name"]), shown(row["reason"]))
    return Group(head, table)


OUTCOME_STYLE = {"ok": "green", "answered": "green", "asked": "yellow"}


def audit_table(events: list[dict[str, Any]]) -> Table:
    """Audit events, newest first: who did what to which address, how it ended, which grant."""
    table = Table(title="audit")
    for column in ("at", "principal", "action", "target", "outcome", "grant", "ms", "instance"):
        table.add_column(column, no_wrap=column in ("at", "principal", "target"))
    for event in events:
        grant = event["grant"]
        ms = event["durationMs"]
        table.add_row(
            shown(audit_time(event["at"])),
            shown(event["principal"] or "—"),
            shown(event["action"]),
            shown(event["target"]),
            shown(event["outcome"], OUTCOME_STYLE.get(event["outcome"], "red")),
            shown("—" if grant is None else f"{grant['id']} r{grant['revision']}"),
            shown("" if ms is None else f"{ms:.1f}"),
            shown(event["instance"], "dim"),
        )
    return table
