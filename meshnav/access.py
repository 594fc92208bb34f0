"""Principals and grants for the CLI: on the registry directly (how the first administrator is
made) or through the admin API when a navigator URL is given."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

from sqlalchemy.orm import Session

from meshnav.client import admin_request, error_line
from meshnav.errors import CommandError
from navigator.addresses import MESH, check_placement, parse_pattern
from navigator.api.audit import audit_filter, audit_page, audit_verify
from navigator.errors import (
    InvalidAddress,
    NavigatorError,
    error_body,
    from_registry,
)
from navigator.http.bodies import Body, parse_body
from navigator.operations.rules import (
    GRANT_ID_MOST,
    GrantBody,
    PrincipalBody,
    QuotaBody,
    RotateBody,
    checked_principal,
    grant_verdict,
    is_principal_name,
    principal_added,
    token_rotated,
    write_grant,
)
from registry import (
    UNLIMITED,
    AccessStore,
    CatalogStore,
    GrantRecord,
    NotFound,
    Quota,
    Registry,
    RegistryError,
    ready_revision,
)

T = TypeVar("T")
B = TypeVar("B", bound=Body)

__all__ = ["Access"]


class Access:
    def __init__(self, *, database_url: str, navigator_url: str | None, token: str | None) -> None:
        self.database_url = database_url
        self.navigator_url = navigator_url
        self.token = token or ""

    async def _api(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> Any:
        assert self.navigator_url is not None
        return await admin_request(self.navigator_url, self.token, method, path, body, params)

    def _registry(self) -> Registry:
        try:
            ready_revision(self.database_url)
        except RegistryError as error:
            raise CommandError(str(error)) from None
        return Registry(self.database_url)

    def _direct(self, work: Callable[[AccessStore], T], *, writes: bool = True) -> T:
        """``work`` on the registry itself, its errors worded as the admin API words them; in a
        read transaction when it only reads (``writes=False``)."""
        return self._in_registry(lambda session: work(AccessStore(session)), writes=writes)

    def _in_registry(self, work: Callable[[Session], T], *, writes: bool = True) -> T:
        registry = self._registry()
        try:
            begin = registry.transaction if writes else registry.read_transaction
            with begin() as session:
                return work(session)
        except RegistryError as error:
            raise _command_error(from_registry(error)) from None
        except NavigatorError as error:
            raise _command_error(error) from None
        finally:
            registry.dispose()

    # --- principals ------------------------------------------------------------------------

    async def add_principal(
        self,
        name: str,
        scopes: list[str],
        machine: str | None,
        expires_days: float | None,
        quota: Quota = UNLIMITED,
    ) -> dict[str, Any]:
        body = {
            "name": name,
            "scopes": scopes,
            "machine": machine,
            "expiresDays": expires_days,
            **quota.as_json(),
        }
        if self.navigator_url:
            return dict(await self._api("POST", "/principals", body))
        fields = _fields(PrincipalBody, body, checked_principal)
        return self._direct(lambda store: principal_added(store, fields))

    async def list_principals(self) -> list[dict[str, Any]]:
        if self.navigator_url:
            return list(await self._api("GET", "/principals"))
        return [r.as_json() for r in self._direct(lambda store: store.principals(), writes=False)]

    async def rotate_principal(self, name: str, expires_days: float | None) -> dict[str, Any]:
        body = {"expiresDays": expires_days}
        if self.navigator_url:
            return dict(await self._api("POST", f"/principals/{_named(name)}/rotate", body))
        fields = _fields(RotateBody, body)
        return self._direct(lambda store: token_rotated(store, name, fields.expires_days))

    async def set_quota(self, name: str, quota: Quota) -> dict[str, Any]:
        """Replace a principal's quota (``PUT /api/v1/principals/NAME/quota``)."""
        body = quota.as_json()
        if self.navigator_url:
            return dict(await self._api("PUT", f"/principals/{_named(name)}/quota", body))
        fields = _fields(QuotaBody, body)
        return self._direct(lambda store: store.set_quota(name, fields.quota())).as_json()

    async def revoke_principal(self, name: str) -> None:
        if self.navigator_url:
            await self._api("DELETE", f"/principals/{_named(name)}")
            return
        self._direct(lambda store: store.revoke_principal(name))

    # --- seats -----------------------------------------------------------------------------

    async def place_seat(self, seat: str, machine: str, role: str) -> dict[str, Any]:
        """Place a mesh seat (``Registrar.place_seat``, ``PUT /api/v1/seats/SEAT``)."""
        try:
            check_placement(seat, machine, role)
        except InvalidAddress as error:  # as the API refuses it (a seat is one path segment)
            raise _command_error(error) from None
        if self.navigator_url:
            body = {"machine": machine, "role": role}
            return dict(await self._api("PUT", f"/seats/{seat}", body))
        self._in_registry(lambda session: CatalogStore(session).place_seat(seat, machine, role))
        return {"seat": f"{MESH}/{seat}", "machine": machine, "role": role}

    async def list_seats(self) -> dict[str, Any]:
        """Each mesh seat and where it is placed (``GET /api/v1/seats``)."""
        if self.navigator_url:
            return dict(await self._api("GET", "/seats"))
        placed = self._in_registry(lambda s: CatalogStore(s).seats(), writes=False)
        return {
            name: None if where is None else {"machine": where[0], "role": where[1]}
            for name, where in placed.items()
        }

    async def remove_seat(self, seat: str) -> dict[str, Any]:
        """Remove a mesh seat, retiring the assignment that held it (``DELETE /seats/SEAT``)."""
        if self.navigator_url:
            return dict(await self._api("DELETE", f"/seats/{quote(seat, safe='')}"))
        self._in_registry(lambda session: CatalogStore(session).remove_seat(seat))
        return {"removed": f"{MESH}/{seat}"}

    # --- grants ----------------------------------------------------------------------------

    async def grant(
        self, effect: str, principal: str, target: str, scopes: list[str], *, force: bool = False
    ) -> dict[str, Any]:
        try:
            parse_pattern(target)
        except InvalidAddress as error:  # as the API refuses it: with --json, its body
            raise _command_error(error) from None
        body: dict[str, Any] = {
            "principal": principal,
            "target": target,
            "effect": effect,
            "scopes": scopes,
        }
        if force:
            body["force"] = True
        if self.navigator_url:
            return dict(await self._api("POST", "/grants", body))
        fields = _fields(GrantBody, body)
        record: GrantRecord = self._direct(lambda store: write_grant(store, fields))
        return record.as_json()

    async def list_grants(self) -> list[dict[str, Any]]:
        if self.navigator_url:
            return list(await self._api("GET", "/grants"))
        return [r.as_json() for r in self._direct(lambda store: store.grants(), writes=False)]

    async def revoke_grant(self, grant_id: int) -> None:
        if self.navigator_url:
            await self._api("DELETE", f"/grants/{grant_id}")
            return
        if not 0 < grant_id <= GRANT_ID_MOST:  # as the API answers it: past the column, none
            raise _command_error(from_registry(NotFound("No such grant.")))
        self._direct(lambda store: store.revoke_grant(grant_id))

    async def check(self, principal: str, address: str) -> dict[str, Any]:
        if self.navigator_url:
            params = {"principal": principal, "address": address}
            return dict(await self._api("GET", "/grants/check", params=params))
        return self._direct(lambda store: grant_verdict(store, principal, address), writes=False)

    # --- the audit trail -------------------------------------------------------------------

    async def audit(self, given: dict[str, str | None]) -> dict[str, Any]:
        """Audit events (``GET /api/v1/audit``, or the registry itself): filters checked alike."""
        params = {name: value for name, value in given.items() if value is not None}
        if self.navigator_url:
            return dict(await self._api("GET", "/audit", params=params))
        try:
            wanted = audit_filter(params)
        except NavigatorError as error:
            raise _command_error(error) from None
        return self._in_registry(lambda session: audit_page(session, wanted), writes=False)

    async def audit_verify(self) -> dict[str, Any]:
        if self.navigator_url:
            return dict(await self._api("GET", "/audit/verify"))
        return self._in_registry(audit_verify, writes=False)


def _command_error(error: NavigatorError) -> CommandError:
    body = error_body(error)
    return CommandError(error_line(body), body)


def _fields(model: type[B], body: dict[str, Any], check: Callable[[B], B] | None = None) -> B:
    """``body`` under the admin API's own rules (its model, then ``check``), so that the
    registry never holds what the API would have refused; refused in the API's words."""
    try:
        fields = parse_body(model, body)
        return fields if check is None else check(fields)
    except NavigatorError as error:
        raise _command_error(error) from None


def _named(name: str) -> str:
    """A principal's name as one path segment. A name no principal can have (``..``, ``a/b``)
    is refused here, as the API would refuse it: it must not become another path."""
    if not is_principal_name(name):
        raise _command_error(from_registry(NotFound("No such principal.")))
    return quote(name, safe="")
