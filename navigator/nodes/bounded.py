"""HTTP clients that read at most so much of what a node, or a server registered by URL, answers.

The MCP SDK's session reads a JSON answer whole (``response.aread()``) and parses it before
anything of ours can measure it; a node streaming gigabytes kept the navigator reading and parsing
them, its event loop blocked, past every deadline. The bound is put where the bytes arrive: the
transport under each client hands the SDK a response body that raises once it passes the limit,
and raises at once, unread, when its ``Content-Length`` says it would. Event streams are left to
their per-event bound (``max_event_size``): a long job's progress may go on for as long as its
deadline allows, and nothing of it is kept. Bodies are asked for, and read, as they are sent
(``Accept-Encoding: identity``): a coded body would be bounded before it is inflated, not after,
so one a node sends coded all the same is refused (ADR 0018, addendum).

The error raised is an ``httpx2.StreamError``: the session catches those while it reads a JSON
answer and answers the waiting request with an error that carries its text (the session itself
lives on), where the navigator recognises it (``passed_limit``).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx2

from navigator.http.numbers import whole_number
from navigator.nodes.destinations import Destinations

__all__ = ["AnswerTooLarge", "Budget", "CodedAnswer", "bounded_client", "passed_limit"]

#: httpx's own pool limits, for a client given none.
_POOL = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
_PASSED = "the answer passed the {limit} byte read limit"


class AnswerTooLarge(httpx2.StreamError):
    """A body passed its bound while it was read (or declared a length past it)."""

    def __init__(self, limit: int) -> None:
        super().__init__(_PASSED.format(limit=limit))


class CodedAnswer(httpx2.StreamError):
    """A body in a content coding that was not asked for."""

    def __init__(self) -> None:
        super().__init__("the answer came in a content coding that was not asked for")


def passed_limit(text: str, limit: int) -> bool:
    """Whether an error's text says a body passed ``limit`` (the session carries only text)."""
    return _PASSED.format(limit=limit) in text


class Budget:
    """One client's reading: at most ``total`` bytes of every body it receives, event streams
    included (``None``: no total), and whether any body it received passed a bound."""

    def __init__(self, total: int | None = None) -> None:
        self.total = total
        self.left = total
        self.passed = False


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(
        self,
        stream: httpx2.AsyncByteStream,
        *,
        limit: int | None,
        budget: Budget,
        refusal: httpx2.StreamError | None,
    ) -> None:
        self._stream = stream
        self._limit = limit
        self._budget = budget
        self._refusal = refusal

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._refusal is not None:  # not one byte of it is read
            raise self._passed(self._refusal)
        chunks = self._stream.__aiter__()
        budget, size = self._budget, 0
        try:
            async for chunk in chunks:
                size += len(chunk)
                if self._limit is not None and size > self._limit:
                    raise self._passed(AnswerTooLarge(self._limit))
                if budget.left is not None and budget.total is not None:
                    budget.left -= len(chunk)
                    if budget.left < 0:
                        raise self._passed(AnswerTooLarge(budget.total))
                yield chunk
        finally:
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()

    def _passed(self, error: httpx2.StreamError) -> httpx2.StreamError:
        if isinstance(error, AnswerTooLarge):
            self._budget.passed = True
        return error

    async def aclose(self) -> None:
        await self._stream.aclose()


class _BoundedTransport(httpx2.AsyncBaseTransport):
    """Every body but an event stream answering a GET or POST read to at most ``limit`` bytes,
    and all of them to at most the budget's total."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int, budget: Budget) -> None:
        self._inner = inner
        self._limit = limit
        self._budget = budget

    async def __aenter__(self) -> _BoundedTransport:
        await self._inner.__aenter__()
        return self

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.headers["accept-encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        # Only a stream the event reader reads (bounded event by event) goes unbounded here: a
        # 200 to a POST or GET. The SDK reads any other body whole — a redirect's before it is
        # followed, a DELETE's answer — whatever it calls itself.
        streamed = (
            kind == "text/event-stream"
            and response.status_code == 200
            and request.method in ("GET", "POST")
        )
        limit = None if streamed else self._limit
        coding = response.headers.get("content-encoding", "identity").strip().lower()
        refusal: httpx2.StreamError | None = None
        if coding not in ("", "identity"):
            refusal = CodedAnswer()
        elif (
            limit is not None
            and (declared := response.headers.get("content-length"))
            and whole_number(declared, most=limit) is None  # past the limit, or unreadable
        ):
            refusal = AnswerTooLarge(limit)
        response.stream = _BoundedStream(
            response.stream,  # type: ignore[arg-type]  # an async transport's stream
            limit=limit,
            budget=self._budget,
            refusal=refusal,
        )
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounded_client(
    *,
    verify: ssl.SSLContext | bool,
    limit: int,
    budget: Budget | None = None,
    limits: httpx2.Limits = _POOL,
    destinations: Destinations | None = None,
    **kwargs: Any,
) -> httpx2.AsyncClient:
    """An ``AsyncClient`` (``kwargs`` as the SDK's factories receive them) whose bodies are
    bounded as this module says, and which connects only where ``destinations`` allows (the
    default policy when none is given); the environment's proxies and certificates are not
    read."""
    budget = Budget() if budget is None else budget
    policy = Destinations() if destinations is None else destinations
    inner = policy.transport(verify=verify, limits=limits)
    kwargs["trust_env"] = False
    return httpx2.AsyncClient(transport=_BoundedTransport(inner, limit, budget), **kwargs)
