"""Signing in to the console with a bearer token, and who is looking.

The viewer posts their token once. It is checked, and never kept: the browser is given a random
session id in an HttpOnly, SameSite=Strict cookie (Secure over https), and the registry keeps the
id's hash with what it stands for (``registry.sessions``), so every navigator of the registry
knows the session and signing out ends it on all of them. Every console request reads the session
and authenticates what stands behind it again — the stored token it was opened with, its
principal active; or, for a JWT, the JWT's own expiry — so a rotated, revoked or expired token
signs its sessions out at once. A session also ends ``console_idle_s`` after the viewer last
loaded a page, and ``console_lifetime_s`` after it began. Neither the token nor the session id
appears in a URL, a page or a log. The admin API, MCP and the node API read only the
Authorization header, never this cookie, so the cookie cannot be used to act on the mesh from
another site (nor, holding no token, anywhere else).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import replace
from datetime import timedelta
from urllib.parse import parse_qs

from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from navigator.access.grants import Caller
from navigator.access.tokens import hash_token
from navigator.catalog.registry_reads import short_read
from navigator.console.layout import sign_in_document
from navigator.console.security import is_same_origin
from navigator.errors import NavigatorError, Unauthenticated, error_body, from_registry
from navigator.http.bodies import read_bounded
from navigator.services import Services, services
from registry import ConsoleSessions, RegistryError, SessionRules, read_console_session
from registry.models import utcnow

__all__ = [
    "COOKIE",
    "authenticate_viewer",
    "error_json",
    "sign_in",
    "sign_in_page",
    "sign_out",
]

logger = logging.getLogger("meshnav.navigator.console")

COOKIE = "meshnav_console"
MAX_FORM_BYTES = 8 * 1024
MAX_TOKEN_CHARS = 4000
#: A session id's characters (``secrets.token_urlsafe(32)``: 43); a longer cookie is no session.
MAX_SESSION_CHARS = 64
#: Sessions one principal holds at once: signing in again past this ends its oldest.
SESSIONS_PER_PRINCIPAL = 16
#: How often, at most, a session's last page load is written (and never more than an eighth of
#: the idle limit): a page load is a read, not a write, most of the time.
SEEN_EVERY_S = 60.0


def _rules(found: Services) -> SessionRules:
    settings = found.settings
    return SessionRules(idle_s=settings.console_idle_s, lifetime_s=settings.console_lifetime_s)


def _session_id(request: Request) -> str | None:
    session_id = request.cookies.get(COOKIE)
    return session_id if session_id and len(session_id) <= MAX_SESSION_CHARS else None


async def _viewer(found: Services, session_id: str | None, *, page: bool) -> Caller:
    """The viewer a session stands for, authenticated now; ``Unauthenticated`` when the session
    is gone, over, or what stands behind it no longer holds. ``page``: the viewer loaded a page
    (not a fragment or an event stream's check), which starts its idle time again."""
    if session_id is None:
        raise Unauthenticated()
    registry = found.registry
    id_hash = hash_token(session_id)
    try:
        record = await short_read(registry, read_console_session, registry, id_hash)
        now = utcnow()
        if record is None or not record.is_live(now, _rules(found)):
            raise Unauthenticated()
        authenticator = found.authenticator
        if record.token_hash is None:  # a JWT's: its scopes as it signed in, within its expiry,
            # bound to its principal's row as it is now (the operator flag is the row's)
            scopes = frozenset(record.scopes)
            caller = await short_read(registry, authenticator.subject, record.principal, scopes)
        else:
            caller = await short_read(registry, authenticator.holder_of, record.token_hash)
            if caller.principal != record.principal:
                raise Unauthenticated()
    except RegistryError as error:
        raise from_registry(error) from None
    touch_after = min(SEEN_EVERY_S, found.settings.console_idle_s / 8)
    if page and now - record.seen_at >= timedelta(seconds=touch_after):
        try:
            await found.transact(lambda session: ConsoleSessions(session).seen(id_hash, now))
        except RegistryError:  # the page still answers; the session idles from its last write
            logger.warning("a console session's last page load could not be written")

    async def renew() -> Caller:
        return await _viewer(found, session_id, page=False)

    return replace(caller, renew=renew)


async def authenticate_viewer(request: Request, *, page: bool = False) -> Caller:
    """The signed-in viewer, authenticated now; ``Unauthenticated`` when there is none. ``page``
    when the request is the viewer loading a page."""
    return await _viewer(services(request), _session_id(request), page=page)


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


async def _open_session(
    found: Services, token: str, replacing: str | None, source: str = ""
) -> str:
    """A new session for the holder of ``token``, and its id, in place of the browser's session
    ``replacing`` (never reused: a new id at every sign-in); ``NavigatorError`` when the token
    is not accepted or the registry cannot be read or written."""
    session_id = secrets.token_urlsafe(32)
    try:
        credential = await found.authenticator.credential(
            token, route="/console/sign-in", source=source
        )
        now = utcnow()

        def open_session(session: Session) -> None:
            sessions = ConsoleSessions(session)
            if replacing is not None:
                sessions.close(hash_token(replacing))
            sessions.open(
                hash_token(session_id),
                principal=credential.caller.principal,
                token_hash=credential.token_hash,
                scopes=credential.caller.scopes,
                expires_at=credential.expires_at,
                now=now,
                rules=_rules(found),
                keep=SESSIONS_PER_PRINCIPAL,
            )

        await found.transact(open_session)
    except RegistryError as error:
        raise from_registry(error) from None
    return session_id


async def sign_in(request: Request) -> Response:
    """``POST /console/sign-in``: check the token, open a session, go back to the page."""
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
    found = services(request)
    try:
        source = request.client.host if request.client else ""
        session_id = await _open_session(found, token, _session_id(request), source)
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
        session_id,
        max_age=int(found.settings.console_lifetime_s),
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def sign_out(request: Request) -> Response:
    """``POST /console/sign-out``: end the session on every navigator, and forget the cookie."""
    if request.method != "POST" or not is_same_origin(request):
        return RedirectResponse("/", status_code=303)
    session_id = _session_id(request)
    response: Response = RedirectResponse("/", status_code=303)
    if session_id is not None:
        id_hash = hash_token(session_id)
        try:
            await services(request).transact(lambda s: ConsoleSessions(s).close(id_hash))
        except RegistryError as error:
            failed = from_registry(error)
            response = HTMLResponse(
                sign_in_document(
                    message="Signed out of this browser, but the registry cannot be reached to "
                    "end the session; it ends at its expiry, or sign in and out again shortly."
                ),
                status_code=failed.status,
            )
    response.delete_cookie(
        COOKIE, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )
    return response
