"""What the navigator's node API answered a node: its code, its message when it is one printable
line, and ``replaced`` (SPEC §6) as the error that stops a node another instance took over from.
"""

from __future__ import annotations

import httpx

from mesh.errors import InstanceReplaced

__all__ = ["check_replaced", "code", "said"]


def check_replaced(response: httpx.Response) -> None:
    """``InstanceReplaced`` for the navigator's ``replaced``: another instance serves the
    machine now, and this one must stop serving."""
    if response.status_code == 409 and code(response) == "replaced":
        raise InstanceReplaced(_message(response))


def said(response: httpx.Response) -> str:
    """The navigator's message in an error answer, as ``: MESSAGE``, or a full stop."""
    message = _message(response)
    return "." if message is None else f": {message}"


def _message(response: httpx.Response) -> str | None:
    """The navigator's message in an error answer, when it is one printable line."""
    try:
        message = response.json().get("message")
    except (ValueError, AttributeError):
        return None
    if not isinstance(message, str) or not message.isprintable():
        return None
    return message[:500]


def code(response: httpx.Response) -> str:
    try:
        return str(response.json().get("error", response.status_code))
    except ValueError:
        return str(response.status_code)
