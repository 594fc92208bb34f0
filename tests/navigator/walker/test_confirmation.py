"""Confirm tokens held in memory (navigator/walker/confirmation.py; SPEC §3 step 4)."""

from __future__ import annotations

import time

from navigator.walker.confirmation import MAX_PENDING, Confirmations


def test_live_tokens_past_the_bound_push_out_the_oldest() -> None:
    """Expired tokens were dropped only past 4,096 held, and live ones never: calls needing
    confirmation, asked for faster than 120 s lets them expire, grew the set without bound
    (and rebuilt it whole on every issue). The oldest now goes; its call gets a new token."""
    confirmations = Confirmations(ttl_s=120)
    tokens = [confirmations._issue(f"alice\nweb1/a/t\n{i}\n-") for i in range(MAX_PENDING + 500)]
    assert len(confirmations._pending) == MAX_PENDING
    assert not confirmations._redeem(tokens[0], "alice\nweb1/a/t\n0\n-")
    last = len(tokens) - 1
    assert confirmations._redeem(tokens[last], f"alice\nweb1/a/t\n{last}\n-")


def test_expired_tokens_go_as_new_ones_come() -> None:
    confirmations = Confirmations(ttl_s=0.01)
    for i in range(10):
        confirmations._issue(f"alice\nweb1/a/t\n{i}\n-")
    time.sleep(0.02)
    kept = confirmations._issue("alice\nweb1/a/t\nnew\n-")
    assert len(confirmations._pending) == 1
    assert confirmations._redeem(kept, "alice\nweb1/a/t\nnew\n-")


def test_a_token_binds_a_principal_named_in_any_script() -> None:
    """A JWT's subject names the principal, and it may be any text ('josé'): redeeming its token
    compared the bindings as str with ``hmac.compare_digest``, which raises TypeError past ASCII,
    so the confirmed call answered internal_error (a review)."""
    confirmations = Confirmations(ttl_s=120)
    for principal in ("josé", "lone\ud800surrogate"):
        token = confirmations._issue(f"{principal}\nweb1/a/t\n0\n-")
        assert not confirmations._redeem(token, "jośe\nweb1/a/t\n0\n-")
        assert confirmations._redeem(token, f"{principal}\nweb1/a/t\n0\n-")
