"""The quota arithmetic (ADR 0041), on a clock the test moves: a rate held over any minute to the
second with ``retryAfterS`` saying when room comes back, calls at once, a navigator's share, and
a node's turn that never waits past the deadline."""

from __future__ import annotations

import math

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rate=st.integers(min_value=1, max_value=12),
    gaps=st.lists(
        st.one_of(
            st.just(0.0),
            st.floats(min_value=0.0, max_value=1.0),
            st.floats(min_value=0.0, max_value=70.0),
        ),
        max_size=120,
    ),
)
def test_the_call_past_the_rate_in_any_60_seconds_is_refused_and_no_other(
    rate: int, gaps: list[float]
) -> None:
    """ADR 0048: over random call times, on the navigator's own clock, a call is admitted exactly
    when fewer than ``rate`` calls were admitted in the 60 s before it (so no 60 s window ever
    holds ``rate + 1``), and a refusal's ``retryAfterS`` is the whole seconds until one would
    be admitted."""
    clock = Clock()
    quotas = Quotas(clock=clock)
    caller = _caller("alice", Quota(rate_per_minute=rate))
    admitted: list[float] = []
    for gap in gaps:
        clock.now += gap
        in_minute = [t for t in admitted if t > clock.now - 60]
        retry = anyio.run(_admitted, quotas, caller)
        if retry is None:
            assert len(in_minute) < rate, "admitted past the rate in the last 60 s"
            admitted.append(clock.now)
        else:
            assert len(in_minute) >= rate, "refused with room in the last 60 s"
            room_at = in_minute[len(in_minute) - rate] + 60
            assert retry == max(1, math.ceil(room_at - clock.now))
    for first, past in zip(admitted, admitted[rate:], strict=False):
        assert past - first >= 60, "a 60 s window held more than the rate"


async def test_a_rate_is_not_admitted_twice_within_a_minute_at_second_boundaries() -> None:
    """The busiest case the one-second ring let through: 60/min admitted 120 calls within
    59.01 s, the oldest second dropped up to a second early."""
    clock = Clock()
    clock.now = 1000.99
    quotas = Quotas(clock=clock)
    alice = _caller("alice", Quota(rate_per_minute=60))
    assert [await _admitted(quotas, alice) for _ in range(60)] == [None] * 60
    clock.now = 1060.0  # 59.01 s later: the first 60 are all within the minute still
    assert await _admitted(quotas, alice) == 1
    clock.now = 1060.99
    assert await _admitted(quotas, alice) is None


async def test_a_refusal_is_known_before_the_call_and_counts_nothing() -> None:
    clock = Clock()
    quotas = Quotas(clock=clock)
    alice = _caller("alice", Quota(rate_per_minute=2))
    assert quotas.refusal(alice) is None
    for _ in range(2):
        assert await _admitted(quotas, alice) is None
    for _ in range(5):
        refused = quotas.refusal(alice)
        assert refused is not None and refused.extra["retryAfterS"] == 60
    clock.now += 60
    assert quotas.refusal(alice) is None
    assert await _admitted(quotas, alice) is None
    assert quotas.refusal(_caller("bob", Quota())) is None
