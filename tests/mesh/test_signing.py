"""The one signed format (``mesh.signing``) of call tokens, cursors and elicitation states: what
it writes, what it refuses, and how each of the three still reads it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from mesh import signing
from mesh.calltokens import CallTokenVerifier, sign_call_token
from mesh.digests import arguments_digest
from navigator.walker.cursors import CursorPosition, CursorSigner

KEY = b"k" * 32


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def test_the_format_is_base64url_claims_dot_base64url_hmac_sha256() -> None:
    """The wire format as the call tokens' was before the signers were one: a token a navigator
    of either build signs is one a node of the other accepts."""
    claims = {"p": "alice", "e": 12.5, "n": "x"}
    body = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    mac = _b64(hmac.new(KEY, body.encode("ascii"), hashlib.sha256).digest())
    assert signing.sign(KEY, claims) == f"{body}.{mac}"
    assert signing.verify(KEY, f"{body}.{mac}") == claims


def test_a_call_token_signed_by_hand_in_the_old_format_is_accepted() -> None:
    now = 1_000_000.0
    digest = arguments_digest({"sql": "select 1"})
    claims = {
        "p": "alice",
        "a": "db1/sqlite/query",
        "m": "db1",
        "r": "sqlite",
        "t": "query",
        "d": digest,
        "n": "nonce",
        "i": now,
        "e": now + 30,
    }
    body = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    token = f"{body}.{_b64(hmac.new(KEY, body.encode('ascii'), hashlib.sha256).digest())}"
    verifier = CallTokenVerifier("db1", lambda: KEY, lambda: now)
    got = verifier.verify(token, role="sqlite", tool="query", arguments={"sql": "select 1"})
    assert got.principal == "alice"
    signed = sign_call_token(
        KEY,
        principal="alice",
        address="db1/sqlite/query",
        machine="db1",
        role="sqlite",
        tool="query",
        arguments_digest=digest,
        now=now,
    )
    assert signing.verify(KEY, signed) is not None


def test_a_cursor_keeps_its_format() -> None:
    """``{"b","o","t"}`` compact, as cursors were written before (their keys were in order)."""
    cursors = CursorSigner(60, clock=lambda: 100.0)
    cursor = cursors.issue({"q": 1}, CursorPosition(offset=7, started=100.0))
    body = cursor.partition(".")[0]
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    assert list(payload) == ["b", "o", "t"] and payload["o"] == 7
    assert cursors.open(cursor, {"q": 1}) == CursorPosition(offset=7, started=100.0)


@pytest.mark.parametrize(
    "signed",
    [
        None,
        42,
        "",
        "no-dot",
        "a.b.c",
        "é.x",  # compare_digest takes ASCII only: refused, not a TypeError
        "x." + "é",
    ],
)
def test_what_it_did_not_sign_is_none(signed: object) -> None:
    assert signing.verify(KEY, signed) is None


def test_tampering_another_key_another_context_or_length_is_none() -> None:
    good = signing.sign(KEY, {"o": 1}, context="alice\ncall")
    assert signing.verify(KEY, good, context="alice\ncall") == {"o": 1}
    body, _, mac = good.partition(".")
    forged = _b64(json.dumps({"o": 2}, separators=(",", ":")).encode())
    assert signing.verify(KEY, f"{forged}.{mac}", context="alice\ncall") is None
    assert signing.verify(b"j" * 32, good, context="alice\ncall") is None
    assert signing.verify(KEY, good, context="bob\ncall") is None
    assert signing.verify(KEY, good) is None  # bound to a context: not good without it
    assert signing.verify(KEY, good, context="alice\ncall", max_chars=len(good) - 1) is None
    # a JSON value that is not an object is not claims
    body = _b64(b"[1]")
    assert signing.verify(KEY, f"{body}.{signing.sign(KEY, {}).partition('.')[2]}") is None


def test_a_context_may_hold_any_json_string() -> None:
    """A principal is a JWT subject: any JSON string, a lone surrogate too."""
    signed = signing.sign(KEY, {"n": "1"}, context="lone\ud800")
    assert signing.verify(KEY, signed, context="lone\ud800") == {"n": "1"}


def test_expiry_is_before_it_and_not_further_off_than_the_longest() -> None:
    assert signing.unexpired(10.0, 9.0)
    assert not signing.unexpired(10.0, 10.0)
    assert signing.unexpired(10.0, 5.0, longest_s=5.0)
    assert not signing.unexpired(10.0, 4.9, longest_s=5.0)  # from a clock ahead


def test_an_elicitation_state_not_ascii_is_refused_not_raised() -> None:
    """A client's ``requestState`` is any string: one not ASCII raised ``TypeError`` out of
    ``hmac.compare_digest`` instead of asking the person again."""
    from navigator.mcp.elicitation import _StateSigner

    signer = _StateSigner()
    assert signer.redeem("é.é", "alice\ncall") is False
    state = signer.sign("alice\ncall")
    assert signer.redeem(state, "bob\ncall") is False
    assert signer.redeem(state, "alice\ncall") is True
    assert signer.redeem(state, "alice\ncall") is False
