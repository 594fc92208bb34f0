"""The whole catalogue read flat: every assignment joined with its tools and seat, one
``CatalogRow`` per tool, in one Core query — and streamed, for a navigator's load.

No ORM entities and no JSON decoding of definitions here: at 100,000 tools that is most of the
cost (ADR 0015). The caller's transaction holds the read; ``CatalogStore`` gives it its
connection.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, Row, Select, Text, cast, or_, select

from registry.models import Assignment, Machine, Seat, Tool

__all__ = ["CATALOG_ROWS_BATCH", "CatalogRow", "read_rows", "stream_rows"]

#: Rows of the catalogue read at a time when it is streamed.
CATALOG_ROWS_BATCH = 2000


class CatalogRow(NamedTuple):
    """One tool of one assignment (or an assignment without tools), read in bulk. The definition
    stays the JSON text the database holds, for the caller to decode once per contract."""

    machine: str
    role: str
    module: str
    kind: str
    endpoint: str | None
    scopes: tuple[str, ...]
    retired: bool
    seat: str | None
    tool: str | None
    definition: str | None
    contract_digest: str | None
    confirmation: str | None
    #: "approved", "held" or "rejected" (SPEC §14): only an approved one is served.
    contract_state: str | None
    not_listing: str | None


def read_rows(connection: Connection, machine: str | None = None) -> list[CatalogRow]:
    """Every assignment (of one machine, when named) and its tools as flat rows, ordered by
    machine, role and tool."""
    return list(_catalog_rows(connection.execute(_catalog_query(machine))))


def stream_rows(connection: Connection, *, batch: int) -> Iterator[CatalogRow]:
    """The whole catalogue as ``read_rows`` gives it, read ``batch`` rows at a time (a
    server-side cursor on PostgreSQL) while the caller's transaction lasts: the navigator's
    load, which builds as it reads instead of holding every row at once.

    Over a network (PostgreSQL) the next batch is fetched in a thread while the caller works
    on the current one: the server's work and the wait for it overlap the caller's.
    """
    connection = connection.execution_options(yield_per=batch)
    result = connection.execute(_catalog_query(None))
    try:
        if connection.dialect.name == "sqlite":  # a local file: nothing to wait for
            yield from _catalog_rows(result)
        else:
            yield from _catalog_rows(_read_ahead(result.partitions()))
    finally:
        result.close()  # a reader that stops early closes the server-side cursor too


def _catalog_query(machine: str | None) -> Select[*tuple[Any, ...]]:
    """Assignments (of one machine, when named) joined with their tools and seat, flat. An
    assignment of a retired machine reads as retired: nothing of it is live, in search, in the
    seats or in the views."""
    query = (
        select(
            Machine.name,
            Assignment.role,
            Assignment.module,
            Assignment.kind,
            Assignment.endpoint,
            cast(Assignment.scopes, Text),
            or_(Assignment.retired_at.is_not(None), Machine.retired_at.is_not(None)),
            Seat.name,
            Tool.name,
            cast(Tool.definition, Text),
            Tool.contract_digest,
            Tool.confirmation,
            Tool.contract_state,
            Assignment.not_listing,
        )
        .select_from(Assignment)
        .join(Machine, Assignment.machine_id == Machine.id)
        .outerjoin(Tool, Tool.assignment_id == Assignment.id)
        .outerjoin(Seat, Seat.assignment_id == Assignment.id)
        .order_by(Machine.name, Assignment.role, Tool.name)
    )
    return query if machine is None else query.where(Machine.name == machine)


_END = object()


def _read_ahead(
    chunks: Iterator[Sequence[Row[*tuple[Any, ...]]]],
) -> Iterator[Row[*tuple[Any, ...]]]:
    """The rows of ``chunks``, the next chunk fetched by a thread while these are consumed (at
    most two ahead). An error fetching is raised here, in the caller's thread; a caller that
    stops early stops the thread, and the thread is over before this generator is."""
    ahead: queue.Queue[object] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                ahead.put(item, timeout=0.1)
            except queue.Full:
                continue
            return True
        return False

    def fetch() -> None:
        try:
            for chunk in chunks:
                if not put(chunk):
                    return
        except BaseException as error:  # raised again in the caller's thread
            put(error)
            return
        put(_END)

    thread = threading.Thread(target=fetch, name="meshnav-catalogue-rows", daemon=True)
    thread.start()
    try:
        while (item := ahead.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield from item  # type: ignore[misc]  # a chunk of rows
    finally:
        stop.set()
        thread.join()


def _catalog_rows(rows: Iterable[Row[*tuple[Any, ...]]]) -> Iterator[CatalogRow]:
    """``_catalog_query``'s rows as ``CatalogRow``s, each assignment's scopes decoded once per
    distinct value (every tool's row repeats them)."""
    decoded: dict[str, tuple[str, ...]] = {}
    for row in rows:
        text = row[5]
        scopes = decoded.get(text)
        if scopes is None:
            scopes = decoded[text] = tuple(json.loads(text))
        yield CatalogRow._make((*row[:5], scopes, *row[6:]))
