"""A node seat's page: ``/console/assignments/*/ROLE``, where the console's own links to a tool
every machine holds lead. It answered "Something went wrong … invalid_address"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.navigator.console.test_console import console_app, main_of


@pytest.mark.parametrize("viewer", ["alice", "root"])
async def test_a_node_seats_page_lists_its_tools_and_an_unknown_one_is_not_found(
    tmp_path: Path, viewer: str
) -> None:
    async with console_app(tmp_path) as console, console.signed_in(viewer) as client:
        seat = await client.get("/console/assignments/*/node")
        none = await client.get("/console/assignments/*/nothing")
    assert seat.status_code == 200, seat.text
    assert "uptime" in main_of(seat.text)
    assert "invalid_address" not in seat.text and "Something went wrong" not in seat.text
    assert none.status_code == 404
    assert "invalid_address" not in none.text
