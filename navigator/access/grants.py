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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from navigator.addresses import Pattern, parse_pattern, parse_tool_address
from navigator.errors import GrantRowsUnusable, InvalidAddress
from registry import UNLIMITED, GrantRecord, GrantSnapshot, Quota

__all__ = ["Caller", "Decision", "Permissions", "compile_permissions", "explain"]

EFFECTS = ("allow", "deny")
WILDCARD_PRINCIPAL = "*"


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: a principal and the scopes it holds (from its token).

    ``grants`` is the principal's grant snapshot when it was read from the registry together with
    the token, in the same transaction, for this one request; ``None`` means "read them now".
    ``renew`` checks the credential again, giving the caller as it is now (``Unauthenticated``
    when the token was revoked, rotated or expired since): a request that waits on a person
    outlives the check it began with. ``None`` for a caller no credential stands behind.
    """

    principal: str
    scopes: frozenset[str]
    grants: GrantSnapshot | None = field(default=None, compare=False, repr=False)
    renew: Callable[[], Awaitable[Caller]] | None = field(default=None, compare=False, repr=False)
    #: Its principal's quota, read with its credential, a stored token or a JWT (ADRs 0041,
    #: 0044); a subject no principal row stands behind has none.
    quota: Quota = field(default=UNLIMITED, compare=False, repr=False)
    #: ``False`` for a JWT's subject no principal row stands behind: it holds no grant, and all
    #: such subjects share one session budget (ADR 0044).
    registered: bool = field(default=True, compare=False)


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


_NEVER = 1 << 62  # a rule position later than any


@dataclass(slots=True)
class _Bucket:
    """The rules that name the same role and tool segments (or leave them open), by position in
    the rule order: the first for each holder they name, the first that names no holder, and the
    first position of a holder-naming allow and deny."""

    holders: dict[str, tuple[int, _Rule]] = field(default_factory=dict)
    anyone: tuple[int, _Rule] | None = None
    first_named: dict[bool, int] = field(default_factory=lambda: {True: _NEVER, False: _NEVER})
    named: frozenset[str] = frozenset()  # the holders' names, once all rules are added

    def add(self, position: int, rule: _Rule) -> None:
        holder = rule.pattern.holder
        if holder is None:
            if self.anyone is None:
                self.anyone = (position, rule)
            return
        self.holders.setdefault(holder, (position, rule))
        self.first_named[rule.allow] = min(self.first_named[rule.allow], position)


def _earliest(buckets: list[_Bucket], holder: str) -> tuple[int, _Rule] | None:
    best: tuple[int, _Rule] | None = None
    for bucket in buckets:
        for found in (bucket.holders.get(holder), bucket.anyone):
            if found is not None and (best is None or found[0] < best[0]):
                best = found
    return best


class Permissions:
    """A caller's grants compiled from one snapshot: cheap to ask many times within one request.

    The rules are kept in SPEC §4's order and, beside it, in buckets by the role and tool
    segments they name, so a decision is a few dictionary lookups however many rows apply: the
    first rule matching an address is the earliest of its buckets' rules for its holder and for
    any holder.
    """

    def __init__(self, caller: Caller, snapshot: GrantSnapshot, rules: list[_Rule]) -> None:
        self.caller = caller
        self.revision = snapshot.revision
        self._rules = rules
        self._allows = [rule.pattern for rule in rules if rule.allow]
        self._any_allow = bool(self._allows)
        #: (role, tool) as the rules name them (None: open) -> their bucket
        self._buckets: dict[tuple[str | None, str | None], _Bucket] = {}
        #: role as the rules that name a tool name it -> one bucket of all of them
        self._tool_naming: dict[str | None, _Bucket] = {}
        for position, rule in enumerate(rules):
            pattern = rule.pattern
            self._buckets.setdefault((pattern.role, pattern.tool), _Bucket()).add(position, rule)
            if pattern.tool is not None:
                self._tool_naming.setdefault(pattern.role, _Bucket()).add(position, rule)
        for bucket in self._buckets.values():
            bucket.named = frozenset(bucket.holders)

    @property
    def allows_any(self) -> bool:
        """Whether any grant row allows the caller anything (one that allows nothing sees an
        empty mesh: the walk says why)."""
        return self._any_allow

    @functools.cached_property
    def rows_fingerprint(self) -> str:
        """Binds cursors to the rows observed (SPEC §3 Cursors): ids and row revisions. Computed
        when a listing asks for it; a call never does."""
        return hashlib.sha256(
            ",".join(f"{r.row.id}:{r.row.revision}" for r in self._rules).encode()
        ).hexdigest()

    def _buckets_of(self, role: str, tool: str) -> list[_Bucket]:
        get = self._buckets.get
        found = (get((role, tool)), get((role, None)), get((None, tool)), get((None, None)))
        return [bucket for bucket in found if bucket is not None]

    def decide(self, holder: str, role: str, tool: str) -> Decision:
        first = _earliest(self._buckets_of(role, tool), holder)
        return Decision(False, None) if first is None else Decision(first[1].allow, first[1].row)

    def decide_all(self, holder: str, role: str) -> Decision | None:
        """The decision every tool at ``holder/role`` gets, or ``None`` when a rule naming some
        of its tools comes before any rule that decides them all: then ask tool by tool."""
        get = self._buckets.get
        open_tool = [b for b in (get((role, None)), get((None, None))) if b is not None]
        naming = [
            b for b in (self._tool_naming.get(role), self._tool_naming.get(None)) if b is not None
        ]
        first = _earliest(open_tool, holder)
        named = _earliest(naming, holder)
        if named is not None and (first is None or named[0] < first[0]):
            return None
        return Decision(False, None) if first is None else Decision(first[1].allow, first[1].row)

    def covers(self, holder: str, role: str, tool: str) -> bool:
        """Whether any allow rule's pattern matches the address, whatever rule decides it: an
        address no allow covers is outside the caller's reach, where ``describe`` and ``call``
        say ``tool_not_granted`` whether a tool is there or not (ADR 0035)."""
        return any(pattern.matches(holder, role, tool) for pattern in self._allows)

    def permits(self, address: str) -> bool:
        """``decide(...).allowed`` for an address."""
        if not self._any_allow:
            return False
        holder, role, tool = address.split("/", 2)
        first = _earliest(self._buckets_of(role, tool), holder)
        return first is not None and first[1].allow

    def permits_every_holder(self, role: str, tool: str) -> bool | None:
        """True or False when ``permits`` gives ``*/role/tool`` that answer on every holder;
        ``None`` when it may depend on the holder (a search then asks holder by holder)."""
        buckets = self._buckets_of(role, tool)
        anyone = min((b.anyone for b in buckets if b.anyone is not None), default=None)
        allowed = anyone is not None and anyone[1].allow
        before = _NEVER if anyone is None else anyone[0]
        differing = min((b.first_named[not allowed] for b in buckets), default=_NEVER)
        return None if differing < before else allowed

    def holder_exceptions(self, role: str, tool: str) -> tuple[bool, frozenset[str]]:
        """What ``permits`` answers for ``*/role/tool`` on every holder but a few, and those few:
        the holders the rules name (each may be answered otherwise)."""
        buckets = self._buckets_of(role, tool)
        anyone = min((b.anyone for b in buckets if b.anyone is not None), default=None)
        naming = [bucket.named for bucket in buckets if bucket.named]
        named = naming[0] if len(naming) == 1 else frozenset().union(*naming)
        return anyone is not None and anyone[1].allow, named

    @functools.cached_property
    def reach(self) -> tuple[Pattern, ...] | None:
        """Patterns one of which every tool the caller may be allowed matches — its allow rules'
        that can decide, those before the first rule naming no segment (no later rule decides any
        tool) — or ``None`` when that first rule is an allow (``*/*/*``): a bound for search to
        narrow by before asking ``permits`` tool by tool."""
        patterns: list[Pattern] = []
        for rule in self._rules:
            if rule.pattern.specificity[0] == 0:
                if rule.allow:
                    return None
                break
            if rule.allow:
                patterns.append(rule.pattern)
        return tuple(patterns)

    @functools.cached_property
    def refusals(self) -> tuple[Pattern, ...]:
        """Patterns one of which every tool the caller is refused while an allow rule matches it
        matches: the deny rules' that can decide (a tool an allow rule matches is refused only by
        an earlier deny rule, and no rule after the first that names no segment decides any
        tool). With ``reach`` ``None`` and no refusals, every tool is permitted."""
        patterns: list[Pattern] = []
        for rule in self._rules:
            if not rule.allow:
                patterns.append(rule.pattern)
            if rule.pattern.specificity[0] == 0:
                break
        return tuple(patterns)

    @functools.cached_property
    def key(self) -> str:
        """A digest of the rules as ``permits`` reads them — segments and effects, in order —,
        equal for any two callers whose ``permits`` agree ("db1" and "db1/*/*" alike): what a
        search index learns of a caller's grants is kept under it."""
        rules = "\n".join(
            f"{rule.allow:d} {p.holder or '*'}/{p.role or '*'}/{p.tool or '*'}"
            for rule in self._rules
            for p in (rule.pattern,)
        )
        return hashlib.sha256(rules.encode()).hexdigest()


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
        raise GrantRowsUnusable("Too many grant rows apply to this principal.")
    rules: list[_Rule] = []
    for row in snapshot.rows:
        if row.effect not in EFFECTS or row.principal not in (caller.principal, WILDCARD_PRINCIPAL):
            raise GrantRowsUnusable("A grant row is malformed.")
        try:
            pattern = _pattern(row.target)
        except InvalidAddress:
            raise GrantRowsUnusable("A grant row is malformed.") from None
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
