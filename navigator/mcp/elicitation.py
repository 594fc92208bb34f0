"""Asking the person behind the client, in whichever protocol era the client speaks.

Legacy era (2025-11-25): a server-to-client ``elicitation/create`` request through FastMCP's
``ctx.elicit``. Sessionless era (2026-07-28): there is no back-channel, so the call answers
``input_required`` with an elicitation request and a signed, one-time request state bound to the
principal, the address and the arguments' digest; the client asks its user and sends the call again
with the answer and the state (SEP-2322). The state's key lives in memory only.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as mt
from fastmcp.server.context import Context
from fastmcp.server.elicitation import AcceptedElicitation
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ConfigDict, Field, StrictBool, create_model

from mesh import signing
from mesh.signing import SeenNonces
from navigator.limits import LIMITS
from navigator.nodes import sdk
from navigator.walker.confirmation import AskingThePerson, Elicitor, Question

__all__ = ["InputNeeded", "elicitor_for"]

RESPONSE_KEY = "meshnav-confirm"
_ALLOW_TITLE = "Allow this call"


def _confirm_schema(question: Question) -> dict[str, Any]:
    """The sessionless era's form: titled and described for the person who reads it."""
    return {
        "type": "object",
        "title": question.title,
        "description": question.message,
        "properties": {"allow": {"type": "boolean", "title": _ALLOW_TITLE}},
        "required": ["allow"],
    }


def _allow_form(question: Question) -> type[BaseModel]:
    """The legacy era's form, as ``_confirm_schema``'s: a strict boolean, so that "yes", 1 or
    "on" is an answer in another shape, not a yes; the model's title and description are the
    question's (a class name and its docstring were sent to the person)."""
    config = ConfigDict(title=question.title, json_schema_extra={"description": question.message})
    return create_model("Confirm", __config__=config, allow=(StrictBool, Field(title=_ALLOW_TITLE)))


class InputNeeded(AskingThePerson):
    """The call must go back to the client for a person's answer (sessionless era)."""

    def __init__(self, result: mt.InputRequiredResult) -> None:
        super().__init__("input required")
        self.result = result


class _StateSigner:
    """Signs a request state bound to its call (``mesh.signing``, the call's binding its
    context), and redeems each one once: its nonce is kept until the state expires, as a call
    token's is (past 4,096 live nonces every redemption rebuilt a whole table, and two requests a
    nonce grew it)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._key = secrets.token_bytes(32)
        self._used = SeenNonces()
        self._clock = clock  # the wall clock, or a test's

    def sign(self, binding: str) -> str:
        claims = {"n": secrets.token_urlsafe(12), "e": self._clock() + LIMITS.confirm_ttl_s}
        return signing.sign(self._key, claims, context=binding)

    def redeem(self, state: str, binding: str) -> bool:
        claims = signing.verify(self._key, state, context=binding)
        if claims is None:
            return False
        try:
            nonce, expires = str(claims["n"]), float(claims["e"])
        except (ValueError, KeyError, TypeError):
            return False
        return self._used.first(nonce, expires, self._clock())


_SIGNER = _StateSigner()


class _LegacyElicitor:
    def __init__(self, context: Context) -> None:
        self.context = context

    async def ask(self, question: Question, binding: str) -> bool:
        """Only a person's "yes" in time allows the call. A client that fails the request, answers
        in another shape, or does not answer within a confirm token's lifetime has not said yes;
        what it sent is neither answered nor logged."""
        try:
            with anyio.fail_after(LIMITS.confirm_ttl_s):
                form = _allow_form(question)
                result = await self.context.elicit(question.message, response_type=form)
        except (MCPError, ValueError, TimeoutError):  # its error, or an answer in another shape
            return False
        return isinstance(result, AcceptedElicitation) and result.data.model_dump()["allow"] is True


class _SessionlessElicitor:
    def __init__(self, context: Context) -> None:
        self.context = context

    async def ask(self, question: Question, binding: str) -> bool:
        responses = self.context.input_responses or {}
        state = self.context.request_state
        response = responses.get(RESPONSE_KEY)
        if state is not None and response is not None and _SIGNER.redeem(state, binding):
            return (
                isinstance(response, mt.ElicitResult)
                and response.action == "accept"
                and (response.content or {}).get("allow") is True
            )
        request = mt.ElicitRequest(
            params=mt.ElicitRequestFormParams(
                message=question.message, requested_schema=_confirm_schema(question)
            )
        )
        raise InputNeeded(
            mt.InputRequiredResult(
                input_requests={RESPONSE_KEY: request}, request_state=_SIGNER.sign(binding)
            )
        )


def _asks_forms(declared: mt.ElicitationCapability | None) -> bool:
    """Whether a client can show a form: it declared form elicitation, or elicitation with no
    mode (which means forms, from before modes). One that declared URL elicitation only cannot."""
    if declared is None:
        return False
    return declared.form is not None or declared.url is None


def elicitor_for(context: Context) -> Elicitor | None:
    """An elicitor when the client declared form elicitation in its capabilities, else ``None``:
    the call then answers ``confirmation_required`` with a confirm token."""
    try:
        capabilities = context.session.client_capabilities
    except (RuntimeError, AttributeError):
        return None
    if capabilities is None or not _asks_forms(capabilities.elicitation):
        return None
    if sdk.is_modern_protocol(context):
        return _SessionlessElicitor(context)
    return _LegacyElicitor(context)
