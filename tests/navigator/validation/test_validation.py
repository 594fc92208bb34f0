"""The bounded argument validator (navigator/validation.py; SPEC §5, §9; ADR 0006)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from importlib.util import find_spec
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navigator.errors import InvalidArguments, ToolValidationUnavailable
from navigator.validation import (
    CompiledSchema,
    SchemaCache,
    check_schema,
    compile_schema,
    validate,
    verdict,
)
from navigator.validation.compiler import KNOWN_KEYWORDS
from navigator.validation.validator import compile_schema_uncached

CANARY = "CANARY_9d2e41"


def invalid(schema: Any, instance: Any) -> InvalidArguments:
    with pytest.raises(InvalidArguments) as caught:
        validate(schema, instance)
    return caught.value


def refused(schema: Any) -> ToolValidationUnavailable:
    with pytest.raises(ToolValidationUnavailable) as caught:
        check_schema(schema)
    return caught.value


def nested_properties(levels: int, leaf: Any) -> dict[str, Any]:
    schema: dict[str, Any] = leaf
    for _ in range(levels):
        schema = {"type": "object", "properties": {"n": schema}}
    return schema


def nested_instance(levels: int, leaf: Any) -> Any:
    instance = leaf
    for _ in range(levels):
        instance = {"n": instance}
    return instance


# -- keyword families --------------------------------------------------------------------------

KEYWORD_CASES: list[tuple[str, Any, Any, str]] = [
    # type: true is no number, 1.0 is an integer
    ("integer accepts 1.0", {"type": "integer"}, 1.0, "valid"),
    ("integer refuses 1.5", {"type": "integer"}, 1.5, "invalid"),
    ("integer refuses true", {"type": "integer"}, True, "invalid"),
    ("number refuses true", {"type": "number"}, False, "invalid"),
    ("boolean refuses 1", {"type": "boolean"}, 1, "invalid"),
    ("type list", {"type": ["string", "null"]}, None, "valid"),
    ("type list miss", {"type": ["string", "null"]}, 0, "invalid"),
    ("object is not array", {"type": "array"}, {}, "invalid"),
    # enum and const: JSON equality
    ("enum 1 == 1.0", {"enum": [1]}, 1.0, "valid"),
    ("enum true != 1", {"enum": [1]}, True, "invalid"),
    ("enum 1 != true", {"enum": [True]}, 1, "invalid"),
    ("enum nested 1.0", {"enum": [{"a": [1]}]}, {"a": [1.0]}, "valid"),
    ("enum [false] != [0]", {"enum": [[False]]}, [0], "invalid"),
    ("enum empty", {"enum": []}, None, "invalid"),
    ("const object key order", {"const": {"a": 1, "b": 2}}, {"b": 2, "a": 1}, "valid"),
    ("const {a: false} != {a: 0}", {"const": {"a": False}}, {"a": 0}, "invalid"),
    ("const null", {"const": None}, None, "valid"),
    ("const big float vs int", {"const": 9007199254740992}, 9007199254740992.0, "valid"),
    ("const beyond float precision", {"const": 9007199254740993}, 9007199254740992.0, "invalid"),
    # numbers
    ("minimum", {"minimum": 1.5}, 1.5, "valid"),
    ("minimum miss", {"minimum": 1.5}, 1, "invalid"),
    ("exclusiveMaximum number", {"exclusiveMaximum": 3}, 3, "invalid"),
    ("exclusiveMinimum number", {"exclusiveMinimum": 3}, 3.0001, "valid"),
    ("draft-04 exclusiveMaximum true", {"maximum": 3, "exclusiveMaximum": True}, 3, "invalid"),
    ("draft-04 exclusiveMaximum false", {"maximum": 3, "exclusiveMaximum": False}, 3, "valid"),
    ("draft-04 exclusiveMinimum true", {"minimum": 3, "exclusiveMinimum": True}, 3.5, "valid"),
    ("minimum ignores strings", {"minimum": 3}, "1", "valid"),
    ("huge integer vs float bound", {"maximum": 1e308}, 10**400, "invalid"),
    ("multipleOf small decimal", {"multipleOf": 0.0001}, 0.0075, "valid"),
    ("multipleOf small decimal miss", {"multipleOf": 0.0001}, 0.00751, "invalid"),
    ("multipleOf 0.1", {"multipleOf": 0.1}, 0.3, "valid"),
    ("multipleOf overflow", {"type": "integer", "multipleOf": 0.123456789}, 1e308, "invalid"),
    ("multipleOf huge integers", {"multipleOf": 7}, 7 * 10**400, "valid"),
    ("multipleOf float divisor", {"multipleOf": 1.5}, 4.5, "valid"),
    ("multipleOf integral float", {"multipleOf": 2.0}, 6, "valid"),
    # strings: code points
    ("maxLength counts code points", {"maxLength": 1}, "😀", "valid"),
    ("minLength counts code points", {"minLength": 2}, "😀", "invalid"),
    ("maxLength as 2.0", {"maxLength": 2.0}, "abc", "invalid"),
    ("pattern unanchored", {"pattern": "b+"}, "abbc", "valid"),
    ("pattern anchored miss", {"pattern": "^b+$"}, "abbc", "invalid"),
    ("pattern ignores numbers", {"pattern": "^x$"}, 12, "valid"),
    # objects
    ("required", {"required": ["a"]}, {"a": 1}, "valid"),
    ("required miss", {"required": ["a"]}, {"b": 1}, "invalid"),
    ("required ignores arrays", {"required": ["a"]}, [], "valid"),
    ("properties", {"properties": {"a": {"type": "string"}}}, {"a": 1}, "invalid"),
    ("properties __proto__", {"properties": {"__proto__": False}}, {"__proto__": 1}, "invalid"),
    ("additionalProperties false", {"additionalProperties": False}, {"a": 1}, "invalid"),
    (
        "additionalProperties skips declared and patterned keys",
        {"properties": {"a": {}}, "patternProperties": {"^x": {}}, "additionalProperties": False},
        {"a": 1, "xy": 2},
        "valid",
    ),
    (
        "additionalProperties schema",
        {"additionalProperties": {"type": "integer"}},
        {"a": 1, "b": "2"},
        "invalid",
    ),
    ("patternProperties", {"patternProperties": {"^i_": {"type": "integer"}}}, {"i_x": 1}, "valid"),
    (
        "patternProperties miss",
        {"patternProperties": {"^i_": {"type": "integer"}}},
        {"i_x": "1"},
        "invalid",
    ),
    ("propertyNames", {"propertyNames": {"maxLength": 2}}, {"ab": 1, "abc": 2}, "invalid"),
    ("propertyNames false on empty object", {"propertyNames": False}, {}, "valid"),
    ("minProperties", {"minProperties": 1}, {}, "invalid"),
    ("maxProperties", {"maxProperties": 1}, {"a": 1, "b": 2}, "invalid"),
    ("dependentRequired", {"dependentRequired": {"a": ["b"]}}, {"a": 1}, "invalid"),
    ("dependentRequired met", {"dependentRequired": {"a": ["b"]}}, {"a": 1, "b": 2}, "valid"),
    ("dependentRequired idle", {"dependentRequired": {"a": ["b"]}}, {"c": 1}, "valid"),
    # draft-07's spelling of dependentRequired (SPEC §5 accepts draft-07 spellings)
    ("dependencies", {"dependencies": {"a": ["b"]}}, {"a": 1}, "invalid"),
    ("dependencies met", {"dependencies": {"a": ["b"]}}, {"a": 1, "b": 2}, "valid"),
    # arrays
    ("items", {"items": {"type": "integer"}}, [1, 2, "3"], "invalid"),
    (
        "prefixItems then items",
        {"prefixItems": [{}], "items": {"type": "integer"}},
        ["x", 1],
        "valid",
    ),
    ("items false after prefix", {"prefixItems": [{}], "items": False}, [1, 2], "invalid"),
    ("draft-07 items array", {"items": [{"type": "string"}]}, ["a", 1], "valid"),
    ("draft-07 items array miss", {"items": [{"type": "string"}]}, [1], "invalid"),
    (
        "draft-07 additionalItems",
        {"items": [{}], "additionalItems": {"type": "integer"}},
        [1, "x"],
        "invalid",
    ),
    ("minItems", {"minItems": 1}, [], "invalid"),
    ("maxItems", {"maxItems": 1}, [1, 2], "invalid"),
    ("uniqueItems 1 and 1.0", {"uniqueItems": True}, [1, 1.0], "invalid"),
    ("uniqueItems 1 and true", {"uniqueItems": True}, [1, True], "valid"),
    ("uniqueItems 0 and false", {"uniqueItems": True}, [0, False], "valid"),
    ("uniqueItems objects", {"uniqueItems": True}, [{"a": 1, "b": 2}, {"b": 2, "a": 1}], "invalid"),
    ("uniqueItems nested", {"uniqueItems": True}, [[1], [True]], "valid"),
    ("uniqueItems false", {"uniqueItems": False}, [1, 1], "valid"),
    ("contains", {"contains": {"type": "integer"}}, ["a", 1], "valid"),
    ("contains miss", {"contains": {"type": "integer"}}, ["a"], "invalid"),
    ("contains empty", {"contains": {}}, [], "invalid"),
    ("minContains 0", {"contains": {"type": "integer"}, "minContains": 0}, [], "valid"),
    ("minContains 2", {"contains": {"const": 1}, "minContains": 2}, [1, 2], "invalid"),
    ("maxContains", {"contains": {"const": 1}, "maxContains": 1}, [1, 1], "invalid"),
    ("maxContains without contains", {"maxContains": 0}, [1], "valid"),
    # combinators
    ("allOf", {"allOf": [{"minimum": 1}, {"maximum": 3}]}, 4, "invalid"),
    ("anyOf", {"anyOf": [{"type": "string"}, {"minimum": 3}]}, 4, "valid"),
    ("anyOf miss", {"anyOf": [{"type": "string"}, {"minimum": 3}]}, 2, "invalid"),
    ("oneOf both", {"oneOf": [{"minimum": 1}, {"maximum": 3}]}, 2, "invalid"),
    ("oneOf one", {"oneOf": [{"minimum": 1}, {"maximum": 3}]}, 4, "valid"),
    ("not", {"not": {"type": "string"}}, "x", "invalid"),
    ("if then", {"if": {"minimum": 0}, "then": {"maximum": 9}}, 10, "invalid"),
    ("if else", {"if": {"minimum": 0}, "else": {"const": -1}}, -2, "invalid"),
    ("then without if", {"then": False}, 1, "valid"),
    # references
    ("$ref to $defs", {"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s"}, 1, "invalid"),
    (
        "$ref to definitions",
        {"definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s"},
        "a",
        "valid",
    ),
    (
        "$ref siblings apply (2020-12)",
        {"$defs": {"a": {"type": "array"}}, "$ref": "#/$defs/a", "maxItems": 1},
        [1, 2],
        "invalid",
    ),
    (
        "$ref with escaped pointer",
        {"$defs": {"a/b~c%d": {"type": "string"}}, "$ref": "#/$defs/a~1b~0c%25d"},
        1,
        "invalid",
    ),
    (
        "$ref to root",
        {"properties": {"n": {"$ref": "#"}}, "type": "object"},
        {"n": {"n": 1}},
        "invalid",
    ),
    ("$ref to false", {"$defs": {"no": False}, "$ref": "#/$defs/no"}, 1, "invalid"),
    (
        "$ref into nested $defs",
        {"$defs": {"a": {"$defs": {"b": {"const": 1}}}}, "$ref": "#/$defs/a/$defs/b"},
        1,
        "valid",
    ),
    # boolean schemas and annotations
    ("true", True, {"anything": [1]}, "valid"),
    ("false", False, None, "invalid"),
    (
        "annotations never reject",
        {
            "title": "t",
            "description": "d",
            "default": 5,
            "examples": [1],
            "$comment": "c",
            "format": "email",
            "readOnly": True,
            "writeOnly": False,
            "deprecated": True,
            "contentMediaType": "text/plain",
            "contentEncoding": "base64",
            "discriminator": {"propertyName": "k"},
            "x-vendor": {"anything": 1},
            "$schema": "http://json-schema.org/draft-07/schema#",
            "$id": "https://example.com/s",
        },
        "not an email",
        "valid",
    ),
]


@pytest.mark.parametrize(
    ("schema", "instance", "expected"),
    [
        pytest.param(schema, instance, expected, id=name)
        for name, schema, instance, expected in KEYWORD_CASES
    ],
)
def test_keyword_verdicts(schema: Any, instance: Any, expected: str) -> None:
    assert verdict(schema, instance) == expected


# -- refusals: everything unsupported or malformed, unused branches included ---------------------

REFUSED_SCHEMAS: list[tuple[str, Any]] = [
    ("unknown keyword", {"nullable": True}),
    ("unknown keyword in an unused $defs", {"$defs": {"x": {"maxLenght": 3}}}),
    ("unknown keyword in an untaken branch", {"anyOf": [True, {"frobnicate": 1}]}),
    ("unevaluatedProperties", {"unevaluatedProperties": False}),
    ("unevaluatedItems", {"unevaluatedItems": False}),
    ("dependentSchemas", {"dependentSchemas": {"a": {}}}),
    ("dependencies with a schema (dependentSchemas)", {"dependencies": {"a": ["b"], "c": {}}}),
    ("dependencies with true", {"dependencies": {"a": True}}),
    ("dependencies not an object", {"dependencies": ["a"]}),
    ("$anchor", {"$anchor": "a"}),
    ("$dynamicRef", {"$dynamicRef": "#a"}),
    ("$recursiveRef", {"$recursiveRef": "#"}),
    ("contentSchema", {"contentSchema": {}}),
    ("remote $ref", {"$ref": "http://localhost:1234/integer.json"}),
    ("relative $ref", {"$ref": "other.json#/$defs/a"}),
    ("anchor $ref", {"$ref": "#foo"}),
    ("$ref outside $defs", {"properties": {"a": {}}, "$ref": "#/properties/a"}),
    ("$ref to a missing def", {"$ref": "#/$defs/missing"}),
    ("$ref to a non-schema", {"$defs": {"a": {"enum": [{}]}}, "$ref": "#/$defs/a/enum/0"}),
    ("$ref bad escape", {"$defs": {"a": {}}, "$ref": "#/$defs/~2"}),
    ("$ref bad percent", {"$defs": {"a": {}}, "$ref": "#/$defs/%zz"}),
    ("$ref not a string", {"$ref": 1}),
    ("$id below the root", {"properties": {"a": {"$id": "https://example.com/a"}}}),
    ("$id with a fragment", {"$id": "#foo"}),
    ("custom meta-schema", {"$schema": "http://localhost:1234/my-meta.json"}),
    ("type unknown", {"type": "float"}),
    ("type empty list", {"type": []}),
    ("type null", {"type": None}),
    ("type duplicates", {"type": ["string", "string"]}),
    ("minLength negative", {"minLength": -1}),
    ("minLength fractional", {"minLength": 1.5}),
    ("maxItems a string", {"maxItems": "3"}),
    ("maxItems true", {"maxItems": True}),
    ("minimum a string", {"minimum": "0"}),
    ("multipleOf zero", {"multipleOf": 0}),
    ("required duplicates", {"required": ["a", "a"]}),
    ("required not strings", {"required": [1]}),
    ("dependentRequired not arrays", {"dependentRequired": {"a": "b"}}),
    ("allOf empty", {"allOf": []}),
    ("anyOf not a list", {"anyOf": {}}),
    ("items empty array", {"items": []}),
    ("items array beside prefixItems", {"items": [{}], "prefixItems": [{}]}),
    ("additionalItems without array items", {"items": {}, "additionalItems": False}),
    ("exclusiveMaximum true without maximum", {"exclusiveMaximum": True}),
    ("exclusiveMinimum a string", {"exclusiveMinimum": "1"}),
    ("uniqueItems a string", {"uniqueItems": "yes"}),
    ("enum not a list", {"enum": "a"}),
    ("pattern not a string", {"pattern": 1}),
    ("pattern with a back-reference", {"pattern": "(a)\\1"}),
    ("pattern with lookahead in an unused def", {"$defs": {"p": {"pattern": "(?=a)"}}}),
    ("patternProperties key not ECMA", {"patternProperties": {"(?P<x>a)": {}}}),
    ("properties not an object", {"properties": []}),
    ("subschema a number", {"properties": {"a": 1}}),
    ("title not a string", {"title": 1}),
    ("examples not an array", {"examples": 1}),
    ("$defs not an object", {"$defs": []}),
    ("root a string", "schema"),
    ("not JSON: NaN", {"const": float("nan")}),
    ("not JSON: a tuple", {"enum": (1, 2)}),
    ("not JSON: an integer key", {"properties": {1: {}}}),
]


@pytest.mark.parametrize(
    "schema", [pytest.param(schema, id=name) for name, schema in REFUSED_SCHEMAS]
)
def test_unsupported_or_malformed_schemas_are_unavailable(schema: Any) -> None:
    refused(schema)
    assert verdict(schema, {}) == "unavailable"


def test_refusal_names_a_known_keyword() -> None:
    assert "unevaluatedProperties" in refused({"unevaluatedProperties": False}).message
    assert "minLength" in refused({"minLength": -1}).message


def test_refusal_never_echoes_an_unknown_word_or_schema_content() -> None:
    schemas = [
        {CANARY: 1},
        {"properties": {CANARY: {CANARY: True}}},
        {"$ref": f"#/$defs/{CANARY}"},
        {"$ref": f"https://{CANARY}.example/s.json"},
        {"pattern": f"({CANARY})\\1"},
        {"type": CANARY},
        {"$schema": CANARY},
        {"title": CANARY, "minLength": -1},
    ]
    for schema in schemas:
        error = refused(schema)
        assert CANARY not in str(error)
        assert CANARY not in json.dumps(error.extra)


# -- where and why: pointers and keywords --------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "instance", "pointer", "keyword"),
    [
        ({"properties": {"a": {"items": {"maxLength": 2}}}}, {"a": ["abc"]}, "/a/0", "maxLength"),
        (
            {"properties": {"a/b": {"properties": {"c~d": {"type": "integer"}}}}},
            {"a/b": {"c~d": "x"}},
            "/a~1b/c~0d",
            "type",
        ),
        ({"type": "object"}, [], "", "type"),
        ({"required": ["a"]}, {}, "/a", "required"),  # the missing member, by the schema's name
        ({"properties": {"o": {"required": ["a/b"]}}}, {"o": {}}, "/o/a~1b", "required"),
        ({"properties": {"a": False}}, {"a": 1}, "/a", "properties"),
        ({"items": False}, [1], "/0", "items"),
        ({"prefixItems": [{"type": "string"}]}, [1], "/0", "type"),
        ({"items": [{}], "additionalItems": False}, [1, 2], "/1", "additionalItems"),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, 1, "", "anyOf"),
        ({"properties": {"a": {"oneOf": [{}, {}]}}}, {"a": 1}, "/a", "oneOf"),
        ({"not": {}}, 1, "", "not"),
        ({"if": {"type": "string"}, "then": {"minLength": 2}}, "a", "", "minLength"),
        ({"if": {"type": "string"}, "else": False}, 1, "", "else"),
        ({"allOf": [{"properties": {"a": {"minimum": 2}}}]}, {"a": 1}, "/a", "minimum"),
        ({"$defs": {"no": False}, "$ref": "#/$defs/no"}, 1, "", "$ref"),
        (
            {"$defs": {"n": {"maximum": 1}}, "properties": {"a": {"$ref": "#/$defs/n"}}},
            {"a": 2},
            "/a",
            "maximum",
        ),
        (False, 1, "", "false"),
        ({"contains": {"const": 1}}, [2], "", "contains"),
        ({"contains": {"const": 1}, "minContains": 2}, [1], "", "minContains"),
        ({"contains": {"const": 1}, "maxContains": 1}, [1, 1], "", "maxContains"),
        ({"uniqueItems": True}, [1, 1], "", "uniqueItems"),
        ({"multipleOf": 2}, 3, "", "multipleOf"),
        ({"exclusiveMinimum": 2}, 2, "", "exclusiveMinimum"),
        ({"minimum": 2, "exclusiveMinimum": True}, 2, "", "exclusiveMinimum"),
        ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, "/b", "dependentRequired"),
        # the schema's own word: a tool written for draft-07 says dependencies
        ({"dependencies": {"a": ["b"]}}, {"a": 1}, "/b", "dependencies"),
        ({"enum": [1]}, 2, "", "enum"),
        ({"const": 1}, 2, "", "const"),
        ({"pattern": "^a"}, "b", "", "pattern"),
    ],
)
def test_failure_names_pointer_and_keyword(
    schema: Any, instance: Any, pointer: str, keyword: str
) -> None:
    error = invalid(schema, instance)
    assert error.code == "invalid_arguments"
    assert error.extra == {"pointer": pointer, "keyword": keyword}
    assert keyword in error.message
    assert keyword in KNOWN_KEYWORDS | {"false"}


@pytest.mark.parametrize(
    ("schema", "instance", "pointer", "keyword"),
    [
        ({"additionalProperties": False}, {"made_up": 1}, "", "additionalProperties"),
        (
            {"additionalProperties": {"type": "integer"}},
            {"made_up": "x"},
            "",
            "additionalProperties",
        ),
        (
            {"patternProperties": {"^m": {"type": "integer"}}},
            {"made_up": "x"},
            "",
            "patternProperties",
        ),
        ({"propertyNames": {"maxLength": 3}}, {"made_up": 1}, "", "propertyNames"),
        (
            {
                "properties": {
                    "a": {"additionalProperties": {"properties": {"b": {"type": "integer"}}}}
                }
            },
            {"a": {"made_up": {"b": "x"}}},
            "/a",
            "additionalProperties",
        ),
        (
            {
                "properties": {
                    "a": {"items": {"additionalProperties": {"items": {"type": "integer"}}}}
                }
            },
            {"a": [{"made_up": ["x"]}]},
            "/a/0",
            "additionalProperties",
        ),
        (
            {"properties": {"k": {}}, "patternProperties": {"^k$": {"type": "integer"}}},
            {"k": "x"},
            "/k",
            "type",
        ),
    ],
)
def test_keys_the_schema_does_not_declare_never_reach_the_pointer(
    schema: Any, instance: Any, pointer: str, keyword: str
) -> None:
    assert invalid(schema, instance).extra == {"pointer": pointer, "keyword": keyword}


@pytest.mark.parametrize(
    ("schema", "instance", "names", "pointer"),
    [
        # a name the schema writes elsewhere: the caller put it at the wrong level
        (
            {"properties": {"o": {"properties": {"limit": {}}}}, "additionalProperties": False},
            {"limit": CANARY},
            frozenset(),
            "/limit",
        ),
        ({"required": ["a"], "additionalProperties": False}, {"a": 1}, frozenset(), "/a"),
        ({"additionalProperties": False}, {"limit": CANARY}, frozenset({"limit"}), "/limit"),
        (
            {"properties": {"o": {"additionalProperties": False}}},
            {"o": {"a/b": CANARY}},
            frozenset({"a/b"}),
            "/o/a~1b",
        ),
        (
            {"patternProperties": {"^l": {"type": "integer"}}},
            {"limit": CANARY},
            {"limit"},
            "/limit",
        ),
        # the key is the rejected value itself: never repeated
        ({"propertyNames": {"maxLength": 3}}, {"limit": 1}, frozenset({"limit"}), ""),
        ({"additionalProperties": False}, {CANARY: 1}, frozenset({"limit"}), ""),
    ],
)
def test_a_member_not_taken_is_pointed_at_when_its_name_was_given(
    schema: Any, instance: Any, names: set[str], pointer: str
) -> None:
    """Issue 29: an unexpected member is pointed at when its key is a name the caller was given
    (the schema's, or the walker tools'), and stays at its object when the caller made it up."""
    with pytest.raises(InvalidArguments) as raised:
        compile_schema(schema).validate(instance, given_names=frozenset(names))
    error = raised.value
    assert error.extra["pointer"] == pointer
    assert CANARY not in error.message + json.dumps(error.extra)
    if error.extra["keyword"] != "propertyNames":
        assert "leave it out" in error.message


def test_an_enum_failure_says_how_many_values_and_where_to_read_them() -> None:
    schema = {"properties": {"database": {"enum": ["main", "logs", CANARY]}}}
    error = invalid(schema, {"database": "mian"})
    assert error.extra == {"pointer": "/database", "keyword": "enum"}
    assert "one of the 3 values" in error.message
    assert "describe" in error.message
    assert CANARY not in error.message


def test_a_failure_names_the_next_step_it_is_given() -> None:
    with pytest.raises(InvalidArguments) as raised:
        compile_schema({"required": ["query"]}).validate({}, next_step="See search in tools/list")
    assert raised.value.message.endswith("See search in tools/list.")
    assert "describe" not in raised.value.message


CANARY_CASES: list[tuple[Any, Any]] = [
    ({"properties": {"a": {"maxLength": 3}}}, {"a": CANARY}),
    ({"properties": {"a": {"type": "integer"}}}, {"a": CANARY}),
    ({"additionalProperties": False}, {CANARY: CANARY}),
    ({"additionalProperties": {"type": "integer"}}, {CANARY: CANARY}),
    ({"patternProperties": {"^C": {"type": "integer"}}}, {CANARY: CANARY}),
    ({"propertyNames": {"maxLength": 3}}, {CANARY: 1}),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, {CANARY: 1}),
    ({"additionalProperties": {"properties": {"x": {"type": "integer"}}}}, {CANARY: {"x": CANARY}}),
    ({"additionalProperties": {"items": {"type": "integer"}}}, {CANARY: [CANARY]}),
    ({"items": {"type": "integer"}}, [1, CANARY]),
    ({"enum": ["a", "b"]}, CANARY),
    ({"const": {"k": "v"}}, {"k": CANARY}),
    ({"pattern": "^[0-9]+$"}, CANARY),
    ({"anyOf": [{"type": "integer"}, {"maxLength": 2}]}, CANARY),
    ({"not": {"type": "string"}}, CANARY),
    ({"uniqueItems": True}, [CANARY, CANARY]),
    ({"required": ["a"]}, {CANARY: CANARY}),
    ({"dependentRequired": {"a": ["b"]}}, {"a": CANARY, CANARY: 1}),
    ({"maxProperties": 0}, {CANARY: CANARY}),
    ({"contains": {"type": "integer"}}, [CANARY]),
    ({"type": "object"}, CANARY),
    (True, {"n": float("nan"), CANARY: CANARY}),  # not JSON data
]


@pytest.mark.parametrize(("schema", "instance"), CANARY_CASES)
def test_failures_never_echo_argument_values_or_made_up_keys(schema: Any, instance: Any) -> None:
    error = invalid(schema, instance)
    for text in (error.message, str(error), repr(error.args), json.dumps(error.extra)):
        assert CANARY not in text
    assert set(error.extra) == {"pointer", "keyword"}


def test_failure_message_quotes_no_schema_content() -> None:
    schema = {
        "title": CANARY,
        "properties": {"a": {"enum": [CANARY], "description": CANARY}},
        "$defs": {CANARY: {"const": CANARY}},
        "allOf": [{"pattern": CANARY}],
    }
    for instance in ({"a": "x"}, "x"):
        assert CANARY not in invalid(schema, instance).message


# -- bounds: each exceeded one answers "unavailable", quickly ------------------------------------


@pytest.mark.timeout(30)
def test_schema_nesting_of_32_levels_validates_and_33_is_refused() -> None:
    deep_ok = nested_properties(32, {"type": "integer"})
    assert verdict(deep_ok, nested_instance(32, 1)) == "valid"
    assert verdict(deep_ok, nested_instance(32, "x")) == "invalid"
    error = refused(nested_properties(33, {"type": "integer"}))
    assert "32" in error.message


LINKED_LIST = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}},
            "additionalProperties": False,
        }
    },
    "$ref": "#/$defs/node",
}


def linked_list(length: int, last: Any = 0) -> dict[str, Any]:
    node: dict[str, Any] = {"value": last}
    for _ in range(length - 1):
        node = {"value": 0, "next": node}
    return node


@pytest.mark.timeout(30)
def test_recursive_schema_validates_shallow_instances_and_refuses_deep_ones() -> None:
    check_schema(LINKED_LIST)
    assert verdict(LINKED_LIST, linked_list(5)) == "valid"
    assert verdict(LINKED_LIST, linked_list(5, last="x")) == "invalid"
    with pytest.raises(ToolValidationUnavailable, match="deeper than 32"):
        validate(LINKED_LIST, linked_list(40))


def nested(levels: int, leaf: Any = "leaf") -> dict[str, Any]:
    """Arguments ``levels`` deep: the arguments object, then arrays inside one another."""
    value: Any = leaf
    for _ in range(levels - 1):
        value = [value]
    return {"data": value}


@pytest.mark.parametrize("schema", [{}, {"type": "object"}, {"properties": {"data": True}}])
def test_arguments_nested_64_levels_validate_and_65_or_600_are_unavailable(schema: Any) -> None:
    """A schema that never looks inside ``data`` let arguments of any depth through, within the
    node bound: 600 levels passed, and crashed the digest after it (RecursionError)."""
    assert verdict(schema, nested(64)) == "valid"
    for levels in (65, 600):
        with pytest.raises(ToolValidationUnavailable, match="more than 64 levels deep"):
            validate(schema, nested(levels))


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"allOf": [{"$ref": "#"}]},
        {"anyOf": [{"type": "string"}, {"$ref": "#"}]},
        {"not": {"$ref": "#"}},
        {"if": {"$ref": "#"}},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}},
        {"$defs": {"a": {"$ref": "#/$defs/a"}}},  # unused, and still refused
        {
            "$defs": {
                "a": {"allOf": [{"$ref": "#/$defs/b"}]},
                "b": {"oneOf": [{"$ref": "#/$defs/a"}]},
            }
        },
    ],
)
def test_reference_loops_that_consume_no_input_are_refused(schema: Any) -> None:
    error = refused(schema)
    assert "loop" in error.message


def test_recursion_that_consumes_input_is_not_a_loop() -> None:
    check_schema({"properties": {"a": {"$ref": "#"}}, "items": {"$ref": "#"}})


@pytest.mark.timeout(30)
def test_huge_enum_is_refused_by_the_node_bound() -> None:
    error = refused({"enum": list(range(100_000))})
    assert "8192" in error.message


def _best_seconds(work: Callable[[], object], runs: int = 5) -> float:
    """The fastest of a few runs: the least disturbed by whatever else the machine is doing."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


@pytest.mark.timeout(30)
def test_large_enum_within_bounds_is_a_hashed_lookup() -> None:
    values = [f"v{index}" for index in range(8_000)]
    compiled = compile_schema({"enum": values})
    assert compiled.verdict("v7999") == "valid"
    assert compiled.verdict("nope") == "invalid"
    assert compiled.verdict({"an": "object"}) == "invalid"
    # Looking a member up among 8,000 costs what it costs among 8 (measured ~1.5x); a scan of
    # the list would cost a thousand times as much (measured ~140x). The bound only catches that.
    few = compile_schema({"enum": values[:8]})
    last = values[-8:] * 125
    first = values[:8] * 125
    ratio = _best_seconds(lambda: [compiled.verdict(value) for value in last]) / _best_seconds(
        lambda: [few.verdict(value) for value in first]
    )
    assert ratio < 20, ratio


@pytest.mark.timeout(30)
def test_unique_items_over_thousands_of_items_is_linear() -> None:
    schema = {"uniqueItems": True}
    objects = [{"id": index, "tag": "t"} for index in range(2_500)]
    assert verdict(schema, objects) == "valid"
    assert verdict(schema, [*objects[:-1], {"tag": "t", "id": 0.0}]) == "invalid"
    # The node bound keeps even pairwise comparison to seconds, so a time limit cannot tell it
    # from hashing; its cost next to one pass over the same items can (8,000 strings, measured:
    # hashing about the same, pairwise ~800x).
    items = [f"item {index}" for index in range(8_000)]
    unique = compile_schema(schema)
    one_pass = compile_schema({"items": {"type": "string"}})
    ratio = _best_seconds(lambda: unique.verdict(items)) / _best_seconds(
        lambda: one_pass.verdict(items)
    )
    assert ratio < 30, ratio


@pytest.mark.timeout(30)
def test_catastrophic_pattern_in_a_schema_runs_linear() -> None:
    schema = {"type": "string", "pattern": "(a+)+$"}
    assert verdict(schema, "a" * 50_000 + "!") == "invalid"
    assert verdict({"pattern": "^(a|a)*b$"}, "a" * 50_000) == "invalid"


@pytest.mark.timeout(30)
def test_pattern_search_that_could_run_long_is_charged_before_it_runs() -> None:
    # A DFA-hostile pattern makes RE2 simulate its whole program per character: seconds on this
    # string. Its worst-case cost is charged up front, so the budget answers first.
    text = "ab" * 131_000
    schema = {"pattern": "[ab]*a[ab]{400}c"}
    with pytest.raises(ToolValidationUnavailable, match="65536"):
        validate(schema, text)
    assert verdict(schema, text[:1_000]) == "invalid"  # short strings are still checked
    assert verdict({"patternProperties": {"[ab]*a[ab]{400}c": {}}}, {text: 1}) == "unavailable"


def test_pattern_longer_than_512_units_is_refused() -> None:
    check_schema({"pattern": "a" * 512})
    assert "512" in refused({"pattern": "a" * 513}).message
    assert "512" in refused({"patternProperties": {"b" * 513: {}}}).message


@pytest.mark.timeout(30)
def test_code_unit_bound_counts_schema_and_arguments_in_utf16() -> None:
    assert verdict({}, "x" * 262_144) == "valid"
    assert verdict({}, "x" * 262_145) == "unavailable"
    assert verdict({}, "😀" * 131_072) == "valid"  # two UTF-16 code units each
    assert verdict({}, "😀" * 131_072 + "x") == "unavailable"
    schema = {"description": "d" * 10}  # 21 code units: keys are strings too
    assert verdict(schema, "x" * (262_144 - 21)) == "valid"
    assert verdict(schema, "x" * (262_144 - 20)) == "unavailable"
    assert verdict({}, {"k" * 262_145: 1}) == "unavailable"  # keys are strings too
    assert "262144" in refused({"description": "d" * 262_145}).message


@pytest.mark.timeout(30)
def test_node_bound_counts_schema_and_arguments_together() -> None:
    assert verdict({}, [0] * 8_190) == "valid"  # 1 + 8,191 nodes
    assert verdict({}, [0] * 8_191) == "unavailable"  # 1 + 8,192 nodes: 8,193
    assert verdict({"items": {}}, [0] * 8_189) == "valid"
    assert verdict({"items": {}}, [0] * 8_190) == "unavailable"
    check_schema({"enum": [0] * 8_190})  # object, array and members: 8,192 nodes
    assert "8192" in refused({"enum": [0] * 8_191}).message


@pytest.mark.timeout(30)
def test_many_branch_any_of_exhausts_the_step_budget() -> None:
    schema = {"items": {"anyOf": [{"const": index} for index in range(1_000)]}}
    assert verdict(schema, [999] * 10) == "valid"  # about 1,000 steps an item
    assert verdict(schema, [-1]) == "invalid"
    with pytest.raises(ToolValidationUnavailable, match="65536"):
        validate(schema, [999] * 70)


@pytest.mark.timeout(30)
def test_exponential_reference_fan_out_exhausts_the_step_budget() -> None:
    defs: dict[str, Any] = {"d15": {"type": "string"}}
    for level in range(14, -1, -1):
        below = {"$ref": f"#/$defs/d{level + 1}"}
        defs[f"d{level}"] = {"anyOf": [below, below]}
    schema = {"$defs": defs, "$ref": "#/$defs/d0"}
    check_schema(schema)
    assert verdict(schema, "x") == "valid"  # the first branch all the way down
    assert verdict(schema, 1) == "unavailable"  # 2**15 paths all fail


@pytest.mark.timeout(30)
def test_multiple_of_over_integers_of_thousands_of_digits_is_charged_by_their_size() -> None:
    """JSON carries integers of 4,300 digits; dividing one by a divisor of half as many took
    about 300 µs for a keyword's one step, so a fan-out of 2**14 such divisions ran 3 s."""
    divisor = json.loads("1" + "0" * 2_148 + "1")
    number = json.loads("9" * 4_300)
    defs: dict[str, Any] = {"d14": {"multipleOf": divisor}}
    for level in range(13, -1, -1):
        below = {"$ref": f"#/$defs/d{level + 1}"}
        defs[f"d{level}"] = {"anyOf": [below, below]}
    schema = compile_schema({"$defs": defs, "$ref": "#/$defs/d0"})
    started = time.perf_counter()
    assert schema.verdict(number) == "unavailable"
    assert time.perf_counter() - started < 2
    assert schema.verdict(divisor * 3) == "valid"  # the first branch all the way down
    assert verdict({"multipleOf": divisor}, number) == "invalid"
    assert verdict({"multipleOf": 0.5}, number) == "valid"
    assert verdict({"items": {"multipleOf": 0.01}}, [19.99] * 8_000) == "valid"


def _tree(leaf: dict[str, Any], levels: int = 10) -> dict[str, Any]:
    """2**levels paths to ``leaf``, each through ``allOf`` and ``$ref``."""
    defs: dict[str, Any] = {f"a{level}": leaf for level in (levels,)}
    for level in range(levels):
        defs[f"a{level}"] = {"allOf": [{"$ref": f"#/$defs/a{level + 1}"}] * 2}
    return {"$defs": defs, "$ref": "#/$defs/a0"}


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "leaf",
    [
        {"items": {"minLength": 1}},  # checks nothing of a null
        {"contains": True, "maxContains": 10_000},
        {"items": {"title": "no assertion at all"}},
    ],
)
def test_a_member_visited_through_a_schema_that_checks_nothing_is_still_a_step(
    leaf: dict[str, Any],
) -> None:
    """Else a thousand paths to ``items`` visit 8,000 members each for free: a minute's work
    answered "valid" inside the budget."""
    assert verdict(_tree(leaf), [None] * 20) == "valid"
    with pytest.raises(ToolValidationUnavailable, match="65536"):
        validate(_tree(leaf), [None] * 8_000)


@pytest.mark.timeout(30)
def test_long_strings_outside_ascii_cost_an_equality_key_what_ascii_ones_do() -> None:
    """Keys copy strings; escaping them wrote six bytes a character, ten times a copy's work,
    which the steps (one per kibi code point) did not pay for."""
    schema = compile_schema({"allOf": [{"uniqueItems": True}] * 100})
    ascii_seconds = _best_seconds(lambda: schema.verdict([["a" * 250_000]]))
    other_seconds = _best_seconds(lambda: schema.verdict([["\u00e9" * 250_000]]))
    assert other_seconds / ascii_seconds < 4, other_seconds / ascii_seconds
    assert verdict({"uniqueItems": True}, [["\u00e9"], ["\u00e9"]]) == "invalid"
    assert verdict({"uniqueItems": True}, [{"a": "b"}, {"ab": ""}, ["a", "b"], ["ab"]]) == "valid"


@pytest.mark.timeout(30)
def test_patterns_together_are_bounded_by_their_program_size() -> None:
    """Compiling costs about a microsecond an RE2 instruction, and searching grows a cache with
    the program: 400 patterns of ``\\S{n}`` took ten seconds to compile, and were accepted."""
    one = {"properties": {"p": {"pattern": "\\S{500}"}}}
    check_schema(one)
    many = {"properties": {f"p{n}": {"pattern": f"\\S{{{500 + n}}}"} for n in range(7)}}
    assert "131072" in refused(many).message
    same = {"properties": {f"p{n}": {"pattern": "\\S{500}"} for n in range(20)}}
    check_schema(same)  # one pattern, compiled once however often the schema uses it


def test_the_schema_cache_holds_what_its_weight_allows_and_remembers_refusals() -> None:
    cache: SchemaCache[str] = SchemaCache(max_weight=3_000)
    small = cache.get("small", lambda: compile_schema_uncached({"type": "string"}))
    assert cache.lookup("small") is small
    cache.get(
        "large", lambda: compile_schema_uncached({"properties": {f"p{n}": {} for n in range(8)}})
    )
    assert cache.lookup("small") is None  # the least recently used went first
    assert cache.lookup("large") is not None
    with pytest.raises(ToolValidationUnavailable):
        cache.get("refused", lambda: compile_schema_uncached({"dependentSchemas": {}}))
    with pytest.raises(ToolValidationUnavailable):
        cache.lookup("refused")


@pytest.mark.timeout(30)
def test_deeply_nested_arguments_need_no_recursion() -> None:
    """Past the depth bound, arguments are unavailable before any evaluation; the evaluation
    itself (equality keys, ``uniqueItems``) does not recurse either, the bound lifted."""
    deep: Any = 0
    for _ in range(8_000):
        deep = [deep]
    assert verdict({}, deep) == "unavailable"

    def lifted(schema: Any) -> CompiledSchema:
        compiled = compile_schema_uncached(schema)
        compiled._limits = replace(compiled._limits, max_argument_depth=10_000)
        return compiled

    assert lifted({}).verdict(deep) == "valid"
    assert lifted({"const": [[0]]}).verdict(deep) == "invalid"
    assert lifted({"enum": [[[1]]]}).verdict(deep) == "invalid"
    shallower: Any = 0
    for _ in range(3_000):
        shallower = [shallower]
    assert lifted({"uniqueItems": True}).verdict([shallower, shallower]) == "invalid"
    assert lifted({"const": shallower}).verdict(shallower) == "valid"
    assert lifted({"const": shallower}).verdict([shallower]) == "invalid"


def test_lone_surrogate_checked_by_a_pattern_is_unavailable() -> None:
    assert verdict({"pattern": "a"}, "a\ud800") == "unavailable"
    assert verdict({"maxLength": 2}, "a\ud800") == "valid"


def test_arguments_that_are_not_json_data_are_invalid() -> None:
    for instance in ({"a": float("inf")}, {1: "a"}, ("a",), {"a": {1, 2}}):
        error = invalid(True, instance)
        assert error.extra == {"pointer": "", "keyword": "type"}


# -- the public surface --------------------------------------------------------------------------


def test_compiled_schema_is_reused_and_validates_repeatedly() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 64, "pattern": "^[a-z][a-z0-9_]*$"},
            "count": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    compiled = compile_schema(schema)
    assert isinstance(compiled, CompiledSchema)
    assert compile_schema(json.loads(json.dumps(schema))) is compiled  # equal schemas share it
    for _ in range(3):
        compiled.validate({"name": "disk_usage", "count": 3, "tags": ["a", "b"]})
        assert compiled.verdict({"name": "Disk"}) == "invalid"


def test_a_schema_integer_too_long_for_python_to_print_is_checked_not_a_crash() -> None:
    """The cache keys schemas by their JSON text, and ``json.dumps`` raised ``ValueError`` past
    4,300 digits, out of ``validate``, ``verdict`` and ``check_schema``."""
    huge = 10**5_000
    check_schema({"minimum": huge})
    assert verdict({"minimum": huge}, 1) == "invalid"
    assert verdict({"maximum": huge}, 1) == "valid"
    assert invalid({"const": huge}, huge + 1).extra == {"pointer": "", "keyword": "const"}


def test_verdict_words() -> None:
    assert verdict({"type": "string"}, "a") == "valid"
    assert verdict({"type": "string"}, 1) == "invalid"
    assert verdict({"unevaluatedItems": False}, []) == "unavailable"


def test_refused_schema_stays_refused_when_cached() -> None:
    for _ in range(2):
        refused({"dependentSchemas": {}})


# -- differential check against the reference implementation, where it is installed --------------

_KEYS = st.sampled_from(["a", "b", "c"])
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.5, 1.0, -2.0, 2.5])
    | st.sampled_from(["", "a", "ab", "ba", "abc"])
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)
_TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]
_ASSERTIONS = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(_TYPES)
        | st.lists(st.sampled_from(_TYPES), min_size=1, max_size=3, unique=True),
        "enum": st.lists(_VALUES, max_size=3),
        "const": _VALUES,
        "minimum": st.integers(-2, 2),
        "exclusiveMaximum": st.sampled_from([0, 1.5, 3]),
        "multipleOf": st.sampled_from([1, 2, 0.5]),
        "minLength": st.integers(0, 3),
        "maxLength": st.integers(0, 3),
        "pattern": st.sampled_from(["^a", "b$", "a|c", "^[ab]*$", "(ab)+"]),
        "required": st.lists(_KEYS, max_size=2, unique=True),
        "minProperties": st.integers(0, 2),
        "maxProperties": st.integers(0, 2),
        "dependentRequired": st.dictionaries(
            _KEYS, st.lists(_KEYS, max_size=2, unique=True), max_size=2
        ),
        "minItems": st.integers(0, 2),
        "maxItems": st.integers(0, 2),
        "uniqueItems": st.booleans(),
    },
)


def _applicators(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    some = st.lists(inner, min_size=1, max_size=2)
    return st.fixed_dictionaries(
        {},
        optional={
            "properties": st.dictionaries(_KEYS, inner, max_size=2),
            "patternProperties": st.dictionaries(st.sampled_from(["^a", "b"]), inner, max_size=2),
            "additionalProperties": inner,
            "propertyNames": inner,
            "prefixItems": some,
            "items": inner,
            "contains": inner,
            "minContains": st.integers(0, 2),
            "maxContains": st.integers(0, 2),
            "allOf": some,
            "anyOf": some,
            "oneOf": some,
            "not": inner,
            "if": inner,
            "then": inner,
            "else": inner,
        },
    ).flatmap(lambda applied: _ASSERTIONS.map(lambda asserted: {**asserted, **applied}))


_SCHEMAS = st.recursive(st.booleans() | _ASSERTIONS, _applicators, max_leaves=6)


@pytest.mark.timeout(300)
@pytest.mark.skipif(find_spec("jsonschema") is None, reason="the reference is not installed")
@settings(max_examples=150, deadline=None, database=None)
@given(schema=_SCHEMAS, instances=st.lists(_VALUES, min_size=1, max_size=4))
def test_verdicts_agree_with_the_reference_implementation(
    schema: Any, instances: list[Any]
) -> None:
    """Random schemas of the supported keywords (patterns and multipleOf chosen where Python's
    ``re`` and float division agree with ECMA and exact arithmetic) against ``jsonschema``."""
    import jsonschema

    reference = jsonschema.Draft202012Validator(schema)
    compiled = compile_schema(schema)
    for instance in instances:
        expected = "valid" if reference.is_valid(instance) else "invalid"
        assert compiled.verdict(instance) == expected, (schema, instance)
