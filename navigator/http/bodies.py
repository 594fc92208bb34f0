"""Request bodies read no further than a bound, for every route that reads one (the admin and node
APIs, the console's forms): a body announced or streamed past it is dropped before it is held.
Then checked against a pydantic model, under rules the command line's direct path to the registry
shares (this module loads neither the server nor FastMCP)."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.requests import ClientDisconnect, Request

from mesh.text import is_printable
from navigator.errors import InvalidArguments
from navigator.http.numbers import whole_number

__all__ = ["Body", "is_printable", "parse_body", "read_bounded"]

B = TypeVar("B", bound="Body")


class Body(BaseModel):
    """A request body: unknown fields are refused, types are not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


async def read_bounded(request: Request, limit: int) -> bytes | None:
    """The whole body, or ``None`` as soon as it is known to be longer than ``limit`` bytes, or
    when the client goes away before sending it all (nobody is left to read the answer; it is
    not an error of ours to log)."""
    declared = request.headers.get("content-length")
    if declared is not None and whole_number(declared, most=limit) is None:
        return None  # announced past the bound (or not a length at all)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
    except ClientDisconnect:
        return None
    return b"".join(chunks)


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
