"""HTML building blocks for data: tables, fact lists, breadcrumbs.

Tables have header cells and a caption; each cell carries its column's name in ``data-label`` so a
narrow screen can stack a row into labelled lines (``console.css``).
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from navigator.console.layout import join

__all__ = ["Cell", "breadcrumb", "count_cell", "facts", "table"]

Cell = Markup | str | int


def table(caption: str, headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> Markup:
    head = join(Markup('<th scope="col">{}</th>').format(h) for h in headers)
    body = join(
        Markup("<tr>{}</tr>").format(
            join(
                Markup('<{} data-label="{}"{}>{}</{}>').format(
                    Markup("th") if i == 0 else Markup("td"),
                    headers[i],
                    Markup(' scope="row"') if i == 0 else "",
                    cell,
                    Markup("th") if i == 0 else Markup("td"),
                )
                for i, cell in enumerate(row)
            )
        )
        for row in rows
    )
    return Markup(
        '<table class="stack"><caption>{}</caption><thead><tr>{}</tr></thead>'
        "<tbody>{}</tbody></table>"
    ).format(caption, head, body)


def count_cell(tools: int | None) -> Cell:
    return Markup('<span class="muted">—</span>') if tools is None else tools


def breadcrumb(*trail: tuple[str, str | None]) -> Markup:
    items = join(
        Markup('<li><a href="{}">{}</a></li>').format(href, label)
        if href
        else Markup('<li aria-current="page">{}</li>').format(label)
        for label, href in trail
    )
    return Markup('<nav class="crumbs" aria-label="Breadcrumb"><ol>{}</ol></nav>').format(items)


def facts(pairs: Sequence[tuple[str, Cell | None]]) -> Markup:
    items = join(
        Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(term, value)
        for term, value in pairs
        if value is not None
    )
    return Markup('<dl class="facts">{}</dl>').format(items)
