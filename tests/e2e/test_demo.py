"""``meshnav demo`` runs until it is stopped, and takes its nodes with it however it is stopped
(SPEC §13): a service manager or ``kill`` sends SIGTERM, a terminal Ctrl-C. Either ends it
cleanly (``mesh.lifecycle``)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry import CatalogStore, Registry
from tests.harness import STARTUP_S, free_ports, mcp_client

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh")]


def _answers(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_the_demo_stops_its_nodes_when_it_is_stopped(tmp_path: Path, stop: signal.Signals) -> None:
    port = free_ports(4)  # its own and its three nodes'
    log = (tmp_path / "demo.out").open("wb")
    listen, data = f"127.0.0.1:{port}", str(tmp_path / "demo")
    demo = subprocess.Popen(
        [sys.executable, "-m", "meshnav", "demo", "--listen", listen, "--data", data],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its nodes join its group: none outlives a failed test
    )
    try:
        deadline = time.monotonic() + STARTUP_S
        while b"nodes answering" not in (tmp_path / "demo.out").read_bytes():
            assert demo.poll() is None, (tmp_path / "demo.out").read_text()
            assert time.monotonic() < deadline, "the demo did not start"
            time.sleep(0.1)
        nodes = [port + offset for offset in (1, 2, 3)]
        assert all(_answers(node) for node in nodes)
        demo.send_signal(stop)
        demo.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_answers(node) for node in nodes) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_answers(node) for node in nodes), "a node outlived the demo"
        # each node told the navigator it stopped, which was free to hear it (ADR 0050)
        registry = Registry(f"sqlite:///{tmp_path / 'demo' / 'registry.db'}")
        try:
            with registry.read_transaction() as session:
                machines = CatalogStore(session).machines()
        finally:
            registry.dispose()
        assert {m.name: m.stopped_at is not None for m in machines} == dict.fromkeys(
            ("db1", "db2", "web1"), True
        )
        # stopping is not an error: no exit status of one, no traceback of the shutdown
        output = (tmp_path / "demo.out").read_text()
        assert demo.returncode == 0, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(demo.pid, signal.SIGKILL)
        demo.wait()
        log.close()


@contextlib.contextmanager
def _demo(tmp_path: Path, port: int, *flags: str) -> Iterator[str]:
    """The demo on ``port`` with its data in ``tmp_path/demo``, until it answers; its output."""
    out = tmp_path / "demo.out"
    with out.open("wb") as log:
        where = ["--listen", f"127.0.0.1:{port}", "--data", str(tmp_path / "demo")]
        demo = subprocess.Popen(
            [sys.executable, "-m", "meshnav", "demo", *where, *flags],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + STARTUP_S
            while b"nodes answering" not in out.read_bytes():
                assert demo.poll() is None, out.read_text()
                assert time.monotonic() < deadline, "the demo did not start"
                time.sleep(0.1)
            yield out.read_text()
        finally:
            demo.send_signal(signal.SIGTERM)
            try:
                demo.wait(timeout=30)
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(demo.pid, signal.SIGKILL)
                demo.wait()


async def _seats(port: int, token: str) -> bool:
    """Whether the navigator on ``port`` takes ``token``: its client lists the walker tools."""
    try:
        async with mcp_client(f"http://127.0.0.1:{port}", token) as client:
            return len(await client.list_tools()) == 4
    except Exception:
        return False


async def test_the_demo_keeps_its_token_and_its_files_private(tmp_path: Path) -> None:
    """A client configured with the demo's token stopped working at every restart: each start
    rotated it. It is kept while the data folder is (``--fresh`` starts over), and what the demo
    writes there is readable by its owner alone: its log and databases were mode 0644."""
    port = free_ports(4)
    data = tmp_path / "demo"
    with _demo(tmp_path, port):
        first = (data / "demo.token").read_text().strip()
        private = ["registry.db", "demo.token", "nodes.log", "db1/inventory.db"]
        private += ["db2/customers.db", "web1/notes.db"]
        modes = {name: oct((data / name).stat().st_mode & 0o777) for name in private}
        assert modes == dict.fromkeys(private, oct(0o600))
        for folder in (data, data / "db1", data / "db2", data / "web1"):
            assert folder.stat().st_mode & 0o077 == 0, folder
    with _demo(tmp_path, port) as said:
        assert (data / "demo.token").read_text().strip() == first
        assert first in said
        assert await _seats(port, first)
    with _demo(tmp_path, port, "--fresh"):
        fresh = (data / "demo.token").read_text().strip()
        assert fresh != first
        assert await _seats(port, fresh)
        assert not await _seats(port, first)
