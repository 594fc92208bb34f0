"""The navigator's settings: read once at start from ``MESHNAV_*``; an explicit argument wins."""

from __future__ import annotations

import socket
import ssl
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, PositiveFloat, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from mesh.settings import Listen, ListeningSettings, join_listen
from navigator.limits import (
    NODE_CONCURRENCY,
    NODE_MAX_ASSIGNMENTS,
    NODE_MAX_TOOLS,
    PENDING_CONFIRMATIONS,
    RETIRED_KEPT_DAYS,
)
from navigator.nodes.destinations import ANY_NETWORK, Destinations, parse_networks

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
    #: A search hit scoring below this share of the best hit's is not returned; 0: every hit is
    #: (ADR 0055). The same default as
    #: ``navigator.search.ranking.RankingSettings.relevance_floor``.
    search_relevance_floor: float = Field(default=0.2, ge=0.0, lt=1.0)
    #: JWT verification instead of (or beside) stored tokens.
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_jwks_uri: str | None = None
    jwt_public_key: str | None = None
    jwt_algorithm: str | None = None
    #: The claim naming a JWT's principal (ADR 0037).
    jwt_principal_claim: str = Field(default="sub", min_length=1)
    #: Take JWTs whose header types them nothing in particular (no ``typ``, or ``JWT``), for an
    #: authorization server that does not type its access tokens ``at+jwt`` (RFC 9068); off, such
    #: a token (an ID token, say) is refused however well its audience matches (ADR 0044).
    jwt_allow_untyped: bool = False
    #: The navigator's external base URL (``https://nav.example.com``): its MCP resource for OAuth
    #: is ``{public_url}/mcp``, the audience its JWTs must hold (ADR 0037). Without it, the listen
    #: address.
    public_url: str | None = None
    #: The scopes the protected-resource metadata lists, and a 401 asks for: those the grants
    #: name (space or comma separated; nothing of the registry is read to list them).
    oauth_scopes: str = ""
    #: Host headers (and browser origins) the MCP endpoint accepts besides loopback and the
    #: listen address — e.g. ``["nav.example.com"]`` behind a proxy (DNS-rebinding protection).
    allowed_hosts: list[str] = []
    allowed_origins: list[str] = []
    #: A console sign-in ends once its viewer has loaded no page for ``console_idle_s``, and
    #: ``console_lifetime_s`` after it began whatever they do (a JWT's at the JWT's expiry first).
    console_idle_s: PositiveFloat = 8 * 3600.0
    console_lifetime_s: PositiveFloat = 24 * 3600.0
    #: A CA bundle (PEM) trusted for ``https`` node URLs beside the system's: nodes serving TLS
    #: with a certificate of a private CA, or one they signed themselves.
    node_ca: str | None = None
    #: The networks endpoints and nodes' advertised URLs may be in, checked when a URL is stored
    #: and on the address each connection reaches (ADR 0032); link-local and metadata addresses
    #: never are.
    endpoint_networks: str = ANY_NETWORK
    #: The most assignments and tools a node's machine may hold, retired ones counted until
    #: pruned; and the days a retired assignment is kept before it is pruned (ADR 0032).
    node_max_assignments: int = Field(default=NODE_MAX_ASSIGNMENTS, ge=1)
    node_max_tools: int = Field(default=NODE_MAX_TOOLS, ge=1)
    retired_retention_days: float = Field(default=RETIRED_KEPT_DAYS, ge=0)
    #: The legacy era's MCP sessions one principal may hold (an agent holds one; many agents
    #: sharing a principal's token one each), and all principals together (the MCP SDK's
    #: default); ADR 0030.
    sessions_per_principal: int = Field(default=64, gt=0)
    #: The sessions all JWT subjects no principal row stands behind hold together (ADR 0044).
    unregistered_sessions: int = Field(default=64, gt=0)
    sessions_max: int = Field(default=10_000, gt=0)
    #: Calls sent to one node at once (more wait their turn, or are ``rate_limited``), and how
    #: many navigators share the registry: each holds its share of every limit (ADR 0041).
    node_concurrency: int = Field(default=NODE_CONCURRENCY, ge=1, le=4096)
    navigators: int = Field(default=1, ge=1, le=64)
    #: Questions one principal may have waiting on a person at once (ADR 0048); past it a call
    #: gets a confirm token instead, and an ``elicit-only`` call ``rate_limited``.
    pending_confirmations: int = Field(default=PENDING_CONFIRMATIONS, ge=1, le=4096)
    #: The audit trail (ADR 0039): how many days an event is kept; the name this navigator's
    #: events are chained under (its host and listen address when not set); a JSON-lines copy of
    #: every event (``-``: standard output) for a SIEM.
    audit_retention_days: float = Field(default=30.0, gt=0)
    instance: str | None = Field(default=None, min_length=1, max_length=128)
    audit_jsonl: str | None = None
    #: Off, the navigator records no call, describe or sign-in events (changes to the registry
    #: are recorded all the same): for measuring what auditing costs, side by side.
    audit_calls: bool = True
    #: Approved contracts (SPEC §14, ADR 0049): what is held until an operator approves it —
    #: changes and added tools (``first-use``), everything new or changed (``always``), nothing
    #: (``off``); and the characters a tool's description may hold.
    contract_approval: Literal["first-use", "always", "off"] = "first-use"
    max_description: int = Field(default=4096, ge=1)
    #: Between the audit writer's batches: what a navigator killed outright (SIGKILL, a crash)
    #: loses at most, and how soon an event reaches the registry (ADR 0045).
    audit_flush_s: PositiveFloat = 1.0
    #: Events waiting in memory while the registry cannot be written; past it they are dropped
    #: and counted (``/metrics``). Refused requests are counted per route, reason and address
    #: for a window and recorded as one event with the count, at most so many events a minute.
    audit_queue_max: int = Field(default=100_000, ge=1)
    audit_refusal_window_s: PositiveFloat = 60.0
    audit_refusals_per_minute: int = Field(default=120, ge=1)

    def instance_name(self) -> str:
        return self.instance or f"{socket.gethostname()}:{self.listen}"[:128]

    def node_trust(self) -> ssl.SSLContext | bool:
        """What a node's certificate is checked against: the system's CAs, and ``node_ca``."""
        if self.node_ca is None:
            return True
        context = ssl.create_default_context()
        context.load_verify_locations(cafile=self.node_ca)
        return context

    @model_validator(mode="after")
    def _node_ca_readable(self) -> NavigatorSettings:
        if self.node_ca is not None:
            try:
                self.node_trust()
            except (OSError, ValueError):  # ssl.SSLError is an OSError
                raise ValueError("MESHNAV_NODE_CA is not a readable PEM CA bundle") from None
        return self

    def destinations(self) -> Destinations:
        """Where the navigator may connect: ``endpoint_networks``, and not to itself."""
        return Destinations(
            networks=parse_networks(self.endpoint_networks), own=(self.host, self.port)
        )

    @model_validator(mode="after")
    def _networks_read(self) -> NavigatorSettings:
        parse_networks(self.endpoint_networks)  # its ValueError names the setting
        return self

    @model_validator(mode="after")
    def _jwt_checked_whole(self) -> NavigatorSettings:
        """A JWT verifier checks its issuer and audience too: without them, any token signed with
        the same key, minted for any other service, would be accepted here. The public URL gives
        the audience (the MCP resource) when none is set."""
        verifying = self.jwt_jwks_uri or self.jwt_public_key
        if verifying and not (self.jwt_issuer and self.jwt_audiences()):
            raise ValueError(
                "JWT verification needs MESHNAV_JWT_ISSUER and MESHNAV_JWT_AUDIENCE "
                "(or MESHNAV_PUBLIC_URL, whose /mcp is the audience)"
            )
        return self

    @model_validator(mode="after")
    def _public_url_whole(self) -> NavigatorSettings:
        if self.public_url is not None:
            parts = urlsplit(self.public_url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    "MESHNAV_PUBLIC_URL must be an http(s) URL such as https://nav.example.com"
                )
            if parts.query or parts.fragment or parts.username or parts.password:
                raise ValueError("MESHNAV_PUBLIC_URL is a base URL: no query, fragment or user")
            self.public_url = self.public_url.rstrip("/")
        return self

    def base_url(self) -> str:
        """The navigator's external base URL: ``public_url``, else the listen address."""
        return self.public_url or f"http://{join_listen(self.host, self.port)}"

    def resource(self) -> str:
        """The navigator's MCP resource (RFC 8707, RFC 9728): ``{base_url}/mcp``."""
        return self.base_url() + "/mcp"

    def jwt_audiences(self) -> list[str]:
        """The audiences a JWT may hold to be accepted: ``jwt_audience``, and the MCP resource
        when the public URL names it."""
        audiences = [self.jwt_audience] if self.jwt_audience else []
        if self.public_url is not None:
            audiences.append(self.resource())
        return audiences

    def scopes_supported(self) -> list[str]:
        return [s for s in self.oauth_scopes.replace(",", " ").split() if s]

    def hosts_allowed(self) -> list[str]:
        """``allowed_hosts``, and the public URL's host (its own name is how clients reach it)."""
        if self.public_url is None:
            return self.allowed_hosts
        return [*self.allowed_hosts, urlsplit(self.public_url).hostname or ""]

    def origins_allowed(self) -> list[str]:
        if self.public_url is None:
            return self.allowed_origins
        parts = urlsplit(self.public_url)
        return [*self.allowed_origins, f"{parts.scheme}://{parts.netloc}"]
