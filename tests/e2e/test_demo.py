"""``meshnav demo`` runs until it is stopped, and takes its nodes with it however it is stopped
(SPEC §13): a service manager or ``kill`` sends SIGTERM, a terminal Ctrl-C. Either ends it
cleanly (``mesh.serving``)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness import STARTUP_S, free_ports

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
        # stopping is not an error: no exit status of one, no traceback of the shutdown
        output = (tmp_path / "demo.out").read_text()
        assert demo.returncode == 0, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(demo.pid, signal.SIGKILL)
        demo.wait()
        log.close()
