"""Canonical JSON is RFC 8785's, byte for byte, whichever path writes it (SPEC §5)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from mesh.digests import arguments_digest, canonical_json

KEYS = st.one_of(
    st.text(max_size=8),
    st.text(alphabet=st.characters(codec="ascii"), max_size=8),
    st.sampled_from(["a", "b", "A", "_", "é", "\U0001f600", "\ue000", "\x00", '"', "\\"]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.integers(min_value=-(2**53) - 2, max_value=2**53 + 2),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1e17, max_value=1e17).map(math.floor).map(float),
    st.sampled_from(
        [0.0, -0.0, 1e-4, 9.99e-5, 1e16, 1e16 - 2, 0.1, 1e21, 5e-324, 1.7976931348623157e308]
    ),
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x7F)),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.tuples(inner, inner),
        st.dictionaries(KEYS, inner, max_size=5),
    ),
    max_leaves=30,
)


def reference(value: Any) -> bytes | type[Exception]:
    try:
        return bytes(rfc8785.dumps(value))
    except ValueError:
        return ValueError


def ours(value: Any) -> bytes | type[Exception]:
    try:
        return canonical_json(value)
    except ValueError:
        return ValueError


@settings(max_examples=1000, deadline=None)
@given(VALUES)
def test_canonical_json_is_rfc_8785(value: Any) -> None:
    assert ours(value) == reference(value)


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": [1, 2.5, "x"], "c": {"z": None, "y": True}},
        {"\U0001f600": 1, "\ue000": 2},  # UTF-16 order differs from code point order
        {"n": 2**53 - 1},
        {"n": 2**53},  # refused by RFC 8785
        {"f": 3.0, "g": -0.0, "h": 1e-5, "i": 1e16, "j": 123.456, "k": 1e21},
        {"s": 'quote " backslash \\ controls \x00\x1f\x7f\b\f\n\r\t \u2028 é \U0001f600'},
        {"s": "\ud800"},  # a lone surrogate: refused
        {"nan": math.nan},
        {"inf": math.inf},
        {1: "a non-string key"},
        [True, False, None, [], {}, ""],
        "top-level string",
        (1, 2),
    ],
)
def test_chosen_values_match_the_reference(value: Any) -> None:
    assert ours(value) == reference(value)


def test_arguments_digest_is_sha256_of_the_canonical_form() -> None:
    import hashlib

    args = {"sql": "select 1", "params": [1, 2.5], "limit": 10.0}
    expected = hashlib.sha256(bytes(rfc8785.dumps(args))).hexdigest()
    assert arguments_digest(args) == expected


@pytest.mark.parametrize("leaf", ["plain", 2**60], ids=["ours", "reference"])
def test_a_value_nested_deeper_than_python_recurses_has_no_digest(leaf: Any) -> None:
    """A ValueError the callers answer (a node's token check: rejected), not a RecursionError
    a thousand frames long, on either writer's path."""
    value: Any = leaf
    for _ in range(5_000):
        value = [value]
    with pytest.raises(rfc8785.CanonicalizationError, match="nested too deeply"):
        arguments_digest({"data": value})
