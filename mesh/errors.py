"""The node agent's errors.

MeshError                     base of everything the node agent raises
├── ModuleSpecError           a ``--module`` spec does not parse (also a ValueError)
├── CallTokenRejected         a call without a valid, unexpired, unreplayed token for exactly
│                             that tool and those arguments; answered as ``tool_not_granted``
└── EnrolmentFailed           the navigator refused or could not take the node's registration
"""

from __future__ import annotations

__all__ = ["CallTokenRejected", "EnrolmentFailed", "MeshError", "ModuleSpecError"]


class MeshError(Exception):
    """Base of the node agent's errors."""


class ModuleSpecError(MeshError, ValueError):
    """A module spec does not parse; the message never repeats a DSN (it may hold a password)."""


class CallTokenRejected(MeshError):
    code = "tool_not_granted"
    status = 403

    def __init__(self, message: str = "This node runs only calls the navigator signed.") -> None:
        super().__init__(message)


class EnrolmentFailed(MeshError):
    """The navigator refused the node's registration, or could not be reached."""
