"""Small servers the benchmarks run as separate processes: a trivial MCP backend, and FastMCP's
own proxy in front of it (the peer), over one long-lived client."""

from __future__ import annotations

import sys

import uvicorn
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.server.providers.proxy import ProxyProvider


def backend() -> FastMCP:
    server = FastMCP("bench-backend")

    @server.tool(annotations={"readOnlyHint": True})
    def echo(text: str) -> dict[str, str]:
        """Return the text given."""
        return {"text": text}

    return server


def proxy(upstream: str) -> FastMCP:
    client = Client(StreamableHttpTransport(upstream))
    held: dict[str, Client[StreamableHttpTransport]] = {}

    async def factory() -> Client[StreamableHttpTransport]:
        if "client" not in held:
            await client.__aenter__()
            held["client"] = client
        return client

    return FastMCP("bench-proxy", providers=[ProxyProvider(factory)])


if __name__ == "__main__":
    kind, port = sys.argv[1], int(sys.argv[2])
    server = backend() if kind == "backend" else proxy(sys.argv[3])
    uvicorn.run(server.http_app(path="/mcp"), host="127.0.0.1", port=port, log_level="warning")
