"""The node agent's settings: ``MESHNAV_*`` read once at start; flags win."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from mesh.connections import READ_TIMEOUT_S, ConnectionLimits, connection_cap

__all__ = [
    "MAX_HEARTBEAT_S",
    "MIN_HEARTBEAT_S",
    "UPSTREAM_ANSWER_BYTES",
    "UPSTREAM_ERROR_LOG_S",
    "Listen",
    "ListeningSettings",
    "NodeSettings",
    "join_listen",
    "split_listen",
]


#: The most of one ``http`` upstream's answer a node reads: what the navigator reads of a node's.
UPSTREAM_ANSWER_BYTES = 4 << 20
#: Seconds between two lines of a node's log about one upstream's failures.
UPSTREAM_ERROR_LOG_S = 60.0

#: The heartbeat periods a navigator accepts, in seconds.
MIN_HEARTBEAT_S, MAX_HEARTBEAT_S = 0.05, 3600.0


def split_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` as a host (an IPv6 one written in brackets, which are taken off) and a port
    1-65535; ``ValueError`` otherwise, without repeating the text."""
    host, colon, port = listen.rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("expected HOST:PORT with a port from 1 to 65535")
    if host.startswith("[") and host.endswith("]"):
        return host[1:-1], int(port)
    if ":" in host or "[" in host or "]" in host:
        raise ValueError("expected HOST:PORT, an IPv6 host in brackets ([::1]:7700)")
    return host, int(port)


def join_listen(host: str, port: int) -> str:
    """The inverse of ``split_listen``: an IPv6 host goes back into brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _listen(listen: str) -> str:
    split_listen(listen)
    return listen


#: A ``HOST:PORT`` setting, checked when read.
Listen = Annotated[str, AfterValidator(_listen)]


class ListeningSettings(BaseSettings):
    """Settings of a server that listens on ``HOST:PORT``, checked when read."""

    listen: Listen = "127.0.0.1:7801"
    #: The most connections the server holds (ADR 0030); never more than its descriptor limit
    #: leaves room for. Unset: ``mesh.connections.MAX_CONNECTIONS`` within that room.
    max_connections: int | None = Field(default=None, gt=0)
    #: Seconds a request has to arrive whole (headers and body) from its first byte.
    read_timeout_s: float = Field(default=READ_TIMEOUT_S, gt=0, le=3600)

    def connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits(connection_cap(self.max_connections), self.read_timeout_s)

    @property
    def host(self) -> str:
        return split_listen(self.listen)[0]

    @property
    def port(self) -> int:
        return split_listen(self.listen)[1]


class NodeSettings(ListeningSettings):
    model_config = SettingsConfigDict(env_prefix="MESHNAV_", extra="ignore")

    name: str = ""
    navigator_url: str = "http://127.0.0.1:7700"
    #: The URL the navigator reaches this node at; defaults to the listen address.
    advertise: str | None = None
    token: SecretStr | None = None
    #: Seconds between heartbeats, within what the navigator accepts at registration.
    heartbeat_s: float = Field(default=5.0, ge=MIN_HEARTBEAT_S, le=MAX_HEARTBEAT_S)
    tls_cert: str | None = None
    tls_key: str | None = None
    #: CA bundle to trust for an ``https`` navigator URL.
    navigator_ca: str | None = None
    #: Serve a ``postgres`` module whose role is privileged (superuser, or one that may run
    #: programs or read or write the server's files); refused at start otherwise.
    allow_privileged_role: bool = False
    #: Take the machine over from a node instance that still serves it (SPEC §6); that one is
    #: then refused as ``replaced`` and stops. Without it, such a registration is refused.
    replace: bool = False
    #: The most of one ``http`` upstream's answer read; past it: ``node_answer_too_large``.
    upstream_answer_bytes: int = Field(default=UPSTREAM_ANSWER_BYTES, ge=1024, le=1 << 30)
    #: Seconds between two log lines about one upstream's failures (class and code only).
    upstream_error_log_s: float = Field(default=UPSTREAM_ERROR_LOG_S, ge=0, le=86400)
    #: The roles of the ``http`` and ``stdio`` modules given the mesh's trace context.
    module_trace: list[str] = Field(default_factory=list)

    @property
    def advertise_url(self) -> str:
        if self.advertise:
            return self.advertise.rstrip("/")
        scheme = "https" if self.tls_cert else "http"
        return f"{scheme}://{self.listen}"
