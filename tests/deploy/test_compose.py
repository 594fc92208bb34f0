"""compose.yaml run for real: scripts/compose-engine starts a Docker engine, the stack comes up by
compose.yaml's own first-run steps (its header), and the mesh it makes is walked from the host —
search, calls on two PostgreSQL machines, a killed node, a stopped navigator, a grant changed on
one navigator and honoured by the other. The engine puts the host back after, whatever happened,
and the last check is that it did.

Needs root and a Debian machine (the engine installs docker.io, iptables and mmdebstrap when they
are missing). Not part of ``make test``: ``make test-deploy`` runs it (pyproject's addopts
deselect the ``deploy`` marker; ``-m deploy`` selects it again). Where the engine cannot start,
the tests fail and say why; they are never skipped.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from meshnav.errors import CommandError
from meshnav.walker import mesh_listing, walker_call
from tests.harness import free_port

pytestmark = [pytest.mark.deploy, pytest.mark.timeout(1500)]

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "scripts" / "compose-engine"
MESHNAV = Path(sys.executable).with_name("meshnav")
#: compose.yaml's default heartbeat; a machine is "not answering" after three missed (SPEC §6).
HEARTBEAT_S = 5.0
PASSWORDS = (
    "REGISTRY_PASSWORD",
    "DB1_POSTGRES_PASSWORD",
    "DB1_READER_PASSWORD",
    "DB2_POSTGRES_PASSWORD",
    "DB2_READER_PASSWORD",
)
TOKENS = ("MESHNAV_ADMIN_TOKEN", "DB1_NODE_TOKEN", "DB2_NODE_TOKEN", "WEB1_NODE_TOKEN")
#: The host's CA bundle, offered to the image build (compose.yaml's MESHNAV_BUILD_CA) where a
#: private certificate authority stands between this machine and PyPI.
HOST_CA = (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"))
COPIED = shutil.ignore_patterns(
    ".git", ".venv", ".env", "__pycache__", "*.egg-info", ".*_cache", ".hypothesis", "node_modules"
)


# --- the host before and after ---------------------------------------------------------------


def _run(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=False).stdout


def _engine_processes() -> list[str]:
    """Running processes of a Docker engine, by name: none may outlive the test."""
    names = {"dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "docker-proxy"}
    found = []
    for proc in Path("/proc").iterdir():
        try:
            name = (proc / "comm").read_text().strip()
        except OSError:
            continue
        if name in names:
            found.append(name)
    return sorted(found)


def host_state() -> dict[str, Any]:
    firewall = _run("iptables-save") + _run("ip6tables-save")
    return {
        "iptables-save": [
            re.sub(r" \[\d+:\d+\]$", "", line)
            for line in firewall.splitlines()
            if not line.startswith("#")
        ],
        "ip link": sorted(
            line.split(": ")[1].split("@")[0] for line in _run("ip", "-o", "link").splitlines()
        ),
        "net.ipv4.ip_forward": _run("sysctl", "-n", "net.ipv4.ip_forward").strip(),
        "engine processes": _engine_processes(),
        "mounts": [
            line
            for line in _run("cat", "/proc/self/mounts").splitlines()
            if "meshnav-engine" in line
        ],
    }


# --- the engine ------------------------------------------------------------------------------


@dataclass
class Engine:
    process: subprocess.Popen[bytes]
    log: Path
    env: dict[str, str] = field(default_factory=dict)

    def says(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def wait_ready(self, limit_s: float) -> None:
        """Read the engine's NAME=VALUE lines until ``ready``; fail with what it said if it
        stops first or takes longer than ``limit_s``."""
        assert self.process.stdout is not None
        descriptor = self.process.stdout.fileno()
        deadline = time.monotonic() + limit_s
        pending = b""
        while time.monotonic() < deadline:
            readable, _, _ = select.select([descriptor], [], [], 5)
            if not readable:
                if self.process.poll() is not None:
                    break
                continue
            chunk = os.read(descriptor, 65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                text = line.decode()
                if text == "ready":
                    return
                name, _, value = text.partition("=")
                self.env[name] = value
        pytest.fail(f"the Docker engine did not start; scripts/compose-engine said:\n{self.says()}")

    def close(self) -> int:
        """Close the engine's standard input, which tells it to go, and wait until it has."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=600)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            return self.process.wait(timeout=120)
        finally:
            self.process.stdout.close()


# --- the stack -------------------------------------------------------------------------------


@dataclass
class Stack:
    folder: Path
    env: dict[str, str]
    navigator_a: str
    navigator_b: str
    first_search: str = ""

    def sh(self, *argv: str, timeout: float = 600, check: bool = True) -> str:
        done = subprocess.run(
            argv,
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            pytest.fail(f"`{' '.join(argv)}` exited {done.returncode}:\n{done.stderr[-3000:]}")
        return done.stdout

    def compose(self, *argv: str, timeout: float = 600) -> str:
        return self.sh("docker", "compose", *argv, timeout=timeout)

    def dotenv(self) -> dict[str, str]:
        lines = (self.folder / ".env").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if re.match(r"^[A-Z][A-Z0-9_]*=", line))

    def admin(self) -> str:
        return self.dotenv()["MESHNAV_ADMIN_TOKEN"]

    def walker(self, navigator: str, tool: str, arguments: dict[str, Any], token: str = "") -> Any:
        return asyncio.run(walker_call(navigator, token or self.admin(), tool, arguments))

    def call(self, navigator: str, address: str, token: str = "", **args: Any) -> Any:
        return self.walker(navigator, "call", {"address": address, "args": args}, token)

    def machines(self, navigator: str) -> list[dict[str, Any]]:
        listing = asyncio.run(mesh_listing(navigator, self.admin(), None))
        return [entry for entry in listing["entries"] if entry["kind"] == "machine"]

    def cli(self, navigator: str, *argv: str) -> str:
        """The host's own ``meshnav`` command line, as the administrator."""
        env = {**self.env, "MESHNAV_TOKEN": self.admin(), "MESHNAV_NAVIGATOR_URL": navigator}
        done = subprocess.run(
            [str(MESHNAV), *argv], env=env, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, f"meshnav {' '.join(argv)}: {done.stderr[-2000:]}"
        return done.stdout


def until(what: str, check: Callable[[], Any], limit_s: float, every_s: float = 1.0) -> Any:
    """``check()``'s first true answer within ``limit_s``, or a failure saying what never came."""
    deadline = time.monotonic() + limit_s
    last: Any = None
    while True:
        try:
            last = check()
        except CommandError as error:
            last = error
        if last and not isinstance(last, CommandError):
            return last
        if time.monotonic() >= deadline:
            pytest.fail(f"{what}: not within {limit_s:.0f} s (last: {last!r})")
        time.sleep(every_s)


def statuses(stack: Stack, navigator: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for machine in stack.machines(navigator):
        found.setdefault(machine["address"], []).append(machine["status"])
    return found


#: compose.yaml's first run, as its header gives it; the passwords are set after the first.
FIRST_RUN = (
    "cp deploy/.env.example .env",
    "sh deploy/bootstrap.sh",
    "docker compose up -d --wait",
    'docker compose run --rm cli search "list databases"',
)


def test_the_first_run_is_the_one_compose_yaml_gives() -> None:
    header = (ROOT / "compose.yaml").read_text().split("\n\n", 1)[0]
    steps = [line.lstrip("#").split(" #")[0].strip() for line in header.splitlines()]
    assert [step for step in steps if step in FIRST_RUN] == list(FIRST_RUN)


def first_run(folder: Path, env: dict[str, str], ports: tuple[int, int]) -> Stack:
    """compose.yaml's header, step by step: .env from the example with its five passwords set
    (and free host ports), deploy/bootstrap.sh, ``up -d --wait``, and the cli's search."""
    stack = Stack(folder, env, f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}")
    copy, bootstrap, up, search = FIRST_RUN
    stack.sh("sh", "-c", copy)
    text = (folder / ".env").read_text()
    for name in PASSWORDS:
        text = re.sub(rf"^{name}=$", f"{name}={secrets.token_hex(12)}", text, flags=re.MULTILINE)
    ca = next((path for path in HOST_CA if path and Path(path).is_file()), None)
    extra = [
        f"NAVIGATOR_A_PUBLISH=127.0.0.1:{ports[0]}",
        f"NAVIGATOR_B_PUBLISH=127.0.0.1:{ports[1]}",
    ]
    if ca:
        extra.append(f"MESHNAV_BUILD_CA={ca}")
    (folder / ".env").write_text(text + "\n".join(extra) + "\n")
    stack.sh("sh", "-c", bootstrap, timeout=900)
    stack.sh("sh", "-c", up, timeout=600)
    stack.first_search = stack.sh("sh", "-c", search, timeout=300)
    return stack


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if os.geteuid() != 0:
        pytest.fail("the deploy tests start a Docker engine and need root (sudo make test-deploy)")
    # what is installed is set-up, not state: the host is compared with itself once it has the
    # engine's packages (iptables-save among them), before anything starts
    installed = subprocess.run(
        [str(ENGINE), "install"], capture_output=True, text=True, timeout=900, check=False
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    before = host_state()
    work = tmp_path_factory.mktemp("compose")
    log = work / "engine.log"
    with log.open("w") as sink:
        engine = Engine(
            subprocess.Popen(
                [str(ENGINE), "hold"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=sink,
            ),
            log,
        )
    built: Stack | None = None
    try:
        engine.wait_ready(limit_s=900)
        folder = work / "meshnav"
        shutil.copytree(ROOT, folder, ignore=COPIED)
        env = {**os.environ, **engine.env}
        env.pop("MESHNAV_TOKEN", None)
        built = first_run(folder, env, (free_port(), free_port()))
        yield built
    finally:
        if built is not None:
            built.sh("docker", "compose", "down", "--volumes", "--timeout", "20", check=False)
        status = engine.close()
        after = host_state()
        assert status == 0, f"scripts/compose-engine exited {status}:\n{engine.says()}"
        changed = {key: (before[key], after[key]) for key in before if before[key] != after[key]}
        assert not changed, f"the host is not as it was: {changed}"


# --- the checks ------------------------------------------------------------------------------


def test_the_first_run_cli_search_finds_both_postgresql_machines(stack: Stack) -> None:
    assert "*/postgres/list_databases" in stack.first_search


def test_search_collapses_list_databases_held_by_db1_and_db2(stack: Stack) -> None:
    found = stack.walker(stack.navigator_a, "search", {"query": "list databases"})
    (collapsed,) = [r for r in found["results"] if r["address"] == "*/postgres/list_databases"]
    assert sorted(collapsed["holders"]) == ["db1", "db2"]
    assert collapsed["status"] == "answering"


def _databases(answer: dict[str, Any]) -> set[str]:
    return {row["name"] for row in answer["structuredContent"]["databases"]} - {"postgres"}


def test_db1_and_db2_each_answer_with_their_own_databases(stack: Stack) -> None:
    db1 = _databases(stack.call(stack.navigator_a, "db1/postgres/list_databases"))
    db2 = _databases(stack.call(stack.navigator_a, "db2/postgres/list_databases"))
    assert db1 == {"inventory", "purchasing"}
    assert db2 == {"customers", "analytics"}


def test_a_data_modifying_with_through_the_reader_is_refused(stack: Stack) -> None:
    count = "SELECT count(*) AS n FROM stock"

    def rows() -> Any:
        answer = stack.call(
            stack.navigator_a, "db1/postgres/query", sql=count, database="inventory"
        )
        return answer["structuredContent"]["rows"]

    held = rows()
    with pytest.raises(CommandError) as refused:
        stack.call(
            stack.navigator_a,
            "db1/postgres/query",
            sql="WITH gone AS (DELETE FROM stock RETURNING *) SELECT count(*) FROM gone",
            database="inventory",
        )
    assert "data-modifying" in str(refused.value)
    assert rows() == held


def test_the_cli_runs_without_starting_migrate_again(stack: Stack) -> None:
    migrate = stack.compose("ps", "--all", "--quiet", "migrate").strip()
    started = stack.sh("docker", "inspect", "--format", "{{.State.StartedAt}}", migrate)
    listing = stack.compose("run", "--rm", "cli", "mesh", timeout=300)
    assert "db1" in listing and "db2" in listing and "web1" in listing
    assert stack.sh("docker", "inspect", "--format", "{{.State.StartedAt}}", migrate) == started


def test_bootstrap_run_again_on_the_running_stack_keeps_every_token(stack: Stack) -> None:
    tokens = {name: stack.dotenv()[name] for name in TOKENS}
    stack.sh("sh", "deploy/bootstrap.sh", timeout=900)
    assert {name: stack.dotenv()[name] for name in TOKENS} == tokens
    # The running nodes' heartbeats go on being accepted: still answering three beats later.
    time.sleep(3 * HEARTBEAT_S + 2)
    assert statuses(stack, stack.navigator_a) == {
        "db1": ["answering"],
        "db2": ["answering"],
        "web1": ["answering"],
    }


def test_a_grant_denied_through_navigator_a_stops_the_next_call_through_navigator_b(
    stack: Stack,
) -> None:
    made = stack.cli(stack.navigator_a, "principal", "add", "alice", "--json")
    alice = re.search(r'"token": "([^"]+)"', made)
    assert alice, "principal add printed no token"
    stack.cli(stack.navigator_a, "grant", "allow", "alice", "db1/*/*")
    address = "db1/postgres/list_databases"
    assert _databases(stack.call(stack.navigator_b, address, alice[1]))
    stack.cli(stack.navigator_a, "grant", "deny", "alice", address)
    with pytest.raises(CommandError) as refused:
        stack.call(stack.navigator_b, address, alice[1])
    assert refused.value.body and refused.value.body["error"] == "tool_not_granted"


def test_a_killed_node_turns_not_answering_then_answers_again_once(stack: Stack) -> None:
    stack.sh("docker", "kill", stack.compose("ps", "--quiet", "db2").strip())
    killed = time.monotonic()
    until(
        "db2 not answering",
        lambda: statuses(stack, stack.navigator_a).get("db2") == ["not answering"],
        limit_s=4 * HEARTBEAT_S + 10,
    )
    # Three heartbeats, and one more for the navigator's own look and the listing's round trip.
    assert time.monotonic() - killed <= 4 * HEARTBEAT_S + 10
    with pytest.raises(CommandError) as unavailable:
        stack.call(stack.navigator_a, "db2/postgres/list_databases")
    assert unavailable.value.body and unavailable.value.body["error"] == "node_unavailable"

    stack.compose("start", "db2")
    until(
        "db2 answering again",
        lambda: statuses(stack, stack.navigator_a).get("db2") == ["answering"],
        limit_s=120,
    )
    assert _databases(stack.call(stack.navigator_a, "db2/postgres/list_databases"))
    found = stack.walker(stack.navigator_a, "search", {"query": "list databases"})
    (collapsed,) = [r for r in found["results"] if r["address"] == "*/postgres/list_databases"]
    assert sorted(collapsed["holders"]) == ["db1", "db2"]


def test_with_navigator_a_stopped_navigator_b_serves_and_every_node_answers(stack: Stack) -> None:
    stack.compose("stop", "navigator-a", timeout=120)
    # Long enough for a node that beat to navigator-a to have missed three beats, were it lost.
    time.sleep(4 * HEARTBEAT_S)
    found = stack.walker(stack.navigator_b, "search", {"query": "list databases"})
    assert any(r["address"] == "*/postgres/list_databases" for r in found["results"])
    assert _databases(stack.call(stack.navigator_b, "db1/postgres/list_databases"))
    until(
        "every node answering through navigator-b",
        lambda: (
            statuses(stack, stack.navigator_b)
            == {"db1": ["answering"], "db2": ["answering"], "web1": ["answering"]}
        ),
        limit_s=3 * HEARTBEAT_S,
    )
