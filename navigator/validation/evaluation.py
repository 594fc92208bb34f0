"""A compiled schema is a graph of nodes; this module evaluates one against an instance.

Each node holds, per Python type of JSON value, a *plan*: the keyword checks that apply to that
type, already in order, with ``type`` folded in at compile time. Evaluating a node is one dict
lookup and a loop over a few closures, which is what keeps a call's validation in microseconds.

A check answers ``None`` (holds) or a ``Failure``. Failures name the failing keyword and collect
the instance path on the way back up, so the success path never builds a pointer. Bounds are not
failures: exceeding one raises ``ToolValidationUnavailable`` straight out of the evaluation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeAlias

from navigator.errors import ToolValidationUnavailable
from navigator.validation.bounds import ValidationLimits

__all__ = [
    "ACCEPT",
    "JSON_TYPES",
    "REJECT",
    "VISIT_COST",
    "Check",
    "Failure",
    "Plan",
    "RefCell",
    "Run",
    "SchemaNode",
    "evaluate",
]

#: The Python types ``json.loads`` produces; every node has one plan for each.
JSON_TYPES: Final[tuple[type, ...]] = (str, int, float, bool, type(None), dict, list)


class Failure:
    """Why an instance fails: a keyword, and the path to where it failed (innermost first).

    ``keyword`` is ``None`` while the failure comes from a ``false`` schema; the applicator that
    reached it names itself instead (``properties``, ``items``, ``$ref`` …). ``member`` is the
    object member the failure is about when the schema does not declare it (a key the caller
    wrote: the validator repeats it only when it is a name the caller was given); ``allowed``
    is how many values an ``enum`` allows.
    """

    __slots__ = ("allowed", "keyword", "member", "segments")

    def __init__(
        self, keyword: str | None, *, member: str | None = None, allowed: int | None = None
    ) -> None:
        self.keyword = keyword
        self.member = member
        self.allowed = allowed
        self.segments: list[str | int] = []

    def blame(self, keyword: str) -> Failure:
        if self.keyword is None:
            self.keyword = keyword
        return self

    def under(self, segment: str | int) -> Failure:
        self.segments.append(segment)
        return self


class Run:
    """The budget of one validation: work steps spent so far, and the bounds."""

    __slots__ = ("max_depth", "max_steps", "steps")

    def __init__(self, limits: ValidationLimits) -> None:
        self.steps = 0
        self.max_steps = limits.max_steps
        self.max_depth = limits.max_depth

    def spend(self, steps: int) -> None:
        self.steps += steps
        if self.steps > self.max_steps:
            raise too_many_steps(self.max_steps)


def too_many_steps(limit: int) -> ToolValidationUnavailable:
    return ToolValidationUnavailable(f"Validating these arguments needs more than {limit} steps.")


def too_deep(limit: int) -> ToolValidationUnavailable:
    return ToolValidationUnavailable(
        f"Validating these arguments goes deeper than {limit} schema levels."
    )


Check: TypeAlias = Callable[[Any, int, Run], "Failure | None"]
#: Work steps one evaluation of the node costs for that type (one for the visit, one per
#: keyword), and its checks.
Plan: TypeAlias = tuple[int, tuple[Check, ...]]
#: Visiting a node is a step even when it checks nothing for that type (``{}``, ``true``, a node
#: with only string keywords meeting a number): else ``items``, ``contains`` or ``propertyNames``
#: under a tree of ``allOf`` and ``$ref`` could visit millions of members for free.
VISIT_COST: Final = 1


class SchemaNode:
    """One schema object (or boolean schema), compiled."""

    __slots__ = ("plans",)

    def __init__(self, plans: dict[type, Plan]) -> None:
        self.plans = plans


class RefCell:
    """Where a ``$ref`` points; filled in once the whole document is compiled (refs may loop)."""

    __slots__ = ("target",)

    def __init__(self) -> None:
        self.target: SchemaNode = ACCEPT


def evaluate(node: SchemaNode, instance: Any, depth: int, run: Run) -> Failure | None:
    """Apply ``node`` to ``instance``, ``depth`` subschema levels below the root."""
    if depth > run.max_depth:
        raise too_deep(run.max_depth)
    cost, checks = node.plans[type(instance)]
    run.steps += cost
    if run.steps > run.max_steps:
        raise too_many_steps(run.max_steps)
    for check in checks:
        failure = check(instance, depth, run)
        if failure is not None:
            return failure
    return None


def _false_schema(instance: Any, depth: int, run: Run) -> Failure | None:
    return Failure(None)


#: The ``true`` schema: no checks. The ``false`` schema: one check that always fails.
ACCEPT: Final = SchemaNode(dict.fromkeys(JSON_TYPES, (VISIT_COST, ())))
REJECT: Final = SchemaNode(dict.fromkeys(JSON_TYPES, (VISIT_COST + 1, (_false_schema,))))
