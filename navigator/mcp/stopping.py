"""How the navigator drains once told to stop (ADR 0030, superseding ADR 0026's drain).

uvicorn stopped listening first and refused every request but those on connections already
answering: five calls that finished during the drain were sent, yet every client raised
"Connection closed", since the MCP SDK's client asks ``tools/list`` after a result to check it
and that request found no listener. The navigator now drains still listening:

1. every new ``tools/call`` is refused ``navigator_stopping`` (with ``retryAfterS``);
   ``initialize``, ``tools/list``, ``ping`` and the rest go on being answered — they cost nothing
   and need no node;
2. the legacy era's sessions with nothing in flight are closed at once (an idle session's GET
   stream held the exit for the whole grace);
3. the drain ends once no ``/mcp`` request has been in flight for ``LINGER_S`` — the follow-up
   ``tools/list`` of a client that just got its result is answered — or when the grace is over;
   the remaining sessions are closed and uvicorn stops the server as before. At the grace's end
   no answer is sent any more (``SessionBook.cut``) and ``on_cut`` is told, so that a call
   finishing later is recorded as what its client received: nothing (ADR 0056).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio

from navigator.errors import NavigatorStopping
from navigator.mcp.sessions import SessionBook

__all__ = ["LINGER_S", "RETRY_AFTER_S", "Stopping"]

#: How long the drain waits, once nothing is in flight, for a client's next request.
LINGER_S = 1.0
#: When a caller refused for a stop is told to call again: a restart's usual length.
RETRY_AFTER_S = 5


class Stopping:
    """Whether the navigator refuses new calls, and its drain (``mesh.lifecycle.Drain``)."""

    def __init__(
        self, sessions: SessionBook | None = None, on_cut: Callable[[], None] | None = None
    ) -> None:
        #: The MCP sessions and requests it waits on and closes (none: it only refuses).
        self.sessions = sessions
        self.refusing = False
        #: Told when the grace ended with requests in flight, whose answers are no longer sent.
        self.on_cut = on_cut

    def refusal(self) -> NavigatorStopping | None:
        """What a new call is answered while the navigator drains."""
        return NavigatorStopping(retry_after_s=RETRY_AFTER_S) if self.refusing else None

    async def drain(self, deadline: float) -> None:
        self.refusing = True
        sessions = self.sessions
        if sessions is None:
            return
        began = time.monotonic()
        await sessions.close_sessions(idle_only=True)
        while time.monotonic() < deadline and not _quiet(sessions, began):  # noqa: ASYNC110
            await anyio.sleep(0.05)  # requests begin and end by the thousand: polled, not told
        if sessions.posts:  # the grace is over: what still runs reaches no client
            sessions.cut = True
            if self.on_cut is not None:
                self.on_cut()
        await sessions.close_sessions(idle_only=False)


def _quiet(sessions: SessionBook, began: float) -> bool:
    """Nothing in flight, and nothing asked for ``LINGER_S`` since a request ended in the drain."""
    if sessions.posts:
        return False
    ended = sessions.last_post_ended
    return ended < began or time.monotonic() - ended >= LINGER_S
