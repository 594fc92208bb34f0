"""Hidden text in a tool's contract (SPEC §14): characters a model reads and a person does not
see, the usual carrier of instructions hidden in a tool's description, refused at registration.

Refused anywhere in a definition — its name, title, description, and every string (and member
name) of its schemas and annotations:

- C0 and C1 control characters and DEL, but tab, line feed and carriage return;
- bidirectional controls, U+202A–U+202E and U+2066–U+2069;
- zero-width and invisible characters: U+200B, U+200E, U+200F, U+2060–U+2064, U+FEFF, U+00AD;
- U+200C and U+200D (zero-width non-joiner and joiner) unless both neighbours are letters, marks
  or symbols: Persian, the Indic scripts (a joiner follows a virama, a mark) and emoji sequences
  (a joiner between two pictographs, or after a variation selector, a mark) need them;
- Unicode tag characters, U+E0000–U+E007F (emoji tag sequences, such as a subdivision's flag,
  are refused with them: they are how text is hidden in plain sight);

and a description longer than ``MESHNAV_MAX_DESCRIPTION`` characters. A reason names the field,
the kind of character and its code point, never the text around it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = ["MAX_DESCRIPTION", "hidden_text"]

#: ``MESHNAV_MAX_DESCRIPTION``'s default: the characters a description may hold.
MAX_DESCRIPTION = 4096

_SUSPECT = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u00ad\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
_JOINERS = "\u200c\u200d"
#: Unicode general categories a joiner may stand between: letters, marks and symbols.
_JOINABLE = ("L", "M", "S")


def _kind(char: str) -> str:
    point = ord(char)
    if point < 0x20 or 0x7F <= point <= 0x9F:
        return "control character"
    if 0x202A <= point <= 0x202E or 0x2066 <= point <= 0x2069:
        return "bidirectional control"
    if 0xE0000 <= point <= 0xE007F:
        return "tag character"
    return "invisible character"


def _hidden(text: str) -> str | None:
    """What hidden character ``text`` holds first, described; ``None`` when it holds none."""
    for found in _SUSPECT.finditer(text):
        char, at = found.group(), found.start()
        if char in _JOINERS:
            before = text[at - 1] if at > 0 else ""
            after = text[at + 1] if at + 1 < len(text) else ""
            if all(c and unicodedata.category(c)[0] in _JOINABLE for c in (before, after)):
                continue
        return f"{_kind(char)} U+{ord(char):04X}"
    return None


def hidden_text(definition: dict[str, Any], max_description: int = MAX_DESCRIPTION) -> str | None:
    """Why ``definition`` is refused (SPEC §14), or ``None`` when it holds no hidden text."""
    description = definition.get("description")
    if isinstance(description, str) and len(description) > max_description:
        return f"description longer than {max_description} characters"
    stack: list[tuple[str, Any]] = [(field, value) for field, value in definition.items()]
    while stack:
        field, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                stack.append((field, key))
                stack.append((field, item))
        elif isinstance(value, list):
            stack.extend((field, item) for item in value)
        elif isinstance(value, str):
            found = _hidden(value)
            if found is not None:
                return f"hidden text in {_field(field)}: {found}"
    return None


def _field(field: str) -> str:
    """The top-level field a string was found under, as an operator reads it."""
    return field if field.isidentifier() and len(field) <= 32 else "a field"
