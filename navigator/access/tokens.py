"""Principals' stored tokens and the scopes the navigator itself names.

Kept apart from ``navigator.access.authentication`` (the middleware, JWT verification) so that
the command line, which mints and hashes tokens on the registry directly, loads neither FastMCP
nor the server.
"""

from __future__ import annotations

import hashlib
import secrets

from registry.access_records import NODE_SCOPE

__all__ = ["ADMIN_SCOPE", "NODE_SCOPE", "TOKEN_PREFIX", "hash_token", "mint_token"]

ADMIN_SCOPE = "mesh:admin"
TOKEN_PREFIX = "mnv_"  # noqa: S105 - a token's visible prefix, not a secret


def mint_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """What the registry keeps of a token: its SHA-256 (a token is 256 random bits, so no
    stretching is needed to make guessing it from the hash hopeless)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
