"""What a registration writes besides the catalogue: the ``*`` row of ``--grant-scope-holders``
(SPEC §4)."""

from __future__ import annotations

from pathlib import Path

from navigator.registrar import AssignmentSpec
from navigator.server import running
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import AccessStore

TOOLS = [{"name": "lookup", "description": "Look a thing up.", "inputSchema": {"type": "object"}}]


async def test_the_scope_holders_row_follows_the_modules_scopes(tmp_path: Path) -> None:
    """Registered again with other scopes, the module's ``*`` row takes them: the holders of a
    scope it no longer declares lose the tools (the row used to be kept beside the new one)."""
    services = Services.create(NavigatorSettings(database_url=f"sqlite:///{tmp_path / 'r.db'}"))
    async with running(services):

        async def register(scopes: list[str]) -> list[tuple[str, str, tuple[str, ...]]]:
            spec = AssignmentSpec(role="books", module="books", tools=TOOLS, scopes=scopes)
            await services.registrar.put_assignment("m1", spec, grant_scope_holders=True)
            rows = await services.transact(lambda session: AccessStore(session).grants("*"))
            return [(row.effect, row.target, row.scopes) for row in rows]

        await services.transact(
            lambda session: AccessStore(session).grant("*", "m1/books/*", effect="deny")
        )
        first = await register(["team:a"])
        again = await register(["team:a"])
        changed = await register(["team:b"])
    assert first == again == [("deny", "m1/books/*", ()), ("allow", "m1/books/*", ("team:a",))]
    assert changed == [("deny", "m1/books/*", ()), ("allow", "m1/books/*", ("team:b",))]
