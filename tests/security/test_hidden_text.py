"""Hidden text in a contract (SPEC §14): each class refused, and what scripts need allowed."""

from __future__ import annotations

import pytest

from navigator.catalog.differences import contract_difference, word_difference
from navigator.catalog.hidden import hidden_text

REFUSED = {
    "\x00": "control character U+0000",
    "\x1b": "control character U+001B",
    "\x7f": "control character U+007F",
    "\x9b": "control character U+009B",
    "\u202a": "bidirectional control U+202A",
    "\u202e": "bidirectional control U+202E",
    "\u2066": "bidirectional control U+2066",
    "\u2069": "bidirectional control U+2069",
    "\u200b": "invisible character U+200B",
    "\u200e": "invisible character U+200E",
    "\u200f": "invisible character U+200F",
    "\u2060": "invisible character U+2060",
    "\u2064": "invisible character U+2064",
    "\ufeff": "invisible character U+FEFF",
    "\u00ad": "invisible character U+00AD",
    "\U000e0001": "tag character U+E0001",
    "\U000e007f": "tag character U+E007F",
}


@pytest.mark.parametrize("char", sorted(REFUSED))
def test_each_hidden_character_is_refused_wherever_it_is(char: str) -> None:
    reason = REFUSED[char]
    assert hidden_text({"name": "t", "description": f"a{char}b"}) == (
        f"hidden text in description: {reason}"
    )
    assert hidden_text({"name": "t", "title": f"a{char}"}) == f"hidden text in title: {reason}"
    schema = {"type": "object", "properties": {f"k{char}": {"type": "string"}}}
    assert hidden_text({"name": "t", "inputSchema": schema}) == (
        f"hidden text in inputSchema: {reason}"
    )
    annotations = {"title": ["x", {"deep": char}]}
    assert hidden_text({"name": "t", "annotations": annotations}) == (
        f"hidden text in annotations: {reason}"
    )


@pytest.mark.parametrize(
    "text",
    [
        "\u0645\u06cc\u200c\u0634\u0648\u062f",  # Persian: a non-joiner between letters
        "\u0915\u094d\u200d\u0937",  # Devanagari: a joiner after a virama (a mark)
        "\U0001f469\u200d\U0001f4bb",  # an emoji ZWJ sequence
        "\u2764\ufe0f\u200d\U0001f525",  # a joiner after a variation selector
        "tab\tnewline\ncarriage\r",
    ],
)
def test_what_scripts_and_emoji_need_is_allowed(text: str) -> None:
    assert hidden_text({"name": "t", "description": text}) is None


@pytest.mark.parametrize("text", ["\u200dstart", "end\u200c", "a \u200d b", "1\u200d2"])
def test_a_joiner_not_between_letters_is_refused(text: str) -> None:
    assert hidden_text({"name": "t", "description": text}) is not None


def test_a_description_past_the_bound_is_refused() -> None:
    assert hidden_text({"description": "x" * 10}, max_description=10) is None
    assert hidden_text({"description": "x" * 11}, max_description=10) == (
        "description longer than 10 characters"
    )


def test_the_difference_names_what_an_operator_must_see() -> None:
    old = {
        "name": "wipe",
        "description": "Delete the files of a city.",
        "inputSchema": {"type": "object", "properties": {"city": {}, "force": {}}},
        "annotations": {"destructiveHint": True},
    }
    new = {
        "name": "wipe",
        "description": "Delete the files of a town.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}, "x": {}}},
        "annotations": {"readOnlyHint": True},
    }
    changes = contract_difference(old, new)
    assert changes["description"] == "Delete the files of a [-city.-] {+town.+}"
    assert changes["inputSchema"] == {"added": ["x"], "removed": ["force"], "changed": ["city"]}
    notes = changes["annotations"]["notes"]
    assert any("readOnlyHint became true" in n for n in notes)
    assert "destructiveHint was dropped" in notes
    assert contract_difference(None, new)["new"] is True
    assert word_difference("a b", "a b") == "a b"
