"""The node agent that runs on every machine: serves its modules over MCP, enrols and heartbeats.

It imports neither ``navigator`` nor ``registry``: it talks to the navigator over HTTP. What both
ends must compute the same way — digests, call tokens, a node instance's id and where it answers
it — lives here and the navigator imports it.
"""

from __future__ import annotations

from mesh.calltokens import CallTokenVerifier, sign_call_token
from mesh.digests import arguments_digest, contract_digest, digest
from mesh.errors import CallTokenRejected, EnrolmentFailed, MeshError, ModuleSpecError

__all__ = [
    "CallTokenRejected",
    "CallTokenVerifier",
    "EnrolmentFailed",
    "MeshError",
    "ModuleSpecError",
    "arguments_digest",
    "contract_digest",
    "digest",
    "sign_call_token",
]
