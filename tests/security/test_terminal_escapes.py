"""No catalogue or audit string reaches an operator's terminal raw (issue 35, items 3 and 14).

A tool's title and description come from whoever registered it (an upstream's ``tools/list``), and
an audit event's target from whatever a caller sent: ``meshnav mesh``, ``search``, ``describe``
and ``audit`` printed them as they were, so an escape sequence cleared the operator's screen or
coloured a forged line, and a bidi override reversed what followed. Every such string now passes
one escaping function (``meshnav.render.escaped``): each control character is shown as its escape.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from meshnav.render import escaped
from tests.harness import MeshHarness

pytestmark = [pytest.mark.e2e]

# Registration refuses every other control character in a contract (SPEC §14's hidden text); a
# carriage return is allowed there, and still moves a terminal's cursor back over what it printed.
TITLE = "Wipe\r everything"
DESCRIPTION = "Deletes the files.\rNothing to see here."
#: An address a caller typed, recorded as the refused call's target.
FORGED = "db1\x1b[2K/x/y"
#: What a terminal obeys rather than shows; a newline is a line, and a tab the column separator
#: of a table piped to a script (a value's own tabs are spaces there).
RAW = [chr(c) for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(c) not in "\n\t"] + [
    "\u202e",
    "\u202c",
    "\u200b",
    "\U000e0041",
]


@pytest.fixture
def mesh(tmp_path: Path) -> Iterator[MeshHarness]:
    harness = MeshHarness(tmp_path / "mesh")
    harness.root_token = harness.principal("root", ["mesh:admin"])  # type: ignore[attr-defined]
    harness.grant("root", "*/*/*")
    try:
        harness.start_navigator()
        yield harness
    finally:
        harness.close()


def _meshnav(mesh: MeshHarness, *arguments: str) -> str:
    """``meshnav ARGUMENTS`` against the navigator, the token in the environment; its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "meshnav", *arguments, "--navigator", mesh.navigator_url],
        capture_output=True,
        timeout=60,
        env={
            **os.environ,
            "MESHNAV_TOKEN": mesh.root_token,  # type: ignore[attr-defined]
            "COLUMNS": "400",  # an escape is never broken across lines
        },
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode("utf-8", "surrogateescape")


async def test_no_catalogue_or_audit_string_reaches_the_terminal_raw(
    mesh: MeshHarness, tmp_path: Path
) -> None:
    tools = tmp_path / "tools.json"
    tool = {
        "name": "wipe",
        "title": TITLE,
        "description": DESCRIPTION,
        "inputSchema": {"type": "object", "description": DESCRIPTION},
    }
    tools.write_text(json.dumps({"tools": [tool]}))
    _meshnav(mesh, "register", "db1", "files", "--tools-file", str(tools))
    transport = StreamableHttpTransport(
        mesh.navigator_url + "/mcp",
        headers={"Authorization": f"Bearer {mesh.root_token}"},  # type: ignore[attr-defined]
    )
    async with Client(transport, timeout=30) as agent:
        await agent.call_tool_mcp("call", {"address": FORGED, "args": {}})
    printed = {
        "mesh": _meshnav(mesh, "mesh", "db1/files"),
        "search": _meshnav(mesh, "search", "wipe"),
        "describe": _meshnav(mesh, "describe", "db1/files/wipe"),
        "describe --json": _meshnav(mesh, "describe", "db1/files/wipe", "--json"),
        "audit": _meshnav(mesh, "audit"),
        "audit --json": _meshnav(mesh, "audit", "--json"),
        "principal list": _meshnav(mesh, "principal", "list"),
        "grant list": _meshnav(mesh, "grant", "list"),
    }
    for command, out in printed.items():
        raw = sorted({f"U+{ord(c):04X}" for c in out if c in RAW})
        assert not raw, f"meshnav {command} printed {raw} raw"
    assert escaped(TITLE) in printed["search"]
    assert escaped(TITLE) in printed["describe"]
    assert "\\x0dNothing to see" in printed["describe"]
    assert "\\x1b[2K" in printed["audit"]
    assert json.loads(printed["describe --json"])["description"] == DESCRIPTION
    # the audit trail stores a target's control characters escaped (ADR 0045): never raw again
    assert escaped(FORGED) in {event["target"] for event in json.loads(printed["audit --json"])}


def test_the_escaping_function_shows_every_control_character() -> None:
    assert escaped("a\x1bb\x9bc\x7fd") == "a\\x1bb\\x9bc\\x7fd"
    assert escaped("\u202e\u2066\u200d\ufeff\u2028") == "\\u202e\\u2066\\u200d\\ufeff\\u2028"
    assert escaped("\U000e0041\ud800") == "\\U000e0041\\ud800"
    assert escaped("one\ntwo") == "one\\x0atwo"
    assert escaped("one\ntwo", lines=True) == "one\ntwo"
    assert escaped("é 日本 [/] \\x1b") == "é 日本 [/] \\x1b"
