"""Reading an MCP server's ``tools/list`` when an operator registers it by URL."""

from __future__ import annotations

import logging
import ssl
from typing import Any

import anyio
import httpx2

from navigator.bounded import Budget, bounded_client
from navigator.destinations import REFUSED_AT_CONNECT, DestinationRefused, Destinations, caused_by
from navigator.errors import InvalidArguments, NodeAnswerTooLarge, NodeTimeout, NodeUnavailable
from navigator.limits import LIMITS

__all__ = ["pull_tools"]

logger = logging.getLogger("meshnav.navigator.upstream")

#: How long an upstream server may take to list its tools.
PULL_TIMEOUT_S = 15.0
#: The most of one answer read from the server (as from a node: the answer limit and the
#: envelope's room), and of every answer of one pull in all, pages and event streams included:
#: twice that, about what a registration that pushes its tools may send (8 MiB,
#: ``navigator.api.base``).
PULL_ANSWER_BYTES = LIMITS.node_answer_bytes + LIMITS.envelope_bytes
PULL_TOTAL_BYTES = 2 * PULL_ANSWER_BYTES
#: How the session's event reader says one event passed ``PULL_ANSWER_BYTES`` (navigator.nodes).
_SSE_PASSED = f"exceeded the {PULL_ANSWER_BYTES} byte limit"


async def pull_tools(
    endpoint: str, verify: ssl.SSLContext | bool = True, destinations: Destinations | None = None
) -> list[dict[str, Any]]:
    """The server's tools as JSON; ``node_unavailable`` or ``node_timeout`` when it fails,
    ``node_answer_too_large`` when it says more than a pull reads, ``invalid_arguments`` when
    its host resolves only to addresses ``destinations`` refuses. ``verify`` is what its
    certificate is checked against and ``destinations`` where it may connect: the nodes' own
    (``NodeConnections``), since its calls will be made with them too."""
    from fastmcp import Client  # imported when first used: ~0.4 s a navigator's start skips
    from fastmcp.client.transports import StreamableHttpTransport

    budget = Budget(PULL_TOTAL_BYTES)

    def factory(**kwargs: Any) -> httpx2.AsyncClient:
        kwargs.setdefault("timeout", httpx2.Timeout(PULL_TIMEOUT_S))
        return bounded_client(
            verify=verify,
            limit=PULL_ANSWER_BYTES,
            budget=budget,
            destinations=destinations,
            **kwargs,
        )

    transport = StreamableHttpTransport(
        endpoint,
        httpx_client_factory=factory,  # type: ignore[arg-type]  # the SDK's keywords, passed on
        max_sse_event_size=PULL_ANSWER_BYTES,
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
        if budget.passed or _SSE_PASSED in str(error):
            raise NodeAnswerTooLarge("The server's tool listing exceeded the size limit.") from None
        if caused_by(error, DestinationRefused):
            raise InvalidArguments(REFUSED_AT_CONNECT, extra={"pointer": "/endpoint"}) from None
        logger.info("pulling tools failed: %s", type(error).__name__)
        raise NodeUnavailable("The server at that endpoint could not be read.") from None
    return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools]
