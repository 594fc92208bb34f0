"""A registry on a full disk: statuses hold, /readyz says so, a refused write says "written".

The SQLite registry lives on a small tmpfs this test mounts, fills and always unmounts. On a full
disk every heartbeat failed with "database or disk is full" while the write check — a value
written onto itself, which writes no page — committed; so the navigator judged the silence as if
writes landed: both machines turned ``not answering`` for the whole time, ``/readyz`` said
``writable``, and writes were refused with "The registry cannot be read" (ADR 0052).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from sqlalchemy import select

from registry import UNWRITABLE
from registry.models import AuditEvent
from tests.harness import MeshHarness, mcp_client, start_two_machines, tool_result

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(240),
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
]

ADDRESS = "db1/sqlite/list_databases"
MACHINES = ("db1", "web1")
HEARTBEAT_S = 0.5


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs, unmounted whatever happens."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if made.returncode != 0:
        pytest.skip(f"no tmpfs could be mounted here: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "-l", str(mount)], check=True)  # a process held a file


@pytest.fixture
def harness(tmp_path: Path, disk: Path) -> Iterator[MeshHarness]:
    mesh = MeshHarness(
        tmp_path / "run", heartbeat_s=HEARTBEAT_S, database_url=f"sqlite:///{disk}/registry.db"
    )
    try:
        mesh.admin_token = mesh.principal("admin", ["mesh:admin"])  # type: ignore[attr-defined]
        start_two_machines(mesh, tmp_path)
        yield mesh
    finally:
        mesh.close()  # every process, and the test's own connections, before the unmount


def fill(disk: Path) -> Path:
    """Fill ``disk`` to its last byte with one file, returned."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        for size in (1 << 20, 1 << 12, 1):
            block = b"\0" * size
            with contextlib.suppress(OSError):
                while True:
                    out.write(block)
    with pytest.raises(OSError) as full:
        (disk / "one-more").write_bytes(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC
    return filler


async def _seats(client: Any) -> dict[str, dict[str, Any]]:
    answer = tool_result(await client.call_tool_mcp("seats", {}))
    return {e["address"]: e for e in answer["entries"] if e["address"] in MACHINES}


async def _ready(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    answer: dict[str, Any] = (await http.get(url + "/readyz")).json()
    return answer


async def test_a_full_disk_keeps_machines_answering_and_says_the_registry_cannot_be_written(
    harness: MeshHarness, disk: Path
) -> None:
    url = harness.navigator_url
    admin = {"Authorization": f"Bearer {harness.admin_token}"}  # type: ignore[attr-defined]
    async with (
        mcp_client(url, harness.agent_token) as client,  # type: ignore[attr-defined]
        httpx.AsyncClient(timeout=30) as http,
    ):
        assert (await _ready(http, url))["registry"] == "writable"
        filler = fill(disk)
        try:
            # well past three intervals of heartbeats that could not be recorded
            until = time.monotonic() + 12 * HEARTBEAT_S
            unwritable = False
            while time.monotonic() < until:
                for name, machine in (await _seats(client)).items():
                    assert machine["status"] == "answering", (name, machine)
                    assert machine.get("heartbeats") in (None, "unrecorded"), (name, machine)
                ready = await _ready(http, url)
                unwritable = unwritable or ready["registry"] == "not writable"
                await anyio.sleep(0.1)
            ready = await _ready(http, url)
            assert ready["status"] == "ready"  # it reads, and serves calls
            assert ready["registry"] == "not writable" and "since" in ready, ready
            assert unwritable
            call = await client.call_tool_mcp("call", {"address": ADDRESS})
            assert not call.is_error, tool_result(call)
            refused = await http.post(
                f"{url}/api/v1/grants",
                headers=admin,
                json={"principal": "agent", "target": "db1/*/*", "effect": "allow"},
            )
            assert refused.status_code == 503
            assert refused.json() == {
                "error": "registry_unavailable",
                "status": 503,
                "message": UNWRITABLE,
            }
        finally:
            filler.unlink()
        with anyio.fail_after(30):
            while (await _ready(http, url))["registry"] != "writable":
                await anyio.sleep(0.1)
        # writes land again: each machine answering until its own next heartbeat, and after
        until = time.monotonic() + 6 * HEARTBEAT_S
        while time.monotonic() < until:
            for name, machine in (await _seats(client)).items():
                assert machine["status"] == "answering", (name, machine)
            await anyio.sleep(0.05)
    time.sleep(2)
    with harness.registry.read_transaction() as session:
        statuses = session.execute(
            select(AuditEvent.target, AuditEvent.outcome).where(
                AuditEvent.action == "machine.status"
            )
        ).all()
    assert [tuple(row) for row in statuses if row[1] == "not_answering"] == []
