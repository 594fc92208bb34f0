"""The registry's errors.

    RegistryError                 base of everything the registry raises
    ├── RegistryUnavailable       the database cannot be reached or answered with a storage error
    ├── NotFound                  no such machine, assignment, seat, principal or grant
    └── Conflict                  the change contradicts what is stored (a duplicate name, a bound
        │                         node principal registering another machine)
        └── SeatTaken             a node registering a mesh seat another live machine holds

Storage exceptions are translated in one place (`registry.database.translate_errors`) and chained
with ``from``; their text never becomes a message, since it may hold queries or values.
"""

from __future__ import annotations

__all__ = ["Conflict", "NotFound", "RegistryError", "RegistryUnavailable", "SeatTaken"]


class RegistryError(Exception):
    """Base of the registry's errors; ``str()`` is always a message written here."""


class RegistryUnavailable(RegistryError):
    def __init__(self, message: str = "The registry cannot be read right now.") -> None:
        super().__init__(message)


class NotFound(RegistryError):
    """A named machine, assignment, seat, principal or grant is not there."""


class Conflict(RegistryError):
    """The change contradicts what the registry holds."""


class SeatTaken(Conflict):
    """A node may not take a mesh seat another live machine holds: moving it is an operator's
    act (ADR 0003)."""

    def __init__(self) -> None:
        super().__init__("Another machine holds that seat; an operator moves it.")
