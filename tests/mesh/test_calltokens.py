"""Call tokens on their own: what a node accepts, what it refuses, and what it remembers (SPEC §6)."""

from __future__ import annotations

from typing import Any

import pytest

from mesh.calltokens import MAX_LIFETIME_S, CallTokenVerifier, sign_call_token
from mesh.digests import arguments_digest
from mesh.errors import CallTokenRejected, SignedBeforeStart

KEY = b"k" * 32
ARGS = {"sql": "select 1", "limit": 5}


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def token(
    clock: Clock, *, key: bytes = KEY, arguments: dict[str, Any] = ARGS, **claims: Any
) -> str:
    fields = {
        "principal": "alice",
        "address": "db1/sqlite/query",
        "machine": "db1",
        "role": "sqlite",
        "tool": "query",
        **claims,
    }
    return sign_call_token(key, arguments_digest=arguments_digest(arguments), now=clock(), **fields)


def verifier(clock: Clock) -> CallTokenVerifier:
    return CallTokenVerifier("db1", lambda: KEY, clock)


def test_a_good_token_runs_once() -> None:
    clock = Clock()
    check = verifier(clock)
    good = token(clock)
    claims = check.verify(good, role="sqlite", tool="query", arguments=dict(ARGS))
    assert claims.principal == "alice"
    with pytest.raises(CallTokenRejected):
        check.verify(good, role="sqlite", tool="query", arguments=dict(ARGS))


@pytest.mark.parametrize(
    ("claims", "role", "tool", "arguments"),
    [
        ({"machine": "db2"}, "sqlite", "query", ARGS),
        ({}, "postgres", "query", ARGS),
        ({}, "sqlite", "execute", ARGS),
        ({}, "sqlite", "query", {"sql": "select 2", "limit": 5}),
        ({}, "sqlite", "query", {**ARGS, "extra": True}),
    ],
)
def test_a_token_for_another_call_is_refused(
    claims: dict[str, Any], role: str, tool: str, arguments: dict[str, Any]
) -> None:
    clock = Clock()
    with pytest.raises(CallTokenRejected):
        verifier(clock).verify(token(clock, **claims), role=role, tool=tool, arguments=arguments)


@pytest.mark.parametrize(
    "bad",
    [None, "", "no-dot", "a.b.c", "e30.AAAA", 42],
)
def test_malformed_tokens_are_refused(bad: object) -> None:
    with pytest.raises(CallTokenRejected):
        verifier(Clock()).verify(bad, role="sqlite", tool="query", arguments=ARGS)


def test_a_token_signed_with_another_key_is_refused() -> None:
    clock = Clock()
    with pytest.raises(CallTokenRejected):
        verifier(clock).verify(
            token(clock, key=b"x" * 32), role="sqlite", tool="query", arguments=ARGS
        )


def test_an_expired_token_is_refused_and_its_nonce_forgotten() -> None:
    clock = Clock()
    check = verifier(clock)
    for _ in range(100):
        check.verify(token(clock), role="sqlite", tool="query", arguments=ARGS)
    late = token(clock)
    clock.now += MAX_LIFETIME_S + 1
    with pytest.raises(CallTokenRejected):
        check.verify(late, role="sqlite", tool="query", arguments=ARGS)
    check.verify(token(clock), role="sqlite", tool="query", arguments=ARGS)
    assert len(check._seen) == 1  # the expired tokens' nonces are gone


def test_live_nonces_are_all_remembered() -> None:
    """However many tokens are live, none of them can be replayed while it is."""
    clock = Clock()
    check = verifier(clock)
    issued = [token(clock) for _ in range(3000)]
    for each in issued:
        check.verify(each, role="sqlite", tool="query", arguments=ARGS)
    clock.now += MAX_LIFETIME_S - 1
    for each in issued[::97]:
        with pytest.raises(CallTokenRejected):
            check.verify(each, role="sqlite", tool="query", arguments=ARGS)


def test_a_token_signed_before_the_nodes_first_registration_is_refused() -> None:
    """A node that restarts has forgotten the nonces it accepted, and its key is the registry's:
    a token seen on the wire before the restart ran its call again (a review reproduced two
    rows from one INSERT token). Tokens signed before this process's first registration are
    refused as ``node_unavailable`` (``SignedBeforeStart``), which a navigator may send again."""
    clock = Clock()
    before = token(clock)
    clock.now += 2
    registered = clock.now  # the navigator's time in the registration answer
    clock.now += 0.01
    after = token(clock)
    check = CallTokenVerifier("db1", lambda: KEY, clock, floor=lambda: registered)
    with pytest.raises(SignedBeforeStart):
        check.verify(before, role="sqlite", tool="query", arguments=dict(ARGS))
    assert (
        check.verify(after, role="sqlite", tool="query", arguments=dict(ARGS)).issued > registered
    )
