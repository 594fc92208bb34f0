"""The character sets ECMA-262 names, written as RE2 class text (ADR 0006).

ECMA-262 and RE2 both have ``\\d``, ``\\w``, ``\\s``, ``.`` and ``\\p{..}``, but not with the same
members: ECMA's ``\\s`` takes in Unicode spaces and the BOM, RE2's is ASCII; ECMA's ``.`` stops at
four line terminators, RE2's at one. This module spells each ECMA set out explicitly, so the
pattern translator never relies on what RE2 means by a shorthand.

Every code point is written ``\\x{..}`` (alphanumerics aside), which RE2 can only read as that
code point. Surrogates are refused: RE2 reads UTF-8, where a lone surrogate cannot exist.
"""

from __future__ import annotations

from typing import Final

from navigator.errors import ToolValidationUnavailable

__all__ = [
    "ANY_CHARACTER",
    "CLASS_ESCAPES",
    "DOT",
    "MAX_CODE_POINT",
    "NOTHING",
    "UNFAITHFUL",
    "literal",
    "property_class",
]

MAX_CODE_POINT: Final = 0x10FFFF
_ALL: Final = f"\\x00-\\x{{{MAX_CODE_POINT:x}}}"
#: ``[^]`` and ``[]``: any code point, and none.
ANY_CHARACTER: Final = f"[{_ALL}]"
NOTHING: Final = f"[^{_ALL}]"
#: ``.``: anything but ECMA's line terminators (LF, CR, LS, PS).
DOT: Final = "[^\\x{a}\\x{d}\\x{2028}\\x{2029}]"

UNFAITHFUL = (
    "A pattern in the tool's schema uses a construct the linear-time engine cannot match "
    "exactly as ECMA-262 does."
)
_NOT_A_PROPERTY = "A pattern in the tool's schema names a Unicode property ECMA-262 does not have."

# ECMA's WhiteSpace and LineTerminator code points, which ``\s`` matches.
_SPACE_RANGES: Final = (
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
)

# General_Category values RE2 knows with ECMA's meaning. ``C``/``Other`` is left out on purpose:
# RE2's C omits unassigned code points (Cn), ECMA's does not; Cn and LC are unknown to RE2.
_CATEGORIES: Final = {
    **{short: short for short in (
        "L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "Me", "N", "Nd", "Nl", "No", "P", "Pc",
        "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "S", "Sm", "Sc", "Sk", "So", "Z", "Zs", "Zl", "Zp",
        "Cc", "Cf", "Cs", "Co",
    )},
    "Letter": "L", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll", "Titlecase_Letter": "Lt",
    "Modifier_Letter": "Lm", "Other_Letter": "Lo", "Mark": "M", "Combining_Mark": "M",
    "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me", "Number": "N",
    "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
    "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd",
    "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi",
    "Final_Punctuation": "Pf", "Other_Punctuation": "Po", "Symbol": "S", "Math_Symbol": "Sm",
    "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So", "Separator": "Z",
    "Space_Separator": "Zs", "Line_Separator": "Zl", "Paragraph_Separator": "Zp",
    "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs", "Private_Use": "Co",
}  # fmt: skip
# Values that are General_Category (or binary property) names, hence never Script values.
_NOT_SCRIPTS: Final = frozenset((*_CATEGORIES, "Any", "ASCII", "C", "Other", "Cn", "LC"))


def literal(code_point: int) -> str:
    """One code point as RE2 text that RE2 cannot read as syntax."""
    if 0xD800 <= code_point <= 0xDFFF:
        raise ToolValidationUnavailable(UNFAITHFUL)
    char = chr(code_point)
    return char if char.isascii() and char.isalnum() else f"\\x{{{code_point:x}}}"


def _ranges_text(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(
        literal(low) if low == high else f"{literal(low)}-{literal(high)}" for low, high in ranges
    )


def _complement(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """The code points outside ``ranges`` (sorted, disjoint), surrogates left out: UTF-8 text
    cannot hold them, and RE2 wants each bound to be a scalar value."""
    gaps, start = [], 0
    for low, high in ranges:
        if low > start:
            gaps.append((start, low - 1))
        start = high + 1
    if start <= MAX_CODE_POINT:
        gaps.append((start, MAX_CODE_POINT))
    scalars = []
    for low, high in gaps:
        for first, last in ((low, min(high, 0xD7FF)), (max(low, 0xE000), high)):
            if first <= last:
                scalars.append((first, last))
    return tuple(scalars)


_SPACE_TEXT: Final = _ranges_text(_SPACE_RANGES)
#: Class escapes: (text inside a bracket class, text standing alone). ECMA's \d and \w are ASCII,
#: as RE2's \D and \W are, so those two may keep RE2's spelling inside a class.
CLASS_ESCAPES: Final = {
    "d": ("0-9", "[0-9]"),
    "D": ("\\D", "[^0-9]"),
    "w": ("0-9A-Za-z_", "[0-9A-Za-z_]"),
    "W": ("\\W", "[^0-9A-Za-z_]"),
    "s": (_SPACE_TEXT, f"[{_SPACE_TEXT}]"),
    "S": (_ranges_text(_complement(_SPACE_RANGES)), f"[^{_SPACE_TEXT}]"),
}


def property_class(name: str, *, negated: bool) -> str:
    """``\\p{name}`` (or ``\\P``) as text for inside an RE2 bracket class; may be empty."""
    key, _, value = name.partition("=")
    if not value and key in ("Any", "ASCII"):
        ranges = ((0, MAX_CODE_POINT),) if key == "Any" else ((0, 0x7F),)
        return _ranges_text(_complement(ranges) if negated else ranges)
    if not value and key in _CATEGORIES:
        category = _CATEGORIES[key]
    elif key in ("General_Category", "gc") and value in _CATEGORIES:
        category = _CATEGORIES[value]
    elif key in ("Script", "sc") and value.isascii() and value.replace("_", "").isalpha():
        if value in _NOT_SCRIPTS:
            raise ToolValidationUnavailable(_NOT_A_PROPERTY)
        category = value  # RE2 knows scripts by their long names; compiling checks the rest
    else:
        raise ToolValidationUnavailable(UNFAITHFUL)  # binary properties, Script_Extensions, …
    return ("\\P" if negated else "\\p") + "{" + category + "}"
