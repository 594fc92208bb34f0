"""Reads a whole schema document once, refuses what cannot be checked, and compiles the rest.

Refusal is all-or-nothing and happens here, at registration, for the whole document — ``$defs``
nobody references and branches no instance reaches included — so that a tool is flagged
``tool_validation_unavailable`` when it is registered, not when an unlucky call walks into an
unsupported corner. Refused: unknown and unsupported keywords, malformed keyword values, ``$id``
below the root, ``$ref`` that is not a local pointer into ``#``, ``$defs`` or ``definitions``,
a reference loop that consumes no instance, nesting deeper than the depth bound, and patterns
without a faithful linear-time translation.

Messages name a keyword only when it is one we know; they never quote the schema's contents.
"""

from __future__ import annotations

from typing import Any, Final

from navigator.errors import ToolValidationUnavailable
from navigator.validation import keywords as kw
from navigator.validation import primitives, structures
from navigator.validation.bounds import ValidationLimits
from navigator.validation.evaluation import (
    ACCEPT,
    JSON_TYPES,
    REJECT,
    VISIT_COST,
    Check,
    Plan,
    RefCell,
    SchemaNode,
)
from navigator.validation.patterns import Pattern, compile_pattern
from navigator.validation.references import References, refuse_unknown_dialect

__all__ = ["KNOWN_KEYWORDS", "compile_document"]

_TYPE_NAMES: Final = frozenset(
    ("null", "boolean", "object", "array", "number", "string", "integer")
)
_SUPPORTED: Final = frozenset((
    "type", "enum", "const", "required", "properties", "additionalProperties",
    "patternProperties", "propertyNames", "minProperties", "maxProperties", "dependentRequired",
    "dependencies", "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "items", "prefixItems", "additionalItems", "minItems",
    "maxItems", "uniqueItems", "contains", "minContains", "maxContains", "allOf", "anyOf",
    "oneOf", "not", "if", "then", "else", "$ref",
))  # fmt: skip
#: Annotations and the JSON type their value must have (``None``: any value).
_ANNOTATIONS: Final[dict[str, type | None]] = {
    "title": str, "description": str, "$comment": str, "format": str, "contentMediaType": str,
    "contentEncoding": str, "readOnly": bool, "writeOnly": bool, "deprecated": bool,
    "examples": list, "default": None, "discriminator": None, "$schema": str, "$id": str,
    "$defs": dict, "definitions": dict,
}  # fmt: skip
_UNSUPPORTED: Final = frozenset((
    "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor",
    "$vocabulary", "unevaluatedProperties", "unevaluatedItems", "dependentSchemas",
    "contentSchema", "id", "extends", "disallow", "divisibleBy",
))  # fmt: skip
#: Keyword words a message may name: none of them is caller- or author-invented text.
KNOWN_KEYWORDS: Final = _SUPPORTED | frozenset(_ANNOTATIONS) | _UNSUPPORTED
# Keywords whose value is one subschema, and those whose value is a non-empty array of them.
_ONE_SCHEMA: Final = ("additionalProperties", "propertyNames", "contains", "not", "if", "then",
                      "else", "additionalItems")  # fmt: skip
_SCHEMA_ARRAYS: Final = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_MAPS: Final = ("properties", "patternProperties", "$defs", "definitions")
_COUNTS: Final = ("minLength", "maxLength", "minItems", "maxItems", "minProperties",
                  "maxProperties", "minContains", "maxContains")  # fmt: skip
_NUMBERS: Final = ("minimum", "maximum", "multipleOf")
#: The ``type`` name of each Python type (a float may still be an integer: see ``_plans``).
_TYPE_OF: Final[dict[type, str]] = {str: "string", int: "integer", float: "number",
                                    bool: "boolean", type(None): "null", dict: "object",
                                    list: "array"}  # fmt: skip
#: Which group of keywords applies to each Python type.
_KINDS: Final[dict[type, str]] = {str: "string", int: "number", float: "number", dict: "object",
                                  list: "array"}  # fmt: skip

_MALFORMED = "The tool's schema has a malformed '{keyword}'."
_NOT_A_SCHEMA = "The tool's schema has a subschema that is neither an object nor a boolean."
_UNKNOWN = "The tool's schema uses a keyword the navigator's validator does not know."
_UNSUPPORTED_KEYWORD = "The tool's schema uses '{keyword}', which the validator does not support."
_TOO_DEEP = "The tool's schema nests deeper than {limit} levels."
_PROGRAM = (
    "The tool's schema's patterns together are larger than the linear-time engine's bound of "
    "{limit} instructions."
)


def _refuse(message: str, keyword: str | None = None) -> ToolValidationUnavailable:
    return ToolValidationUnavailable(message.format(keyword=keyword))


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _is_count(value: Any) -> bool:
    """A non-negative integer; ``2.0`` counts, as JSON Schema's ``integer`` says."""
    kind = type(value)
    return (kind is int and value >= 0) or (kind is float and value >= 0 and value.is_integer())


def _unique_strings(value: Any) -> bool:
    return (
        type(value) is list
        and all(type(name) is str for name in value)
        and len(set(value)) == len(value)
    )


class _Compiler:
    def __init__(self, limits: ValidationLimits) -> None:
        self.limits = limits
        self.references = References()
        #: The document's patterns, each compiled once, and their RE2 instructions in all.
        self.patterns: dict[str, Pattern] = {}
        self.program = 0

    def pattern(self, source: str) -> Pattern:
        compiled = self.patterns.get(source)
        if compiled is None:
            compiled = compile_pattern(source, self.limits.max_pattern_units)
            self.program += compiled.size
            if self.program > self.limits.max_pattern_program:
                raise _refuse(_PROGRAM.format(limit=self.limits.max_pattern_program))
            self.patterns[source] = compiled
        return compiled

    def schema(self, value: Any, pointer: tuple[str, ...], depth: int) -> SchemaNode:
        if depth > self.limits.max_depth:
            raise _refuse(_TOO_DEEP.format(limit=self.limits.max_depth))
        if value is True:
            node = ACCEPT
        elif value is False:
            node = REJECT
        elif type(value) is dict:
            node = self._object(value, pointer, depth)
        else:
            raise _refuse(_NOT_A_SCHEMA)
        self.references.positions[pointer] = node
        return node

    def _object(self, schema: dict[str, Any], pointer: tuple[str, ...], depth: int) -> SchemaNode:
        self._refuse_unknown(schema, pointer)

        def sub(value: Any, *tokens: str) -> SchemaNode:
            return self.schema(value, pointer + tokens, depth + 1)

        subs: dict[str, Any] = {}
        for key in _ONE_SCHEMA:
            if key in schema:
                subs[key] = sub(schema[key], key)
        for key in _SCHEMA_ARRAYS:
            if key in schema:
                value = schema[key]
                if type(value) is not list or not value:
                    raise _refuse(_MALFORMED, key)
                subs[key] = [sub(item, key, str(index)) for index, item in enumerate(value)]
        for key in _SCHEMA_MAPS:
            if key in schema:
                if type(schema[key]) is not dict:
                    raise _refuse(_MALFORMED, key)
                subs[key] = {name: sub(item, key, name) for name, item in schema[key].items()}
        if "items" in schema:
            value = schema["items"]
            if type(value) is list and value:
                subs["items"] = [sub(item, "items", str(index)) for index, item in enumerate(value)]
            elif type(value) is list:
                raise _refuse(_MALFORMED, "items")
            else:
                subs["items"] = sub(value, "items")
        return self._node(schema, subs)

    def _refuse_unknown(self, schema: dict[str, Any], pointer: tuple[str, ...]) -> None:
        """Refuse unknown and unsupported words, and annotations of the wrong JSON type."""
        for key, value in schema.items():
            if key in _SUPPORTED or key.startswith("x-"):
                continue
            if key not in _ANNOTATIONS:
                raise _refuse(_UNSUPPORTED_KEYWORD if key in _UNSUPPORTED else _UNKNOWN, key)
            expected = _ANNOTATIONS[key]
            if expected is not None and type(value) is not expected:
                raise _refuse(_MALFORMED, key)
        refuse_unknown_dialect(schema, pointer)

    def _node(self, schema: dict[str, Any], subs: dict[str, Any]) -> SchemaNode:
        """Check the assertion values and fold the keywords into one plan per JSON type."""
        for key in _COUNTS:
            if key in schema and not _is_count(schema[key]):
                raise _refuse(_MALFORMED, key)
        for key in _NUMBERS:
            if key in schema and not _is_number(schema[key]):
                raise _refuse(_MALFORMED, key)
        if "multipleOf" in schema and schema["multipleOf"] <= 0:
            raise _refuse(_MALFORMED, "multipleOf")
        generic: list[Check] = []
        applicators: list[Check] = []
        by_kind: dict[str, list[Check]] = {"string": [], "number": [], "object": [], "array": []}
        if "enum" in schema:
            if type(schema["enum"]) is not list:
                raise _refuse(_MALFORMED, "enum")
            generic.append(kw.enum(schema["enum"]))
        if "const" in schema:
            generic.append(kw.const(schema["const"]))
        self._strings(schema, by_kind["string"])
        self._numbers(schema, by_kind["number"])
        self._objects(schema, subs, by_kind["object"])
        self._arrays(schema, subs, by_kind["array"])
        in_place: list[SchemaNode | RefCell] = []
        if "$ref" in schema:
            cell = self.references.cell(schema["$ref"])
            applicators.append(kw.reference(cell))
            in_place.append(cell)
        for key, build in (("allOf", kw.all_of), ("anyOf", kw.any_of), ("oneOf", kw.one_of)):
            if key in subs:
                applicators.append(build(subs[key]))
                in_place.extend(subs[key])
        if "not" in subs:
            applicators.append(kw.not_(subs["not"]))
            in_place.append(subs["not"])
        if "if" in subs:  # without "if", "then" and "else" have no effect (2020-12)
            then, otherwise = subs.get("then", ACCEPT), subs.get("else", ACCEPT)
            applicators.append(kw.if_then_else(subs["if"], then, otherwise))
            in_place.extend((subs["if"], then, otherwise))
        node = SchemaNode(self._plans(schema, generic, by_kind, applicators))
        if in_place:
            self.references.in_place[node] = in_place
        return node

    @staticmethod
    def _plans(
        schema: dict[str, Any],
        generic: list[Check],
        by_kind: dict[str, list[Check]],
        applicators: list[Check],
    ) -> dict[type, Plan]:
        """One plan per Python type, with ``type`` decided at compile time where it can be."""
        names = schema.get("type")
        if "type" in schema:
            names = [names] if type(names) is str else names
            if (
                type(names) is not list
                or not names
                or not all(type(name) is str and name in _TYPE_NAMES for name in names)
                or len(set(names)) != len(names)
            ):
                raise _refuse(_MALFORMED, "type")
        plans: dict[type, Plan] = {}
        for python_type in JSON_TYPES:
            checks = [*generic, *by_kind.get(_KINDS.get(python_type, ""), ()), *applicators]
            if names is None:
                plans[python_type] = (VISIT_COST + len(checks), tuple(checks))
                continue
            allowed = _TYPE_OF[python_type] in names or (python_type is int and "number" in names)
            if python_type is float and not allowed and "integer" in names:
                checks.insert(0, kw.integral)
                plans[python_type] = (VISIT_COST + len(checks), tuple(checks))
            elif allowed:
                plans[python_type] = (VISIT_COST + len(checks) + 1, tuple(checks))
            else:
                plans[python_type] = (VISIT_COST + 1, (kw.type_mismatch,))
        return plans

    def _strings(self, schema: dict[str, Any], checks: list[Check]) -> None:
        if "minLength" in schema:
            checks.append(primitives.min_length(int(schema["minLength"])))
        if "maxLength" in schema:
            checks.append(primitives.max_length(int(schema["maxLength"])))
        if "pattern" in schema:
            if type(schema["pattern"]) is not str:
                raise _refuse(_MALFORMED, "pattern")
            source = schema["pattern"]
            checks.append(primitives.pattern(self.pattern(source)))

    @staticmethod
    def _numbers(schema: dict[str, Any], checks: list[Check]) -> None:
        for bound, exclusive_key, build in (
            ("minimum", "exclusiveMinimum", primitives.lower_bound),
            ("maximum", "exclusiveMaximum", primitives.upper_bound),
        ):
            exclusive = schema.get(exclusive_key)
            if type(exclusive) is bool:  # draft-04: a flag on its sibling bound
                if bound not in schema:
                    raise _refuse(_MALFORMED, exclusive_key)
                keyword = exclusive_key if exclusive else bound
                checks.append(build(schema[bound], exclusive=exclusive, keyword=keyword))
                continue
            if bound in schema:
                checks.append(build(schema[bound], exclusive=False, keyword=bound))
            if exclusive_key in schema:
                if not _is_number(exclusive):
                    raise _refuse(_MALFORMED, exclusive_key)
                checks.append(build(schema[exclusive_key], exclusive=True, keyword=exclusive_key))
        if "multipleOf" in schema:
            checks.append(primitives.multiple_of(schema["multipleOf"]))

    def _objects(self, schema: dict[str, Any], subs: dict[str, Any], checks: list[Check]) -> None:
        if "required" in schema:
            if not _unique_strings(schema["required"]):
                raise _refuse(_MALFORMED, "required")
            checks.append(structures.required(schema["required"]))
        # draft-07's "dependencies" is "dependentRequired" where its values are names, and
        # "dependentSchemas" (not supported) where they are schemas
        for keyword in ("dependentRequired", "dependencies"):
            if keyword not in schema:
                continue
            value = schema[keyword]
            if type(value) is not dict:
                raise _refuse(_MALFORMED, keyword)
            if keyword == "dependencies" and any(type(v) in (dict, bool) for v in value.values()):
                raise _refuse(_UNSUPPORTED_KEYWORD, keyword)
            if not all(map(_unique_strings, value.values())):
                raise _refuse(_MALFORMED, keyword)
            checks.append(structures.dependent_required(value, keyword))
        if "minProperties" in schema:
            checks.append(structures.min_properties(int(schema["minProperties"])))
        if "maxProperties" in schema:
            checks.append(structures.max_properties(int(schema["maxProperties"])))
        if {"properties", "patternProperties", "additionalProperties"} & subs.keys():
            patterns = [
                (self.pattern(source), node)
                for source, node in subs.get("patternProperties", {}).items()
            ]
            members = structures.object_members(
                subs.get("properties", {}), patterns, subs.get("additionalProperties")
            )
            checks.append(members)
        if "propertyNames" in subs:
            checks.append(structures.property_names(subs["propertyNames"]))

    @staticmethod
    def _arrays(schema: dict[str, Any], subs: dict[str, Any], checks: list[Check]) -> None:
        items = subs.get("items")
        if type(items) is list:  # draft-07 array form: it is prefixItems, additionalItems is items
            if "prefixItems" in subs:
                raise _refuse(_MALFORMED, "items")
            checks.append(
                structures.items(items, "items", subs.get("additionalItems"), "additionalItems")
            )
        elif "additionalItems" in subs:  # no effect in draft-07, no meaning in 2020-12
            raise _refuse(_UNSUPPORTED_KEYWORD, "additionalItems")
        elif items is not None or "prefixItems" in subs:
            checks.append(
                structures.items(subs.get("prefixItems", []), "prefixItems", items, "items")
            )
        if "minItems" in schema:
            checks.append(structures.min_items(int(schema["minItems"])))
        if "maxItems" in schema:
            checks.append(structures.max_items(int(schema["maxItems"])))
        if "uniqueItems" in schema:
            if type(schema["uniqueItems"]) is not bool:
                raise _refuse(_MALFORMED, "uniqueItems")
            if schema["uniqueItems"]:
                checks.append(structures.unique_items)
        if "contains" in subs:  # without "contains", minContains and maxContains have no effect
            minimum = int(schema.get("minContains", 1))
            maximum = int(schema["maxContains"]) if "maxContains" in schema else None
            if minimum or maximum is not None:
                min_keyword = "minContains" if "minContains" in schema else "contains"
                checks.append(structures.contains(subs["contains"], minimum, maximum, min_keyword))


def compile_document(schema: Any, limits: ValidationLimits) -> tuple[SchemaNode, int]:
    """Compile a schema document whose size is already within bounds; refuse what is not
    supported. Returns the root node and the RE2 instructions of its patterns."""
    compiler = _Compiler(limits)
    root = compiler.schema(schema, (), 0)
    compiler.references.resolve()
    return root, compiler.program
