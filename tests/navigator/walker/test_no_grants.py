"""A signed-in subject with no grants saw an empty mesh and no hint: the top of ``seats`` says
it holds no grants and that an operator gives them, naming no principal."""

from __future__ import annotations

from pathlib import Path

from navigator.access.grants import Caller
from navigator.catalog.registrar import AssignmentSpec
from registry import AccessStore
from tests.navigator.inprocess import navigator_at

TOOL = {"name": "lookup", "inputSchema": {"type": "object"}}


async def test_the_top_of_the_mesh_says_a_caller_holds_no_grants(tmp_path: Path) -> None:
    async with navigator_at(tmp_path) as services:
        spec = AssignmentSpec(role="r", module="x", tools=[TOOL], endpoint="http://127.0.0.1:9/mcp")
        await services.registrar.put_assignment("m1", spec)
        with services.registry.transaction() as session:
            AccessStore(session).grant("carol", "m1/*/*", effect="allow")
            AccessStore(session).grant("dave", "m9/*/*", effect="allow")
        none = await services.navigator.seats(Caller("nobody", frozenset()), None, None)
        elsewhere = await services.navigator.seats(Caller("dave", frozenset()), None, None)
        some = await services.navigator.seats(Caller("carol", frozenset()), None, None)
    assert none["entries"] == [] and "meshnav grant allow" in none["note"]
    assert "nobody" not in none["note"]
    assert "note" not in elsewhere  # grants that reach nothing now: not "no grants"
    assert some["entries"] and "note" not in some
