"""The supported keywords' meanings (JSON Schema 2020-12), each as a check built once: those of
any type and the in-place applicators here, ``primitives`` those of strings and numbers,
``structures`` those of objects and arrays.

Every function here takes a keyword's already-checked schema value and returns a ``Check``
closure. The schema compiler decides which keywords a node has and in which order; this module
only says what each one means. Failures name a keyword and, for object members, a key only when
the schema itself names it (``properties``, ``required``): a key the caller made up is input,
and goes into the pointer only when the validator finds it is a name the caller was given (see
``Failure.member``); otherwise the failure stays at the object, blamed on the keyword that
reached it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from navigator.validation.evaluation import (
    Check,
    Failure,
    RefCell,
    Run,
    SchemaNode,
    evaluate,
)
from navigator.validation.json_values import container_key, equality_key

__all__ = [
    "all_of",
    "any_of",
    "const",
    "enum",
    "if_then_else",
    "integral",
    "not_",
    "one_of",
    "reference",
    "type_mismatch",
    "value_key",
]


def value_key(value: Any, run: Run) -> Hashable:
    """A JSON value's equality key, its nodes spent from the run's budget if it is a container."""
    kind = type(value)
    if kind is dict or kind is list:
        key, nodes = container_key(value)
        run.spend(nodes)
        return key
    return equality_key(value)


# -- any type ----------------------------------------------------------------------------------


def type_mismatch(instance: Any, depth: int, run: Run) -> Failure | None:
    return Failure("type")


def integral(instance: float, depth: int, run: Run) -> Failure | None:
    """``integer`` admits a float with no fractional part (``1.0``)."""
    return None if instance.is_integer() else Failure("type")


def enum(values: Sequence[Any]) -> Check:
    keys = frozenset(equality_key(value) for value in values)
    has_containers = any(type(value) in (dict, list) for value in values)

    allowed = len(keys)

    def check(instance: Any, depth: int, run: Run) -> Failure | None:
        if not has_containers and type(instance) in (dict, list):
            return Failure("enum", allowed=allowed)
        return None if value_key(instance, run) in keys else Failure("enum", allowed=allowed)

    return check


def const(value: Any) -> Check:
    if type(value) in (str, int, float, type(None)):
        # A scalar other than a boolean: Python's == is JSON equality once booleans are kept out.
        def scalar(instance: Any, depth: int, run: Run) -> Failure | None:
            if instance == value and type(instance) is not bool:
                return None
            return Failure("const")

        return scalar
    expected = equality_key(value)

    def check(instance: Any, depth: int, run: Run) -> Failure | None:
        return None if value_key(instance, run) == expected else Failure("const")

    return check


def reference(cell: RefCell) -> Check:
    def check(instance: Any, depth: int, run: Run) -> Failure | None:
        failure = evaluate(cell.target, instance, depth + 1, run)  # the hop is one level
        return None if failure is None else failure.blame("$ref")

    return check


def all_of(nodes: Sequence[SchemaNode]) -> Check:
    def check(instance: Any, depth: int, run: Run) -> Failure | None:
        for node in nodes:
            failure = evaluate(node, instance, depth + 1, run)
            if failure is not None:
                return failure.blame("allOf")
        return None

    return check


def any_of(nodes: Sequence[SchemaNode]) -> Check:
    def check(instance: Any, depth: int, run: Run) -> Failure | None:
        for node in nodes:
            if evaluate(node, instance, depth + 1, run) is None:
                return None
        return Failure("anyOf")

    return check


def one_of(nodes: Sequence[SchemaNode]) -> Check:
    def check(instance: Any, depth: int, run: Run) -> Failure | None:
        passed = 0
        for node in nodes:
            if evaluate(node, instance, depth + 1, run) is None:
                passed += 1
                if passed > 1:
                    break
        return None if passed == 1 else Failure("oneOf")

    return check


def not_(node: SchemaNode) -> Check:
    def check(instance: Any, depth: int, run: Run) -> Failure | None:
        return Failure("not") if evaluate(node, instance, depth + 1, run) is None else None

    return check


def if_then_else(condition: SchemaNode, then: SchemaNode, otherwise: SchemaNode) -> Check:
    def check(instance: Any, depth: int, run: Run) -> Failure | None:
        if evaluate(condition, instance, depth + 1, run) is None:
            branch, keyword = then, "then"
        else:
            branch, keyword = otherwise, "else"
        failure = evaluate(branch, instance, depth + 1, run)
        return None if failure is None else failure.blame(keyword)

    return check
