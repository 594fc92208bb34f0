"""Principals and grants for the CLI: on the registry directly (how the first administrator is
made) or through the admin API when a navigator URL is given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from meshnav.client import admin_request
from meshnav.errors import CommandError
from navigator.addresses import parse_pattern
from navigator.auth import hash_token, mint_token
from navigator.errors import InvalidAddress
from navigator.grants import Caller, explain
from registry import AccessStore, GrantRecord, Registry, RegistryError, migrate

__all__ = ["Access"]


class Access:
    def __init__(self, *, database_url: str, navigator_url: str | None, token: str | None) -> None:
        self.database_url = database_url
        self.navigator_url = navigator_url
        self.token = token or ""

    async def _api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        assert self.navigator_url is not None
        return await admin_request(self.navigator_url, self.token, method, path, body)

    def _registry(self) -> Registry:
        try:
            migrate(self.database_url)
        except RegistryError as error:
            raise CommandError(str(error)) from None
        return Registry(self.database_url)

    def _direct(self, work: Any) -> Any:
        registry = self._registry()
        try:
            with registry.transaction() as session:
                return work(AccessStore(session))
        except RegistryError as error:
            raise CommandError(str(error)) from None
        finally:
            registry.dispose()

    # --- principals ------------------------------------------------------------------------

    async def add_principal(
        self, name: str, scopes: list[str], machine: str | None, expires_days: float | None
    ) -> dict[str, Any]:
        if self.navigator_url:
            body = {"name": name, "scopes": scopes, "machine": machine, "expiresDays": expires_days}
            return dict(await self._api("POST", "/principals", body))
        token = mint_token()
        expires = datetime.now(UTC) + timedelta(days=expires_days) if expires_days else None
        record = self._direct(
            lambda store: store.add_principal(
                name,
                scopes=scopes,
                token_hash=hash_token(token),
                machine=machine,
                expires_at=expires,
            )
        )
        return {"principal": record.as_json(), "token": token}

    async def list_principals(self) -> list[dict[str, Any]]:
        if self.navigator_url:
            return list(await self._api("GET", "/principals"))
        return [r.as_json() for r in self._direct(lambda store: store.principals())]

    async def rotate_principal(self, name: str, expires_days: float | None) -> dict[str, Any]:
        if self.navigator_url:
            return dict(
                await self._api("POST", f"/principals/{name}/rotate", {"expiresDays": expires_days})
            )
        token = mint_token()
        expires = datetime.now(UTC) + timedelta(days=expires_days) if expires_days else None
        record = self._direct(
            lambda store: store.rotate_principal(
                name, token_hash=hash_token(token), expires_at=expires
            )
        )
        return {"principal": record.as_json(), "token": token}

    async def revoke_principal(self, name: str) -> None:
        if self.navigator_url:
            await self._api("DELETE", f"/principals/{name}")
            return
        self._direct(lambda store: store.revoke_principal(name))

    # --- grants ----------------------------------------------------------------------------

    async def grant(
        self, effect: str, principal: str, target: str, scopes: list[str]
    ) -> dict[str, Any]:
        try:
            parse_pattern(target)
        except InvalidAddress:
            raise CommandError("invalid_address: the target is not an address or pattern") from None
        if self.navigator_url:
            body = {"principal": principal, "target": target, "effect": effect, "scopes": scopes}
            return dict(await self._api("POST", "/grants", body))
        record: GrantRecord = self._direct(
            lambda store: store.grant(principal, target, effect=effect, scopes=scopes)
        )
        return record.as_json()

    async def list_grants(self) -> list[dict[str, Any]]:
        if self.navigator_url:
            return list(await self._api("GET", "/grants"))
        return [r.as_json() for r in self._direct(lambda store: store.grants())]

    async def revoke_grant(self, grant_id: int) -> None:
        if self.navigator_url:
            await self._api("DELETE", f"/grants/{grant_id}")
            return
        self._direct(lambda store: store.revoke_grant(grant_id))

    async def check(self, principal: str, address: str) -> dict[str, Any]:
        if self.navigator_url:
            return dict(
                await self._api("GET", f"/grants/check?principal={principal}&address={address}")
            )

        def decide(store: AccessStore) -> dict[str, Any]:
            record = store.principal(principal)
            snapshot = store.snapshot(principal, limit=4096)
            return explain(Caller(principal, frozenset(record.scopes)), snapshot, address)

        return dict(self._direct(decide))
