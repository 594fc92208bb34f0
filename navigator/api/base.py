"""Plumbing shared by the API's handlers: JSON bodies checked by pydantic, errors as SPEC §9 JSON,
scope checks that deny when anything is missing."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from navigator.auth import caller_from_scope
from navigator.bodies import read_bounded
from navigator.errors import (
    InvalidArguments,
    NavigatorError,
    ToolNotGranted,
    error_body,
    from_registry,
)
from navigator.grants import Caller
from registry import RegistryError

__all__ = ["Body", "handler", "read_body", "require_scope"]

MAX_BODY_BYTES = 8 * 1024 * 1024
B = TypeVar("B", bound="Body")


class Body(BaseModel):
    """A request body: unknown fields are refused, types are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


def require_scope(request: Request, scope: str) -> Caller:
    caller = caller_from_scope(request.scope)
    if scope not in caller.scopes:
        raise ToolNotGranted(f"This needs the {scope} scope.")
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


def parse_body(model: type[B], data: Any) -> B:
    """A body checked against its model: the API's rules, shared with the command line's direct
    path to the registry; ``InvalidArguments`` names the field and the rule, never the value."""
    if not isinstance(data, dict):
        raise InvalidArguments("The request body must be a JSON object.")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        pointer = "/" + "/".join(str(p) for p in first["loc"] if isinstance(p, str | int))
        kind = "unknown field" if first["type"] == "extra_forbidden" else first["type"]
        if first["type"] == "extra_forbidden":
            pointer = "/" + "/".join(str(p) for p in first["loc"][:-1])
        raise InvalidArguments(
            f"The request body is not valid ({kind}).", extra={"pointer": pointer.rstrip("/") or ""}
        ) from None


def error_response(error: NavigatorError) -> JSONResponse:
    return JSONResponse(error_body(error), status_code=error.status)


def handler(
    endpoint: Callable[[Request], Awaitable[Any]],
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap an endpoint: its return value becomes JSON; every error, the §9 body."""

    async def run(request: Request) -> Response:
        try:
            result = await endpoint(request)
        except NavigatorError as error:
            return error_response(error)
        except RegistryError as error:
            return error_response(from_registry(error))
        if isinstance(result, Response):
            return result
        return JSONResponse(result)

    run.__name__ = endpoint.__name__
    run.__doc__ = endpoint.__doc__
    return run
