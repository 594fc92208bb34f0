"""Quotas (issue 28, acceptance 4; ADR 0041) through real processes: a principal added with
``--rate 60/min`` gets its 61st call in a minute answered ``rate_limited`` with ``retryAfterS``
while another principal's calls beside it all answer; a navigator sending a node at most 2 calls
at once turns a burst of 20 slow calls into 2 in flight, 2 waiting their turn and the rest
``rate_limited``; the quota changes through the CLI and the admin API, held from the next call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastmcp import Client

from registry import AccessStore, Quota
from tests.harness import MeshHarness, mcp_client, tool_result

pytestmark = [pytest.mark.e2e]

ECHO_SERVER = Path(__file__).resolve().parents[1] / "mesh" / "fixtures" / "echo_server.py"
UPTIME = {"address": "q1/node/uptime", "args": {}}


def _meshnav(*arguments: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "meshnav", *arguments, "--json"],
        capture_output=True,
        check=True,
        text=True,
        timeout=60,
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


async def _outcome(client: Client[Any], call: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool_mcp("call", call)
    if not result.is_error:
        return {"ok": result.structured_content}
    return tool_result(result)


@pytest.fixture
def harness(tmp_path: Path) -> Any:
    mesh = MeshHarness(tmp_path)
    try:
        yield mesh
    finally:
        mesh.close()


async def test_the_61st_call_in_a_minute_is_rate_limited_and_no_one_else_is(
    harness: MeshHarness,
) -> None:
    made = _meshnav(
        *("principal", "add", "limited", "--rate", "60/min"),
        *("--database", harness.database_url),
    )
    other = harness.principal("other")
    for name in ("limited", "other"):
        harness.grant(name, "*/*/*")
    harness.start_navigator()
    harness.start_node("q1", ["node"])
    async with (
        mcp_client(harness.navigator_url, made["token"]) as limited,
        mcp_client(harness.navigator_url, other) as beside,
    ):
        before = [await _outcome(beside, UPTIME) for _ in range(20)]
        assert all("ok" in o for o in before), "the other principal's error rate before: 0"
        limited_outcomes: list[dict[str, Any]] = []
        beside_outcomes: list[dict[str, Any]] = []

        async def run_limited() -> None:
            for _ in range(61):
                limited_outcomes.append(await _outcome(limited, UPTIME))

        async def run_beside() -> None:
            for _ in range(40):
                beside_outcomes.append(await _outcome(beside, UPTIME))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run_limited)
            tasks.start_soon(run_beside)
        assert all("ok" in o for o in limited_outcomes[:60]), limited_outcomes[:60]
        last = limited_outcomes[60]
        assert last["error"] == "rate_limited" and last["status"] == 429, last
        assert isinstance(last["retryAfterS"], int) and 1 <= last["retryAfterS"] <= 60
        assert set(last) == {"error", "status", "message", "retryAfterS"}
        assert all("ok" in o for o in beside_outcomes), "the other principal's error rate: 0"
        # the quota changed through the CLI holds from the next call; none is no limit
        _meshnav(
            "principal", "quota", "limited", "--rate", "none", "--concurrency", "none",
            "--database", harness.database_url,
        )  # fmt: skip
        assert "ok" in await _outcome(limited, UPTIME)
        shown = _meshnav("principal", "list", "--database", harness.database_url)
        assert {"name": "limited", "ratePerMinute": None, "concurrency": None}.items() <= next(
            p
            for p in shown
            if p["name"] == "limited"  # type: ignore[attr-defined]
        ).items()


async def test_a_principals_calls_at_once_are_held_to_its_quota(harness: MeshHarness) -> None:
    admin = harness.principal("admin", ["mesh:admin"])
    token = harness.principal("worker")
    harness.grant("worker", "*/*/*")
    harness.start_navigator()
    harness.start_node("q1", [f"stdio:echo={sys.executable} {ECHO_SERVER}"])
    answer = httpx.put(
        harness.navigator_url + "/api/v1/principals/worker/quota",
        headers={"Authorization": f"Bearer {admin}"},
        json={"concurrency": 3},
        timeout=30,
    )
    assert answer.status_code == 200 and answer.json()["concurrency"] == 3, answer.text
    refused = httpx.put(
        harness.navigator_url + "/api/v1/principals/worker/quota",
        headers={"Authorization": f"Bearer {admin}"},
        json={"concurrency": 0},
        timeout=30,
    )
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_arguments"
    nap = {"address": "q1/echo/nap", "args": {"seconds": 3.0}}
    outcomes: list[dict[str, Any]] = []
    async with mcp_client(harness.navigator_url, token) as client:

        async def one() -> None:
            outcomes.append(await _outcome(client, nap))

        async with anyio.create_task_group() as tasks:
            for _ in range(6):
                tasks.start_soon(one)
    served = [o for o in outcomes if "ok" in o]
    limited = [o for o in outcomes if o.get("error") == "rate_limited"]
    assert len(served) == 3 and len(limited) == 3, outcomes
    assert all(o["retryAfterS"] >= 1 for o in limited)


async def test_a_node_is_sent_two_calls_at_once_and_the_rest_wait_or_are_refused(
    tmp_path: Path,
) -> None:
    harness = MeshHarness(tmp_path, env={"MESHNAV_NODE_CONCURRENCY": "2"})
    try:
        token = harness.principal("burst")
        harness.grant("burst", "*/*/*")
        harness.start_navigator()
        harness.start_node("q1", [f"stdio:echo={sys.executable} {ECHO_SERVER}"])
        nap = {"address": "q1/echo/nap", "args": {"seconds": 3.0}}
        outcomes: list[dict[str, Any]] = []
        async with mcp_client(harness.navigator_url, token) as client:
            assert "ok" in await _outcome(client, nap)  # the module started, the node's pace known

            async def one() -> None:
                outcomes.append(await _outcome(client, nap))

            async with anyio.create_task_group() as tasks:
                for _ in range(20):
                    tasks.start_soon(one)
    finally:
        harness.close()
    served = [o["ok"] for o in outcomes if "ok" in o]
    limited = [o for o in outcomes if o.get("error") == "rate_limited"]
    assert len(served) + len(limited) == 20, outcomes
    assert max(s["inFlight"] for s in served) == 2, served  # never more than 2 at the node
    assert len(served) == 4, "2 in flight and 2 in turn; the rest refused at once"
    assert len(limited) == 16
    assert all(o["status"] == 429 and o["retryAfterS"] >= 1 for o in limited)
    assert "node" in limited[0]["message"]


@pytest.mark.postgres
@pytest.mark.xdist_group("postgres")
async def test_two_navigators_on_one_postgresql_hold_one_rate_together(
    postgres_server: Any, tmp_path: Path
) -> None:
    """Each of two navigators holds half of ``60/min`` (ADR 0041): calls spread over both get 60
    in the minute and the 61st is refused; calls reaching one get its half, never more."""
    url = postgres_server.create_database("quota_share")
    shared = {"MESHNAV_NAVIGATORS": "2"}
    first = MeshHarness(tmp_path / "a", database_url=url, env=shared)
    second = MeshHarness(tmp_path / "b", database_url=url, env=shared)
    try:
        spread = first.principal("spread")
        first.grant("spread", "*/*/*")
        one = first.principal("one")
        first.grant("one", "*/*/*")
        with first.registry.transaction() as session:
            for name in ("spread", "one"):
                AccessStore(session).set_quota(name, Quota(rate_per_minute=60))
        first.start_navigator()
        second.start_navigator()
        first.start_node("q1", ["node"])
        async with (
            mcp_client(first.navigator_url, spread) as a,
            mcp_client(second.navigator_url, spread) as b,
            mcp_client(first.navigator_url, one) as only,
        ):
            outcomes = [await _outcome((a, b)[i % 2], UPTIME) for i in range(61)]
            alone = [await _outcome(only, UPTIME) for _ in range(31)]
    finally:
        second.close()
        first.close()
    assert all("ok" in o for o in outcomes[:60]), outcomes[:60]
    assert outcomes[60]["error"] == "rate_limited"
    assert all("ok" in o for o in alone[:30]) and alone[30]["error"] == "rate_limited"
