"""The command line's one error: a one-line message for the user and a non-zero exit."""

from __future__ import annotations

__all__ = ["CREDENTIAL_FLAG", "CommandError"]

#: How a command is given its token, for the message that says none was.
CREDENTIAL_FLAG = "a token (--token or MESHNAV_TOKEN)"


class CommandError(Exception):
    """A one-line message for the user; the command exits non-zero."""
