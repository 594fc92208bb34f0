"""Where the registry matters, a security test runs on SQLite and on the real PostgreSQL the
session starts (the registry tests' fixtures); ``invoke`` runs ``meshnav`` on a fresh registry."""

from __future__ import annotations

from tests.registry.conftest import database_url, registry
from tests.test_cli import invoke

__all__ = ["database_url", "invoke", "registry"]
