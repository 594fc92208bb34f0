"""The command line's one error: a one-line message for the user and a non-zero exit."""

from __future__ import annotations

__all__ = ["CommandError"]


class CommandError(Exception):
    """A one-line message for the user; the command exits non-zero."""
