"""The HTTP API under ``/api/v1``: nodes enrol and heartbeat; operators change the mesh.

The routes are in ``navigator.api.routes``; this package's own import stays light, so that a
client of the API (the command line) can name its prefix without loading the server.

    routes     the route table, and answers for unknown paths and methods
    base       handlers' plumbing: JSON bodies checked by pydantic, errors as SPEC §9 JSON
    admin      the operator's API (``mesh:admin``): machines, assignments, seats, the mesh
    access     principals and grants: the admin API's bodies and rules for them
    audit      reading the audit trail (``GET /api/v1/audit``)
    approvals  held tool contracts: what is held or refused, what changed, approve and reject
    enrolment  nodes enrol and heartbeat (``mesh:node``)
    openapi    the OpenAPI 3.1 document, from the route table and the body models
"""

from __future__ import annotations

__all__ = ["API_PREFIX"]

API_PREFIX = "/api/v1"
