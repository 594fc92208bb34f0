"""The console's management: an operator's changes to the mesh, from ``/console/manage``.

Each change is a form posted to ``/console/manage`` with an ``action`` field. It is taken only
from a signed-in viewer holding ``mesh:admin`` (the session's token authenticated again, its
principal's row re-read), from this console's own page (``security.is_same_origin``; the session
cookie is also SameSite=Strict), and — for a change that removes, revokes or retires — only with
the person's yes on the confirmation page. Every action calls the same function as the admin API's
handler (``navigator.operations``), and the registry audits it as the viewer's own act.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qs

from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from navigator.access.grants import Caller
from navigator.access.tokens import ADMIN_SCOPE
from navigator.catalog.overview import mesh_view
from navigator.console.layout import document, error_page
from navigator.console.manage_forms import Listing, Outcome, confirm_page, manage_page
from navigator.console.security import is_same_origin
from navigator.console.session import authenticate_viewer, sign_in_page
from navigator.errors import (
    InvalidArguments,
    NavigatorError,
    ToolNotGranted,
    Unauthenticated,
    from_registry,
)
from navigator.http.bodies import is_printable, parse_body, read_bounded
from navigator.http.numbers import whole_number
from navigator.operations import mesh_ops, people
from navigator.operations.rules import GRANT_ID_MOST, GrantBody, PrincipalBody, QuotaBody
from navigator.services import Services, services
from registry import AccessStore, CatalogStore, RegistryError
from registry.audit import ACTOR

__all__ = ["CROSS_SITE", "manage", "read_form"]

FRAGMENT_HEADER = "x-meshnav-fragment"

#: The most principals and grant rows the page lists (the grants page's bound).
ROWS = 500
MAX_FORM_BYTES = 64 * 1024
CROSS_SITE = "Change the mesh from this console's own pages."

Form = Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Action:
    run: Callable[[Services, Form], Awaitable[Outcome]]
    #: The question the confirmation page asks; None when the change needs no yes.
    question: Callable[[Form], str] | None = None


async def read_form(request: Request, most_fields: int = 64) -> dict[str, str]:
    """A posted form's fields (the first value of each), within bounds; {} for anything else."""
    kind = request.headers.get("content-type", "").split(";")[0].strip()
    if kind != "application/x-www-form-urlencoded":
        return {}
    body = await read_bounded(request, MAX_FORM_BYTES)
    if body is None:
        raise InvalidArguments("The form is too large.")
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=most_fields)
    except (UnicodeDecodeError, ValueError):
        raise InvalidArguments("The form could not be read.") from None
    form = {name: values[0].strip() for name, values in fields.items() if values}
    if not all(map(is_printable, [*form, *form.values()])):
        raise InvalidArguments("The form holds a control character.")
    return form


def _number(form: Form, name: str, *, whole: bool = True) -> int | float | None:
    text = form.get(name, "")
    if not text:
        return None
    try:
        return int(text) if whole else float(text)
    except ValueError:
        raise InvalidArguments(f"{name} is a number.", extra={"pointer": f"/{name}"}) from None


def _words(form: Form, name: str) -> list[str]:
    return form.get(name, "").split()


def _quota(form: Form) -> dict[str, Any]:
    return {
        "ratePerMinute": _number(form, "ratePerMinute"),
        "concurrency": _number(form, "concurrency"),
    }


async def _principal_add(found: Services, form: Form) -> Outcome:
    body: dict[str, Any] = {
        "name": form.get("name", ""),
        "scopes": _words(form, "scopes"),
        "machine": form.get("machine") or None,
        "expiresDays": _number(form, "expiresDays", whole=False),
        **_quota(form),
    }
    answer = await people.add_principal(found, parse_body(PrincipalBody, body))
    return Outcome(f"Principal {body['name']} added.", token=answer["token"])


async def _principal_rotate(found: Services, form: Form) -> Outcome:
    days = _number(form, "expiresDays", whole=False)
    if days is not None and not 0 < days <= 3650:
        raise InvalidArguments("Expiry is 0 to 3650 days.", extra={"pointer": "/expiresDays"})
    answer = await people.rotate_principal(found, form.get("name", ""), days)
    return Outcome(f"Principal {form.get('name')} has a new token.", token=answer["token"])


async def _principal_revoke(found: Services, form: Form) -> Outcome:
    await people.revoke_principal(found, form.get("name", ""))
    return Outcome(f"Principal {form.get('name')} revoked.")


async def _principal_quota(found: Services, form: Form) -> Outcome:
    await people.set_quota(found, form.get("name", ""), parse_body(QuotaBody, _quota(form)))
    return Outcome(f"Quota of {form.get('name')} set.")


async def _grant_add(found: Services, form: Form) -> Outcome:
    body = {
        "principal": form.get("principal", ""),
        "target": form.get("target", ""),
        "effect": form.get("effect", ""),
        "scopes": _words(form, "scopes"),
        "force": form.get("force") == "yes",
    }
    row = await people.add_grant(found, parse_body(GrantBody, body))
    return Outcome(f"Grant row {row['id']} added: {body['effect']} {body['target']}.")


async def _grant_revoke(found: Services, form: Form) -> Outcome:
    grant = whole_number(form.get("grant", ""), most=GRANT_ID_MOST)
    await people.revoke_grant(found, grant)
    return Outcome(f"Grant row {grant} revoked.")


async def _seat_place(found: Services, form: Form) -> Outcome:
    seat, machine, role = (form.get(k, "") for k in ("seat", "machine", "role"))
    await mesh_ops.place_seat(found, seat, machine, role)
    return Outcome(f"Seat mesh/{seat} placed on {machine}/{role}.")


async def _seat_remove(found: Services, form: Form) -> Outcome:
    await mesh_ops.remove_seat(found, form.get("seat", ""))
    return Outcome(f"Seat mesh/{form.get('seat')} removed.")


async def _tool_mark(found: Services, form: Form) -> Outcome:
    mark = form.get("confirmation", "")
    if mark not in mesh_ops.CONFIRMATION_MARKS:
        raise InvalidArguments("A mark is auto, never, required or elicit-only.")
    await mesh_ops.mark_tool(found, form.get("address", ""), cast(mesh_ops.Mark, mark))
    return Outcome(f"{form.get('address')} marked {mark}.")


async def _machine_retire(found: Services, form: Form) -> Outcome:
    return Outcome(f"{await mesh_ops.retire(found, form.get('machine', ''))} retired.")


async def _assignment_retire(found: Services, form: Form) -> Outcome:
    done = await mesh_ops.retire(found, form.get("machine", ""), form.get("role", ""))
    return Outcome(f"{done} retired.")


async def _assignment_refresh(found: Services, form: Form) -> Outcome:
    answer = await mesh_ops.refresh_assignment(found, form.get("machine", ""), form.get("role", ""))
    return Outcome(f"{answer['assignment']} refreshed.")


ACTIONS: dict[str, Action] = {
    "principal-add": Action(_principal_add),
    "principal-rotate": Action(
        _principal_rotate, lambda f: f"Rotate {f.get('name')}'s token? The old one stops at once."
    ),
    "principal-revoke": Action(
        _principal_revoke, lambda f: f"Revoke {f.get('name')}? Its token stops at once."
    ),
    "principal-quota": Action(_principal_quota),
    "grant-add": Action(_grant_add),
    "grant-revoke": Action(_grant_revoke, lambda f: f"Revoke grant row {f.get('grant')}?"),
    "seat-place": Action(_seat_place),
    "seat-move": Action(
        _seat_place,
        lambda f: (
            f"Move mesh/{f.get('seat')} to {f.get('machine')}/{f.get('role')}? "
            "Its instance where it is now is retired."
        ),
    ),
    "seat-remove": Action(
        _seat_remove,
        lambda f: f"Remove mesh/{f.get('seat')}? Its instance is retired and no one can call it.",
    ),
    "tool-mark": Action(_tool_mark),
    "machine-retire": Action(
        _machine_retire, lambda f: f"Retire {f.get('machine')}? No one can call its tools."
    ),
    "assignment-retire": Action(
        _assignment_retire,
        lambda f: f"Retire {f.get('machine')}/{f.get('role')}? No one can call its tools.",
    ),
    "assignment-refresh": Action(_assignment_refresh),
}


async def _listing(found: Services) -> Listing:
    def read(session: Session) -> Listing:
        access = AccessStore(session)
        return Listing(
            principals=access.principals(limit=ROWS),
            grants=access.grants(None, limit=ROWS),
            seats=CatalogStore(session).seats(),
            machines=[],
        )

    listing = await found.read(read)
    machines = mesh_view(found.catalog)["machines"]
    return Listing(listing.principals, listing.grants, listing.seats, machines)


async def _operator(request: Request) -> Caller:
    caller = await authenticate_viewer(request, page=request.method == "GET")
    if ADMIN_SCOPE not in caller.scopes:
        raise ToolNotGranted(f"This page needs the {ADMIN_SCOPE} scope.")
    ACTOR.set(caller.principal)  # the registry audits the change as the viewer's own
    return caller


async def _why(found: Services, request: Request) -> Outcome | None:
    principal = request.query_params.get("principal")
    address = request.query_params.get("address")
    if not principal or not address:
        return None
    if not is_printable(principal + address):
        raise InvalidArguments("The principal or address holds a control character.")
    verdict = await people.check_grant(found, principal, address)
    return Outcome(f"Why {principal} may or may not call {address}:", verdict=verdict)


async def manage(request: Request) -> Response:
    """``GET /console/manage``: the forms (and a grant check's answer); ``POST``: one change."""
    found = services(request)
    try:
        caller = await _operator(request)
    except Unauthenticated:
        return sign_in_page(request, status_code=401)
    except NavigatorError as error:
        return _html(error_page(error).main, error.status)
    if request.method == "POST" and not is_same_origin(request):
        return _html(error_page(ToolNotGranted(CROSS_SITE)).main, 403)
    outcome: Outcome | None = None
    status = 200
    try:
        if request.method == "POST":
            form = await read_form(request)
            action = ACTIONS.get(form.get("action", ""))
            if action is None:
                raise InvalidArguments("No such change.")
            if action.question is not None and form.get("confirmed") != "yes":
                page = confirm_page(action.question(form), form)
                return HTMLResponse(document(page, caller, operator=True))
            outcome = await action.run(found, form)
        else:
            outcome = await _why(found, request)
    except RegistryError as error:
        failed = from_registry(error)
        outcome, status = Outcome(failed.message, refused=True), failed.status
    except NavigatorError as error:
        outcome, status = Outcome(error.message, refused=True), error.status
    try:
        listing = await _listing(found)
    except RegistryError as error:  # the change (if any) is done; the listing cannot be read
        failed = from_registry(error)
        page = error_page(failed)
        return HTMLResponse(document(page, caller, operator=True), status_code=failed.status)
    page = manage_page(listing, outcome, status)
    if request.headers.get(FRAGMENT_HEADER) == "1" and request.method == "GET":
        return HTMLResponse(page.main, status_code=page.status)
    return HTMLResponse(document(page, caller, operator=True), status_code=page.status)


def _html(main: str, status: int) -> Response:
    return HTMLResponse(f"<!doctype html><title>meshnav</title>{main}", status_code=status)
