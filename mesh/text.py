"""Text from outside written where a person reads it: one definition of a control character, and
the one escaping function every log line's fields go through.

A control character is C0 or C1 (a terminal acts on ESC and CSI), DEL, a line or paragraph
separator (a new line to some readers), or a lone surrogate (no encoding can write it). Such text
is refused where a name is made (``is_printable``) and shown escaped where it is written
(``escaped``): ``\\x1b``, ``\\u2028``, ``\\udc80`` — never acted on, never a line of its own.
"""

from __future__ import annotations

import re

__all__ = ["escaped", "is_printable"]

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _shown(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escaped(text: str) -> str:
    """``text`` with every control character written as its escape: one line, inert."""
    return _CONTROL.sub(_shown, text)


def is_printable(text: str) -> bool:
    """No control character and no lone surrogate: text every registry stores and every answer
    can be written in (PostgreSQL refuses a NUL, and reported it as an outage)."""
    return not _CONTROL.search(text)
