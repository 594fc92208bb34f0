"""The command line's one error: a one-line message for the user and a non-zero exit."""

from __future__ import annotations

from typing import Any

__all__ = ["CREDENTIAL_FLAG", "CommandError"]

#: How a command is given its token, for the message that says none was.
CREDENTIAL_FLAG = "a token (--token or MESHNAV_TOKEN)"


class CommandError(Exception):
    """A one-line message for the user; the command exits non-zero. ``body`` is the §9 error
    body the navigator answered, or a node's own error answer as it was passed through, when
    there is one: with ``--json`` it is what is printed."""

    def __init__(self, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.body = body
