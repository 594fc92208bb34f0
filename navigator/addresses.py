"""Addresses, prefixes and patterns (SPEC §2): the only way a tool is named.

``HOLDER/ROLE/TOOL`` names one tool on one holder; ``HOLDER`` and ``HOLDER/ROLE`` are prefixes, for
walking; a pattern puts ``*`` in place of whole segments (``*/postgres/*``). Anything else is
refused with ``invalid_address`` — there is no fallback to "whichever machine answers".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from navigator.errors import InvalidAddress
from registry.errors import NODE_SEAT, SEAT_IS_NODE_SEAT

__all__ = [
    "MAX_ADDRESS_LENGTH",
    "MESH",
    "NAME_GRAMMAR",
    "TOOL_GRAMMAR",
    "Address",
    "Pattern",
    "check_placement",
    "is_name",
    "is_tool_name",
    "parse_address",
    "parse_collapsed",
    "parse_pattern",
    "parse_tool_address",
    "refused_name",
]

MESH = "mesh"
MAX_ADDRESS_LENGTH = 256
WILDCARD = "*"

_NAME = re.compile(r"[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?\Z")
_TOOL = re.compile(r"[A-Za-z0-9_.-]{1,128}\Z")
#: The grammar of a machine, role or seat name, and of a tool's name (SPEC §2), as the answers
#: that refuse one quote it.
NAME_GRAMMAR = (
    "lower-case ASCII letters, digits, _ and -, 1 to 63 of them, the first and the last a letter "
    "or a digit: [a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?"
)
TOOL_GRAMMAR = "ASCII letters, digits, _, . and -, 1 to 128 of them, no '..': [A-Za-z0-9_.-]{1,128}"


def refused_name(kind: str) -> InvalidAddress:
    """The answer refusing a ``kind`` ("machine", "role", "seat") name: the rule it breaks."""
    reserved = "; mesh is no machine's name" if kind == "machine" else ""
    return InvalidAddress(f"The {kind} name is not valid: {NAME_GRAMMAR}{reserved}.")


def is_name(text: str) -> bool:
    """A machine, role or seat name: lower-case ASCII letters, digits, ``_`` and ``-``."""
    return _NAME.match(text) is not None


def is_tool_name(text: str) -> bool:
    """A tool's own name; ``.`` and ``..`` alone or a ``..`` run inside are refused."""
    return _TOOL.match(text) is not None and ".." not in text and text != "."


def is_machine_name(text: str) -> bool:
    return is_name(text) and text != MESH


def check_placement(seat: str, machine: str, role: str) -> None:
    """A mesh seat's placement on ``machine``'s ``role`` in the grammar: placing a seat adds
    the assignment when it is new, so every name must be one an address can hold."""
    if not is_name(seat):
        raise refused_name("seat")
    if seat == NODE_SEAT:  # any other node seat's role is refused where the registry knows it
        raise InvalidAddress(SEAT_IS_NODE_SEAT)
    if not is_machine_name(machine):
        raise refused_name("machine")
    if not is_name(role):
        raise refused_name("role")


@dataclass(frozen=True, slots=True)
class Address:
    """A concrete address or a prefix of one: ``holder`` always, then ``role``, then ``tool``."""

    holder: str
    role: str | None = None
    tool: str | None = None

    def __str__(self) -> str:
        return "/".join(part for part in (self.holder, self.role, self.tool) if part is not None)

    @property
    def is_tool(self) -> bool:
        return self.tool is not None


def _segments(text: object) -> list[str]:
    if not isinstance(text, str) or not text or len(text) > MAX_ADDRESS_LENGTH:
        raise InvalidAddress()
    if not text.isascii() or not text.isprintable() or any(c.isspace() for c in text):
        raise InvalidAddress()
    parts = text.split("/")
    if len(parts) > 3:
        raise InvalidAddress()
    return parts


#: A holder or role written with capitals (``DB1``, ``db1/Sqlite``): only its case is wrong.
LOWER_CASE = (
    "Holder and role names are lower-case ASCII (e.g. db1/sqlite/query): write the address in "
    "lower case."
)
#: A tool address with ``*`` for its holder, as search and seats collapse one tool on many.
COLLAPSED = (
    "'*/ROLE/TOOL' stands for one tool on many holders: describe or call it on one holder "
    "(HOLDER/ROLE/TOOL)."
)


def _check_segment(index: int, part: str, *, wildcard: bool) -> None:
    if wildcard and part == WILDCARD:
        return
    if not (is_name(part) if index < 2 else is_tool_name(part)):
        raise InvalidAddress(LOWER_CASE if index < 2 and is_name(part.lower()) else None)


@lru_cache(maxsize=4096)
def parse_address(text: str) -> Address:
    """Parse a concrete address or a prefix (``mesh``, ``db1``, ``db1/pg``, ``db1/pg/query``)."""
    parts = _segments(text)
    for index, part in enumerate(parts):
        _check_segment(index, part, wildcard=False)
    if len(parts) == 1 and parts[0] != MESH and not is_machine_name(parts[0]):
        raise InvalidAddress()
    return Address(*parts)


def parse_walk_address(text: str) -> Address:
    """What ``seats`` walks: a prefix, or a node seat on every machine that holds it (``*/node``,
    as the top of the walk lists it); ``holder`` is then ``*``."""
    parts = _segments(text)
    if len(parts) == 2 and parts[0] == WILDCARD:
        _check_segment(1, parts[1], wildcard=False)
        return Address(WILDCARD, parts[1])
    return parse_address(text)


def parse_collapsed(text: object) -> tuple[str, str] | None:
    """``(role, tool)`` of a collapsed address (``*/node/uptime``, as search answers the same
    tool on many holders), ``None`` for any other text."""
    if not isinstance(text, str) or not text.startswith(WILDCARD + "/"):
        return None
    try:
        parts = _segments(text)
    except InvalidAddress:
        return None
    if len(parts) != 3 or not is_name(parts[1]) or not is_tool_name(parts[2]):
        return None
    return parts[1], parts[2]


def parse_tool_address(text: object) -> Address:
    """Parse an address that must name one tool: all three segments, no wildcard."""
    if not isinstance(text, str):
        raise InvalidAddress()
    if parse_collapsed(text) is not None:
        raise InvalidAddress(COLLAPSED)
    address = parse_address(text)
    if not address.is_tool:
        raise InvalidAddress("The address must name a tool: HOLDER/ROLE/TOOL.")
    return address


@dataclass(frozen=True, slots=True)
class Pattern:
    """A pattern or prefix over addresses; missing trailing segments match anything."""

    holder: str | None
    role: str | None
    tool: str | None
    text: str

    def matches(self, holder: str, role: str, tool: str) -> bool:
        return (
            (self.holder is None or self.holder == holder)
            and (self.role is None or self.role == role)
            and (self.tool is None or self.tool == tool)
        )

    def matches_address(self, address: str) -> bool:
        holder, role, tool = address.split("/", 2)
        return self.matches(holder, role, tool)

    @property
    def specificity(self) -> tuple[int, tuple[bool, bool, bool]]:
        """Fewer wildcards first, then the leftmost exact segment (SPEC §4); larger is narrower."""
        exact = (self.holder is not None, self.role is not None, self.tool is not None)
        return (sum(exact), exact)

    def covers_holder(self, holder: str) -> bool:
        return self.holder is None or self.holder == holder


@lru_cache(maxsize=4096)
def parse_pattern(text: str) -> Pattern:
    """Parse a grant target or a ``within`` narrowing: an address, prefix or pattern."""
    parts = _segments(text)
    for index, part in enumerate(parts):
        _check_segment(index, part, wildcard=True)
    padded: list[str | None] = [None if p == WILDCARD else p for p in parts]
    padded += [None] * (3 - len(padded))
    if padded[0] is not None and padded[0] != MESH and not is_machine_name(padded[0]):
        raise InvalidAddress()
    return Pattern(holder=padded[0], role=padded[1], tool=padded[2], text=text)
