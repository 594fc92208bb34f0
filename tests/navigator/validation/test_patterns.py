"""ECMA-262 → RE2 pattern translation (navigator/patterns.py, ADR 0006)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from navigator.errors import ToolValidationUnavailable
from navigator.validation.patterns import compile_pattern, translate_pattern


def search(pattern: str, text: str) -> bool:
    """Search with a budget that refuses nothing."""
    return compile_pattern(pattern).search(text, lambda steps: None)


SPACE_CLASS = (
    "\\x{9}-\\x{d}\\x{20}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}-\\x{2029}"
    "\\x{202f}\\x{205f}\\x{3000}\\x{feff}"
)


@pytest.mark.parametrize(
    ("ecma", "re2"),
    [
        ("abc", "abc"),
        ("^a*$", "\\Aa*\\z"),
        ("a+?b{2}c{1,}d{0,3}?", "a+?b{2}c{1,}d{0,3}?"),
        (".", "[^\\x{a}\\x{d}\\x{2028}\\x{2029}]"),
        ("\\d\\D", "[0-9][^0-9]"),
        ("\\w\\W", "[0-9A-Za-z_][^0-9A-Za-z_]"),
        ("\\s", f"[{SPACE_CLASS}]"),
        ("\\S", f"[^{SPACE_CLASS}]"),
        ("\\bx\\b", "\\bx\\b"),
        ("(a|b)(?:c)(?<name>d)", "(?:a|b)(?:c)(?:d)"),
        ("a|", "a|"),
        ("[a-z_]", "[a-z\\x{5f}]"),
        ("[^a]", "[^a]"),
        ("[\\w-]", "[0-9A-Za-z_\\x{2d}]"),
        ("[-a]", "[\\x{2d}a]"),
        ("[]", "[^\\x00-\\x{10ffff}]"),
        ("[^]", "[\\x00-\\x{10ffff}]"),
        ("[[]", "[\\x{5b}]"),
        ("[\\b]", "[\\x{8}]"),
        ("[\\-]", "[\\x{2d}]"),
        ("\\t\\n\\v\\f\\r\\0", "\\x{9}\\x{a}\\x{b}\\x{c}\\x{d}\\x{0}"),
        ("\\cJ", "\\x{a}"),
        ("\\x41\\u00e9", "A\\x{e9}"),
        ("\\u{1F600}", "\\x{1f600}"),
        ("\\uD83D\\uDE00", "\\x{1f600}"),
        ("😀é", "\\x{1f600}\\x{e9}"),
        ("\\.\\*\\/\\\\", "\\x{2e}\\x{2a}\\x{2f}\\x{5c}"),
        ("\\-", "\\x{2d}"),
        ("a/b", "a\\x{2f}b"),
        ("\\p{L}\\P{Lu}", "[\\p{L}][\\P{Lu}]"),
        ("\\p{Letter}\\p{gc=Nd}\\p{General_Category=Zs}", "[\\p{L}][\\p{Nd}][\\p{Zs}]"),
        ("\\p{Script=Greek}\\p{sc=Latin}", "[\\p{Greek}][\\p{Latin}]"),
        ("\\p{ASCII}", "[\\x{0}-\\x{7f}]"),
        ("[\\d\\p{L}]", "[0-9\\p{L}]"),
    ],
)
def test_translation_table(ecma: str, re2: str) -> None:
    assert translate_pattern(ecma) == re2


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("a", "xay", True),  # unanchored search
        ("^a$", "a\n", False),  # "$" is the end of input, never before a final newline
        ("^a$", "a", True),
        (".", "\n", False),
        (".", "\u2028", False),
        (".", "😀", True),  # code points, not UTF-16 units (the u flag)
        ("^.$", "😀", True),
        ("\\s", "\u00a0", True),
        ("\\s", "\ufeff", True),
        ("\\s", "\u3000", True),
        ("\\s", "\u200b", False),  # ZERO WIDTH SPACE is not ECMA white space
        ("\\S", "\u00a0", False),
        ("\\d", "٣", False),  # ARABIC-INDIC DIGIT THREE: \d is ASCII only
        ("\\w", "é", False),
        ("\\p{Nd}", "٣", True),
        ("\\p{L}", "é", True),
        ("\\bfoo\\b", "é foo", True),
        ("[^\\S]", " ", True),
        ("[\\W\\d]", "a", False),
        ("[\\W\\d]", "7", True),
        ("[]", "", False),
        ("[^]", "\n", True),
        ("a{2}", "a", False),
        ("^[a-z]+$", "abc", True),
        ("^[a-z]+$", "abC", False),
        ("\\p{Script=Greek}", "\u03b1", True),  # GREEK SMALL LETTER ALPHA
        ("\\P{ASCII}", "a", False),
        ("", "anything", True),
    ],
)
def test_translated_pattern_matches_as_ecma(pattern: str, text: str, matches: bool) -> None:
    assert search(pattern, text) is matches


@pytest.mark.parametrize(
    "pattern",
    [
        "(a)\\1",  # back-reference
        "(?<x>a)\\k<x>",  # named back-reference
        "(?=a)",  # lookahead
        "(?!a)",
        "(?<=a)b",  # lookbehind
        "(?<!a)b",
        "\\p{Cn}",  # RE2 does not know it
        "\\p{C}",  # RE2's C leaves out unassigned code points, ECMA's does not
        "\\p{LC}",
        "\\p{Alphabetic}",  # binary properties
        "\\p{scx=Greek}",  # Script_Extensions
        "\\uD800",  # lone surrogates cannot exist in UTF-8
        "[\\uDC00-\\uDFFF]",
        "(?i:a)",  # modifiers
        "(?<é>a)",  # Unicode group names
        "a{1001}",  # beyond RE2's repetition bound
    ],
)
def test_constructs_without_a_faithful_linear_translation_are_refused(pattern: str) -> None:
    with pytest.raises(ToolValidationUnavailable):
        compile_pattern(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        "(",
        ")",
        "a)",
        "[a",
        "\\",
        "*a",
        "a**",
        "a{2}{3}",
        "a{2,1}",
        "a{,5}",  # a quantifier to Python, a syntax error to ECMA with the u flag
        "a{",
        "]",
        "}",
        "^*",  # an assertion cannot be quantified
        "\\b+",
        "[z-a]",
        "[\\d-z]",  # a class escape cannot bound a range
        "\\a",  # identity escapes of letters are not u-flag syntax
        "\\e",
        "\\z",
        "\\01",  # legacy octal
        "\\8",
        "\\c1",
        "\\x4",
        "\\u12",
        "\\u{110000}",
        "\\p{Greek}",  # scripts need "Script="
        "\\p{Script=L}",
        "\\p{L",
        "\\pL",
        "(?<x>a)(?<x>b)",
        "(?<1x>a)",
        "(?P<x>a)",
        "[\\B]",
    ],
)
def test_invalid_ecma_syntax_is_refused(pattern: str) -> None:
    with pytest.raises(ToolValidationUnavailable):
        translate_pattern(pattern)


def test_pattern_bound_counts_utf16_units() -> None:
    compile_pattern("a" * 512)
    compile_pattern("😀" * 256)  # 512 UTF-16 code units
    with pytest.raises(ToolValidationUnavailable, match="512"):
        compile_pattern("a" * 513)
    with pytest.raises(ToolValidationUnavailable, match="512"):
        compile_pattern("😀" * 256 + "a")


def test_refusal_messages_never_quote_the_pattern() -> None:
    canary = "CANARY_7f3a"
    for pattern in (f"({canary})\\1", f"{canary}(", f"(?={canary})", canary * 60):
        with pytest.raises(ToolValidationUnavailable) as caught:
            compile_pattern(pattern)
        assert canary not in str(caught.value)


def test_lone_surrogate_in_the_text_is_unavailable_not_a_guess() -> None:
    with pytest.raises(ToolValidationUnavailable):
        search("a", "a\ud800")


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        ("(a+)+$", False),
        ("^(a|aa)+$", False),
        ("(a*)*b", False),
        ("(a|a)*$", True),
        ("(.*a){20}", True),
    ],
)
def test_catastrophic_patterns_run_in_linear_time(pattern: str, matches: bool) -> None:
    assert search(pattern, "a" * 50_000 + "!") is matches


def test_not_a_word_boundary_is_refused_since_re2_reads_it_between_bytes() -> None:
    """ECMA: no \\B inside "é" (one character); RE2 would see one between its two bytes."""
    with pytest.raises(ToolValidationUnavailable):
        translate_pattern("a\\Ba")


def test_a_search_is_charged_by_the_bytes_re2_reads() -> None:
    """Characters outside ASCII are two to four bytes, and RE2's slowest path is per byte."""
    compiled = compile_pattern("(?:x|[^x]){900}z")
    charged: list[int] = []
    compiled.search("a" * 1000, charged.append)
    compiled.search("\U0001f600" * 1000, charged.append)
    assert charged[0] > 0 and abs(charged[1] - 4 * charged[0]) <= 4


# -- differential check against a real ECMA-262 engine, where one is installed ------------------

_ATOMS = [
    "a", "b", ".", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\B", "^", "$", "[a-c]",
    "[^a]", "[\\s\\d]", "[^\\S]", "[\\W\\d]", "\\u00e9", "\\u{1F600}", "\\x41", "\\n", "\\cA",
    "\\0", "[\\b]", "\\.", "[-a]", "[]", "[^]", "\\p{L}", "\\P{L}", "\\p{Nd}", "\\p{Script=Greek}",
    "é", "😀", " ", "\u2028", "\u00a0", "(?:a|b)", "(a|)", "(?<g>a)",
]  # fmt: skip
_QUANTIFIERS = ["", "", "*", "+", "?", "{2}", "{1,3}", "*?"]
_CHARS = [*"abcA1_ -./\\z\t\n\r\x0b\x08\x00", "\u2028", "\u00a0", "\ufeff", "é", "😀", "\u03b1"]


@pytest.mark.timeout(120)
@pytest.mark.skipif(shutil.which("node") is None, reason="no ECMA-262 engine (node) installed")
def test_translation_agrees_with_node_on_random_patterns() -> None:
    rng = random.Random(20240611)
    cases = []
    for _ in range(1500):
        pattern = "".join(
            rng.choice(_ATOMS) + rng.choice(_QUANTIFIERS) for _ in range(rng.randint(1, 4))
        )
        texts = ["".join(rng.choice(_CHARS) for _ in range(rng.randint(0, 5))) for _ in range(10)]
        cases.append({"p": pattern, "s": texts})
    script = (
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(cases.map(c => {"
        "  let r; try { r = new RegExp(c.p, 'u'); } catch (e) { return null; }"
        "  return c.s.map(x => r.test(x)); })));"
    )
    answer = subprocess.run(
        ["node", "-e", script], input=json.dumps(cases), capture_output=True, text=True, check=True
    )
    disagreements = []
    for case, expected in zip(cases, json.loads(answer.stdout), strict=True):
        try:
            compiled = compile_pattern(case["p"])
        except ToolValidationUnavailable:
            continue  # refusing is always allowed; matching differently never is
        assert expected is not None, f"accepted a pattern ECMA rejects: {case['p']!r}"
        ours = [compiled.search(text, lambda steps: None) for text in case["s"]]
        if ours != expected:
            disagreements.append(case["p"])
    assert disagreements == []
