"""``meshnav demo``: the whole mesh on one machine, with nothing installed beyond the package.

A navigator on an SQLite registry in DIR, three node processes — ``db1`` and ``db2`` each with its
own SQLite databases holding different data, and ``web1`` — the ``node`` seat on all three, one
mesh seat (``mesh/notes``, served by web1), and a principal ``demo`` granted what the demo needs.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import anyio
import uvicorn
from rich.console import Console

from mesh.errors import ServeFailed
from mesh.lifecycle import Server, serve_until_stopped
from mesh.settings import join_listen, split_listen
from meshnav.errors import CommandError
from meshnav.serve import listening_socket
from navigator.access.tokens import ADMIN_SCOPE, NODE_SCOPE, hash_token, mint_token
from navigator.app import build_app
from navigator.catalog.view import Catalog
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import AccessStore, CatalogStore, Conflict, NotFound, Registry, migrate
from registry.contracts import APPROVED, held_tools

__all__ = ["run_demo"]

console = Console(soft_wrap=True)  # a command to paste is never broken across lines

MACHINES = {
    "db1": ["node", "sqlite:{data}/db1"],
    "db2": ["node", "sqlite:{data}/db2"],
    "web1": ["node"],
}
SEATS = {"web1": ["notes=sqlite:{data}/web1/notes.db"]}
DEMO_PRINCIPAL = "demo"


def _seed_databases(data: Path) -> None:
    """Each machine's own data: db1 keeps inventory, db2 keeps customers, web1 the team's notes."""
    seeds = {
        data / "db1" / "inventory.db": [
            "CREATE TABLE products"
            " (id INTEGER PRIMARY KEY, name TEXT NOT NULL, stock INTEGER NOT NULL)",
            "CREATE TABLE warehouses (id INTEGER PRIMARY KEY, city TEXT NOT NULL)",
            "INSERT INTO products (name, stock)"
            " VALUES ('anvil', 12), ('rope', 140), ('lantern', 31)",
            "INSERT INTO warehouses (city) VALUES ('Lyon'), ('Porto')",
        ],
        data / "db2" / "customers.db": [
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT)",
            "CREATE TABLE orders (id INTEGER PRIMARY KEY,"
            " customer_id INTEGER REFERENCES customers(id), total REAL)",
            "INSERT INTO customers (name, country)"
            " VALUES ('Ada', 'UK'), ('Grace', 'US'), ('Linus', 'FI')",
            "INSERT INTO orders (customer_id, total) VALUES (1, 99.5), (2, 12.0), (2, 40.25)",
        ],
        data / "web1" / "notes.db": [
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT)",
            "INSERT INTO notes (title, body)"
            " VALUES ('on-call', 'Page the db team for db1 and db2.')",
        ],
    }
    for path, statements in seeds.items():
        path.parent.mkdir(mode=0o700, exist_ok=True)
        if path.exists():
            path.chmod(0o600)  # one an earlier demo made with the umask's mode
            continue
        _private(path)
        with sqlite3.connect(path) as connection:
            for statement in statements:
                connection.execute(statement)


#: What the demo keeps in its data folder, and all ``--fresh`` removes: its registry, its
#: token, its nodes' log and the machines' databases (with SQLite's files beside each).
DEMO_FILES = (
    "registry.db",
    "demo.token",
    "nodes.log",
    "db1/inventory.db",
    "db2/customers.db",
    "web1/notes.db",
)
SQLITE_BESIDE = ("-wal", "-shm", "-journal")


def _private(path: Path) -> None:
    """``path`` made empty and readable by its owner alone before anything writes it: the demo's
    databases, its log and its token are the demo user's (SPEC §10); SQLite gives a database's
    WAL and shared-memory files the database's own mode."""
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    path.chmod(0o600)


def _start_over(data: Path) -> None:
    """``--fresh``: the demo's own files in ``data`` removed — nothing else there is touched —
    so that it starts with a new registry, new data and a new token."""
    for name in DEMO_FILES:
        for path in (data / name, *(data / f"{name}{end}" for end in SQLITE_BESIDE)):
            path.unlink(missing_ok=True)


def _token_for(store: AccessStore, name: str, scopes: list[str], machine: str | None) -> str:
    token = mint_token()
    try:
        store.principal(name)
        store.rotate_principal(name, token_hash=hash_token(token))
    except NotFound:
        store.add_principal(name, scopes=scopes, token_hash=hash_token(token), machine=machine)
    except Conflict:  # revoked (final) or expired by an operator: this registry cannot serve
        raise CommandError(
            f"the demo's principal {name} was revoked or has expired in this registry;"
            " give the demo another --data DIR"
        ) from None
    return token


def _place(store: CatalogStore, seat: str, machine: str) -> None:
    """The demo's seat on its machine's role of the same name, unless an operator has since
    moved it or retired where it was (this registry's operator decides then)."""
    if store.seats().get(seat) is None:
        store.place_seat(seat, machine, seat)


def _kept_token(store: AccessStore, token_file: Path) -> str | None:
    """The token an earlier start of this demo wrote, while it is still the demo principal's
    own and taken: a client configured with it keeps working across restarts."""
    try:
        token = token_file.read_text().strip()
    except FileNotFoundError:
        return None
    holder = store.principal_by_token(hash_token(token)) if token else None
    if holder is None or holder.name != DEMO_PRINCIPAL:
        return None
    return token if holder.status(datetime.now(UTC)) == "active" else None


def _prepare(database_url: str, token_file: Path) -> tuple[str, dict[str, str]]:
    migrate(database_url)
    registry = Registry(database_url)
    try:
        with registry.transaction() as session:
            store = AccessStore(session)
            demo = _kept_token(store, token_file) or _token_for(
                store, DEMO_PRINCIPAL, [ADMIN_SCOPE], None
            )
            nodes = {m: _token_for(store, f"node-{m}", [NODE_SCOPE], m) for m in MACHINES}
            if not any(g.principal == DEMO_PRINCIPAL for g in store.grants(DEMO_PRINCIPAL)):
                store.grant(DEMO_PRINCIPAL, "*/*/*", effect="allow")
            for machine, seats in SEATS.items():  # where a node serves a seat: an operator's act
                for seat in seats:
                    _place(CatalogStore(session), seat.partition("=")[0], machine)
    finally:
        registry.dispose()
    return demo, nodes


def _start_nodes(
    data: Path, url: str, host: str, port: int, tokens: dict[str, str]
) -> list[subprocess.Popen[bytes]]:
    """The demo's node processes, each writing to ``nodes.log``."""
    processes = []
    _private(data / "nodes.log")
    with (data / "nodes.log").open("ab") as log:  # each process holds its own copy
        for offset, (machine, modules) in enumerate(MACHINES.items(), start=1):
            command = [sys.executable, "-m", "meshnav", "node", "serve", "--name", machine]
            command += ["--navigator", url, "--listen", join_listen(host, port + offset)]
            for module in modules:
                command += ["--module", module.format(data=data)]
            for seat in SEATS.get(machine, []):
                command += ["--seat", seat.format(data=data)]
            env = {**os.environ, "MESHNAV_TOKEN": tokens[machine]}
            processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=log))
    return processes


async def _stop_nodes(processes: list[subprocess.Popen[bytes]]) -> None:
    """Stop the demo's nodes, waiting for them off the event loop: a stopping node tells this
    process's navigator so, which must be free to answer."""
    for process in processes:
        process.terminate()
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(_reap, processes)


def _reap(processes: list[subprocess.Popen[bytes]]) -> None:
    """Wait for each stopped process, killing one that takes past 5 s."""
    for process in processes:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _prepare_dir(data: Path, fresh: bool) -> Path:
    data = data.resolve()
    data.mkdir(mode=0o700, parents=True, exist_ok=True)
    if fresh:
        _start_over(data)
    return data


def _write_secret(path: Path, token: str) -> None:
    """Only the demo writes its own token to disk, readable by its owner alone (SPEC §10)."""
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text(token + "\n")


def _registered(catalog: Catalog, since: datetime) -> set[str]:
    return {
        m.name
        for m in catalog.machines()
        if m.name in MACHINES and m.last_heartbeat_at is not None and m.last_heartbeat_at >= since
    }


def _snippet(url: str, token: str) -> str:
    return json.dumps(
        {
            "mcpServers": {
                "meshnav": {
                    "type": "http",
                    "url": f"{url}/mcp",
                    "headers": {"Authorization": f"Bearer {token}"},
                }
            }
        },
        indent=2,
    )


def _check_ports_free(host: str, ports: range) -> None:
    """The nodes' ports, tried before any token is made: a demo already running on them (or
    anything else) stops this one in one line, and leaves the running one as it was."""
    for port in ports:
        listening_socket(host, port).close()


#: What a demo whose port is taken says next: the one flag that moves it.
TAKEN = "; give the demo other ports with --listen HOST:PORT (its nodes take the next three)"


async def run_demo(listen: str, data: Path, *, fresh: bool = False) -> None:
    try:
        host, port = split_listen(listen)
    except ValueError as error:
        raise CommandError(f"--listen: {error}") from None
    if port + len(MACHINES) > 65535:
        raise CommandError("--listen: the nodes take the next three ports; leave room for them")
    try:
        server_socket = listening_socket(host, port)
    except CommandError as error:
        raise CommandError(f"{error}{TAKEN}") from None
    with server_socket:
        try:
            _check_ports_free(host, range(port + 1, port + 1 + len(MACHINES)))
        except CommandError as error:
            raise CommandError(f"{error}{TAKEN}") from None
        await _run(listen, host, port, server_socket, data, fresh)


async def _run(
    listen: str, host: str, port: int, server_socket: socket.socket, data: Path, fresh: bool
) -> None:
    data = await anyio.to_thread.run_sync(_prepare_dir, data, fresh)
    url = f"http://{listen}"
    database_url = f"sqlite:///{data / 'registry.db'}"
    await anyio.to_thread.run_sync(_seed_databases, data)
    token_file = data / "demo.token"
    demo_token, node_tokens = await anyio.to_thread.run_sync(_prepare, database_url, token_file)
    await anyio.to_thread.run_sync(_write_secret, token_file, demo_token)

    settings = NavigatorSettings(database_url=database_url, listen=listen)
    app = build_app(settings, migrate_first=False)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", log_config=None)
    server = Server(config, settings.connection_limits(), drain=app.stopping.drain)

    async def demo() -> None:
        started = datetime.now(UTC)
        processes = _start_nodes(data, url, host, port, node_tokens)
        try:
            catalog = app.state.meshnav.catalog
            with anyio.move_on_after(30):
                while len(_registered(catalog, started)) < len(MACHINES):  # noqa: ASYNC110
                    await anyio.sleep(0.1)
            answering = _registered(catalog, started)
            if len(answering) < len(MACHINES):
                raise CommandError(f"only {sorted(answering)} registered; see {data / 'nodes.log'}")
            approved = await _approve_own(app.state.meshnav)
            if approved:  # a kept directory, its nodes upgraded: the demo's operator approves
                console.print(f"approved {len(approved)} changed contracts of the demo's nodes")
            console.print(f"[bold]meshnav demo[/] — {len(MACHINES)} nodes answering\n")
            console.print(f"MCP URL:      {url}/mcp")
            console.print(f"console URL:  {url}/")
            console.print(f"token:        {demo_token}   (also in {token_file})\n")
            console.print("client configuration:")
            print(_snippet(url, demo_token), flush=True)
            console.print(
                f"\ntry:  MESHNAV_TOKEN=$(cat {token_file}) {_command()} mesh --navigator {url}"
            )
            console.print("Ctrl-C to stop.", style="dim")
            try:
                await anyio.sleep_forever()
            finally:
                console.print("stopping the nodes and the navigator", style="dim")
        finally:
            await _stop_nodes(processes)

    try:
        await serve_until_stopped(server, [server_socket], demo)
    except ServeFailed:
        raise CommandError(f"the navigator could not start on {listen}") from None


async def _approve_own(found: Services) -> list[str]:
    """Approve, as the demo principal (audited), the contracts the demo's own nodes hold for an
    operator: a kept directory's nodes, upgraded, register changed tools (SPEC §14)."""
    held = await found.read(held_tools)
    keys = [tool.key for tool in held if tool.machine in MACHINES]
    return await found.registrar.decide(keys, APPROVED, DEMO_PRINCIPAL) if keys else []


def _command() -> str:
    """How to run ``meshnav`` from here: by name when it is on the PATH, else the script beside
    this interpreter (``make demo`` runs it from ``.venv/bin``, which is not on the PATH)."""
    if shutil.which("meshnav"):
        return "meshnav"
    script = Path(sys.executable).parent / "meshnav"
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)
