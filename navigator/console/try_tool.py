"""Trying a tool from the console: a form for its arguments, and the call made through the walker
as the signed-in viewer — so their grants, the tool's schema and its confirmation all apply.

    GET  /console/try/{holder}/{role}/{tool}   the form: a field for each top-level string,
                                               number, integer, boolean or enum property, and a
                                               JSON editor for the rest
    POST the same                              the call, and its answer

A call that needs a person's yes (the tool's annotations, or an operator's mark, ``elicit-only``
included) is stopped at the walker's question and asked on a confirmation page; the person's
"Yes" on it is the answer the walker waits for, given as an elicitation would give it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from navigator.console.layout import Page, assignment_href, document, error_page, join
from navigator.console.manage import CROSS_SITE, read_form
from navigator.console.manage_forms import confirm_page
from navigator.console.security import is_same_origin
from navigator.console.session import authenticate_viewer, sign_in_page
from navigator.console.tables import breadcrumb
from navigator.errors import (
    ConfirmationRequired,
    InvalidArguments,
    NavigatorError,
    ToolNotGranted,
    Unauthenticated,
)
from navigator.services import services
from navigator.walker.confirmation import Question

__all__ = ["try_tool"]

JSON_FIELD = "json"
PREFIX = "arg."
SCALARS = {"string", "integer", "number", "boolean"}


class PersonAsked(ConfirmationRequired):
    """The walker asked the person behind the console: the page asks, and posts the answer."""

    def __init__(self, question: Question) -> None:
        super().__init__(question.message)
        self.question = question


class ConsoleAnswer:
    """The walker's ``Elicitor`` for the console: yes when the person said so on the page, else
    the question goes back to the page to be asked."""

    def __init__(self, confirmed: bool) -> None:
        self.confirmed = confirmed

    async def ask(self, question: Question, binding: str) -> bool:
        if not self.confirmed:
            raise PersonAsked(question)
        return True


def _fields(schema: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The properties given a field of their own, and the rest (for the JSON editor)."""
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    fields: dict[str, dict[str, Any]] = {}
    rest: dict[str, Any] = {}
    for name, spec in (properties or {}).items():
        if not isinstance(spec, Mapping):
            continue
        enum = spec.get("enum")
        if (
            isinstance(enum, list) and all(isinstance(v, str | int | float | bool) for v in enum)
        ) or spec.get("type") in SCALARS:
            fields[name] = dict(spec)
        else:
            rest[name] = None
    return fields, rest


def _input(name: str, spec: Mapping[str, Any], value: str) -> Markup:
    field = PREFIX + name
    kind = spec.get("type")
    if isinstance(spec.get("enum"), list) or kind == "boolean":
        options = spec["enum"] if isinstance(spec.get("enum"), list) else [True, False]
        choices = join(
            Markup('<option value="{}"{}>{}</option>').format(
                json.dumps(option),
                Markup(" selected") if json.dumps(option) == value else "",
                option if not isinstance(option, bool) else str(option).lower(),
            )
            for option in options
        )
        control = Markup('<select name="{}"><option value="">(not given)</option>{}</select>')
        control = control.format(field, choices)
    else:
        number = kind in ("integer", "number")
        control = Markup('<input name="{}" type="{}" value="{}"{}>').format(
            field,
            "number" if number else "text",
            value,
            Markup(' step="any"') if kind == "number" else "",
        )
    return Markup('<label>{} <span class="muted">{}</span> {}</label>').format(
        name, spec.get("description", ""), control
    )


def _arguments(form: Mapping[str, str], fields: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    text = form.get(JSON_FIELD, "").strip() or "{}"
    try:
        arguments = json.loads(text)
    except ValueError as error:
        raise InvalidArguments(
            f"The JSON breaks at line {getattr(error, 'lineno', '?')}, column "
            f"{getattr(error, 'colno', '?')}.",
            extra={"pointer": ""},
        ) from None
    if not isinstance(arguments, dict):
        raise InvalidArguments("The JSON is an object of arguments.", extra={"pointer": ""})
    for name, spec in fields.items():
        value = form.get(PREFIX + name, "")
        if value == "":
            continue
        kind = spec.get("type")
        try:
            if isinstance(spec.get("enum"), list) or kind == "boolean":
                arguments[name] = json.loads(value)
            elif kind == "integer":
                arguments[name] = int(value)
            elif kind == "number":
                arguments[name] = float(value) if any(c in value for c in ".eE") else int(value)
            else:
                arguments[name] = value
        except ValueError:
            raise InvalidArguments(
                f"{name} is not a {kind}.", extra={"pointer": f"/{name}"}
            ) from None
    return arguments


def _page(
    address: str,
    schema: Mapping[str, Any],
    form: Mapping[str, str],
    answer: Markup | None = None,
    status: int = 200,
) -> Page:
    fields, rest = _fields(schema)
    inputs = join(_input(name, spec, form.get(PREFIX + name, "")) for name, spec in fields.items())
    hint = ("{" + ", ".join(f'"{name}": …' for name in rest) + "}") if rest else "{}"
    holder, role, tool = address.split("/")
    main = Markup(
        "{}<h1>Try {}</h1>"
        '<form class="try" method="post" action="{}">{}'
        "<label>Other arguments (JSON) "
        '<textarea name="{}" rows="6" spellcheck="false" placeholder="{}">'
        "{}</textarea></label>"
        '<button type="submit">Call</button></form>{}'
    ).format(
        breadcrumb(
            ("Mesh", "/"),
            (f"{holder}/{role}", assignment_href(f"{holder}/{role}", tool)),
            (f"Try {tool}", None),
        ),
        address,
        try_href(address),
        inputs,
        JSON_FIELD,
        hint,
        form.get(JSON_FIELD, ""),
        answer or "",
    )
    return Page(title=f"Try {tool}", main=main, status=status, live=False)  # a form, kept


def try_href(address: str) -> str:
    return "/console/try/" + address


async def try_tool(request: Request) -> Response:
    """The form (GET), or the call and its answer (POST)."""
    try:
        caller = await authenticate_viewer(request, page=request.method == "GET")
    except Unauthenticated:
        return sign_in_page(request, status_code=401)
    except NavigatorError as error:
        return HTMLResponse(error_page(error).main, status_code=error.status)
    found = services(request)
    params = request.path_params
    address = f"{params['holder']}/{params['role']}/{params['tool']}"
    operator = "mesh:admin" in caller.scopes
    try:
        contract = await found.navigator.describe(caller, address)
    except NavigatorError as error:
        return HTMLResponse(document(error_page(error), caller, operator=operator), error.status)
    schema = contract.get("inputSchema") or {}
    if request.method != "POST":
        return HTMLResponse(document(_page(address, schema, {}), caller, operator=operator))
    if not is_same_origin(request):
        page = error_page(ToolNotGranted(CROSS_SITE))
        return HTMLResponse(document(page, caller, operator=operator), status_code=403)
    form: dict[str, str] = {}
    try:
        form = await read_form(request, most_fields=256)
        arguments = _arguments(form, _fields(schema)[0])
        result = await found.navigator.call(
            caller,
            address,
            arguments,
            confirm=None,
            elicitor=ConsoleAnswer(form.pop("confirmed", "") == "yes"),
            progress=None,
        )
    except PersonAsked as asked:
        confirm = confirm_page(asked.question.message, form, to=try_href(address))
        return HTMLResponse(document(confirm, caller, operator=operator))
    except NavigatorError as error:
        shown = Markup(
            '<section id="answer"><h2>Refused</h2><p class="notice" role="alert">{}</p>'
            '<p class="meta">Error <code>{}</code></p></section>'
        ).format(error.message, error.code)
        page = _page(address, schema, form, shown, error.status)
        return HTMLResponse(document(page, caller, operator=operator), page.status)
    answer = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    shown = Markup('<section id="answer"><h2>{}</h2><pre class="answer">{}</pre></section>').format(
        "The tool answered with an error" if result.is_error else "Answer",
        json.dumps(answer, indent=2),
    )
    page = _page(address, schema, form, shown)
    return HTMLResponse(document(page, caller, operator=operator))
