"""Failing fast at a node the navigator knows is not answering (ADR 0031).

A call to a machine whose heartbeats stopped is not sent to wait out its deadline: it is answered
``node_unavailable`` at once, saying since when — decided from the status the catalogue already
holds, with no registry read. One cheap probe lets calls through again as soon as the node answers:
a call that finds no recent verdict on its endpoint sends one MCP ``ping`` there, answered within
``LIMITS.node_probe_s`` or taken as unanswered; concurrent calls wait for the same probe, and its
verdict holds for ``LIMITS.node_probe_every_s``. Any HTTP answer below 500 counts as answered: a
frozen process, a dead one, or a proxy's 502 before it does not. A heartbeat recorded since makes
the machine answering, and its calls go straight through again.
"""

from __future__ import annotations

import itertools
import json
import logging
import ssl
import time
from dataclasses import dataclass
from datetime import datetime

import anyio
import httpx2

from navigator.errors import NodeUnavailable
from navigator.limits import LIMITS

__all__ = ["Probes", "silent_node"]

logger = logging.getLogger("meshnav.navigator.probes")

_PROBE_IDS = itertools.count(1)
_ACCEPT = "application/json, text/event-stream"


def silent_node(since: datetime) -> NodeUnavailable:
    """The answer for a call to a machine not answering since ``since`` (nothing of the call's)."""
    stamp = since.isoformat(timespec="seconds")
    return NodeUnavailable(
        f"The node that owns this tool has not answered since {stamp}; the call was not sent. "
        "Try again once seats shows its machine answering.",
        extra={"since": stamp},
    )


@dataclass(slots=True)
class _Verdict:
    answered: bool
    at: float


class Probes:
    """The latest probe verdict per endpoint, and the probe in flight for each."""

    def __init__(self, verify: ssl.SSLContext) -> None:
        self._verify = verify
        self._verdicts: dict[str, _Verdict] = {}
        self._flying: dict[str, anyio.Event] = {}
        self._http: httpx2.AsyncClient | None = None

    async def admit(self, endpoint: str, since: datetime) -> None:
        """Let a call to ``endpoint``, whose machine is silent since ``since``, through only when
        its node has answered a probe within the last ``LIMITS.node_probe_every_s``."""
        verdict = self._verdicts.get(endpoint)
        if verdict is None or time.monotonic() - verdict.at >= LIMITS.node_probe_every_s:
            verdict = await self._probe(endpoint)
        if not verdict.answered:
            raise silent_node(since)

    async def _probe(self, endpoint: str) -> _Verdict:
        flying = self._flying.get(endpoint)
        if flying is not None:  # another call's probe: its verdict is this call's
            await flying.wait()
            return self._verdicts[endpoint]
        self._flying[endpoint] = done = anyio.Event()
        try:
            answered = await self._ping(endpoint)
            verdict = self._verdicts[endpoint] = _Verdict(answered, time.monotonic())
        finally:
            del self._flying[endpoint]
            done.set()
        if answered:
            logger.info("a silent node answered a probe: its calls go through")
        return verdict

    async def _ping(self, endpoint: str) -> bool:
        if self._http is None:
            self._http = httpx2.AsyncClient(
                verify=self._verify,
                trust_env=False,
                timeout=httpx2.Timeout(LIMITS.node_probe_s),
                limits=httpx2.Limits(max_keepalive_connections=0),
            )
        body = json.dumps({"jsonrpc": "2.0", "id": next(_PROBE_IDS), "method": "ping"})
        headers = {"accept": _ACCEPT, "content-type": "application/json"}
        with anyio.move_on_after(LIMITS.node_probe_s):
            try:
                response = await self._http.post(endpoint, content=body, headers=headers)
            except httpx2.HTTPError:
                return False
            return response.status_code < 500
        return False

    def forget(self, prefix: str) -> None:
        """Drop the verdicts on endpoints under ``prefix`` (their node registered again)."""
        for endpoint in [e for e in self._verdicts if e.startswith(prefix)]:
            del self._verdicts[endpoint]

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
