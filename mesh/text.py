"""Text from outside written where a person reads it: one definition of a control character, and
the one escaping function every log line's fields go through.

A control character is C0 or C1 (a terminal acts on ESC and CSI), DEL, a line or paragraph
separator (a new line to some readers), or a lone surrogate (no encoding can write it). Such text
is refused where a name is made (``is_printable``). Where text is written, every character
Python would not print — the control characters and the rest of Unicode's "other" and separator
characters — is shown as its escape (``escaped``): ``\\x1b``, ``\\u2028``, ``\\udc80``, never
acted on, never a line of its own.
"""

from __future__ import annotations

import re

__all__ = ["escape", "escaped", "is_printable"]

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def escape(char: str) -> str:
    """One character's escape: ``\\x1b``, ``\\u202e``, ``\\U000e0041``."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escaped(text: str, *, keep: str = "") -> str:
    """``text`` with every character Python does not print (``str.isprintable``: control and
    format characters — bidi overrides, zero-width and tag characters —, separators but the
    space, lone surrogates) written as its escape — one line, inert — but those in ``keep`` (a
    text's own newlines and tabs, where lines are wanted). Log lines, the audit trail
    (``registry.audit_bounds``) and everything the command line prints go through it."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else escape(c) for c in text)


def is_printable(text: str) -> bool:
    """No control character and no lone surrogate: text every registry stores and every answer
    can be written in (PostgreSQL refuses a NUL, and reported it as an outage)."""
    return not _CONTROL.search(text)
