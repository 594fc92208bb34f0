"""The node agent's settings: ``MESHNAV_*`` read once at start; flags win."""

from __future__ import annotations

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["NodeSettings"]


class NodeSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MESHNAV_", extra="ignore")

    name: str = ""
    navigator_url: str = "http://127.0.0.1:7700"
    listen: str = "127.0.0.1:7801"
    #: The URL the navigator reaches this node at; defaults to the listen address.
    advertise: str | None = None
    token: SecretStr | None = None
    heartbeat_s: float = 5.0
    tls_cert: str | None = None
    tls_key: str | None = None
    #: CA bundle to trust for an ``https`` navigator URL.
    navigator_ca: str | None = None

    @property
    def host(self) -> str:
        return self.listen.rsplit(":", 1)[0]

    @property
    def port(self) -> int:
        return int(self.listen.rsplit(":", 1)[1])

    @property
    def advertise_url(self) -> str:
        if self.advertise:
            return self.advertise.rstrip("/")
        scheme = "https" if self.tls_cert else "http"
        return f"{scheme}://{self.listen}"
