"""The meanings of the keywords of JSON's objects and arrays, each as a check built once.

As ``keywords``: every function takes a keyword's already-checked schema value and returns a
``Check`` closure. Failures name a key only when the schema itself names it (``properties``,
``required``): a key the caller made up is input, and goes into the pointer only when the
validator finds it is a name the caller was given (``Failure.member``).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from navigator.validation.evaluation import ACCEPT, Check, Failure, Run, SchemaNode, evaluate
from navigator.validation.keywords import value_key
from navigator.validation.patterns import Pattern

__all__ = [
    "contains",
    "dependent_required",
    "items",
    "max_items",
    "max_properties",
    "min_items",
    "min_properties",
    "object_members",
    "property_names",
    "required",
    "unique_items",
]


# -- objects -----------------------------------------------------------------------------------


def required(names: Sequence[str]) -> Check:
    def check(instance: dict[str, Any], depth: int, run: Run) -> Failure | None:
        run.spend(len(names))
        for name in names:
            if name not in instance:
                return Failure("required").under(name)  # the schema's name, not the caller's
        return None

    return check


def dependent_required(
    dependencies: dict[str, Sequence[str]], keyword: str = "dependentRequired"
) -> Check:
    """``keyword`` is the schema's own word for it (draft-07 writes ``dependencies``), which a
    failure names."""

    def check(instance: dict[str, Any], depth: int, run: Run) -> Failure | None:
        for trigger, names in dependencies.items():
            run.spend(1)
            if trigger in instance:
                run.spend(len(names))
                for name in names:
                    if name not in instance:
                        return Failure(keyword).under(name)
        return None

    return check


def min_properties(limit: int) -> Check:
    def check(instance: dict[str, Any], depth: int, run: Run) -> Failure | None:
        return None if len(instance) >= limit else Failure("minProperties")

    return check


def max_properties(limit: int) -> Check:
    def check(instance: dict[str, Any], depth: int, run: Run) -> Failure | None:
        return None if len(instance) <= limit else Failure("maxProperties")

    return check


def object_members(
    properties: dict[str, SchemaNode],
    patterns: Sequence[tuple[Pattern, SchemaNode]],
    additional: SchemaNode | None,
) -> Check:
    """``properties``, ``patternProperties`` and ``additionalProperties`` in one pass."""
    if additional is ACCEPT:
        additional = None

    def check(instance: dict[str, Any], depth: int, run: Run) -> Failure | None:
        run.spend(len(instance) * (1 + len(patterns)))
        for key, value in instance.items():
            declared = properties.get(key)
            if declared is not None:
                failure = evaluate(declared, value, depth + 1, run)
                if failure is not None:
                    return failure.blame("properties").under(key)
            matched = declared is not None
            for compiled, node in patterns:
                if compiled.search(key, run.spend):
                    matched = True
                    failure = evaluate(node, value, depth + 1, run)
                    if failure is not None:
                        if declared is None:
                            return Failure("patternProperties", member=key)
                        return failure.blame("patternProperties").under(key)
            if (
                not matched
                and additional is not None
                and evaluate(additional, value, depth + 1, run) is not None
            ):
                return Failure("additionalProperties", member=key)
        return None

    return check


def property_names(node: SchemaNode) -> Check:
    def check(instance: dict[str, Any], depth: int, run: Run) -> Failure | None:
        for key in instance:
            if evaluate(node, key, depth + 1, run) is not None:
                return Failure("propertyNames")
        return None

    return check


# -- arrays ------------------------------------------------------------------------------------


def items(
    prefix: Sequence[SchemaNode], prefix_keyword: str, rest: SchemaNode | None, rest_keyword: str
) -> Check:
    """``prefixItems`` then ``items`` (or draft-07's array ``items`` then ``additionalItems``)."""
    if rest is ACCEPT:
        rest = None
    count = len(prefix)

    def check(instance: list[Any], depth: int, run: Run) -> Failure | None:
        for index, value in enumerate(instance):
            if index < count:
                node, keyword = prefix[index], prefix_keyword
            elif rest is None:
                break
            else:
                node, keyword = rest, rest_keyword
            failure = evaluate(node, value, depth + 1, run)
            if failure is not None:
                return failure.blame(keyword).under(index)
        return None

    return check


def min_items(limit: int) -> Check:
    def check(instance: list[Any], depth: int, run: Run) -> Failure | None:
        return None if len(instance) >= limit else Failure("minItems")

    return check


def max_items(limit: int) -> Check:
    def check(instance: list[Any], depth: int, run: Run) -> Failure | None:
        return None if len(instance) <= limit else Failure("maxItems")

    return check


def unique_items(instance: list[Any], depth: int, run: Run) -> Failure | None:
    """Hash each item's equality key once: linear, where pairwise comparison is quadratic."""
    run.spend(len(instance))
    seen: set[Hashable] = set()
    for value in instance:
        key = value_key(value, run)
        if key in seen:
            return Failure("uniqueItems")
        seen.add(key)
    return None


def contains(node: SchemaNode, minimum: int, maximum: int | None, min_keyword: str) -> Check:
    def check(instance: list[Any], depth: int, run: Run) -> Failure | None:
        matches = 0
        for value in instance:
            if evaluate(node, value, depth + 1, run) is None:
                matches += 1
                if maximum is None and matches >= minimum:
                    return None
                if maximum is not None and matches > maximum:
                    return Failure("maxContains")
        return None if matches >= minimum else Failure(min_keyword)

    return check
