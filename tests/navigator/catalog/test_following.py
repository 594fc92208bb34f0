"""A navigator's view follows the change log, and reloads when the log was pruned past it
(ADR 0008)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlalchemy import event

from navigator.access.grants import Caller
from navigator.catalog.registrar import AssignmentSpec
from navigator.catalog.view import Catalog
from navigator.mcp.server import running
from navigator.services import Services
from navigator.settings import NavigatorSettings
from navigator.walker.operations import Navigator
from registry import AccessStore, CatalogStore, Registry, RegistryUnavailable
from registry.database import STATEMENT_TIMEOUT_S
from tests.navigator.inprocess import navigator_at
from tests.postgres_server import PostgresServer

TOOLS = [{"name": "lookup", "description": "Look a thing up.", "inputSchema": {"type": "object"}}]


def _addresses(view: Catalog) -> set[str]:
    return {tool.address for tool in view.tools()}


async def test_a_view_behind_the_pruned_log_reloads_instead_of_missing_changes(
    tmp_path: Path,
) -> None:
    async with navigator_at(tmp_path) as services:
        other = Catalog(services.registry)  # a second navigator's view, loaded now
        await other.load()
        for machine in ("m1", "m2"):
            spec = AssignmentSpec(role="books", module="tools-file", tools=TOOLS)
            await services.registrar.put_assignment(machine, spec)
        later = datetime.now(UTC) + timedelta(days=1)
        await services.transact(lambda session: CatalogStore(session).prune_changes(later))

        # only m2's entry is left: catching up from the log alone would never see m1
        assert await other.catch_up() == 1
        assert _addresses(other) == {"m1/books/lookup", "m2/books/lookup"}
        assert other.revision == services.catalog.revision


async def test_a_current_view_catches_up_from_the_log_after_a_prune(tmp_path: Path) -> None:
    async with navigator_at(tmp_path) as services:
        spec = AssignmentSpec(role="books", module="tools-file", tools=TOOLS)
        await services.registrar.put_assignment("m1", spec)
        other = Catalog(services.registry)
        await other.load()
        later = datetime.now(UTC) + timedelta(days=1)
        await services.transact(lambda session: CatalogStore(session).prune_changes(later))
        await services.registrar.put_assignment("m2", spec)

        loads = 0
        load = other._load  # what a catch-up far behind calls, under the lock it holds

        async def counted_load(meanwhile: Callable[[], object] | None = None) -> None:
            nonlocal loads
            loads += 1
            await load(meanwhile)

        other._load = counted_load  # type: ignore[method-assign]
        assert await other.catch_up() == 1
        assert loads == 0  # nothing it needed was pruned: it applied the one change
        assert _addresses(other) == {"m1/books/lookup", "m2/books/lookup"}


async def test_an_assignment_registered_again_removes_only_the_tools_that_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removing a document costs each of its terms' postings (a third of a second for 50 tools
    at 100,000): an unchanged node registering again removed and re-indexed every tool."""
    extra = {"name": "shelve", "description": "Shelve a book.", "inputSchema": {"type": "object"}}
    async with navigator_at(tmp_path) as services:
        both = AssignmentSpec(role="books", module="tools-file", tools=[*TOOLS, extra])
        await services.registrar.put_assignment("m1", both)
        index = services.catalog.index
        removed: list[str] = []
        remove = index.remove

        def counted(addresses: Iterable[str]) -> None:
            addresses = list(addresses)
            removed.extend(addresses)
            remove(addresses)

        monkeypatch.setattr(index, "remove", counted)
        await services.registrar.put_assignment("m1", both)
        assert removed == []
        one = AssignmentSpec(role="books", module="tools-file", tools=TOOLS)
        await services.registrar.put_assignment("m1", one)
        assert removed == ["m1/books/shelve"]
        assert _addresses(services.catalog) == {"m1/books/lookup"}
        hits = index.search("shelve", permits=lambda _address: True).hits
        assert "m1/books/shelve" not in [hit.address for hit in hits]


async def test_a_machines_unchanged_assignments_are_not_placed_again_by_a_change_beside_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change log entry names a machine, and the view reads the whole machine again: every
    assignment of it was placed again, each tool's contract decoded and its document made, the
    event loop held for the whole machine's tools (50 ms for 600) when one of them changed.
    An assignment read back as it is placed stays as it is; a changed mark does not."""
    async with navigator_at(tmp_path) as services:
        for role in ("books", "films"):
            spec = AssignmentSpec(role=role, module="tools-file", tools=TOOLS)
            await services.registrar.put_assignment("m1", spec)
        catalog = services.catalog
        films = catalog.tool("m1/films/lookup")
        upserted: list[list[str]] = []
        upsert = catalog.index.upsert

        def counted(documents: Iterable[Any]) -> None:
            documents = list(documents)
            upserted.append([document.address for document in documents])
            upsert(documents)

        monkeypatch.setattr(catalog.index, "upsert", counted)
        extra = {"name": "shelve", "inputSchema": {"type": "object"}}
        changed = AssignmentSpec(role="books", module="tools-file", tools=[*TOOLS, extra])
        await services.registrar.put_assignment("m1", changed, approves=True)  # an operator's
        assert catalog.tool("m1/films/lookup") is films  # not placed again
        assert sorted(a for batch in upserted for a in batch) == [
            "m1/books/lookup",
            "m1/books/shelve",
        ]
        await services.transact(
            lambda session: CatalogStore(session).mark_tool("m1", "films", "lookup", "always")
        )
        await catalog.catch_up()
        assert catalog.tool("m1/films/lookup").confirmation == "always"
        assert _addresses(catalog) == {"m1/books/lookup", "m1/books/shelve", "m1/films/lookup"}


async def test_a_heartbeat_announces_its_own_machine_and_a_refresh_every_silent_one(
    tmp_path: Path,
) -> None:
    """A heartbeat noted by this navigator announces its machine's status at once; the other
    machines' moves wait for the next refresh, which announces each of them once."""
    async with navigator_at(tmp_path) as services:
        view = services.catalog
        for machine in ("m1", "m2", "m3"):
            spec = AssignmentSpec(role="books", module="tools-file", tools=TOOLS)
            await services.registrar.put_assignment(machine, spec)
            await services.transact(lambda session, m=machine: CatalogStore(session).heartbeat(m))
        await view.refresh_heartbeats()
        events = view.subscribe()
        await view.refresh_heartbeats()
        assert events.empty()  # all answering, as already announced
        later = datetime.now(UTC) + timedelta(hours=1)  # every heartbeat long missed
        view.note_heartbeat("m2", later)
        assert events.empty()  # m2 beat at that hour: still answering, nothing moved
        view._announce_status(later)  # the refresh at that hour
        moved = [events.get_nowait() for _ in range(events.qsize())]
        assert [(e.kind, e.name) for e in moved] == [("status", "m1"), ("status", "m3")]
        view.note_heartbeat("m1", later)
        assert [(e.kind, e.name) for e in [events.get_nowait()]] == [("status", "m1")]
        assert events.empty()


@pytest.mark.parametrize("order", ["heartbeats first", "change log first"])
async def test_a_retired_machine_takes_its_tools_out_of_search_at_once(
    tmp_path: Path, order: str
) -> None:
    """The follower reads the change log, then every machine's record for its heartbeat: a
    machine retired between the two reads comes with the heartbeats first. Its record said
    retired while its tools stayed indexed, so every search ranking one of them failed whole as
    unknown_tool until the next catch-up. Whichever read comes first, its tools go at once."""
    async with navigator_at(tmp_path) as services:
        for machine, name in (("m1", "lookup"), ("m2", "lookup_all")):  # not one collapsed hit
            tools = [{**TOOLS[0], "name": name}]
            spec = AssignmentSpec(role="books", module="tools-file", tools=tools)
            await services.registrar.put_assignment(machine, spec)
        await services.transact(
            lambda session: AccessStore(session).grant("alice", "*/*/*", effect="allow")
        )
        view = Catalog(services.registry)  # a second navigator's view (no follower moves it)
        await view.load()
        other = Navigator(services.registry, view, services.connections, deadline_s=5.0)
        alice = Caller("alice", frozenset())
        before, _ = await other.search(
            alice, "look up", limit=8, within=None, schemas=False, cursor=None
        )
        await services.transact(lambda session: CatalogStore(session).retire_machine("m1"))
        if order == "heartbeats first":
            await view.refresh_heartbeats()
        else:
            await view.catch_up()
        after, _ = await other.search(
            alice, "look up", limit=8, within=None, schemas=False, cursor=None
        )
        await view.catch_up()
        await view.refresh_heartbeats()
        settled, _ = await other.search(
            alice, "look up", limit=8, within=None, schemas=False, cursor=None
        )
    assert {r["address"] for r in before["results"]} == {"m1/books/lookup", "m2/books/lookup_all"}
    assert [r["address"] for r in after["results"]] == ["m2/books/lookup_all"]
    assert settled == after
    assert _addresses(view) == {"m2/books/lookup_all"}


@contextmanager
def _slow_first_read(registry: Registry) -> Iterator[tuple[threading.Event, threading.Event]]:
    """The first read of a machine's tools on ``registry`` waits (at most a second) after it
    ran, as a busy thread pool holds its rows a while: (read, go on) events."""
    first_read, go_on = threading.Event(), threading.Event()
    reads = 0

    def slow_first_read(*arguments: object) -> None:  # SQLAlchemy's hook, not one of ours
        nonlocal reads
        if "tools.contract_digest" in str(arguments[2]) and reads == 0:
            reads += 1
            first_read.set()
            go_on.wait(1.0)

    event.listen(registry.engine, "after_cursor_execute", slow_first_read)
    try:
        yield first_read, go_on
    finally:
        event.remove(registry.engine, "after_cursor_execute", slow_first_read)


@pytest.mark.parametrize("slow", ["catch-up", "heartbeat refresh"])
async def test_an_older_read_of_a_machine_is_never_applied_over_a_newer_one(
    tmp_path: Path, slow: str
) -> None:
    """The follow loop reads web1 (live) — catching up, or reloading a machine whose retirement
    moved with the heartbeats — and is slow to apply it; meanwhile web1's assignment is retired
    and a registrar's catch-up applies that. Applied after it, the older read showed the retired
    assignment live, and the log position, past both, never fixed it."""
    spec = AssignmentSpec(role="logs", module="tools-file", tools=TOOLS)
    async with navigator_at(tmp_path) as services:
        await services.registrar.put_assignment("web1", spec)
        if slow == "heartbeat refresh":
            await services.registrar.retire("web1", None)
        registry = Registry(services.registry.url)  # a second navigator's, watched alone
        catalog = Catalog(registry)
        await catalog.load()
        if slow == "heartbeat refresh":  # back: the refresh sees its retirement move
            await services.transact(lambda session: CatalogStore(session).add_machine("web1"))
        else:
            await services.registrar.put_assignment("web1", spec)  # a change to catch up
        reading = catalog.refresh_heartbeats if slow == "heartbeat refresh" else catalog.catch_up
        try:
            with _slow_first_read(registry) as (first_read, go_on):
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(reading)
                    assert await anyio.to_thread.run_sync(first_read.wait, 10)
                    await services.registrar.retire("web1", "logs")
                    await catalog.catch_up()
                    go_on.set()
            assert await catalog.catch_up() == 0  # nothing left to bring it back
            assignment = catalog.assignment("web1", "logs")
            assert assignment is not None and assignment.retired
        finally:
            registry.dispose()


class _SilencingProxy:
    """A TCP relay to a PostgreSQL server whose connections can be silenced: a silenced
    connection stays open and takes what it is sent, but nothing reaches the other side, as
    when the network between a navigator and its registry fails while the registry moves on (a
    failover, a restart behind a partition). Connections made later are relayed as usual."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._pairs: list[tuple[socket.socket, socket.socket, threading.Event]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, database_url: str) -> str:
        return database_url.replace(f":{self.port}/", f":{self._listener.getsockname()[1]}/")

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.port))
            silenced = threading.Event()
            with self._lock:
                self._pairs.append((client, server, silenced))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(
                    target=self._pump, args=(source, sink, silenced), daemon=True
                ).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, silenced: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if not silenced.is_set():
                    sink.sendall(data)
        if not silenced.is_set():  # a silenced one tells neither side
            _hang_up(sink)

    def silence(self) -> None:
        """Every connection open now goes silent (the ones made later do not)."""
        with self._lock:
            for _, server, silenced in self._pairs:
                silenced.set()
                _hang_up(server)  # the registry's side is gone; the navigator's never hears of it

    def hang_up_silenced(self) -> None:
        """Close the silenced connections: their readers hear of it at last."""
        with self._lock:
            for client, _, silenced in self._pairs:
                if silenced.is_set():
                    _hang_up(client)

    def close(self) -> None:
        _hang_up(self._listener)
        with self._lock:
            for client, server, _ in self._pairs:
                _hang_up(client)
                _hang_up(server)


def _hang_up(end: socket.socket) -> None:
    """Close a socket another thread may be reading: shut down first, which wakes the reader
    and tells the peer (a close alone does neither while a read holds the socket)."""
    with contextlib.suppress(OSError):
        end.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        end.close()


@contextmanager
def _silenced_at(
    registry: Registry, proxy: _SilencingProxy, statement: str
) -> Iterator[threading.Event]:
    """The proxy's connections go silent when ``registry`` first sends a statement holding
    ``statement``; the event tells when that happened."""
    silenced = threading.Event()

    def silence(*arguments: object) -> None:  # SQLAlchemy's hook
        if statement in str(arguments[2]) and not silenced.is_set():
            silenced.set()
            proxy.silence()

    event.listen(registry.engine, "before_cursor_execute", silence)
    try:
        yield silenced
    finally:
        event.remove(registry.engine, "before_cursor_execute", silence)


async def _gives_up(work: Callable[[], Awaitable[object]], proxy: _SilencingProxy) -> bool:
    """Whether ``work`` gave up as ``registry_unavailable`` within three reads' bounds; a read
    still waiting after them is hung up on, whatever the code did."""
    done = anyio.Event()
    outcome: list[str] = []

    async def working() -> None:
        try:
            await work()
            outcome.append("done")
        except RegistryUnavailable:
            outcome.append("registry unavailable")
        done.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(working)
        with anyio.move_on_after(STATEMENT_TIMEOUT_S * 3):
            await done.wait()
        gave_up = list(outcome)
        proxy.hang_up_silenced()
    return gave_up == ["registry unavailable"]


@pytest.mark.postgres
async def test_a_catch_up_whose_connection_went_silent_gives_up_and_the_next_applies(
    postgres_server: PostgresServer,
) -> None:
    """A catch-up re-reads each changed machine off the event loop. Its read waited for as long
    as the connection took to answer: on one that never would (the network failed while the
    registry moved on), the follow loop waited for good, and the navigator never applied
    another change. It gives up as the other reads from the loop do (``registry_unavailable``),
    and the next catch-up, on a new connection, applies the change."""
    url = postgres_server.create_database("silent_catch_up")
    services = Services.create(NavigatorSettings(database_url=url))
    proxy = _SilencingProxy(postgres_server.port)
    spec = AssignmentSpec(role="logs", module="tools-file", tools=TOOLS)
    async with running(services):
        registry = Registry(proxy.url(url))  # a second navigator's, across the network
        catalog = Catalog(registry)
        await catalog.load()
        await services.registrar.put_assignment("web1", spec)
        try:
            with _silenced_at(registry, proxy, "FROM machines"):
                assert await _gives_up(catalog.catch_up, proxy), "the catch-up waited for good"
            assert await catalog.catch_up() == 1
            assert _addresses(catalog) == {"web1/logs/lookup"}
        finally:
            proxy.close()
            registry.dispose()


@pytest.mark.postgres
async def test_a_load_whose_connection_went_silent_gives_up_and_the_next_applies(
    postgres_server: PostgresServer,
) -> None:
    """A whole catalogue's load (at start, or a catch-up too far behind the log) read every row
    in a worker thread with no bound: on a connection that never answered, the follow loop
    waited with it for good. It gives up once no row has come for the bound of one read."""
    url = postgres_server.create_database("silent_load")
    services = Services.create(NavigatorSettings(database_url=url))
    proxy = _SilencingProxy(postgres_server.port)
    spec = AssignmentSpec(role="logs", module="tools-file", tools=TOOLS)
    async with running(services):
        await services.registrar.put_assignment("web1", spec)
        registry = Registry(proxy.url(url))  # a second navigator's, across the network
        catalog = Catalog(registry)
        try:
            with _silenced_at(registry, proxy, "tools.contract_digest"):
                assert await _gives_up(catalog.load, proxy), "the load waited for good"
            await catalog.load()
            assert _addresses(catalog) == {"web1/logs/lookup"}
        finally:
            proxy.close()
            registry.dispose()


@pytest.mark.postgres
async def test_a_prune_whose_connection_went_silent_does_not_hold_the_follower(
    postgres_server: PostgresServer,
) -> None:
    """Every navigator prunes the change log now and then, a write that is never given up (it
    may yet commit). It ran inside the follow loop: on a connection that went silent, the loop
    waited with it, and a change made through another navigator never reached this one."""
    url = postgres_server.create_database("silent_prune")
    writer = Services.create(NavigatorSettings(database_url=url))
    proxy = _SilencingProxy(postgres_server.port)
    follower = Services.create(NavigatorSettings(database_url=proxy.url(url), heartbeat_s=1.0))
    spec = AssignmentSpec(role="logs", module="tools-file", tools=TOOLS)
    try:
        with _silenced_at(follower.registry, proxy, "catalog_changes.at <") as silenced:
            async with running(writer), running(follower):
                assert await anyio.to_thread.run_sync(silenced.wait, 10)
                await writer.registrar.put_assignment("web1", spec)
                with anyio.move_on_after(STATEMENT_TIMEOUT_S * 2):
                    while not _addresses(follower.catalog):
                        await anyio.sleep(0.1)
                followed = _addresses(follower.catalog)
                proxy.hang_up_silenced()  # a write still waiting ends now, whatever it did
        assert followed == {"web1/logs/lookup"}, "the follower waited on the prune"
    finally:
        proxy.close()
