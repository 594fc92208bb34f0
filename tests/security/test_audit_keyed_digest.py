"""The audit trail's arguments digest is keyed (issue 35, item 12; ADR 0045), on SQLite and on
the real PostgreSQL.

It was the arguments' plain SHA-256: a 4-digit PIN was found from it in 0.02 s by trying them
all. It is now an HMAC-SHA256 under a key made once in the registry — the same for every
navigator sharing it — and shown by no API, command or log.
"""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest
from sqlalchemy import text

from mesh.digests import arguments_digest
from navigator.access.auditing import AuditLog
from navigator.metrics import Metrics
from registry import Registry
from registry.audit import AuditFilter, AuditStore
from tests.navigator.console.test_console import console_app

pytestmark = pytest.mark.xdist_group("postgres")


def _key(registry: Registry) -> bytes:
    with registry.engine.connect() as connection:
        (key,) = connection.execute(text("SELECT key FROM audit_keys")).one()
    return bytes(key)


async def test_every_navigator_on_a_registry_keys_the_digest_alike(
    registry: Registry, database_url: str
) -> None:
    second = Registry(database_url)  # another navigator's connection to the same registry
    try:
        navigators = [
            AuditLog(on, name, retention_days=30, metrics=Metrics())
            for on, name in ((registry, "nav-a"), (second, "nav-b"))
        ]
        plain = arguments_digest({"pin": "4711"})
        for audit in navigators:
            audit.event("alice", "call", "db1/vault/open", "ok", args_digest=plain)
            await audit.flush()
    finally:
        second.dispose()
    with registry.read_transaction() as session:
        stored = {
            e.instance: e.entry.args_digest for e in AuditStore(session).events(AuditFilter())
        }
    key = _key(registry)
    assert len(key) == 32
    expected = hmac.new(key, plain.encode(), hashlib.sha256).hexdigest()
    assert stored == {"nav-a": expected, "nav-b": expected}
    tried = {arguments_digest({"pin": f"{n:04d}"}) for n in range(10_000)}
    assert not tried & set(stored.values())  # trying every PIN finds nothing without the key


async def test_no_api_shows_the_key(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console:
        audit = console.services.audit
        audit.event("alice", "call", "db1/sqlite/query", "ok", args_digest="ab" * 32)
        await audit.flush()
        key = _key(console.services.registry)
        root = {"Authorization": f"Bearer {console.tokens['root']}"}
        async with console.client() as client:
            answers = [
                (await client.get(path, headers=root)).text
                for path in ("/api/v1/audit", "/api/v1/audit/verify", "/api/v1/openapi.json")
            ]
    assert all(key.hex() not in answer for answer in answers)
    assert "ab" * 32 not in answers[0]  # the digest given was stored keyed
