"""The navigator's settings: read once at start from ``MESHNAV_*``; an explicit argument wins."""

from __future__ import annotations

from pydantic import SecretStr
from pydantic_settings import SettingsConfigDict

from mesh.settings import Listen, ListeningSettings

__all__ = ["NavigatorSettings"]


class NavigatorSettings(ListeningSettings):
    model_config = SettingsConfigDict(env_prefix="MESHNAV_", extra="ignore")

    database_url: str = "sqlite:///./meshnav.db"
    listen: Listen = "127.0.0.1:7700"
    #: The CLI's and the stdio navigator's credential.
    token: SecretStr | None = None
    call_deadline_s: float = 30.0
    heartbeat_s: float = 5.0
    #: How long a search cursor lives from the first page (tests shorten it).
    cursor_ttl_s: float = 120.0
    #: JWT verification instead of (or beside) stored tokens.
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_jwks_uri: str | None = None
    jwt_public_key: str | None = None
    jwt_algorithm: str | None = None
    #: Host headers (and browser origins) the MCP endpoint accepts besides loopback and the
    #: listen address — e.g. ``["nav.example.com"]`` behind a proxy (DNS-rebinding protection).
    allowed_hosts: list[str] = []
    allowed_origins: list[str] = []
