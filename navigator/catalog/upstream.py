"""Reading an MCP server's ``tools/list`` when an operator registers it by URL."""

from __future__ import annotations

import logging
import socket
import ssl
from typing import Any

import anyio
import httpx2

from navigator.errors import (
    InvalidArguments,
    NavigatorError,
    NodeAnswerTooLarge,
    NodeTimeout,
    NodeUnavailable,
    error_chain,
)
from navigator.limits import LIMITS
from navigator.nodes.bounded import Budget, bounded_client
from navigator.nodes.destinations import (
    REFUSED_AT_CONNECT,
    DestinationRefused,
    Destinations,
    HostUnresolved,
    caused_by,
)

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
#: How the session's event reader says one event passed ``PULL_ANSWER_BYTES``
#: (navigator.nodes.connections).
_SSE_PASSED = f"exceeded the {PULL_ANSWER_BYTES} byte limit"


async def pull_tools(
    endpoint: str,
    verify: ssl.SSLContext | bool = True,
    destinations: Destinations | None = None,
    *,
    timeout_s: float = PULL_TIMEOUT_S,
) -> list[dict[str, Any]]:
    """The server's tools as JSON; ``node_unavailable`` or ``node_timeout`` when it fails,
    ``node_answer_too_large`` when it says more than a pull reads, ``invalid_arguments`` when
    its host resolves only to addresses ``destinations`` refuses. ``verify`` is what its
    certificate is checked against and ``destinations`` where it may connect: the nodes' own
    (``NodeConnections``), since its calls will be made with them too."""
    from fastmcp import Client  # imported when first used: ~0.4 s a navigator's start skips
    from fastmcp.client.transports import StreamableHttpTransport

    budget = Budget(PULL_TOTAL_BYTES)
    answers: list[httpx2.Response] = []  # what the endpoint answered, to say why a pull failed

    async def answered(response: httpx2.Response) -> None:
        answers.append(response)

    def factory(**kwargs: Any) -> httpx2.AsyncClient:
        kwargs.setdefault("timeout", httpx2.Timeout(timeout_s))
        kwargs["event_hooks"] = {"response": [answered]}
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
        with anyio.fail_after(timeout_s):
            async with Client(transport, timeout=timeout_s) as client:
                tools = await client.list_tools()
    except TimeoutError:
        raise _timed_out(timeout_s) from None
    except (
        Exception
    ) as error:  # any failure to reach or read it; its text may hold the URL's secrets
        if budget.passed or _SSE_PASSED in str(error):
            raise NodeAnswerTooLarge("The server's tool listing exceeded the size limit.") from None
        if caused_by(error, DestinationRefused):
            raise InvalidArguments(REFUSED_AT_CONNECT, extra={"pointer": "/endpoint"}) from None
        logger.info("pulling tools failed: %s", type(error).__name__)
        raise _pull_failure(error, answers, timeout_s) from None
    return [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in tools]


def _status_hint(status: int) -> str:
    """What an HTTP status that ended a pull tells the operator to check."""
    if status in (401, 403):
        return "the server wants credentials, and the navigator sends none of its own."
    if status in (404, 405):
        return "check the URL's path (an MCP server on streamable HTTP usually serves /mcp)."
    if status >= 500:
        return "the server failed; its own log says why."
    return "it refused the MCP request; check the URL."


def _timed_out(timeout_s: float) -> NodeTimeout:
    return NodeTimeout(
        f"The server did not list its tools within {timeout_s:g} s.",
        extra={"cause": "timeout"},
    )


def _pull_failure(
    error: BaseException, answers: list[httpx2.Response], timeout_s: float
) -> NavigatorError:
    """Why a pull failed, in the operator's terms — the endpoint is the URL they typed: nothing
    listening, no such host, a TLS failure, a timeout, an HTTP status, or an answer that is not
    MCP's. Named by the kind of failure (``cause``), never by the server's text or body, nor by
    the exception's (it may hold the URL and its secrets)."""
    chain = error_chain(error)

    def unavailable(cause: str, message: str, **extra: Any) -> NodeUnavailable:
        return NodeUnavailable(message, extra={"cause": cause, **extra})

    if any(isinstance(e, TimeoutError | httpx2.TimeoutException) for e in chain):
        return _timed_out(timeout_s)
    if not answers:
        if any(isinstance(e, ssl.SSLError) for e in chain):
            return unavailable(
                "tls",
                "The TLS handshake with the endpoint failed: it does not speak https, or its "
                "certificate is not one the navigator trusts (give its CA with --node-ca, "
                "MESHNAV_NODE_CA).",
            )
        if any(isinstance(e, socket.gaierror | HostUnresolved) for e in chain):
            return unavailable("dns", "The endpoint's host name does not resolve.")
        if any(isinstance(e, ConnectionRefusedError) for e in chain):
            return unavailable(
                "connection_refused",
                "Nothing accepts connections at the endpoint's host and port (connection "
                "refused): is the server running there?",
            )
        return unavailable("unreachable", "The endpoint could not be reached.")
    status = answers[-1].status_code
    if status >= 400:
        return unavailable(
            "http_status",
            f"The endpoint answered HTTP {status}: {_status_hint(status)}",
            httpStatus=status,
        )
    return unavailable(
        "not_mcp",
        "The endpoint answered, but not as an MCP server on streamable HTTP: check the URL.",
    )
