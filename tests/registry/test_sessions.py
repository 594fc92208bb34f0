"""Console sessions in the registry, on SQLite and PostgreSQL: kept by their id's hash, ended by
their limits, by signing out, and with their principal's token."""

from __future__ import annotations

from datetime import datetime, timedelta

from registry import (
    AccessStore,
    ConsoleSessions,
    Registry,
    SessionRules,
    read_console_session,
)
from registry.models import utcnow

RULES = SessionRules(idle_s=600.0, lifetime_s=3600.0)


def _open(
    registry: Registry,
    id_hash: str,
    principal: str = "alice",
    *,
    token_hash: str | None = "t" * 64,
    scopes: tuple[str, ...] = (),
    expires_at: datetime | None = None,
    now: datetime | None = None,
    keep: int = 16,
) -> None:
    with registry.transaction() as session:
        ConsoleSessions(session).open(
            id_hash,
            principal=principal,
            token_hash=token_hash,
            scopes=scopes,
            expires_at=expires_at,
            now=now or utcnow(),
            rules=RULES,
            keep=keep,
        )


def test_a_session_reads_back_as_it_was_opened(registry: Registry) -> None:
    now = utcnow()
    expiry = now + timedelta(minutes=5)
    _open(registry, "a" * 64, token_hash=None, scopes=("ops", "mesh:admin"), expires_at=expiry)
    found = read_console_session(registry, "a" * 64)
    assert found is not None
    assert (found.principal, found.token_hash, found.scopes) == (
        "alice",
        None,
        ("mesh:admin", "ops"),
    )
    assert found.expires_at == expiry
    assert found.is_live(now, RULES)
    assert not found.is_live(expiry, RULES)  # a JWT's own expiry
    assert read_console_session(registry, "b" * 64) is None


def test_idle_and_open_sessions_end_at_the_rules(registry: Registry) -> None:
    now = utcnow()
    _open(registry, "a" * 64, now=now)
    found = read_console_session(registry, "a" * 64)
    assert found is not None
    assert found.is_live(now + timedelta(seconds=599), RULES)
    assert not found.is_live(now + timedelta(seconds=600), RULES)  # idle
    with registry.transaction() as session:
        ConsoleSessions(session).seen("a" * 64, now + timedelta(seconds=3000))
    found = read_console_session(registry, "a" * 64)
    assert found is not None
    assert found.is_live(now + timedelta(seconds=3500), RULES)
    assert not found.is_live(now + timedelta(seconds=3600), RULES)  # open too long


def test_opening_prunes_ended_sessions_and_keeps_a_principals_newest(registry: Registry) -> None:
    now = utcnow()
    _open(registry, "old" + "0" * 61, principal="bob", now=now - timedelta(seconds=601))
    for n in range(4):
        _open(registry, f"{n:064d}", now=now + timedelta(seconds=n), keep=3)
    assert read_console_session(registry, "old" + "0" * 61) is None  # idle past the rules
    assert read_console_session(registry, f"{0:064d}") is None  # alice's oldest past three
    assert all(read_console_session(registry, f"{n:064d}") for n in (1, 2, 3))


def test_signing_out_ends_one_session(registry: Registry) -> None:
    _open(registry, "a" * 64)
    _open(registry, "b" * 64)
    with registry.transaction() as session:
        ConsoleSessions(session).close("a" * 64)
    assert read_console_session(registry, "a" * 64) is None
    assert read_console_session(registry, "b" * 64) is not None


def test_rotating_or_revoking_a_principal_ends_its_sessions(registry: Registry) -> None:
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("alice", scopes=[], token_hash="t" * 64)
        store.add_principal("bob", scopes=[], token_hash="u" * 64)
    _open(registry, "a" * 64)
    _open(registry, "b" * 64, principal="bob", token_hash="u" * 64)
    with registry.transaction() as session:
        AccessStore(session).rotate_principal("alice", token_hash="v" * 64)
    assert read_console_session(registry, "a" * 64) is None
    assert read_console_session(registry, "b" * 64) is not None
    with registry.transaction() as session:
        AccessStore(session).revoke_principal("bob")
    assert read_console_session(registry, "b" * 64) is None
