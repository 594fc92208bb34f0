"""An assignment's page: its tools with their contracts — arguments, input schema, output schema,
annotations — as ``describe`` gives them to this viewer.
"""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup, escape

from navigator.catalog.machines import RETIRED
from navigator.console.layout import (
    NO_GRANTS,
    RETIRED_ASSIGNMENT,
    Page,
    assignment_href,
    empty_state,
    join,
    machine_href,
    status_badge,
    truncated_note,
)
from navigator.console.tables import Cell, breadcrumb, count_cell, facts, table
from navigator.console.viewpoint import TOOLS_PAGE, AssignmentView, ToolView

__all__ = ["assignment_page"]


#: The bounds an argument's schema may set, and how the arguments table words each.
BOUNDS = (
    ("minimum", "at least {}"),
    ("exclusiveMinimum", "more than {}"),
    ("maximum", "at most {}"),
    ("exclusiveMaximum", "less than {}"),
    ("multipleOf", "a multiple of {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minItems", "at least {} items"),
    ("maxItems", "at most {} items"),
)


def _value(value: Any) -> Markup:
    return Markup("<code>{}</code>").format(json.dumps(value, ensure_ascii=False))


def _accepts(prop: dict[str, Any]) -> Markup:
    """What an argument takes beyond its type: its allowed values, its bounds, its default."""
    said: list[Markup] = []
    if isinstance(prop.get("enum"), list):
        said.append(Markup("one of {}").format(Markup(", ").join(map(_value, prop["enum"]))))
    if "const" in prop:
        said.append(Markup("exactly {}").format(_value(prop["const"])))
    for keyword, words in BOUNDS:
        bound = prop.get(keyword)
        if isinstance(bound, int | float) and not isinstance(bound, bool):
            said.append(escape(words.format(bound)))
    if isinstance(prop.get("pattern"), str):
        said.append(Markup("matching {}").format(_value(prop["pattern"])))
    if "default" in prop:
        said.append(Markup("default {}").format(_value(prop["default"])))
    return Markup("; ").join(said) if said else Markup('<span class="muted">—</span>')


def _schema_rows(schema: Any) -> list[tuple[Cell, ...]]:
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required = set(schema.get("required") or [])
    rows: list[tuple[Cell, ...]] = []
    for name, declared in schema["properties"].items():
        prop = declared if isinstance(declared, dict) else {}
        kind = prop.get("type", "any")
        kind = " | ".join(map(str, kind)) if isinstance(kind, list) else str(kind)
        rows.append(
            (
                Markup("<code>{}</code>").format(name),
                kind,
                "yes" if name in required else "no",
                _accepts(prop),
                str(prop.get("description", "")),
            )
        )
    return rows


def _json_block(summary: str, value: Any) -> Markup:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    return Markup("<details><summary>{}</summary><pre><code>{}</code></pre></details>").format(
        summary, text
    )


def _tool_section(tool: ToolView) -> Markup:
    anchor = f"tool-{tool.name}"
    head = Markup('<h3 id="{}-h"><code>{}</code></h3><p class="tool-title">{} {}</p>').format(
        anchor, tool.address, tool.title, status_badge(tool.status)
    )
    if tool.contract is None:
        problem = tool.problem.message if tool.problem else "Its contract cannot be shown."
        body = Markup('<p class="notice">{}</p>').format(problem)
    else:
        contract = tool.contract
        rows = _schema_rows(contract.get("inputSchema"))
        arguments = (
            table(
                f"Arguments of {tool.name}",
                ("Argument", "Type", "Required", "Accepts", "Description"),
                rows,
            )
            if rows
            else Markup('<p class="muted">No named arguments.</p>')
        )
        extra = join(
            _json_block(label, contract[key])
            for key, label in (
                ("outputSchema", "Output schema (JSON)"),
                ("annotations", "Annotations"),
            )
            if key in contract
        )
        body = Markup(
            '<p class="description">{}</p>{}{}{}{}'
            '<p class="meta">Confirmation: {} · contract digest <code>{}</code></p>'
            '<p><a class="try-link" href="/console/try/{}">Try this tool</a></p>'
        ).format(
            contract.get("description") or tool.summary,
            Markup("<h4>Arguments</h4>"),
            arguments,
            _json_block("Input schema (JSON)", contract.get("inputSchema")),
            extra,
            contract.get("confirmation", ""),
            str(contract.get("contractDigest", ""))[:16],
            tool.address,
        )
    return Markup('<section class="tool" id="{}" aria-labelledby="{}-h">{}{}</section>').format(
        anchor, anchor, head, body
    )


def _pager(view: AssignmentView) -> Markup:
    if view.total <= TOOLS_PAGE:
        return Markup("")
    here = view.offset // TOOLS_PAGE
    base = assignment_href(view.holding.address)
    links = []
    if here > 0:
        links.append(
            Markup('<a href="{}?page={}" rel="prev">Previous tools</a>').format(base, here - 1)
        )
    if view.offset + TOOLS_PAGE < view.total:
        links.append(
            Markup('<a href="{}?page={}" rel="next">Next tools</a>').format(base, here + 1)
        )
    return Markup(
        '<nav class="pager" aria-label="Tool pages"><p>Tools {} to {} of {}</p>{}</nav>'
    ).format(view.offset + 1, view.offset + len(view.tools), view.total, join(links))


def assignment_page(view: AssignmentView) -> Page:
    holding = view.holding
    holder = holding.address.split("/")[0]
    trail: list[tuple[str, str | None]] = [("Mesh", "/")]
    if holder != "mesh":
        trail.append((holder, machine_href(holder)))
    trail.append((holding.address, None))
    summary = facts(
        [
            ("Kind", holding.kind),
            ("Module", holding.module),
            ("Status", status_badge(holding.status)),
            ("Runs on", holding.machine if holder == "mesh" else None),
            ("Tools you may call", count_cell(holding.tools)),
        ]
    )
    if view.tools:
        tools = _pager(view) + join(_tool_section(t) for t in view.tools) + _pager(view)
    elif holding.status == RETIRED:
        tools = empty_state("Retired", RETIRED_ASSIGNMENT)
    else:
        tools = empty_state("No tools to show", NO_GRANTS)
    if view.truncated:
        tools = truncated_note("tool", f"meshnav mesh {holding.address}") + tools
    main = Markup("{}<h1><code>{}</code></h1>{}<h2>Tools</h2>{}").format(
        breadcrumb(*trail), holding.address, summary, tools
    )
    return Page(title=holding.address, main=main)
