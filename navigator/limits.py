"""Limits and timeouts, named once (SPEC §3, §5, §6)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "LIMITS",
    "NODE_CONCURRENCY",
    "NODE_MAX_ASSIGNMENTS",
    "NODE_MAX_TOOLS",
    "PENDING_CONFIRMATIONS",
    "RETIRED_KEPT_DAYS",
    "Limits",
]

# What one node may keep in the registry (ADR 0032), the defaults of their settings: its
# machine's assignments and tools, retired ones counted until they are pruned, and how long a
# retired assignment is kept (its tools and operators' marks with it) before it is pruned.
NODE_MAX_ASSIGNMENTS = 64
NODE_MAX_TOOLS = 16384
RETIRED_KEPT_DAYS = 7.0
#: Calls in flight to one node from one navigator, by default (ADR 0041).
NODE_CONCURRENCY = 64
#: Questions one principal may have waiting on a person at once, by default (ADR 0048).
PENDING_CONFIRMATIONS = 8


@dataclass(frozen=True, slots=True)
class Limits:
    #: Every answer of seats, search and describe, JSON-RPC envelope included.
    answer_bytes: int = 64 * 1024
    #: The JSON-RPC id of a seats, search or describe request, as written back in its answer.
    request_id_bytes: int = 1024
    #: What ``call`` passes through of a node's answer.
    node_answer_bytes: int = 4 * 1024 * 1024
    #: tools/list of the navigator: the four walker tools.
    walker_listing_bytes: int = 4 * 1024
    query_chars: int = 500
    search_limit_default: int = 8
    search_limit_max: int = 16
    collapsed_holders: int = 16
    #: A tool's title and summary in listings and search results (describe gives the whole).
    listed_chars: int = 200
    seats_page: int = 100
    grant_rows: int = 4096
    cursor_ttl_s: float = 120.0
    confirm_ttl_s: float = 120.0
    #: Time to open a connection to a node before it counts as not answering.
    node_connect_s: float = 3.0
    #: How long the navigator keeps an idle connection to a node: well before the node closes
    #: it (its keep-alive, ~75 s), so that the navigator, not the node, ends an idle connection.
    node_keepalive_s: float = 30.0
    #: How long a probe of a silent machine's node waits for its answer, and how long its
    #: verdict holds (``navigator.nodes.probes``).
    node_probe_s: float = 0.25
    node_probe_every_s: float = 1.0
    #: How long the navigator waits for the instance answering at a machine's registered URL
    #: before another instance takes the machine over (``navigator.nodes.identity``).
    node_instance_probe_s: float = 1.0
    #: Heartbeats a machine may miss before it is "not answering".
    missed_heartbeats: int = 3
    #: Room kept for the JSON-RPC envelope and ``_meta`` around a tool's structured content.
    envelope_bytes: int = 1024
    #: Pages of a ``seats`` listing the console follows before it says the listing is cut.
    console_listing_pages: int = 100
    #: Between keep-alives (and re-authentications) on a quiet console event stream.
    console_keepalive_s: float = 15.0


LIMITS = Limits()
