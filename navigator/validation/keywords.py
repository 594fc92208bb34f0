"""The supported keywords' meanings (JSON Schema 2020-12), each as a check built once.

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
from typing import Any, Final

from navigator.validation.json_values import container_key, equality_key
from navigator.validation.nodes import ACCEPT, Check, Failure, RefCell, Run, SchemaNode, evaluate
from navigator.validation.patterns import Pattern

__all__ = [
    "all_of",
    "any_of",
    "const",
    "contains",
    "dependent_required",
    "enum",
    "if_then_else",
    "integral",
    "items",
    "lower_bound",
    "max_items",
    "max_length",
    "max_properties",
    "min_items",
    "min_length",
    "min_properties",
    "multiple_of",
    "not_",
    "object_members",
    "one_of",
    "pattern",
    "property_names",
    "reference",
    "required",
    "type_mismatch",
    "unique_items",
    "upper_bound",
]


def _key(value: Any, run: Run) -> Hashable:
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
        return None if _key(instance, run) in keys else Failure("enum", allowed=allowed)

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
        return None if _key(instance, run) == expected else Failure("const")

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


# -- strings -----------------------------------------------------------------------------------


def min_length(limit: int) -> Check:
    def check(instance: str, depth: int, run: Run) -> Failure | None:
        return None if len(instance) >= limit else Failure("minLength")  # code points

    return check


def max_length(limit: int) -> Check:
    def check(instance: str, depth: int, run: Run) -> Failure | None:
        return None if len(instance) <= limit else Failure("maxLength")

    return check


def pattern(compiled: Pattern) -> Check:
    def check(instance: str, depth: int, run: Run) -> Failure | None:
        return None if compiled.search(instance, run.spend) else Failure("pattern")

    return check


# -- numbers -----------------------------------------------------------------------------------


def lower_bound(limit: float, *, exclusive: bool, keyword: str) -> Check:
    """``minimum``/``exclusiveMinimum``; Python compares ``int`` and ``float`` exactly."""
    if exclusive:

        def check(instance: float, depth: int, run: Run) -> Failure | None:
            return None if instance > limit else Failure(keyword)

    else:

        def check(instance: float, depth: int, run: Run) -> Failure | None:
            return None if instance >= limit else Failure(keyword)

    return check


def upper_bound(limit: float, *, exclusive: bool, keyword: str) -> Check:
    if exclusive:

        def check(instance: float, depth: int, run: Run) -> Failure | None:
            return None if instance < limit else Failure(keyword)

    else:

        def check(instance: float, depth: int, run: Run) -> Failure | None:
            return None if instance <= limit else Failure(keyword)

    return check


#: ``multipleOf`` charges one work step per 2**16 (bit x bit) of its division's operands: about
#: 0.2 µs of Python's long division, measured at 340 µs for 14,281 bits by 7,143 (1,577 steps).
_DIVISION_SHIFT: Final = 16


def _decimal(number: float) -> tuple[int, int]:
    """A number as the decimal it was written as, ``(m, e)`` for ``m * 10**e``: ``0.0075`` is
    75 * 10**-4, not its binary float. Read from the float's shortest repr, in integers alone
    (a ``Decimal`` and a ``Fraction`` made of it cost about 2 µs a number more)."""
    if type(number) is int:
        return number, 0
    mantissa, _, exponent = repr(number).partition("e")
    whole, _, fraction = mantissa.partition(".")
    return int(whole + fraction), int(exponent or 0) - len(fraction)


def multiple_of(divisor: float) -> Check:
    """Exact decimal arithmetic: no float rounding, no overflow however large the numbers.

    ``a`` is a multiple of ``d`` when ``m_a * 10**(e_a - e_d)`` divides by ``m_d`` (the power
    moved to ``m_d`` when negative): integers all the way, no larger than a float's exponent
    range makes them. Exact is not free: JSON carries integers of 4,300 digits, and dividing one
    by a divisor of half as many takes about 340 µs, so a step a keyword would let a fan-out of
    such divisions run for seconds. Each division is charged first, by the product of its
    operands' sizes in bits (what long division costs); numbers of a few machine words cost
    nothing extra."""
    divisor_mantissa, divisor_exponent = _decimal(divisor)

    def check(instance: float, depth: int, run: Run) -> Failure | None:
        mantissa, exponent = _decimal(instance)
        shift = exponent - divisor_exponent
        if shift >= 0:
            dividend, modulus = mantissa * 10**shift, divisor_mantissa
        else:
            dividend, modulus = mantissa, divisor_mantissa * 10**-shift
        run.spend(((dividend.bit_length() + 64) * (modulus.bit_length() + 64)) >> _DIVISION_SHIFT)
        return None if dividend % modulus == 0 else Failure("multipleOf")

    return check


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
        key = _key(value, run)
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
