"""How many bytes a walker answer takes on the wire: JSON arithmetic, with no MCP type in it.

Every answer of ``seats``, ``search`` and ``describe`` fits in 64 KiB including the JSON-RPC
envelope (SPEC §3). The text block repeats the JSON as an escaped string, so an entry costs about
twice its own size; ``fit_entries`` measures that exactly and takes whole entries only. The
envelope carries back the request's id, which the client chose: ``room_for`` takes it off the
64 KiB (ADR 0022). ``navigator.mcp.answers`` writes the answers these measure, with ``compact``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from navigator.errors import InvalidArguments
from navigator.limits import LIMITS

__all__ = ["ENVELOPE", "compact", "fit_entries", "room_for", "wire_size"]

#: Bytes of the JSON-RPC response around the result (jsonrpc, content list, _meta, isError),
#: the id apart: ``room_for`` counts it.
ENVELOPE = 512

_LONG_ID = (
    f"The request's JSON-RPC id is longer than {LIMITS.request_id_bytes} bytes: this answer holds "
    "it within its 64 KiB, and too little room would be left."
)


def compact(value: Any) -> str:
    """``value`` as the JSON of an answer's text block: UTF-8 as it is, no spaces."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _wire(value: Any) -> int:
    """Bytes of ``value`` as JSON on the wire at most. The sessionless era writes with
    ``json.dumps``'s ASCII escapes (``é`` is six bytes, an emoji twelve); the legacy era writes
    UTF-8, which is never longer."""
    return len(json.dumps(value, separators=(",", ":")))


def _cost(value: Any, with_text: bool = True) -> int:
    # once as structured content, once inside the text block as an escaped JSON string (a
    # walker tool's answer; ``mesh.tools.discover`` answers the JSON alone)
    text = compact(value)
    structured = len(text) if text.isascii() else _wire(value)  # ASCII: escaping changes nothing
    return structured + _wire(text) - 2 if with_text else structured


def room_for(request_id: str | int | None) -> int:
    """The bytes an answer to the request ``request_id`` may take: the 64 KiB bound less the id,
    which its envelope carries back (as a string when FastMCP gives it as one, the longer form).
    An id past ``LIMITS.request_id_bytes`` is ``invalid_arguments``: it would leave too little
    room for whole entries."""
    if request_id is None:  # no JSON-RPC around the answer (the console)
        return LIMITS.answer_bytes
    size = _wire(request_id)
    if size > LIMITS.request_id_bytes:
        raise InvalidArguments(_LONG_ID)
    return LIMITS.answer_bytes - size


def wire_size(
    structured: dict[str, Any], meta: dict[str, Any] | None = None, *, with_text: bool = True
) -> int:
    return _cost(structured, with_text) + (_wire(meta) if meta else 0) + ENVELOPE


def fit_entries(
    base: dict[str, Any],
    key: str,
    entries: Sequence[dict[str, Any]],
    *,
    reserve: int = 0,
    limit: int = LIMITS.answer_bytes,
    with_text: bool = True,
) -> int:
    """How many of ``entries``, from the start, fit under ``base[key]`` within ``limit`` bytes.

    ``reserve`` keeps room for fields added afterwards (a cursor, ``_meta``); ``with_text``
    counts the text block that repeats the JSON. Returns 0 when not the first entry fits; the
    caller decides whether that is an error.
    """
    budget = limit - reserve - wire_size({**base, key: []}, with_text=with_text)
    taken = 0
    for entry in entries:
        cost = _cost(entry, with_text) + (2 if with_text else 1)  # a comma, in each copy
        if cost > budget:
            break
        budget -= cost
        taken += 1
    return taken
