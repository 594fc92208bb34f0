"""The one grant evaluator (SPEC §4), used by ``seats``, ``search``, ``describe`` and ``call``.

Rules, in order: no applicable ``allow``, no call; a row naming the exact principal beats a ``*``
row; among rows of the same principal the most specific target wins (fewest ``*``, then the
leftmost exact segment); at equal rank ``deny`` wins. A row applies only when the caller holds all
of its scopes; ``*`` applies a row to every such caller and never grants a scope. ``mesh:admin``
bypasses nothing.

Sorting the applicable rows by (exact principal first, specificity, deny first) turns all of that
into "the first row whose target matches decides", which is what ``Permissions.decide`` does.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from typing import Any

from navigator.addresses import Pattern, parse_pattern, parse_tool_address
from navigator.errors import InvalidAddress, RegistryUnavailable
from registry import GrantRecord, GrantSnapshot

__all__ = ["Caller", "Decision", "Permissions", "compile_permissions", "explain"]

EFFECTS = ("allow", "deny")
WILDCARD_PRINCIPAL = "*"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: a principal and the scopes it holds (from its token).

    ``grants`` is the principal's grant snapshot when it was read from the registry together with
    the token, in the same transaction, for this one request; ``None`` means "read them now".
    """

    principal: str
    scopes: frozenset[str]
    grants: GrantSnapshot | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    #: The row that decided, or ``None`` when no row applies (default deny).
    row: GrantRecord | None


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: Pattern
    allow: bool
    row: GrantRecord


#: Tools (role and name) whose holders' decisions one request keeps.
_DECIDED_TOOLS = 4096


class Permissions:
    """A caller's grants compiled from one snapshot: cheap to ask many times within one request."""

    def __init__(self, caller: Caller, snapshot: GrantSnapshot, rules: list[_Rule]) -> None:
        self.caller = caller
        self.revision = snapshot.revision
        self._rules = rules
        self._any_allow = any(rule.allow for rule in rules)
        self._by_tool: dict[tuple[str, str], tuple[bool, dict[str, bool]]] = {}

    @functools.cached_property
    def rows_fingerprint(self) -> str:
        """Binds cursors to the rows observed (SPEC §3 Cursors): ids and row revisions. Computed
        when a listing asks for it; a call never does."""
        return hashlib.sha256(
            ",".join(f"{r.row.id}:{r.row.revision}" for r in self._rules).encode()
        ).hexdigest()

    def decide(self, holder: str, role: str, tool: str) -> Decision:
        for rule in self._rules:
            if rule.pattern.matches(holder, role, tool):
                return Decision(rule.allow, rule.row)
        return Decision(False, None)

    def decide_all(self, holder: str, role: str) -> Decision | None:
        """The decision every tool at ``holder/role`` gets, or ``None`` when a rule naming some
        of its tools comes before any rule that decides them all: then ask tool by tool."""
        for rule in self._rules:
            pattern = rule.pattern
            if (pattern.holder is None or pattern.holder == holder) and (
                pattern.role is None or pattern.role == role
            ):
                return None if pattern.tool is not None else Decision(rule.allow, rule.row)
        return Decision(False, None)

    def permits(self, address: str) -> bool:
        """``decide(...).allowed`` for an address, asked for every holder of a tool at once: a
        search meets one tool on up to every machine of the mesh."""
        if not self._any_allow:
            return False
        holder, role, tool = address.split("/", 2)
        allowed, by_holder = self._by_tool.get((role, tool)) or self._holders_of(role, tool)
        return by_holder.get(holder, allowed)

    def permits_every_holder(self, role: str, tool: str) -> bool | None:
        """Whether ``permits`` allows ``*/role/tool`` on every holder (True) or on none (False);
        ``None`` when it depends on the holder."""
        allowed, by_holder = self._holders_of(role, tool)
        return allowed if all(verdict is allowed for verdict in by_holder.values()) else None

    def _holders_of(self, role: str, tool: str) -> tuple[bool, dict[str, bool]]:
        """How the rules decide ``*/role/tool``: the decision of the holders that rules name
        before any rule that names no holder, and that rule's for every other holder."""
        decided = self._by_tool.get((role, tool))
        if decided is None:
            allowed, by_holder = False, dict[str, bool]()
            for rule in self._rules:
                pattern = rule.pattern
                if (pattern.role is None or pattern.role == role) and (
                    pattern.tool is None or pattern.tool == tool
                ):
                    if pattern.holder is None:
                        allowed = rule.allow
                        break
                    by_holder.setdefault(pattern.holder, rule.allow)
            decided = (allowed, by_holder)
            if len(self._by_tool) < _DECIDED_TOOLS:
                self._by_tool[(role, tool)] = decided
        return decided

    @functools.cached_property
    def reach(self) -> tuple[Pattern, ...] | None:
        """Patterns one of which every tool the caller may be allowed matches (its allow rules'),
        or ``None`` when one of them names neither a holder nor a role: a bound for search to
        narrow by before asking ``permits`` tool by tool."""
        patterns = tuple(rule.pattern for rule in self._rules if rule.allow)
        if any(pattern.holder is None and pattern.role is None for pattern in patterns):
            return None
        return patterns


def _sort_key(rule: _Rule, caller: Caller) -> tuple[int, tuple[int, tuple[bool, bool, bool]], int]:
    exact = rule.row.principal == caller.principal
    return (0 if exact else 1, _negate(rule.pattern.specificity), 1 if rule.allow else 0)


def _negate(
    specificity: tuple[int, tuple[bool, bool, bool]],
) -> tuple[int, tuple[bool, bool, bool]]:
    count, exact = specificity
    return (-count, (not exact[0], not exact[1], not exact[2]))


@functools.lru_cache(maxsize=16384)
def _pattern(target: str) -> Pattern:
    """A grant target parsed once: the same few targets come back on every request."""
    return parse_pattern(target)


def compile_permissions(caller: Caller, snapshot: GrantSnapshot | None) -> Permissions:
    """Compile a snapshot for ``caller``; a missing (too large) or malformed one fails closed."""
    if snapshot is None:
        raise RegistryUnavailable("Too many grant rows apply to this principal.")
    rules: list[_Rule] = []
    for row in snapshot.rows:
        if row.effect not in EFFECTS or row.principal not in (caller.principal, WILDCARD_PRINCIPAL):
            raise RegistryUnavailable("A grant row is malformed.")
        try:
            pattern = _pattern(row.target)
        except InvalidAddress:
            raise RegistryUnavailable("A grant row is malformed.") from None
        if not set(row.scopes) <= caller.scopes:
            continue
        rules.append(_Rule(pattern=pattern, allow=row.effect == "allow", row=row))
    rules.sort(key=lambda rule: _sort_key(rule, caller))
    return Permissions(caller, snapshot, rules)


def explain(caller: Caller, snapshot: GrantSnapshot | None, address: str) -> dict[str, Any]:
    """Which row decides ``address`` for ``caller``, and why (``meshnav grant check``)."""
    parsed = parse_tool_address(address)
    holder, role, tool = str(parsed).split("/")
    decision = compile_permissions(caller, snapshot).decide(holder, role, tool)
    row = decision.row
    return {
        "principal": caller.principal,
        "address": str(parsed),
        "allowed": decision.allowed,
        "row": None if row is None else row.as_json(),
        "reason": (
            "no applicable allow row: denied by default"
            if row is None
            else f"row {row.id} ({row.effect} {row.target} for {row.principal}) decides"
        ),
    }
