"""The navigator's own audit events, in process: refused sign-ins on every route (never the
token), a machine that stops and starts answering, the writer's batches and its export."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from sqlalchemy import update
from typer.testing import CliRunner

from meshnav.cli import app
from navigator.access.auditing import AuditLog, open_export
from navigator.access.tokens import hash_token, mint_token
from navigator.settings import NavigatorSettings
from registry import Registry, RegistryError, migrate
from registry.audit import AuditFilter, AuditRecord, AuditStore
from registry.models import Machine
from tests.navigator.console.test_console import console_app


def _events(registry: Registry, **wanted: object) -> list[AuditRecord]:
    with registry.read_transaction() as session:
        return AuditStore(session).events(AuditFilter(**wanted))  # type: ignore[arg-type]


async def _settled(audit: AuditLog) -> None:
    await audit.flush(refusals=True)


async def test_a_refused_sign_in_is_recorded_on_every_route_without_its_token(
    tmp_path: Path,
) -> None:
    async with console_app(tmp_path) as console:
        bad = mint_token()
        async with console.client() as client:
            await client.get("/api/v1/grants", headers={"Authorization": f"Bearer {bad}"})
            await client.post("/mcp", json={}, headers={"Authorization": "Bearer nope"})
            await client.post("/console/sign-in", data={"token": bad, "next": "/"})
            await client.get("/api/v1/mesh")
        await _settled(console.services.audit)
        events = _events(console.services.registry, action="sign-in")
    targets = sorted(event.entry.target for event in events)
    shown = hash_token(bad)[:12]
    assert targets == sorted(
        [
            f"/api/v1/grants from 127.0.0.1: token {shown}",
            f"/mcp from 127.0.0.1: token {hash_token('nope')[:12]}",
            f"/console/sign-in from 127.0.0.1: token {shown}",
            "/api/v1/mesh from 127.0.0.1: no token",
        ]
    )
    assert {event.entry.outcome for event in events} == {"unauthenticated"}
    assert all(bad not in repr(event) and hash_token(bad) not in repr(event) for event in events)


async def test_a_machine_that_stops_and_starts_answering_is_recorded(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console:
        registry, catalog = console.services.registry, console.services.catalog

        def beat(at: datetime) -> None:
            with registry.transaction() as session:
                session.execute(
                    update(Machine)
                    .where(Machine.name == "db2")
                    .values(last_heartbeat_at=at, heartbeat_s=1)
                )

        await anyio.to_thread.run_sync(beat, datetime.now(UTC))
        await catalog.refresh_heartbeats()
        assert catalog.machine_status("db2") == "answering"
        await anyio.to_thread.run_sync(beat, datetime.now(UTC) - timedelta(minutes=1))
        await catalog.refresh_heartbeats()
        assert catalog.machine_status("db2") == "not answering"
        catalog.note_heartbeat("db2", datetime.now(UTC))
        await _settled(console.services.audit)
        events = _events(registry, action="machine.status")
    seen = [(e.entry.target, e.entry.outcome) for e in reversed(events)]
    assert ("db2", "not_answering") in seen and seen[-1] == ("db2", "answering")


async def test_a_batch_the_registry_refused_is_kept_and_written_later(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    migrate(url)
    registry = Registry(url)
    export = tmp_path / "audit.jsonl"
    audit = AuditLog(registry, "nav", retention_days=30, export=open_export(str(export)))
    try:
        await audit.begin()
        audit.event("alice", "call", "db1/sqlite/query", "ok")
        registry.engine.dispose()
        (tmp_path / "r.db").rename(tmp_path / "away.db")  # gone: the write fails
        (tmp_path / "r.db").mkdir()
        await audit.flush()  # refused: kept, not raised
        assert not _events_or_none(registry)
        (tmp_path / "r.db").rmdir()
        (tmp_path / "away.db").rename(tmp_path / "r.db")
        registry.engine.dispose()
        await audit.close()
        written = _events(registry)
        assert [e.entry.target for e in written] == ["db1/sqlite/query"]
        assert json.loads(export.read_text())["hash"] == written[0].hash
        assert export.stat().st_mode & 0o077 == 0
    finally:
        registry.dispose()


def _events_or_none(registry: Registry) -> list[AuditRecord]:
    try:
        return _events(registry)
    except RegistryError:
        return []


async def test_the_audit_api_is_for_operators_and_names_a_bad_filter(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console:
        root = {"Authorization": f"Bearer {console.tokens['root']}"}
        alice = {"Authorization": f"Bearer {console.tokens['alice']}"}
        async with console.client() as client:
            refused = await client.get("/api/v1/audit", headers=alice)
            assert refused.status_code == 403
            assert refused.json()["error"] == "tool_not_granted"
            for params, pointer in (
                ({"since": "yesterday"}, "/since"),
                ({"limit": "0"}, "/limit"),
                ({"limit": "100000"}, "/limit"),
                ({"before": "-1"}, "/before"),
                ({"principal": "a\x00b"}, None),  # refused before any route reads it
                ({"address": "x" * 300}, "/address"),
            ):
                answer = await client.get("/api/v1/audit", params=params, headers=root)
                assert answer.status_code == 400, params
                body = answer.json()
                assert body["error"] == "invalid_arguments" and body.get("pointer") == pointer
                assert "yesterday" not in body["message"]
            await client.get("/api/v1/mesh", headers={"Authorization": "Bearer x"})
            await console.services.audit.flush(refusals=True)
            first = (await client.get("/api/v1/audit", params={"limit": "1"}, headers=root)).json()
            assert len(first["events"]) == 1 and first["next"] is not None
            rest = await client.get(
                "/api/v1/audit", params={"before": first["next"], "limit": "1000"}, headers=root
            )
            ids = [e["id"] for e in rest.json()["events"]]
            assert ids and max(ids) < first["events"][0]["id"]
            verified = (await client.get("/api/v1/audit/verify", headers=root)).json()
            assert verified["ok"] is True


def test_the_writers_bounds_are_settings_with_flags() -> None:
    """The batch interval (what a killed navigator loses at most), the queue and the refusals'
    window and bound reach the navigator's settings from their flags (ADR 0045)."""
    seen: dict[str, object] = {}

    async def serve(given: dict[str, object], *, stdio: bool) -> None:
        seen.update(given)

    flags = ["--audit-flush", "0.25", "--audit-queue-max", "10"]
    flags += ["--audit-refusal-window", "5", "--audit-refusals-per-minute", "7"]
    result = CliRunner().invoke(app, ["navigator", "serve", *flags], obj=serve)
    assert result.exit_code == 0, result.output
    settings = NavigatorSettings(**seen)  # type: ignore[arg-type]
    assert (settings.audit_flush_s, settings.audit_queue_max) == (0.25, 10)
    assert (settings.audit_refusal_window_s, settings.audit_refusals_per_minute) == (5.0, 7)
