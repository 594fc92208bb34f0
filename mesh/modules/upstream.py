"""What a node lets the upstreams of its ``http`` and ``stdio`` modules see, and what it takes
from them (ADR 0046).

An upstream is a third party's MCP server: the node calls it on a caller's behalf and trusts
nothing it says. So:

- **It is shown none of meshnav's own ``_meta``** (``UpstreamCalls``): the navigator's call
  token (``meshnav/call-token``) names the principal and is signed for this node alone, and every
  other ``meshnav/…`` key is the mesh's. The W3C trace context (``traceparent``, ``tracestate``,
  ``baggage``) is the mesh's too: it is passed on only to a role the operator names with
  ``--module-trace``; to any other the call goes out under no trace context at all.
- **It is read to a bound** (``bounded_http_client``): an ``http`` upstream's answer is counted
  as it arrives and given up past ``answer_bytes`` (4 MiB, as much as the navigator reads of a
  node's answer), or at once when its ``Content-Length`` says so; the caller is answered
  ``node_answer_too_large``. Answers are asked for, and read, uncoded (``Accept-Encoding:
  identity``): a coded body would be counted before it is inflated, so one sent coded all the
  same is refused. An event stream is bounded event by event (``max_sse_event_size``).
- **Its failures are logged by class and code** (``ErrorLog``): an upstream's error text is its
  own (one that echoes a credential put it in the node's log, word for word, with a traceback),
  so the log says which upstream failed, the exception's class and the JSON-RPC or HTTP code,
  and at most once per interval for each upstream, with the count of those it held back. The
  libraries that speak to upstreams (the MCP SDK, FastMCP, httpx) log their own lines about the
  same failures, with the upstream's words and tracebacks: in a node, those lines keep their
  logger's name, level and exception class only (``withhold_library_words``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import httpx2
import mcp_types as mt
from fastmcp.client.transports import ClientTransport
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.providers.proxy import ProxyClient
from fastmcp.tools import ToolResult
from opentelemetry import context as otel_context

from mesh.modules.spec import UpstreamLimits

__all__ = [
    "ErrorLog",
    "UpstreamCalls",
    "UpstreamClient",
    "bounded_http_client",
    "withhold_library_words",
]

Transport = TypeVar("Transport", bound=ClientTransport)

logger = logging.getLogger("meshnav.node")

#: ``_meta`` keys of the mesh's own: the prefix of meshnav's, and the W3C trace context's.
OWN_PREFIX = "meshnav/"
TRACE_KEYS = frozenset({"traceparent", "tracestate", "baggage"})
_PASSED_MARK = "the upstream's answer passed the node's bound"
_PASSED = _PASSED_MARK + " of {limit} bytes"
#: What the MCP SDK says of an event past ``max_sse_event_size``.
_EVENT_PASSED = re.compile(r"exceeded the \d+ byte limit")


# -- reading to a bound ---------------------------------------------------------------------


class AnswerTooLarge(httpx2.StreamError):
    """A body passed the bound while it was read, or declared a length past it, or came coded."""

    def __init__(self, limit: int) -> None:
        super().__init__(_PASSED.format(limit=limit))


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(self, stream: Any, limit: int | None, refused: bool) -> None:
        self._stream = stream
        self._limit = limit
        self._refused = refused

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._refused:
            raise AnswerTooLarge(self._limit or 0)
        size = 0
        async for chunk in self._stream:
            size += len(chunk)
            if self._limit is not None and size > self._limit:
                raise AnswerTooLarge(self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


def bounded_http_client(
    limit: int, refusal: list[int | None] | None = None
) -> Callable[..., httpx2.AsyncClient]:
    """A factory of the clients an ``http`` module reaches its upstream with (the keywords
    FastMCP's transport passes), each body they receive read to at most ``limit`` bytes; each
    answer's refusal (its status when 400 or more, else None) noted in ``refusal``, when given:
    the cause a node gives for a list it could not get, which the MCP client's error drops."""

    async def bound(response: httpx2.Response) -> None:
        if refusal is not None:
            refusal[0] = response.status_code if response.status_code >= 400 else None
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        streamed = kind == "text/event-stream" and response.status_code == 200
        declared = response.headers.get("content-length", "").strip()
        coding = response.headers.get("content-encoding", "identity").strip().lower()
        refused = coding not in ("", "identity") or (
            not streamed and declared != "" and (not declared.isdigit() or int(declared) > limit)
        )
        response.stream = _BoundedStream(response.stream, None if streamed else limit, refused)

    def factory(**kwargs: Any) -> httpx2.AsyncClient:
        kwargs.setdefault("timeout", httpx2.Timeout(30.0, read=300.0))  # the SDK's own default
        kwargs["headers"] = {**(kwargs.get("headers") or {}), "accept-encoding": "identity"}
        kwargs["event_hooks"] = {"response": [bound]}
        return httpx2.AsyncClient(**kwargs)

    return factory


# -- what an upstream's failure becomes -----------------------------------------------------


class UpstreamFailed(ToolError):
    """An upstream's failure, as the node tells it: the exception's class and code, no text.
    FastMCP logs a tool's ``ToolError`` at its ``log_level``: debug, the node logs it itself."""

    def __init__(self, error: BaseException) -> None:
        self.kind = type(error).__name__
        self.code = _code(error)
        self.too_large = _passed_bound(error)
        code = "" if self.code is None else f" {self.code}"
        super().__init__(
            f"The upstream server failed the call ({self.kind}{code}); its node's log names it.",
            log_level=logging.DEBUG,
        )


def _code(error: BaseException) -> int | None:
    code = getattr(getattr(error, "error", None), "code", None)  # an MCPError's JSON-RPC code
    if code is None and isinstance(error, httpx2.HTTPStatusError):
        code = error.response.status_code
    return code if isinstance(code, int) else None


def _passed_bound(error: BaseException | None) -> bool:
    """Whether the failure is the bound's: raised while reading, or carried as text by the MCP
    session, which answers the waiting request with the read error's text (or its own, for an
    event past its size)."""
    seen = 0
    while error is not None and seen < 8:
        text = str(error)
        if isinstance(error, AnswerTooLarge) or _PASSED_MARK in text or _EVENT_PASSED.search(text):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


class UpstreamClient(ProxyClient[Transport]):
    """FastMCP's proxy client, whose failures leave it as :class:`UpstreamFailed`: whatever the
    upstream raised (its words included) never reaches FastMCP's log of a failed tool."""

    async def __aexit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        await super().__aexit__(exc_type, exc_val, exc_tb)  # type: ignore[no-untyped-call]
        if isinstance(exc_val, Exception) and not isinstance(exc_val, UpstreamFailed):
            raise UpstreamFailed(exc_val) from None


class ErrorLog:
    """One upstream's failures in the node's log: class and code, at most one line per
    ``interval_s``, which counts the failures held back since the line before."""

    def __init__(
        self, role: str, interval_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.role = role
        self.interval_s = interval_s
        self._clock = clock
        self._next = float("-inf")
        self._held = 0

    def failed(self, kind: str, code: int | None) -> None:
        now = self._clock()
        if now < self._next:
            self._held += 1
            return
        said = kind if code is None else f"{kind} {code}"
        more = f"; {self._held} more failed since the last line" if self._held else ""
        logger.warning("upstream %s failed a call (%s)%s", self.role, said, more)
        self._held, self._next = 0, now + self.interval_s


#: The loggers of the libraries that read what upstreams send.
LIBRARY_LOGGERS = ("mcp", "fastmcp", "httpx", "httpx2", "httpcore", "httpcore2")


class _WithheldWords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.partition(".")[0] in LIBRARY_LOGGERS:
            error = record.exc_info[1] if record.exc_info else None
            kind = "" if error is None else f" ({type(error).__name__})"
            record.msg = f"(a library's line{kind}: its text is withheld)"
            record.args, record.exc_info, record.exc_text = None, None, None
            record.stack_info = None
        return True


def withhold_library_words() -> None:
    """Every line the libraries log through this process's handlers (the root logger's and
    FastMCP's own) reduced to its logger, level and exception class."""
    withheld = _WithheldWords()
    for handler in [*logging.getLogger().handlers, *logging.getLogger("fastmcp").handlers]:
        if not any(isinstance(f, _WithheldWords) for f in handler.filters):
            handler.addFilter(withheld)


# -- the call, as it leaves and comes back --------------------------------------------------


def _too_large(limit: int) -> ToolResult:
    body = {
        "error": "node_answer_too_large",
        "status": 502,
        "message": f"The upstream's answer passed this node's bound of {limit} bytes.",
    }
    return ToolResult(
        content=[mt.TextContent(type="text", text=str(body["message"]))],
        structured_content=body,
        meta={"meshnav/error": body["error"]},
        is_error=True,
    )


class UpstreamCalls(Middleware):
    """A module's calls to its upstream: the mesh's own ``_meta`` taken off before they leave,
    the trace context with it unless the role is in ``limits.traced``; failures logged by
    :class:`ErrorLog`, and an answer past the bound answered ``node_answer_too_large``."""

    def __init__(self, role: str, limits: UpstreamLimits) -> None:
        self.limits = limits
        self.trace = role in limits.traced
        self.errors = ErrorLog(role, limits.error_log_s)

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        request = context.fastmcp_context.request_context if context.fastmcp_context else None
        meta = getattr(request, "meta", None)
        if isinstance(meta, dict):  # what the proxy forwards is read from here, when it calls
            for key in [k for k in meta if isinstance(k, str) and self._own(k)]:
                del meta[key]
        # with no trace context current, FastMCP's proxy has none to write into the call
        detached = None if self.trace else otel_context.attach(otel_context.Context())
        try:
            return await call_next(context)
        except UpstreamFailed as failure:
            self.errors.failed(failure.kind, failure.code)
            if failure.too_large:
                return _too_large(self.limits.answer_bytes)
            raise
        finally:
            if detached is not None:
                otel_context.detach(detached)

    def _own(self, key: str) -> bool:
        return key.startswith(OWN_PREFIX) or (not self.trace and key in TRACE_KEYS)
