"""The node agent's errors.

MeshError                     base of everything the node agent raises
├── ModuleSpecError           a ``--module`` spec does not parse (also a ValueError)
├── CallTokenRejected         a call without a valid, unexpired, unreplayed token for exactly
│                             that tool and those arguments; answered as ``tool_not_granted``
├── NotEnrolled               a call before the node has its key (it has just started and not yet
│                             registered); answered as ``node_unavailable``
│   └── SignedBeforeStart     a call token signed before this process first registered (it may be
│                             one its previous run accepted); ``node_unavailable`` too
├── EnrolmentFailed           the navigator refused or could not take the node's registration
├── InstanceReplaced          another instance of this machine's node took it over (``replaced``);
│                             this one stops serving and exits non-zero
└── ServeFailed               the server stopped before it started serving (its modules'
                              lifespan failed)

``error_chain`` walks an error, its causes, contexts and groups once each: what the navigator
and the node both read a failure from (the MCP client wraps a transport's failure deeply).
"""

from __future__ import annotations

__all__ = [
    "CallTokenRejected",
    "EnrolmentFailed",
    "InstanceReplaced",
    "MeshError",
    "ModuleSpecError",
    "NotEnrolled",
    "ServeFailed",
    "SignedBeforeStart",
    "error_chain",
]


class MeshError(Exception):
    """Base of the node agent's errors."""


class ModuleSpecError(MeshError, ValueError):
    """A module spec does not parse; the message never repeats a DSN (it may hold a password)."""


class CallTokenRejected(MeshError):
    code = "tool_not_granted"
    status = 403

    def __init__(self, message: str = "This node runs only calls the navigator signed.") -> None:
        super().__init__(message)


class NotEnrolled(MeshError):
    """A call that arrives before the node's registration has given it the key to check call
    tokens: the node is not serving yet, which is no judgement of the call."""

    code = "node_unavailable"
    status = 503

    def __init__(self) -> None:
        super().__init__("This node has just started and is not registered yet; try again.")


class SignedBeforeStart(NotEnrolled):
    """A token signed before this node process first registered: a node that restarts forgets
    the tokens it accepted, so one seen on the wire could otherwise run its call again."""

    def __init__(self) -> None:
        MeshError.__init__(self, "This node restarted after the call was signed; try again.")


class EnrolmentFailed(MeshError):
    """The navigator refused the node's registration, or could not take it now: ``transient``
    when it could not be reached or answered that it cannot serve (a 5xx, such as
    ``registry_unavailable``), which the agent retries; a refusal of the node itself is final."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class InstanceReplaced(MeshError):
    """The navigator answered ``replaced``: another instance of this machine's node took the
    machine over (``--replace``), and this one must stop serving (SPEC §6)."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(
            message or "Another instance of this machine's node replaced this one; it stops."
        )


class ServeFailed(MeshError):
    def __init__(self) -> None:
        super().__init__("The server stopped before it served; see the log above.")


def error_chain(error: BaseException) -> list[BaseException]:
    """``error`` and every exception behind it — causes, contexts, the members of groups — each
    once: the MCP client wraps a transport's failure in groups and in errors of its own."""
    found: list[BaseException] = []
    seen: set[int] = set()
    waiting = [error]
    while waiting:
        current = waiting.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found.append(current)
        if isinstance(current, BaseExceptionGroup):
            waiting.extend(current.exceptions)
        waiting.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return found
