"""ECMA-262 patterns, matched in linear time by RE2 (SPEC §5; ADR 0006).

JSON Schema patterns are ECMA-262 regular expressions, read with the ``u`` flag (code points, not
UTF-16 units). RE2 matches in time linear in the input, but its syntax and its meaning of ``\\s``,
``.``, ``$`` and friends differ from ECMA's. So nothing is handed to RE2 as written: a small
recursive-descent parser reads the ECMA pattern and writes an RE2 pattern with the same meaning,
spelling every non-alphanumeric character as ``\\x{..}`` so that RE2's own syntax never gets a say.

Whatever has no faithful linear-time translation (back-references, look-around, a property RE2
does not know, a lone surrogate) and whatever is not ECMA syntax raises
``ToolValidationUnavailable``: a pattern is either matched exactly as ECMA would, or not at all.
The rules are written down in docs/adr/0006-bounded-argument-validator.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import re2

from navigator.errors import ToolValidationUnavailable
from navigator.validation.bounds import DEFAULT_LIMITS
from navigator.validation.charsets import (
    ANY_CHARACTER,
    CLASS_ESCAPES,
    DOT,
    MAX_CODE_POINT,
    NOTHING,
    UNFAITHFUL,
    literal,
    property_class,
)
from navigator.validation.json_values import utf16_length

__all__ = ["Pattern", "compile_pattern", "translate_pattern"]

#: RE2's memory bound per compiled pattern (program and DFA cache); RE2's own default is 8 MiB.
RE2_MAX_MEM: Final = 4 << 20
_SYNTAX: Final = frozenset("^$\\.*+?()[]{}|/")
_PUNCTUATION: Final = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_GROUP_NAME: Final = re2.compile("[A-Za-z_$][A-Za-z0-9_$]*")
_CONTROL_ESCAPES: Final = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}

_NOT_ECMA = "A pattern in the tool's schema is not valid ECMA-262 syntax."
_NOT_LINEAR = (
    "A pattern in the tool's schema uses a back-reference or look-around, "
    "which cannot be matched in linear time."
)
_TOO_LONG = "A pattern in the tool's schema is longer than {limit} UTF-16 code units."
_TOO_BIG = "A pattern in the tool's schema is too large for the linear-time engine's bounds."
_UNREADABLE = "A string holds a lone surrogate, which the pattern engine cannot read."
#: One work step per 256 (program instruction x UTF-8 byte) pairs: at most about 0.6 µs of RE2's
#: slowest path (its DFA giving up and the NFA simulating every instruction), measured at up to
#: 2.4 ns per pair. RE2 reads bytes: a character outside ASCII is two to four of them, and they
#: are where the DFA gives up soonest, so they are charged as bytes, not as characters.
_COST_SHIFT: Final = 8


def _refuse(message: str) -> ToolValidationUnavailable:
    return ToolValidationUnavailable(message)


class _Translator:
    """Reads one ECMA-262 (``u`` flag) pattern and writes the RE2 pattern with the same meaning."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.at = 0
        self.group_names: set[str] = set()

    def translate(self) -> str:
        text = self._disjunction()
        if self.at != len(self.source):
            raise _refuse(_NOT_ECMA)  # an unbalanced ")"
        return text

    # -- structure ---------------------------------------------------------------------------

    def _peek(self, offset: int = 0) -> str:
        index = self.at + offset
        return self.source[index] if index < len(self.source) else ""

    def _take(self) -> str:
        char = self._peek()
        if not char:
            raise _refuse(_NOT_ECMA)
        self.at += 1
        return char

    def _disjunction(self) -> str:
        parts = [self._alternative()]
        while self._peek() == "|":
            self.at += 1
            parts.append(self._alternative())
        return "|".join(parts)

    def _alternative(self) -> str:
        terms: list[str] = []
        while self._peek() not in ("", "|", ")"):
            terms.append(self._term())
        return "".join(terms)

    def _term(self) -> str:
        char = self._peek()
        assertion = {"^": "\\A", "$": "\\z"}.get(char)
        if assertion is None and char == "\\" and self._peek(1) == "b":
            assertion = "\\b"  # ECMA's and RE2's word boundaries are both ASCII
            self.at += 1
        elif char == "\\" and self._peek(1) == "B":
            # RE2 tests \B between bytes, so it holds inside a character outside ASCII ("é")
            raise _refuse(UNFAITHFUL)
        if assertion is not None:
            self.at += 1
            if self._peek() in ("*", "+", "?", "{"):
                raise _refuse(_NOT_ECMA)  # an assertion cannot be quantified under the u flag
            return assertion
        atom = self._atom()
        return atom + self._quantifier()

    def _quantifier(self) -> str:
        char = self._peek()
        if char in ("*", "+", "?"):
            self.at += 1
            text = char
        elif char == "{":
            self.at += 1
            low = self._digits()
            high: str | None = low
            if self._peek() == ",":
                self.at += 1
                high = self._digits() if self._peek() != "}" else None
            if self._take() != "}" or not low or (high is not None and not high):
                raise _refuse(_NOT_ECMA)
            if high is not None and int(high) < int(low):
                raise _refuse(_NOT_ECMA)
            text = "{" + low + ("" if high == low else "," + (high or "")) + "}"
        else:
            return ""
        if self._peek() == "?":  # laziness changes which match is found, never whether one is
            self.at += 1
            text += "?"
        return text

    def _digits(self) -> str:
        start = self.at
        while self._peek().isascii() and self._peek().isdigit():
            self.at += 1
        return self.source[start : self.at]

    def _atom(self) -> str:
        char = self._take()
        if char == ".":
            return DOT
        if char == "(":
            return self._group()
        if char == "[":
            return self._class()
        if char == "\\":
            return self._atom_escape()
        if char in _SYNTAX and char != "/":
            raise _refuse(_NOT_ECMA)  # a stray quantifier, "]", "{" or "}"
        return literal(ord(char))

    def _group(self) -> str:
        if self._peek() == "?":
            self.at += 1
            kind = self._take()
            if kind in ("=", "!") or (kind == "<" and self._peek() in ("=", "!")):
                raise _refuse(_NOT_LINEAR)
            if kind == "<":
                self._group_name()
            elif kind != ":":
                raise _refuse(UNFAITHFUL)  # modifiers and other extensions
        body = self._disjunction()
        if self._take() != ")":
            raise _refuse(_NOT_ECMA)
        return f"(?:{body})"

    def _group_name(self) -> None:
        start = self.at
        while self._peek() not in ("", ">"):
            self.at += 1
        name = self.source[start : self.at]
        self._take()
        if not name.isascii():
            raise _refuse(UNFAITHFUL)  # Unicode identifiers: not worth a table of ID_Start
        if not _GROUP_NAME.fullmatch(name) or name in self.group_names:
            raise _refuse(_NOT_ECMA)
        self.group_names.add(name)

    # -- escapes -----------------------------------------------------------------------------

    def _atom_escape(self) -> str:
        char = self._peek()
        if char in CLASS_ESCAPES:
            self.at += 1
            return CLASS_ESCAPES[char][1]
        if char in ("p", "P"):
            self.at += 1
            inside = self._property(negated=char == "P")
            return f"[{inside}]" if inside else NOTHING
        if (char.isascii() and char.isdigit() and char != "0") or char == "k":
            raise _refuse(_NOT_LINEAR)  # back-references
        return literal(self._character_escape(in_class=False))

    def _character_escape(self, *, in_class: bool) -> int:
        """The code point a character escape stands for (the backslash already read)."""
        char = self._take()
        if char in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[char]
        if char == "0":
            if self._peek().isascii() and self._peek().isdigit():
                raise _refuse(_NOT_ECMA)  # legacy octal escapes are not u-flag syntax
            return 0
        if char == "c":
            letter = self._take()
            if not (letter.isascii() and letter.isalpha()):
                raise _refuse(_NOT_ECMA)
            return ord(letter) % 32
        if char == "x":
            return self._hex(2)
        if char == "u":
            return self._unicode_escape()
        if in_class and char == "b":
            return 0x08
        if in_class and char == "-":
            return ord("-")
        if char in _PUNCTUATION:
            # u-flag syntax allows only syntax characters and "/" here; other ASCII punctuation is
            # read as itself, as every ECMA engine without the u flag reads it.
            return ord(char)
        raise _refuse(_NOT_ECMA)

    def _hex(self, count: int) -> int:
        digits = self.source[self.at : self.at + count]
        if len(digits) != count or not set(digits) <= _HEX:
            raise _refuse(_NOT_ECMA)
        self.at += count
        return int(digits, 16)

    def _unicode_escape(self) -> int:
        if self._peek() == "{":
            self.at += 1
            start = self.at
            while self._peek() in _HEX and self._peek():
                self.at += 1
            digits = self.source[start : self.at]
            if not digits or self._take() != "}" or int(digits, 16) > MAX_CODE_POINT:
                raise _refuse(_NOT_ECMA)
            return int(digits, 16)
        unit = self._hex(4)
        if 0xD800 <= unit <= 0xDBFF and self.source[self.at : self.at + 2] == "\\u":
            saved = self.at
            self.at += 2
            low = self._hex(4)
            if 0xDC00 <= low <= 0xDFFF:  # a surrogate pair names one code point
                return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            self.at = saved
        return unit

    def _property(self, *, negated: bool) -> str:
        """A ``\\p{..}`` escape as text for inside an RE2 bracket class."""
        if self._take() != "{":
            raise _refuse(_NOT_ECMA)
        end = self.source.find("}", self.at)
        if end < 0:
            raise _refuse(_NOT_ECMA)
        name, self.at = self.source[self.at : end], end + 1
        return property_class(name, negated=negated)

    # -- bracket classes ---------------------------------------------------------------------

    def _class(self) -> str:
        negated = self._peek() == "^"
        if negated:
            self.at += 1
        items: list[str] = []
        while self._peek() != "]":
            low, low_set = self._class_atom()
            if self._peek() == "-" and self._peek(1) not in ("]", ""):
                self.at += 1
                high, high_set = self._class_atom()
                if low_set is not None or high_set is not None or high < low:
                    raise _refuse(_NOT_ECMA)
                items.append(f"{literal(low)}-{literal(high)}")
            elif low_set is None:
                items.append(literal(low))
            elif low_set:  # "\P{Any}" contributes nothing
                items.append(low_set)
        self.at += 1
        if not items:  # "[]" matches nothing, "[^]" matches any code point
            return ANY_CHARACTER if negated else NOTHING
        return "[" + ("^" if negated else "") + "".join(items) + "]"

    def _class_atom(self) -> tuple[int, str | None]:
        """One class member: a code point, or (-1, RE2 class text) for a class escape."""
        char = self._take()
        if char != "\\":
            return ord(char), None
        escape = self._peek()
        if escape in CLASS_ESCAPES:
            self.at += 1
            return -1, CLASS_ESCAPES[escape][0]
        if escape in ("p", "P"):
            self.at += 1
            return -1, self._property(negated=escape == "P")
        if (escape.isascii() and escape.isdigit() and escape != "0") or escape in ("k", "B"):
            raise _refuse(_NOT_ECMA)
        return self._character_escape(in_class=True), None


def translate_pattern(source: str) -> str:
    """The RE2 pattern with the meaning ECMA-262 (``u`` flag) gives ``source``.

    Raises ``ToolValidationUnavailable`` when there is no faithful linear-time translation.
    """
    return _Translator(source).translate()


class Pattern:
    """A compiled pattern: ``search`` answers whether it matches anywhere in a string.

    RE2 is linear in the text, but the constant is not small: when its DFA gives up (the cache
    bound is reached, as ``(?:x|[^x]){900}z`` on text outside ASCII makes it) it falls back to
    simulating the whole program for every byte. ``search`` charges that worst case before it
    runs, so the step budget refuses a search before it could run long.
    """

    __slots__ = ("_regexp", "size")

    def __init__(self, regexp: Any) -> None:
        self._regexp = regexp
        #: RE2 program instructions: what the pattern costs to compile and to search
        self.size: int = regexp.programsize

    def search(self, text: str, spend: Callable[[int], None]) -> bool:
        """Unanchored search, as JSON Schema's ``pattern`` means; linear in ``len(text)``.
        ``spend`` is charged the work steps the search may take first, and may refuse them."""
        try:
            encoded = text.encode("utf-8")
        except UnicodeEncodeError:
            raise _refuse(_UNREADABLE) from None
        spend((len(encoded) * self.size) >> _COST_SHIFT)
        return self._regexp.search(encoded) is not None


def _options() -> Any:
    options = re2.Options()
    options.longest_match = False
    options.never_capture = True  # only "does it match" is asked: no submatch bookkeeping
    options.log_errors = False
    options.max_mem = RE2_MAX_MEM
    return options


_OPTIONS: Final = _options()


def compile_pattern(source: str, max_units: int = DEFAULT_LIMITS.max_pattern_units) -> Pattern:
    """Translate and compile ``source``. Not cached here: a compiled schema owns its patterns, so
    that the memory they hold is bounded with the schema's (``CompiledSchema.weight``)."""
    if utf16_length(source) > max_units:
        raise _refuse(_TOO_LONG.format(limit=max_units))
    translated = translate_pattern(source)
    try:
        regexp = re2.compile(translated, _OPTIONS)
    except re2.error:
        raise _refuse(_TOO_BIG) from None
    return Pattern(regexp)
