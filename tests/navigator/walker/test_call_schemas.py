"""How ``call`` holds tools' compiled input schemas (ADR 0006): compiled once per contract, off
the event loop, however many calls of a new contract arrive together."""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from navigator.access.grants import Caller
from navigator.catalog.registrar import AssignmentSpec
from navigator.errors import InvalidArguments, NodeUnavailable
from navigator.validation import compile_schema_uncached
from navigator.walker.operations import Navigator
from registry import AccessStore
from tests.harness import loop_ticks_during
from tests.navigator.inprocess import navigator_at

TOOL = {
    "name": "lookup",
    "description": "Look a word up.",
    "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}},
    "annotations": {"readOnlyHint": True},
}


async def test_calls_of_a_new_contract_arriving_together_compile_it_once(tmp_path: Path) -> None:
    compiled: list[float] = []

    def slow_compile(schema: Any) -> Any:
        compiled.append(time.monotonic())
        time.sleep(0.2)  # a schema at the bounds: a fraction of a second, in a worker thread
        return compile_schema_uncached(schema)

    compiling = functools.partial(Navigator, compile_schema=slow_compile)
    async with navigator_at(tmp_path, navigator=compiling) as services:
        spec = AssignmentSpec(role="words", module="tools-file", tools=[TOOL])
        await services.registrar.put_assignment("m1", spec)
        with services.registry.transaction() as session:
            AccessStore(session).grant("alice", "*/*/*", effect="allow")
        caller = Caller("alice", frozenset())
        refused: list[type] = []

        async def one() -> None:
            try:
                await services.navigator.call(
                    caller, "m1/words/lookup", {"word": "x"}, confirm=None, elicitor=None,
                    progress=None,
                )  # fmt: skip
            except NodeUnavailable as error:  # validated, then no endpoint to forward to
                refused.append(type(error))

        async def five() -> None:
            async with anyio.create_task_group() as calls:
                for _ in range(5):
                    calls.start_soon(one)

        ticks = await loop_ticks_during(five, every_s=0.01)
    assert len(compiled) == 1
    assert refused == [NodeUnavailable] * 5
    assert ticks >= 5  # the loop kept turning while the schema compiled


async def test_a_tool_with_no_node_is_unavailable_before_anyone_is_asked_to_confirm(
    tmp_path: Path,
) -> None:
    """A ``--tools-file`` tool that changes things answered ``confirmation_required``, and only
    the confirmed call ``node_unavailable`` (the README walk): a person confirmed a call that
    could never run. Its arguments are still checked first."""
    async with navigator_at(tmp_path) as services:
        writes = {**TOOL, "name": "store", "annotations": {"destructiveHint": True}}
        spec = AssignmentSpec(role="words", module="tools-file", tools=[writes])
        await services.registrar.put_assignment("m1", spec)
        with services.registry.transaction() as session:
            AccessStore(session).grant("alice", "*/*/*", effect="allow")
        caller = Caller("alice", frozenset())

        async def call(arguments: dict[str, Any]) -> None:
            await services.navigator.call(
                caller, "m1/words/store", arguments, confirm=None, elicitor=None, progress=None
            )

        with pytest.raises(NodeUnavailable):
            await call({"word": "x"})
        with pytest.raises(InvalidArguments):
            await call({"word": 1})
