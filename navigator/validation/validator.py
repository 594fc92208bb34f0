"""The navigator's bounded JSON Schema argument validator (SPEC §5; ADR 0006).

Every call's arguments are checked against the tool's own schema before anything is forwarded
to a node. The validator is ours, not a library's, so that its bounds hold whatever a schema says
and no keyword is ever silently ignored:

- ``compile_schema`` reads a schema once (the navigator does it when a tool is registered) and
  refuses, with ``ToolValidationUnavailable``, anything it cannot check faithfully;
- ``CompiledSchema.validate`` checks one call's arguments in microseconds, raising
  ``InvalidArguments`` (a JSON Pointer and the failing keyword, never a value) or
  ``ToolValidationUnavailable`` when a bound is exceeded;
- ``validate``, ``verdict`` and ``check_schema`` do the same from a raw schema, compiling through
  a small cache keyed by the schema's canonical JSON.

The pieces: ``schema_compiler`` (what is refused, how keywords fold into nodes),
``schema_keywords`` (what each keyword means), ``schema_nodes`` (evaluation and its budget),
``patterns`` and ``pattern_charsets`` (ECMA-262 to RE2), ``json_values`` (sizes and JSON
equality), ``validation_limits`` (the bounds).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable
from typing import Any, Final, Generic, Literal, TypeVar

from navigator.caches import WeightedCache
from navigator.errors import InvalidArguments, ToolValidationUnavailable
from navigator.validation.bounds import DEFAULT_LIMITS, ValidationLimits
from navigator.validation.compiler import compile_document
from navigator.validation.evaluation import Failure, Run, SchemaNode, evaluate
from navigator.validation.json_values import Measure, measure

__all__ = [
    "READ_WITH_DESCRIBE",
    "CompiledSchema",
    "SchemaCache",
    "ValidationLimits",
    "Verdict",
    "check_schema",
    "compile_schema",
    "compile_schema_uncached",
    "validate",
    "verdict",
]

Verdict = Literal["valid", "invalid", "unavailable"]
K = TypeVar("K", bound=Hashable)

#: What the cache of ``compile_schema`` may hold, in ``CompiledSchema.weight`` (about bytes).
_CACHE_WEIGHT: Final = 64 << 20
#: Schemas nested deeper than this (in ``default``, say) skip the cache: ``json.dumps`` recurses.
_CACHE_MAX_JSON_DEPTH: Final = 256

_SCHEMA_NOT_JSON = "The tool's schema is not JSON data."
_SCHEMA_NODES = "The tool's schema has more than {limit} nodes."
_SCHEMA_UNITS = "The tool's schema has more than {limit} string code units."
_NODES = "The tool's schema and the arguments together have more than {limit} nodes."
_UNITS = "The tool's schema and the arguments together have more than {limit} string code units."
_DEPTH = "The arguments are nested more than {limit} levels deep."
_ARGUMENTS_NOT_JSON = "The arguments are not JSON data."
_FAILED = "The arguments fail the tool's schema at the pointer given ('{keyword}'): {why}. {next}."
#: What a failure of these keywords means, said for the value or member the pointer names.
_WHY: Final = {
    "required": "the member there is required and missing",
    "dependentRequired": "the member there is required beside another one given, and missing",
    "dependencies": "the member there is required beside another one given, and missing",
    "type": "the value there is not of the type the schema says",
    "const": "the value there is not the one value the schema allows",
    "minimum": "the value there is below the schema's minimum",
    "exclusiveMinimum": "the value there is not above the schema's minimum",
    "maximum": "the value there is above the schema's maximum",
    "exclusiveMaximum": "the value there is not below the schema's maximum",
    "minLength": "the text there is shorter than the schema allows",
    "maxLength": "the text there is longer than the schema allows",
    "pattern": "the text there does not match the schema's pattern",
}
_ENUM = "the value there is not one of the {allowed} values the schema allows"
_NOT_TAKEN = "the member there is not one this tool takes: leave it out"
#: An undeclared member whose key is not repeated: the pointer names the object that holds it.
_HOLDS_NOT_TAKEN = "the object there holds a member this tool does not take: leave it out"
_OTHERWISE = "the value there does not satisfy it"
#: The next step an ``invalid_arguments`` of a catalogued tool names.
READ_WITH_DESCRIBE: Final = "Read the tool's inputSchema with describe"


def _pointer(segments: list[str | int]) -> str:
    """RFC 6901 pointer from a failure's segments (innermost first)."""
    return "".join(
        "/" + (str(segment) if type(segment) is int else _escape(str(segment)))
        for segment in reversed(segments)
    )


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


class CompiledSchema:
    """A tool's schema, read and compiled once; ``validate`` is what each call pays.

    ``weight`` estimates the bytes it holds, for caches to bound their memory by: about 512 a
    schema value (its node, plan and checks; measured 420), one a string code unit, and 64 a
    pattern instruction (the RE2 program and the DFA cache its searches grow; measured 58).
    """

    __slots__ = ("_limits", "_names", "_nodes_left", "_root", "_units_left", "weight")

    def __init__(
        self,
        root: SchemaNode,
        size: Measure,
        limits: ValidationLimits,
        program: int = 0,
        names: frozenset[str] = frozenset(),
    ) -> None:
        self._root = root
        self._limits = limits
        #: The member names the schema itself writes: a failure may repeat these.
        self._names = names
        self._nodes_left = limits.max_nodes - size.nodes
        self._units_left = limits.max_code_units - size.code_units
        self.weight: int = 512 * size.nodes + size.code_units + 64 * program

    def validate(
        self,
        instance: Any,
        *,
        next_step: str = READ_WITH_DESCRIBE,
        given_names: frozenset[str] = frozenset(),
    ) -> None:
        """Raise ``InvalidArguments`` if ``instance`` fails the schema, or
        ``ToolValidationUnavailable`` if checking it would exceed a bound.

        The error's message ends with ``next_step``, where the caller reads the schema. A
        member the schema does not take is pointed at when its key is a name the caller was
        given — one the schema writes, or one of ``given_names`` — and never otherwise: a key
        the caller made up may be data (ADR 0035)."""
        size = measure(instance, self._nodes_left, self._units_left)
        if size is None:
            raise InvalidArguments(_ARGUMENTS_NOT_JSON, extra={"pointer": "", "keyword": "type"})
        if size.nodes > self._nodes_left:
            raise ToolValidationUnavailable(_NODES.format(limit=self._limits.max_nodes))
        if size.code_units > self._units_left:
            raise ToolValidationUnavailable(_UNITS.format(limit=self._limits.max_code_units))
        if size.depth > self._limits.max_argument_depth:
            raise ToolValidationUnavailable(_DEPTH.format(limit=self._limits.max_argument_depth))
        failure = evaluate(self._root, instance, 0, Run(self._limits))
        if failure is not None:
            keyword = failure.keyword or "false"  # the root schema is ``false`` itself
            member = failure.member
            segments: list[str | int] = failure.segments
            named = False
            if member is not None and (member in self._names or member in given_names):
                named, segments = True, [member, *segments]
            raise InvalidArguments(
                _FAILED.format(keyword=keyword, why=_why(failure, named), next=next_step),
                extra={"pointer": _pointer(segments), "keyword": keyword},
            )

    def verdict(self, instance: Any) -> Verdict:
        try:
            self.validate(instance)
        except InvalidArguments:
            return "invalid"
        except ToolValidationUnavailable:
            return "unavailable"
        return "valid"


def _why(failure: Failure, named: bool) -> str:
    if failure.member is not None:
        return _NOT_TAKEN if named else _HOLDS_NOT_TAKEN
    if failure.allowed == 1:
        return _WHY["const"]
    if failure.allowed is not None:
        return _ENUM.format(allowed=failure.allowed)
    return _WHY.get(failure.keyword or "", _OTHERWISE)


def _declared_names(schema: Any) -> frozenset[str]:
    """Every member name the schema writes in ``properties``, ``required`` and
    ``dependentRequired`` (``dependencies``), anywhere in it: names a failure may repeat, since
    the caller can read them with the schema. Iterative: a schema is nested as deep as it is
    led (its size is bounded before this runs)."""
    names: set[str] = set()
    stack = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
            continue
        if not isinstance(value, dict):
            continue
        lists = [value.get("required")]
        for keyword in ("properties", "dependentRequired", "dependencies"):
            found = value.get(keyword)
            if isinstance(found, dict):
                names.update(found)
                if keyword != "properties":
                    lists += found.values()
        for listed in lists:
            if isinstance(listed, list):
                names.update(name for name in listed if isinstance(name, str))
        stack.extend(value.values())
    return frozenset(names)


def _measure_schema(schema: Any, limits: ValidationLimits) -> Measure:
    size = measure(schema, limits.max_nodes, limits.max_code_units)
    if size is None:
        raise ToolValidationUnavailable(_SCHEMA_NOT_JSON)
    if size.nodes > limits.max_nodes:
        raise ToolValidationUnavailable(_SCHEMA_NODES.format(limit=limits.max_nodes))
    if size.code_units > limits.max_code_units:
        raise ToolValidationUnavailable(_SCHEMA_UNITS.format(limit=limits.max_code_units))
    return size


def _compile(schema: Any, size: Measure) -> CompiledSchema:
    root, program = compile_document(schema, DEFAULT_LIMITS)
    return CompiledSchema(root, size, DEFAULT_LIMITS, program, _declared_names(schema))


class SchemaCache(Generic[K]):
    """Compiled schemas, or the reason each was refused, by a key; the least recently used go
    first once their ``weight`` together passes ``max_weight`` (a refusal weighs a little)."""

    def __init__(self, max_weight: int) -> None:
        self._entries: WeightedCache[K, CompiledSchema | ToolValidationUnavailable] = WeightedCache(
            max_weight, _weight
        )

    def lookup(self, key: K) -> CompiledSchema | None:
        """The compiled schema held under ``key``, or None; raises ``ToolValidationUnavailable``,
        the same each time, for a schema that was refused."""
        entry = self._entries.lookup(key, None)
        if isinstance(entry, ToolValidationUnavailable):
            raise ToolValidationUnavailable(entry.message)
        return entry

    def get(self, key: K, compile: Callable[[], CompiledSchema]) -> CompiledSchema:
        """``lookup``, holding ``compile()``'s schema (or its refusal) when nothing is held."""
        compiled = self.lookup(key)
        if compiled is None:
            try:
                compiled = compile()
            except ToolValidationUnavailable as refused:
                self._entries.put(key, refused)
                raise
            self._entries.put(key, compiled)
        return compiled


def _weight(entry: CompiledSchema | ToolValidationUnavailable) -> int:
    return entry.weight if isinstance(entry, CompiledSchema) else 256


def compile_schema_uncached(schema: Any) -> CompiledSchema:
    """``compile_schema`` without its cache, for callers that keep their own (``SchemaCache``)."""
    return _compile(schema, _measure_schema(schema, DEFAULT_LIMITS))


class _CompileCache:
    """Compiled schemas by digest of their canonical JSON, for callers that hold only the schema.

    A digest rather than the text keeps the keys small however large the schemas are.
    """

    def __init__(self, max_weight: int) -> None:
        self._schemas: SchemaCache[bytes] = SchemaCache(max_weight)

    def compiled(self, schema: Any) -> CompiledSchema:
        size = _measure_schema(schema, DEFAULT_LIMITS)
        if size.depth > _CACHE_MAX_JSON_DEPTH:
            return _compile(schema, size)
        try:
            text = json.dumps(schema, sort_keys=True, separators=(",", ":"), allow_nan=False)
        except ValueError:  # an integer past Python's 4,300 digits for ``str``: no key, no cache
            return _compile(schema, size)
        digest = hashlib.sha256(text.encode("ascii")).digest()
        return self._schemas.get(digest, lambda: _compile(schema, size))


_CACHE: Final = _CompileCache(_CACHE_WEIGHT)


def compile_schema(schema: Any) -> CompiledSchema:
    """Read the whole schema once; raise ``ToolValidationUnavailable`` if any of it — unused
    branches included — is unsupported, malformed, or beyond a schema-side bound.

    Equal schemas share one compiled form (see ``_CompileCache``)."""
    return _CACHE.compiled(schema)


def check_schema(schema: Any) -> None:
    """Raise ``ToolValidationUnavailable`` unless every call to this tool can be checked."""
    compile_schema(schema)


def validate(schema: Any, instance: Any) -> None:
    """Check ``instance`` against ``schema``: ``InvalidArguments`` with a pointer and keyword, or
    ``ToolValidationUnavailable`` when the schema or a bound does not allow an answer."""
    compile_schema(schema).validate(instance)


def verdict(schema: Any, instance: Any) -> Verdict:
    """``validate`` as a word: ``"valid"``, ``"invalid"`` or ``"unavailable"``."""
    try:
        compiled = compile_schema(schema)
    except ToolValidationUnavailable:
        return "unavailable"
    return compiled.verdict(instance)
