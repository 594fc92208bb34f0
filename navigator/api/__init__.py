"""The HTTP API under ``/api/v1``: nodes enrol and heartbeat; operators change the mesh.

The routes are in ``navigator.api.routes``; this package's own import stays light, so that a
client of the API (the command line) can name its prefix without loading the server.
"""

from __future__ import annotations

__all__ = ["API_PREFIX"]

API_PREFIX = "/api/v1"
