"""The admin API's OpenAPI 3.1 document, made from the route table and the body models."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request

from navigator.access.tokens import ADMIN_SCOPE

__all__ = ["openapi_document", "openapi_endpoint"]

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error", "status", "message"],
    "properties": {
        "error": {"type": "string", "description": "A SPEC §9 error code."},
        "status": {"type": "integer"},
        "message": {"type": "string"},
    },
}


def _operation_id(method: str, path: str) -> str:
    words = [w for w in re.split(r"[/{}]+", path) if w]
    return "_".join([method.lower(), *words])


def openapi_document() -> dict[str, Any]:
    from navigator.api import API_PREFIX
    from navigator.api.routes import QUERY_PARAMETERS, ROUTES

    schemas: dict[str, Any] = {"Error": ERROR_SCHEMA}
    paths: dict[str, dict[str, Any]] = {}
    for path, method, endpoint, model in ROUTES:
        summary = (endpoint.__doc__ or endpoint.__name__.replace("_", " ")).strip().split("\n")[0]
        operation: dict[str, Any] = {
            "operationId": _operation_id(method, path),
            "summary": summary,
            "responses": {
                "200": {"description": "Done.", "content": {"application/json": {"schema": {}}}},
                "default": {
                    "description": "A SPEC §9 error.",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                },
            },
        }
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in re.findall(r"{(\w+)}", path)
        ]
        parameters += [
            {"name": name, "in": "query", "required": required, "schema": {"type": "string"}}
            for name, required in QUERY_PARAMETERS.get((path, method), [])
        ]
        if parameters:
            operation["parameters"] = parameters
        if model is not None:
            schema = model.model_json_schema(
                by_alias=True, ref_template="#/components/schemas/{model}"
            )
            schemas.update(schema.pop("$defs", {}))
            schemas[model.__name__] = schema
            operation["requestBody"] = {
                "required": True,
                "content": {
                    "application/json": {
                        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}
                    }
                },
            }
        paths.setdefault(path, {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "meshnav admin API", "version": "1"},
        "servers": [{"url": API_PREFIX}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


async def openapi_endpoint(request: Request) -> dict[str, Any]:
    """The document, for an administrator: it is part of the admin API (SPEC §7)."""
    from navigator.api.base import require_scope

    require_scope(request, ADMIN_SCOPE)
    return openapi_document()
