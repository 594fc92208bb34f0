"""HTML building blocks for data: tables, fact lists, breadcrumbs.

Tables have header cells and a caption; each cell carries its column's name in ``data-label`` so a
narrow screen can stack a row into labelled lines (``console.css``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from markupsafe import Markup

from navigator.console.layout import join

__all__ = ["Cell", "breadcrumb", "count_cell", "facts", "since_cell", "table"]

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


def ago(seconds: float) -> str:
    """How long ago, as a person reads it: "3 s ago", "4 min ago", "2 h ago", "5 d ago"."""
    whole = max(0, int(seconds))
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if whole >= size:
            return f"{whole // size} {unit} ago"
    return f"{whole} s ago"


def since_cell(at: str | None, now: datetime | None = None) -> Cell | None:
    """A moment (ISO 8601) as how long ago it was, the moment itself on hover and in
    ``datetime`` (``console.js`` keeps the words current between updates)."""
    if at is None:
        return None
    moment = datetime.fromisoformat(at)
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    shown = moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return Markup('<time datetime="{}" title="{}" data-ago>{}</time>').format(
        shown, shown, ago(seconds)
    )
