"""Migrating: Alembic only when the registry is not at the newest schema already."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.script import ScriptDirectory

from registry import migrate
from registry.database import HEAD_REVISION, alembic_config, schema_revision


def test_the_known_head_is_alembics_head() -> None:
    scripts = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert scripts.get_current_head() == HEAD_REVISION


def test_a_new_registry_is_migrated_and_then_left_alone(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert schema_revision(database_url) is None
    migrate(database_url)
    assert schema_revision(database_url) == HEAD_REVISION

    def upgrade(*_: object) -> None:
        raise AssertionError("a registry at the newest schema was upgraded")

    monkeypatch.setattr(command, "upgrade", upgrade)
    migrate(database_url)
    assert schema_revision(database_url) == HEAD_REVISION


def test_a_registry_behind_is_upgraded(database_url: str) -> None:
    command.upgrade(alembic_config(database_url), "0002")
    assert schema_revision(database_url) == "0002"
    migrate(database_url)
    assert schema_revision(database_url) == HEAD_REVISION
