"""Plumbing shared by the API's handlers: JSON bodies checked by pydantic, errors as SPEC §9 JSON,
scope checks that deny when anything is missing."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from navigator.access.authentication import caller_from_scope
from navigator.access.grants import Caller
from navigator.access.oauth import SCOPE_NEEDED
from navigator.errors import (
    InvalidArguments,
    NavigatorError,
    ToolNotGranted,
    error_body,
    from_registry,
)
from navigator.http.bodies import Body, is_printable, parse_body, read_bounded
from registry import RegistryError
from registry.audit import ACTOR

__all__ = ["handler", "read_body", "require_scope"]

MAX_BODY_BYTES = 8 * 1024 * 1024
B = TypeVar("B", bound=Body)


class ScopeMissing(ToolNotGranted):
    """``tool_not_granted`` for a caller whose token lacks ``scope``: its answer also says so in
    the RFC 6750 ``insufficient_scope`` challenge (``navigator.access.oauth.Challenges``)."""

    def __init__(self, scope: str) -> None:
        super().__init__(f"This needs the {scope} scope.")
        self.scope = scope


def require_scope(request: Request, scope: str) -> Caller:
    """The request's caller, holding ``scope``; the changes it makes are audited as its own."""
    caller = caller_from_scope(request.scope)
    if scope not in caller.scopes:
        raise ScopeMissing(scope)
    ACTOR.set(caller.principal)
    return caller


async def read_body(request: Request, model: type[B]) -> B:
    raw = await read_bounded(request, MAX_BODY_BYTES)
    if raw is None:
        raise InvalidArguments("The request body is too large.")
    try:
        data = json.loads(raw or b"null")
    except (ValueError, UnicodeDecodeError):
        raise InvalidArguments("The request body is not JSON.") from None
    except RecursionError:  # nested deeper than the parser goes: no body of ours is
        raise InvalidArguments("The request body is nested too deeply.") from None
    return parse_body(model, data)


#: No answer of the admin API is kept by a cache: some carry a token shown once.
NO_STORE = {"cache-control": "no-store"}


def error_response(error: NavigatorError) -> JSONResponse:
    headers = dict(NO_STORE)
    if isinstance(error, ScopeMissing):
        headers[SCOPE_NEEDED.decode()] = error.scope
    return JSONResponse(error_body(error), status_code=error.status, headers=headers)


def handler(
    endpoint: Callable[[Request], Awaitable[Any]],
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap an endpoint: its return value becomes JSON; every error, the §9 body."""

    async def run(request: Request) -> Response:
        try:
            asked = [*request.path_params.values(), *request.query_params.values()]
            if not all(map(is_printable, asked)):
                raise InvalidArguments("The request's path or query holds a control character.")
            result = await endpoint(request)
        except NavigatorError as error:
            return error_response(error)
        except RegistryError as error:
            return error_response(from_registry(error))
        if isinstance(result, Response):
            result.headers.setdefault("cache-control", "no-store")
            return result
        return JSONResponse(result, headers=NO_STORE)

    run.__name__ = endpoint.__name__
    run.__doc__ = endpoint.__doc__
    return run
