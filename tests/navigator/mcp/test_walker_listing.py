"""``tools/list`` is exactly the four walker tools, small, whatever the size of the mesh
(issue 2, acceptance 2)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from navigator.catalog.registrar import AssignmentSpec
from navigator.limits import LIMITS
from navigator.services import Services
from tests.navigator.inprocess import navigator_at, walker_client

TOOLS = [
    {"name": f"tool_{i}", "description": f"Does thing {i}.", "inputSchema": {"type": "object"}}
    for i in range(5)
]


async def _listing(services: Services) -> str:
    async with walker_client(services) as client:
        tools = await client.list_tools()
    dumped = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    return json.dumps(dumped, separators=(",", ":"))


async def _register(services: Services, start: int, stop: int) -> None:
    for i in range(start, stop):
        spec = AssignmentSpec(role=f"role{i}", module="tools-file", tools=TOOLS)
        await services.registrar.put_assignment(f"m{i % 50}", spec)


async def test_listing_is_the_four_walker_tools_at_3_and_300_assignments(tmp_path: Path) -> None:
    async with navigator_at(tmp_path) as services:
        await _register(services, 0, 3)
        small = await _listing(services)
        await _register(services, 3, 300)
        assert len(services.catalog.assignments()) == 300
        large = await _listing(services)
    assert small == large
    tools = json.loads(small)
    assert [t["name"] for t in tools] == ["seats", "search", "describe", "call"]
    assert len(small.encode()) < LIMITS.walker_listing_bytes
    for tool in tools:
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool["name"])
        assert "outputSchema" in tool
        assert tool["inputSchema"]["additionalProperties"] is False
