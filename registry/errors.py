"""The registry's errors.

    RegistryError                 base of everything the registry raises
    ├── RegistryUnavailable       the database cannot be reached or answered with a storage error
    │                             (``writes``: in a transaction that writes)
    ├── NotFound                  no such machine, assignment, seat, principal or grant
    └── Conflict                  the change contradicts what is stored (a duplicate name, a bound
        │                         node principal registering another machine)
        ├── SeatNotPlaced         a node registering a mesh seat no operator placed on it
        └── Replaced              a node instance another instance of its machine has replaced

Storage exceptions are translated in one place (`registry.database.translate_errors`) and chained
with ``from``; their text never becomes a message, since it may hold queries or values.
"""

from __future__ import annotations

__all__ = [
    "NODE_SEAT",
    "SEAT_IS_NODE_SEAT",
    "UNREADABLE",
    "UNWRITABLE",
    "Conflict",
    "NotFound",
    "RegistryError",
    "RegistryUnavailable",
    "Replaced",
    "SeatIsNodeSeat",
    "SeatNotPlaced",
]


class RegistryError(Exception):
    """Base of the registry's errors; ``str()`` is always a message written here."""


class RegistryUnavailable(RegistryError):
    """``writes``: it failed in a transaction that writes, where the registry may still be read
    (its disk full, its write lock held) and "cannot be read" would send an operator the wrong
    way."""

    def __init__(self, message: str | None = None, *, writes: bool = False) -> None:
        super().__init__(message or (UNWRITABLE if writes else UNREADABLE))
        self.writes = writes


UNREADABLE = "The registry cannot be read right now."
UNWRITABLE = "The registry cannot be written right now."


class NotFound(RegistryError):
    """A named machine, assignment, seat, principal or grant is not there."""


class Conflict(RegistryError):
    """The change contradicts what the registry holds."""


class SeatIsNodeSeat(Conflict):
    """A mesh seat named as a node seat's role: ``*/ROLE/*`` grants, meant for the role every
    machine holds, would cover the seat's tools (``mesh/ROLE/…``) too."""

    def __init__(self) -> None:
        super().__init__(SEAT_IS_NODE_SEAT)


#: The node seat every machine holds (the ``node`` module's role).
NODE_SEAT = "node"
#: Why a seat may not take a node seat's name, and the next step.
SEAT_IS_NODE_SEAT = (
    "That seat name is a node seat's role (a role every machine holds): a grant on */ROLE/* "
    "would cover the seat too. Choose another seat name."
)


class SeatNotPlaced(Conflict):
    """A node serves a mesh seat only where an operator placed it: placing and moving a seat are
    operators' acts (ADR 0003, ADR 0032)."""

    def __init__(self) -> None:
        super().__init__(SEAT_NOT_PLACED)


class Replaced(Conflict):
    """A node instance's heartbeat, push or stop, after another instance of its machine took
    the machine over (SPEC §6): the old instance stops serving rather than register again."""


#: Why a node's claim of a seat is refused, and the next step.
SEAT_NOT_PLACED = (
    "No operator placed the seat on this machine's role; an operator places it"
    " (meshnav seat place SEAT MACHINE ROLE, or PUT /api/v1/seats/SEAT)."
)
