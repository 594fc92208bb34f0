"""Reading an MCP server's ``tools/list`` when an operator registers it by URL."""

from __future__ import annotations

import logging
import ssl
from typing import Any

import anyio

from navigator.errors import NodeTimeout, NodeUnavailable
from navigator.limits import LIMITS

__all__ = ["pull_tools"]

logger = logging.getLogger("meshnav.navigator.upstream")

#: How long an upstream server may take to list its tools.
PULL_TIMEOUT_S = 15.0


async def pull_tools(endpoint: str, verify: ssl.SSLContext | bool = True) -> list[dict[str, Any]]:
    """The server's tools as JSON; ``node_unavailable`` or ``node_timeout`` when it fails.
    ``verify`` is what its certificate is checked against: the nodes' trust
    (``NavigatorSettings.node_trust``), since its calls will be made with it too."""
    from fastmcp import Client  # imported when first used: ~0.4 s a navigator's start skips
    from fastmcp.client.transports import StreamableHttpTransport

    transport = StreamableHttpTransport(
        endpoint,
        verify=verify,
        max_sse_event_size=LIMITS.node_answer_bytes + LIMITS.envelope_bytes,
    )
    try:
        with anyio.fail_after(PULL_TIMEOUT_S):
            async with Client(transport, timeout=PULL_TIMEOUT_S) as client:
                tools = await client.list_tools()
    except TimeoutError:
        raise NodeTimeout("The server did not list its tools in time.") from None
    except (
        Exception
    ) as error:  # any failure to reach or read it; its text may hold the URL's secrets
        logger.info("pulling tools failed: %s", type(error).__name__)
        raise NodeUnavailable("The server at that endpoint could not be read.") from None
    return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools]
