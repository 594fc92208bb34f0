"""JSON values as the validator sees them: their sizes and their equality.

Schemas and arguments arrive as what ``json.loads`` builds: ``dict`` with ``str`` keys, ``list``,
``str``, ``int``, ``float``, ``bool`` and ``None``. Two facts of Python make that model treacherous
for JSON Schema, and this module is where they are handled once:

- ``bool`` is an ``int`` (``True == 1``), but JSON's ``true`` is neither 1 nor a number;
- nesting is unbounded, and Python's own comparison of nested containers recurses in C.

So sizes are counted and equality keys built by iterative walks, never by recursion.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any, Final, NamedTuple

__all__ = [
    "NOT_UNICODE",
    "Measure",
    "container_key",
    "equality_key",
    "is_unicode_text",
    "measure",
    "utf16_length",
]

_SCALARS: Final = (str, int, float, bool, type(None))
_TRUE_KEY: Final = ("boolean", True)
_FALSE_KEY: Final = ("boolean", False)


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units, the unit ECMA-262 and the SPEC's bounds count in."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


class Measure(NamedTuple):
    """What a JSON value costs against the bounds. ``nodes`` counts every value once."""

    nodes: int
    code_units: int
    depth: int


def measure(value: Any, max_nodes: int, max_code_units: int) -> Measure | None:
    """Count ``value``'s nodes, string code units and nesting, or ``None`` if it is not JSON data.

    The walk stops as soon as a count passes its bound, so measuring a huge value costs no more
    than the bound; the returned counts then exceed the bound, which is all a caller needs.
    Non-JSON data: other types, non-``str`` keys, NaN and the infinities.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        return _measure_scalar(value)
    nodes, units, depth = 1, 0, 1
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        container, level = stack.pop()
        depth = max(depth, level)
        nodes += len(container)
        members = container
        if type(container) is dict:
            try:
                units += utf16_length("".join(container))
            except TypeError:  # a key that is not a string
                return None
            members = container.values()
        for member in members:
            kind = type(member)
            if kind is str:
                units += len(member) if member.isascii() else utf16_length(member)
            elif kind is dict or kind is list:
                stack.append((member, level + 1))
            elif kind is float:
                if not math.isfinite(member):
                    return None
            elif kind not in _SCALARS:
                return None
        if nodes > max_nodes or units > max_code_units:
            break
    return Measure(nodes, units, depth)


#: The error of arguments ``is_unicode_text`` refuses (``invalid_arguments``).
NOT_UNICODE = "A string in the arguments is not Unicode text (it holds a lone surrogate)."


def is_unicode_text(value: Any) -> bool:
    """Whether every string and key in ``value`` is Unicode text: JSON's ``\\ud800`` escape can
    give a lone surrogate, which a schema may judge (ECMA strings hold one) but no UTF-8 JSON
    text can carry on to a node. An iterative walk, like ``measure``'s."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii() and not _encodes(item):
                return False
        elif kind is dict:
            if not _encodes("".join(item)):
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
    return True


def _encodes(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _measure_scalar(value: Any) -> Measure | None:
    kind = type(value)
    if kind is str:
        return Measure(1, utf16_length(value), 1)
    if kind not in _SCALARS or (kind is float and not math.isfinite(value)):
        return None
    return Measure(1, 0, 1)


def equality_key(value: Any) -> Hashable:
    """A key equal for two values exactly when JSON Schema calls them equal.

    ``1`` and ``1.0`` share a key (Python compares ``int`` and ``float`` exactly, and hashes them
    alike); ``true`` and ``1`` do not; objects compare without regard to member order.
    """
    kind = type(value)
    if kind is bool:
        return _TRUE_KEY if value else _FALSE_KEY
    if kind is dict or kind is list:
        return container_key(value)[0]
    key: Hashable = value  # str, int, float and None are their own keys
    return key


def container_key(value: dict[str, Any] | list[Any]) -> tuple[Hashable, int]:
    """The equality key of an object or array, and its cost in work steps: one per node, and one
    more per kibi code point of string, so that a long string re-keyed many times is paid for.

    The key is a canonical text: members sorted by key, strings and keys as they are behind their
    length (copied, never escaped: escaping writes six bytes for a character and costs ten times
    a copy, which the steps would not pay for), integral numbers written as hexadecimal integers
    (so ``1.0`` and ``1`` agree, with no digit limit), others by ``repr``.
    """
    parts: list[str] = []
    stack: list[Any] = [value]
    nodes = 0
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is tuple:  # punctuation queued by an enclosing container
            parts.append(item[0])
            continue
        nodes += 1
        if kind is str:
            nodes += len(item) >> 10
            parts.append(f"s{len(item)}:")
            parts.append(item)
        elif kind is dict:
            parts.append("{")
            stack.append(("}",))
            for key in sorted(item, reverse=True):
                nodes += len(key) >> 10
                stack.append((",",))
                stack.append(item[key])
                stack.append((key,))
                stack.append((f"k{len(key)}:",))
        elif kind is list:
            parts.append("[")
            stack.append(("]",))
            for member in reversed(item):
                stack.append((",",))
                stack.append(member)
        elif kind is bool:
            parts.append("t" if item else "f")
        elif item is None:
            parts.append("n")
        elif kind is int or item.is_integer():
            parts.append(f"i{int(item):x}")
        else:
            parts.append(f"d{item!r}")
    return ("container", "".join(parts)), nodes
