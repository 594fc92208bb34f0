"""SHA-256 over RFC 8785 canonical JSON: the one place digests are computed (SPEC §5).

Both ends of the wire use it — the navigator for contract, catalogue and argument digests, the node
to check that a call token names exactly the arguments it received.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import rfc8785

__all__ = ["arguments_digest", "canonical_json", "contract_digest", "digest"]

#: The parts of a tool's ``tools/list`` entry that make its contract; anything else is metadata.
CONTRACT_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def canonical_json(value: Any) -> bytes:
    return bytes(rfc8785.dumps(value))


def digest(value: Any) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()


def contract_digest(tool: Mapping[str, Any]) -> str:
    """The digest of a tool's contract: equal digests mean the same tool on another holder."""
    return digest({key: tool[key] for key in CONTRACT_FIELDS if tool.get(key) is not None})


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    return digest(dict(arguments))
