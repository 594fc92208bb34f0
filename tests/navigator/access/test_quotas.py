"""The quota arithmetic (ADR 0041), on a clock the test moves: a rate held over any minute to the
second with ``retryAfterS`` saying when room comes back, calls at once, a navigator's share, and
a node's turn that never waits past the deadline."""

from __future__ import annotations

import anyio
import pytest

from navigator.access.grants import Caller
from navigator.access.quotas import Quotas, share
from navigator.errors import RateLimited
from registry import Quota


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _caller(name: str, quota: Quota) -> Caller:
    return Caller(name, frozenset(), quota=quota)


async def _admitted(quotas: Quotas, caller: Caller) -> int | None:
    """None when admitted, else the refusal's retryAfterS."""
    try:
        async with quotas.principal(caller):
            return None
    except RateLimited as refused:
        return int(refused.extra["retryAfterS"])


async def test_a_rate_holds_over_any_minute_and_says_when_room_comes_back() -> None:
    clock = Clock()
    quotas = Quotas(clock=clock)
    alice = _caller("alice", Quota(rate_per_minute=60))
    for _ in range(30):
        assert await _admitted(quotas, alice) is None
    clock.now += 20  # 30 more, 20 s later
    for _ in range(30):
        assert await _admitted(quotas, alice) is None
    assert await _admitted(quotas, alice) == 40, "the first 30 leave the minute in 40 s"
    clock.now += 39
    assert await _admitted(quotas, alice) == 1
    clock.now += 1
    for _ in range(30):
        assert await _admitted(quotas, alice) is None
    assert await _admitted(quotas, alice) == 20
    clock.now += 3600  # an hour idle: a whole minute's room
    for _ in range(60):
        assert await _admitted(quotas, alice) is None
    assert await _admitted(quotas, alice) is not None


async def test_one_principals_quota_is_not_anothers() -> None:
    quotas = Quotas(clock=Clock())
    limited = _caller("a", Quota(rate_per_minute=1))
    assert await _admitted(quotas, limited) is None
    assert await _admitted(quotas, limited) == 60
    for _ in range(500):
        assert await _admitted(quotas, _caller("b", Quota())) is None
    assert await _admitted(quotas, _caller("c", Quota(rate_per_minute=1))) is None


async def test_calls_at_once_count_until_each_ends() -> None:
    quotas = Quotas(clock=Clock())
    bob = _caller("bob", Quota(concurrency=2))
    async with quotas.principal(bob), quotas.principal(bob):
        assert await _admitted(quotas, bob) == 1
    assert await _admitted(quotas, bob) is None  # both ended: room again
    with pytest.raises(ValueError, match="boom"):
        async with quotas.principal(bob):
            raise ValueError("boom")
    async with quotas.principal(bob), quotas.principal(bob):  # a failed call ended too
        pass


def test_each_navigator_holds_its_share() -> None:
    assert share(60, 1) == 60 and share(60, 4) == 15 and share(10, 3) == 4 and share(1, 8) == 1
    quotas = Quotas(node_concurrency=64, navigators=4)
    assert quotas.node_concurrency == 16


async def test_a_node_turn_is_waited_for_in_order_and_never_past_the_deadline() -> None:
    quotas = Quotas(node_concurrency=1)
    order: list[str] = []
    release = anyio.Event()

    async def hold() -> None:
        async with quotas.node("m1", 5.0):
            order.append("first")
            await release.wait()

    async def wait_turn(name: str, deadline_s: float) -> None:
        try:
            async with quotas.node("m1", deadline_s) as waited:
                order.append(f"{name} after {waited:.1f}")
        except RateLimited as refused:
            order.append(f"{name} refused {refused.extra['retryAfterS']}")

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(hold)
        await anyio.sleep(0.01)
        tasks.start_soon(wait_turn, "late", 0.2)  # its deadline passes in the queue
        await anyio.sleep(0.01)
        tasks.start_soon(wait_turn, "full", 5.0)  # one waits already: the queue is full
        await anyio.sleep(0.4)
        tasks.start_soon(wait_turn, "next", 5.0)  # the queue has room again
        await anyio.sleep(0.01)
        release.set()
    assert order[0] == "first"
    assert order[1:3] == ["full refused 1", "late refused 1"]
    assert order[3].startswith("next after ")
    async with quotas.node("m2", 1.0):  # another node has its own slots
        pass
