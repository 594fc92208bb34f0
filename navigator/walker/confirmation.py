"""Confirmation of calls that change things (SPEC §3, step 4).

A tool needs confirmation when MCP's annotation defaults say it may change things — it is not
``readOnlyHint: true`` and not ``destructiveHint: false`` — unless an operator marked it: ``never``,
``always``, or ``elicit-only`` (it never runs without a person's answer).

Where the client can ask its user (elicitation in its capabilities), the navigator asks: in the
legacy protocol era by a server-to-client ``elicitation/create`` request; in the sessionless era by
answering the call with ``input_required`` and a signed request state, which the client sends back
with the person's answer (SEP-2322). Otherwise the call is answered ``confirmation_required`` with
a one-time ``confirm`` token bound to the principal, the address and the arguments' digest, valid
for 120 s, which a second call must carry.

A principal has at most ``pending_per_principal`` questions waiting on a person at once (ADR
0048): a legacy-era question holds its call, its request and its connection open for up to the
token's lifetime, and a principal that never answers must not hold the navigator's connections.
Past that bound a call is not asked: it is answered ``confirmation_required`` with a token as for
a client that cannot ask, or — for an ``elicit-only`` tool, which never runs without a person —
``rate_limited``, ``retryAfterS`` saying when its oldest question ends.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from navigator.access.grants import Caller
from navigator.catalog.records import CatalogTool
from navigator.errors import ConfirmationRequired, RateLimited
from navigator.limits import PENDING_CONFIRMATIONS

__all__ = [
    "ELICIT_ONLY",
    "NONE",
    "REQUIRED",
    "AskingThePerson",
    "Confirmations",
    "Elicitor",
    "Question",
    "needs_confirmation",
]

NONE = "none"
REQUIRED = "required"
ELICIT_ONLY = "elicit-only"
#: The most confirm tokens held at once (each ~0.3 KB): calls that need confirmation, asked for
#: faster than their tokens expire, must not grow the navigator without bound.
MAX_PENDING = 4096
#: The answer to a confirm token that was spent, expired, or bound to another call.
_NOT_REDEEMED = (
    "That confirm token is spent, expired, or for another call: call again with this new one."
)
#: The answer to an ``elicit-only`` call while its principal's questions are all waiting.
_TOO_MANY_ASKED = (
    "This principal has as many questions waiting on a person as it may: answer one, or call "
    "again after retryAfterS seconds."
)


@dataclass(frozen=True, slots=True)
class Question:
    """What the person behind the client is asked: the form's title ("Run db1/sqlite/execute?")
    and the sentence that says who asks and why a yes is needed."""

    title: str
    message: str


class AskingThePerson(Exception):
    """The call goes back to the client for a person's answer (the sessionless era's
    ``input_required``): a round of the call, audited as ``asked``, never an error."""


class Elicitor(Protocol):
    """Asks the person behind the client; True for yes, False for no."""

    async def ask(self, question: Question, binding: str) -> bool: ...


def needs_confirmation(annotations: Mapping[str, Any] | None) -> bool:
    annotations = annotations or {}
    return (
        annotations.get("readOnlyHint") is not True
        and annotations.get("destructiveHint") is not False
    )


@dataclass(frozen=True, slots=True)
class _Pending:
    binding: str
    expires: float


class Confirmations:
    """One-time confirm tokens, held in memory only (never stored, logged or persisted)."""

    def __init__(
        self,
        ttl_s: float,
        *,
        pending_per_principal: int = PENDING_CONFIRMATIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.pending_per_principal = pending_per_principal
        self._clock = clock
        self._pending: dict[str, _Pending] = {}
        #: Per principal, when each of its questions waiting on a person was asked.
        self._asking: dict[str, list[float]] = {}

    @staticmethod
    def reason(tool: CatalogTool) -> str:
        """Why a call of ``tool`` needs a person's yes, as a clause after "This tool": what an
        operator marked, else what its annotations say — or that they say nothing of it."""
        mark = tool.confirmation
        if mark == ELICIT_ONLY:
            return "is marked by an operator to run only with a person's answer"
        if mark == "always":
            return "is marked by an operator to be confirmed"
        if "readOnlyHint" not in (tool.annotations or {}):
            return "declares no read-only hint"
        return "declares it may change things (it is not read-only)"

    def policy(self, tool: CatalogTool) -> str:
        mark = tool.confirmation
        if mark == "never":
            return NONE
        if mark == ELICIT_ONLY:
            return ELICIT_ONLY
        if mark == "always" or needs_confirmation(tool.annotations):
            return REQUIRED
        return NONE

    @staticmethod
    def binding(caller: Caller, tool: CatalogTool, arguments_digest: str) -> str:
        """What a yes is for: SPEC §3's principal, address and arguments' digest, and the
        tool's contract digest too — a person who confirmed a call of one contract has not
        confirmed the call of another put at the same address within the token's life."""
        return f"{caller.principal}\n{tool.address}\n{arguments_digest}\n{tool.contract_digest}"

    async def settle(
        self,
        tool: CatalogTool,
        caller: Caller,
        arguments_digest: Callable[[], str],
        *,
        confirm: str | None,
        elicitor: Elicitor | None,
    ) -> bool:
        """Return when the call may go ahead — True when a person was asked and said yes, which
        may have taken minutes —; raise ``ConfirmationRequired`` otherwise. The arguments'
        digest is asked for only when the tool needs a person's yes."""
        policy = self.policy(tool)
        if policy == NONE:
            return False
        binding = self.binding(caller, tool, arguments_digest())
        reason = self.reason(tool)
        if elicitor is not None and self._may_ask(caller, policy):
            question = Question(
                title=f"Run {tool.address}?",
                message=f"{caller.principal} asks to run {tool.address}, which {reason}. "
                "Allow this call?",
            )
            with self.waiting(caller):
                allowed = await elicitor.ask(question, binding)
            if allowed:
                return True
            raise ConfirmationRequired("The person declined this call.")
        if policy == ELICIT_ONLY:
            raise ConfirmationRequired(
                "This tool runs only with a person's answer, and this client cannot ask one."
            )
        if confirm is None:
            raise ConfirmationRequired(
                f"This tool {reason}, so a call needs confirmation: call again with the same "
                "address and args and this confirm token.",
                extra={"confirm": self._issue(binding)},
            )
        if self._redeem(confirm, binding):
            return False  # confirmed in an earlier request; this one's reads are fresh
        raise ConfirmationRequired(_NOT_REDEEMED, extra={"confirm": self._issue(binding)})

    def _may_ask(self, caller: Caller, policy: str) -> bool:
        """Whether ``caller`` may have one more question waiting on a person; past its bound, an
        ``elicit-only`` call is ``rate_limited`` until its oldest question ends."""
        asked = self._asking.get(caller.principal, ())
        if len(asked) < self.pending_per_principal:
            return True
        if policy == ELICIT_ONLY:
            ends = min(asked) + self.ttl_s - self._clock()
            raise RateLimited(_TOO_MANY_ASKED, retry_after_s=max(1, math.ceil(ends)))
        return False

    @contextmanager
    def waiting(self, caller: Caller) -> Iterator[None]:
        """Count a question of ``caller`` waiting on a person while the block runs."""
        asked = self._asking.setdefault(caller.principal, [])
        at = self._clock()
        asked.append(at)
        try:
            yield
        finally:
            asked.remove(at)
            if not asked:
                del self._asking[caller.principal]

    def _issue(self, binding: str) -> str:
        """A new token. Tokens are held in the order they expire (one lifetime for all, issued
        in time order): the expired ones go first, and past ``MAX_PENDING`` live ones the
        oldest goes too — its call is answered with a new token, as an expired one's is."""
        now = time.monotonic()
        pending = self._pending
        while pending:
            oldest = next(iter(pending))
            if pending[oldest].expires > now and len(pending) < MAX_PENDING:
                break
            del pending[oldest]
        token = secrets.token_urlsafe(24)
        self._pending[_hash(token)] = _Pending(binding=binding, expires=now + self.ttl_s)
        return token

    def _redeem(self, token: str, binding: str) -> bool:
        if not isinstance(token, str) or len(token) > 128:
            return False
        pending = self._pending.get(_hash(token))
        if pending is None or pending.expires <= time.monotonic():
            return False
        # as bytes: compare_digest refuses str past ASCII, and a JWT's subject (the principal)
        # may be any JSON string, a lone surrogate included
        held, given = (b.encode("utf-8", "surrogatepass") for b in (pending.binding, binding))
        if not hmac.compare_digest(held, given):
            return False
        del self._pending[_hash(token)]
        return True


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
