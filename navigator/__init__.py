"""The navigator: the MCP server agents talk to, and everything behind its four walker tools.

Its layers, from the agent inward (each package's docstring maps its own modules); a layer
imports the ones below it, never one above:

    mcp/         what agents speak to: the server, the walker tools' definitions, middleware,
                 answers on the wire, ``mesh.tools.discover``, elicitation, sessions, the drain
    walker/      the four operations — seats, search, describe, call — for one caller, without
                 MCP's types: paging, cursors, confirmation, answer sizing
    access/      who is calling and what they may do: Caller, authentication, grants, tokens,
                 OAuth, quotas, the audit writer
    catalog/     the in-memory view of the mesh and keeping it current: contracts, the view, its
                 load and live follow, the registrar, upstream pulls, the operator's overview
    nodes/       the outbound hop: connections to nodes, the node-call POST, bounded reads, the
                 address policy, and the one module that touches FastMCP's private names
    search/      the search index; validation/ the bounded argument validator
    api/         the HTTP API under ``/api/v1``; console/ the web console; http/ what a client
                 wrote, read within bounds

and at the top, what every layer shares: ``app`` (the ASGI application), ``services`` (the
long-lived parts made at start), ``settings``, ``errors`` (SPEC §9, the one place errors become
wire answers), ``limits``, ``metrics``, ``addresses`` (SPEC §2) and ``caches``.

Import the submodule you need (``navigator.app.build_app``, ``navigator.validation.verdict``,
``navigator.addresses.parse_address``); this package keeps its import light on purpose, since the
CLI and the node agent's tests load pieces of it without the server.
"""

from __future__ import annotations

from navigator.errors import NavigatorError
from navigator.settings import NavigatorSettings

__all__ = ["NavigatorError", "NavigatorSettings"]
