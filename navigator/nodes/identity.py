"""Which node instance answers at a node's URL (SPEC §6, ADR 0050).

Before a machine is taken over by another instance of its node, the navigator asks the URL the
registered instance advertised which instance answers there (``mesh.instances.INSTANCE_PATH``):
its own id means it still serves, and the newcomer is refused; anything else — no connection,
no answer within ``LIMITS.node_instance_probe_s``, another id (a restarted node on the same
port), an answer that is no instance — means it does not. The probe connects as every other
connection to a node does (``Destinations``, ADR 0032) and reads at most a few hundred bytes.
"""

from __future__ import annotations

import logging
import ssl

import anyio
import httpx2

from mesh.instances import INSTANCE_BYTES, INSTANCE_PATH
from navigator.limits import LIMITS
from navigator.nodes.bounded import bounded_client
from navigator.nodes.destinations import Destinations

__all__ = ["InstanceProbe"]

logger = logging.getLogger("meshnav.navigator.identity")

#: The most of an answer read: ``{"instance": ID}`` with room to spare.
_READ_LIMIT = 4 * INSTANCE_BYTES


class InstanceProbe:
    """Asks a node's URL for the instance answering there."""

    def __init__(self, verify: ssl.SSLContext, destinations: Destinations) -> None:
        self._verify = verify
        self._destinations = destinations

    async def instance_at(self, url: str) -> str | None:
        """The instance id the node at ``url`` answers with; ``None`` when none answers so
        within ``LIMITS.node_instance_probe_s``."""
        within = LIMITS.node_instance_probe_s
        with anyio.move_on_after(within):
            async with bounded_client(
                verify=self._verify,
                limit=_READ_LIMIT,
                destinations=self._destinations,
                timeout=httpx2.Timeout(within),
                limits=httpx2.Limits(max_keepalive_connections=0),
            ) as client:
                try:
                    response = await client.get(url.rstrip("/") + INSTANCE_PATH)
                    found = response.json().get("instance") if response.status_code == 200 else None
                except (httpx2.HTTPError, ValueError, AttributeError):
                    return None
                return found if isinstance(found, str) and found else None
        logger.info("a node's instance probe had no answer in time")
        return None
