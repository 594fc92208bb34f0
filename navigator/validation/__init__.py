"""The navigator's bounded argument validator (SPEC §5; ADR 0006).

``verdict(schema, instance)`` answers ``"valid"``, ``"invalid"`` or ``"unavailable"``; ``call``
uses the same code through a ``SchemaCache`` of compiled schemas by contract digest.

    validator   the public surface: compile once per contract, validate per call
    compiler    walks a whole schema once, refusing what cannot be checked
    references  the document's $schema dialect, $id and $ref: resolved, loops refused
    keywords    what each keyword of any type and each in-place applicator means
    primitives  ... of strings and numbers; structures of objects and arrays
    evaluation  the compiled nodes, evaluated under the step, depth and size budgets
    patterns    ECMA-262 patterns translated for RE2 (linear time), charsets what classes match
    json_values JSON sizes and equality without recursion
    bounds      the six bounds (ValidationLimits)
"""

from __future__ import annotations

from navigator.validation.bounds import ValidationLimits
from navigator.validation.json_values import NOT_UNICODE, is_unicode_text
from navigator.validation.validator import (
    CompiledSchema,
    SchemaCache,
    Verdict,
    check_schema,
    compile_schema,
    compile_schema_uncached,
    validate,
    verdict,
)

__all__ = [
    "NOT_UNICODE",
    "CompiledSchema",
    "SchemaCache",
    "ValidationLimits",
    "Verdict",
    "check_schema",
    "compile_schema",
    "compile_schema_uncached",
    "is_unicode_text",
    "validate",
    "verdict",
]
