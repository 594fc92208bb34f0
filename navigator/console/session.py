"""Signing in to the console with a bearer token, and who is looking.

The viewer posts their token once; it is kept in an HttpOnly, SameSite=Strict cookie (Secure over
https) and authenticated again through ``Authenticator`` on every console request, so a revoked or
expired token stops working at once. The token never appears in a URL, a page or a log. The admin
API, MCP and the node API read only the Authorization header, never this cookie, so the cookie
cannot be used to act on the mesh from another site.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from navigator.bodies import read_bounded
from navigator.console.layout import sign_in_document
from navigator.console.security import is_same_origin
from navigator.errors import NavigatorError, Unauthenticated, error_body, from_registry
from navigator.grants import Caller
from navigator.services import services
from registry import RegistryError

__all__ = [
    "COOKIE",
    "authenticate_viewer",
    "error_json",
    "sign_in",
    "sign_in_page",
    "sign_out",
]

COOKIE = "meshnav_console"
#: How long a browser keeps the sign-in; the token's own expiry and revocation still apply.
SESSION_S = 12 * 3600
MAX_FORM_BYTES = 8 * 1024
MAX_TOKEN_CHARS = 4000


def viewer_token(request: Request) -> str | None:
    token = request.cookies.get(COOKIE)
    return token if token and len(token) <= MAX_TOKEN_CHARS else None


async def _authenticate(request: Request, token: str | None) -> Caller:
    """Any credential the admin API takes — a stored token, or a JWT where a verifier is
    configured — read under the registry's statement bound (a review: a JWT was refused here
    alone, and a hung registry held a worker thread per page)."""
    try:
        return await services(request).authenticator.verify(token)
    except RegistryError as error:
        raise from_registry(error) from None


async def authenticate_viewer(request: Request) -> Caller:
    """The signed-in viewer, authenticated now; ``Unauthenticated`` when there is none."""
    return await _authenticate(request, viewer_token(request))


def error_json(error: NavigatorError | None = None) -> Response:
    """SPEC §9's answer for the console's data and event endpoints."""
    error = error or Unauthenticated()
    return JSONResponse(error_body(error), status_code=error.status)


def safe_next(path: str | None) -> str:
    """Where to go after signing in: a console page of this site, nowhere else."""
    if not path or not path.startswith("/") or path.startswith(("//", "/\\")):
        return "/"
    if (path != "/" and not path.startswith("/console/")) or path.startswith("/console/sign-"):
        return "/"
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in path):
        return "/"
    return path


def sign_in_page(
    request: Request, *, message: str | None = None, status_code: int = 200
) -> Response:
    """The sign-in form, shown in place of any console page when nobody is signed in."""
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return HTMLResponse(
        sign_in_document(message=message, next_path=safe_next(here)), status_code=status_code
    )


async def _read_form(request: Request) -> dict[str, str]:
    if request.headers.get("content-type", "").split(";")[0].strip() != (
        "application/x-www-form-urlencoded"
    ):
        return {}
    body = await read_bounded(request, MAX_FORM_BYTES)
    if body is None:
        return {}
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=8, strict_parsing=False)
    except (UnicodeDecodeError, ValueError):
        return {}
    return {name: values[0] for name, values in fields.items() if values}


async def sign_in(request: Request) -> Response:
    """``POST /console/sign-in``: check the token, keep it in the cookie, go back to the page."""
    if request.method != "POST":
        return RedirectResponse("/", status_code=303)
    if not is_same_origin(request):
        return HTMLResponse(
            sign_in_document(message="Sign in from this console's own page."), status_code=403
        )
    form = await _read_form(request)
    token = form.get("token", "").strip()
    next_path = safe_next(form.get("next"))
    if len(token) > MAX_TOKEN_CHARS:
        token = ""
    try:
        await _authenticate(request, token)
    except NavigatorError as error:
        message = (
            "That token was not accepted."
            if isinstance(error, Unauthenticated)
            else "The registry cannot be read right now; try again shortly."
        )
        return HTMLResponse(
            sign_in_document(message=message, next_path=next_path), status_code=error.status
        )
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(
        COOKIE,
        token,
        max_age=SESSION_S,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def sign_out(request: Request) -> Response:
    """``POST /console/sign-out``: forget the cookie."""
    if request.method != "POST" or not is_same_origin(request):
        return RedirectResponse("/", status_code=303)
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(
        COOKIE, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )
    return response
