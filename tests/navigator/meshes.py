"""A small catalogue with one of everything a walk or an operator's view tells apart, for tests
that read a real ``Catalog``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from registry import CatalogStore, NewTool, Registry, migrate


def tools(*names: str) -> list[NewTool]:
    """Tools with a trivial schema, one contract per name."""
    return [
        NewTool(name=n, definition={"name": n, "inputSchema": {"type": "object"}}, contract_digest=n * 16)
        for n in names
    ]  # fmt: skip


def small_mesh(store: CatalogStore) -> None:
    """Machine assignments, node seats on three machines (one contract differing), two mesh
    seats, a retired assignment and one that no tool is left in."""
    for machine in ("db1", "db2"):
        store.put_assignment(machine, "pg", module="postgres", tools=tools("query", "drop"))
        store.put_assignment(
            machine, "node", module="node", kind="node_seat", tools=tools("status", "run")
        )
    store.put_assignment("web1", "node", module="node", kind="node_seat", tools=tools("status"))
    store.put_assignment(
        "web1", "backup", module="stdio", tools=tools("run", "status"), seat="backup"
    )
    store.put_assignment(
        "db2", "reports", module="stdio", tools=tools("query", "run"), seat="reports"
    )
    store.put_assignment("web1", "files", module="stdio", tools=tools("query"))
    store.put_assignment("db2", "files", module="stdio", tools=[])
    store.retire_assignment("web1", "files")


@contextmanager
def node_machines(folder: Path, heartbeat_s: float, *names: str) -> Iterator[Registry]:
    """A SQLite registry in ``folder`` where nodes registered ``names``, each heartbeating every
    ``heartbeat_s``."""
    url = f"sqlite:///{folder / 'registry.db'}"
    migrate(url)
    store = Registry(url)
    with store.transaction() as session:
        for name in names:
            CatalogStore(session).register_node(
                name, advertise_url=f"http://{name}:1", heartbeat_s=heartbeat_s
            )
    try:
        yield store
    finally:
        store.dispose()
