"""Issue 26 (8): the console and the admin and node API took any ``Host`` and ``Origin``; they
are held to the rule ``/mcp`` is (DNS-rebinding protection, ``MESHNAV_ALLOWED_HOSTS`` and
``MESHNAV_ALLOWED_ORIGINS``), while health and metrics answer a probe by any name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.navigator.console.test_console import console_app

#: The navigator's default listening address: loopback, so only loopback names are taken.
LOOPBACK = "http://127.0.0.1:7700"
EVIL = "evil.example"
#: (method, path): a console page, its sign-in and an asset, the admin API, the node API.
GUARDED = [
    ("GET", "/"),
    ("POST", "/console/sign-in"),
    ("GET", "/console/static/console.css"),
    ("GET", "/api/v1/mesh"),
    ("POST", "/api/v1/nodes/register"),
    ("POST", "/mcp"),
]
PROBES = ["/healthz", "/readyz", "/metrics"]


#: A request from elsewhere, its answer, and the same request from the navigator's own name.
REFUSALS = [
    ({"host": EVIL}, (421, "Misdirected Request"), {}),
    ({"origin": f"http://{EVIL}"}, (403, "Forbidden Origin"), {"origin": LOOPBACK}),
]


@pytest.mark.parametrize(("method", "path"), GUARDED)
@pytest.mark.parametrize(("elsewhere", "refusal", "own"), REFUSALS, ids=["host", "origin"])
async def test_another_host_or_sites_origin_is_refused_everywhere(
    tmp_path: Path,
    method: str,
    path: str,
    elsewhere: dict[str, str],
    refusal: tuple[int, str],
    own: dict[str, str],
) -> None:
    async with console_app(tmp_path) as console, console.client(LOOPBACK) as client:
        bearer = {"authorization": f"Bearer {console.tokens['root']}"}
        refused = await client.request(method, path, headers={**bearer, **elsewhere})
        served = await client.request(method, path, headers={**bearer, **own})
    assert (refused.status_code, refused.text) == refusal
    assert served.status_code != 421
    assert served.text not in ("Misdirected Request", "Forbidden Origin")


async def test_the_allowed_hosts_setting_names_the_console_and_api_too(tmp_path: Path) -> None:
    """Behind a proxy, listening on every address: the operator's names, and no other."""
    async with (
        console_app(tmp_path, allowed_hosts=["nav.example"]) as console,
        console.client("http://nav.example") as client,
    ):
        bearer = {"authorization": f"Bearer {console.tokens['root']}"}
        named = await client.get("/api/v1/mesh", headers=bearer)
        home = await client.get("/")
        other = await client.get("/api/v1/mesh", headers={**bearer, "host": EVIL})
        console_elsewhere = await client.get("/", headers={"host": EVIL})
    assert named.status_code == 200
    assert home.status_code == 200
    assert other.status_code == 421
    assert console_elsewhere.status_code == 421


@pytest.mark.parametrize("path", PROBES)
async def test_probes_answer_by_any_name(tmp_path: Path, path: str) -> None:
    async with console_app(tmp_path) as console, console.client(LOOPBACK) as client:
        answer = await client.get(path, headers={"host": EVIL, "origin": f"http://{EVIL}"})
    assert answer.status_code == 200
