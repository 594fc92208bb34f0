"""Whole numbers read from text a client wrote: a path segment, a query parameter, a header."""

from __future__ import annotations

__all__ = ["whole_number"]

_DIGITS = frozenset("0123456789")


def whole_number(text: str, *, most: int) -> int | None:
    """``text`` as a whole number when it is ASCII digits only and at most ``most``; else ``None``.

    ``int()`` and ``str.isdigit()`` are too kind for this: they take "²", "１", "1_0" and " 1 ",
    and a thousand digits cost a thousand digits' work before any bound is checked.
    """
    if not text or len(text) > len(str(most)) or not _DIGITS.issuperset(text):
        return None
    value = int(text)
    return value if value <= most else None
