"""Registry scale: a navigator over a PostgreSQL registry of 100,000 tools on 1,000 machines.

    .venv/bin/python benchmarks/registry_scale.py [--tools 100000] [--machines 1000] [--samples 5]
        [--profile auto|always|never]

Starts a throwaway PostgreSQL server (``tests/postgres_server.py``), fills the registry through
``CatalogStore.put_assignment`` — every machine holds the ``node`` node seat and a ``postgres``
assignment (the real modules' ``tools/list``, one contract each), and the rest of the tools are
unique, in assignments of 8 to 60 tools — then runs real ``python -m meshnav navigator serve``
processes on it and measures:

  start     spawn until ``/readyz`` answers, and until a first ``search`` through MCP answers,
            for an empty registry and the full one, side by side
  memory    each navigator's RSS after its first search (and its peak while loading); the index
            estimate is the full navigator's RSS minus the empty one's
  follow    two navigators A and B on the same registry: an assignment registered through A's
            admin API until ``search`` through B returns it, and a ``deny`` grant added through A
            until a ``call`` through B is refused (B polled every 20 ms)
  load      when start or memory is over budget (10 s, 600 MB), or with --profile always: the
            catalogue load in a fresh process, split into the registry read and the index build,
            with the functions that take the time (cProfile) and the files that hold the memory
            (tracemalloc)

Everything it starts it stops — processes and the PostgreSQL server — also on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mesh.digests import contract_digest  # noqa: E402
from mesh.modules import build_module, parse_module_spec  # noqa: E402
from navigator.access.tokens import ADMIN_SCOPE, hash_token, mint_token  # noqa: E402
from registry import AccessStore, CatalogStore, NewTool, Registry, migrate  # noqa: E402
from tests.harness import free_port, mcp_client, tool_result  # noqa: E402
from tests.postgres_server import start_postgres  # noqa: E402

START_BUDGET_S = 10.0
MEMORY_BUDGET_MB = 600.0
START_TIMEOUT_S = 900.0
FOLLOW_TIMEOUT_S = 30.0
POLL_S = 0.02
MACHINES_PER_TRANSACTION = 25
PRINCIPAL = "bench"
FIRST_QUERY = "disk usage"

# -- the catalogue ----------------------------------------------------------------------------

PRODUCTS = (
    "jira", "github", "gitlab", "slack", "stripe", "grafana", "prometheus", "kafka", "rabbitmq",
    "redis", "nginx", "kubernetes", "vault", "consul", "terraform", "jenkins", "sentry",
    "pagerduty", "s3", "zendesk", "hubspot", "notion", "confluence", "elastic", "mongo", "mysql",
    "clickhouse", "airflow", "dbt", "salesforce", "shopify", "twilio", "datadog", "okta",
)  # fmt: skip
VERBS = (
    "list", "get", "create", "update", "delete", "search", "export", "import", "sync", "archive",
    "restore", "rotate", "scan", "validate", "summarize", "fetch", "publish", "schedule",
    "cancel", "approve", "tag", "merge", "resize", "count", "describe", "pause", "resume",
)  # fmt: skip
NOUNS = (
    "invoice", "ticket", "deployment", "container", "bucket", "snapshot", "certificate",
    "dns_record", "user", "group", "repository", "pull_request", "issue", "alert", "incident",
    "metric", "log_stream", "queue", "topic", "secret", "backup", "cluster", "pod", "volume",
    "firewall_rule", "pipeline", "build", "release", "customer", "order", "shipment", "payment",
    "subscription", "calendar_event", "message", "channel", "document", "spreadsheet", "page",
    "dashboard", "webhook", "api_key", "project", "sprint", "comment", "label", "index", "job",
)  # fmt: skip
QUALIFIERS = (
    "filtered by owner, state and creation date",
    "with paging; at most 100 per page",
    "for the given project or workspace",
    "including archived items when asked",
    "sorted by most recent change first",
    "in the account's default region",
    "and report what changed since the last run",
    "without touching items that are locked",
    "as the service account configured for this instance",
    "returning identifiers, names and timestamps only",
    "across every environment the token can see",
    "for the current billing period",
)
PARAMETERS = (
    ("project", "string", "The project key or identifier."),
    ("limit", "integer", "Largest number of items to return (1-100)."),
    ("cursor", "string", "Opaque cursor from a previous page."),
    ("state", "string", "Only items in this state."),
    ("since", "string", "ISO 8601 timestamp; only items changed after it."),
    ("owner", "string", "User name or e-mail of the owner."),
    ("region", "string", "Cloud region, e.g. eu-west-1."),
    ("dry_run", "boolean", "Report what would change without changing it."),
    ("labels", "array", "Labels every returned item must carry."),
    ("id", "string", "Identifier of the item."),
)


def _plural(noun: str) -> str:
    word = noun.replace("_", " ")
    return word[:-1] + "ies" if word.endswith("y") else word + ("es" if word[-1] in "sxh" else "s")


def _unique_tool(rng: random.Random, name: str, verb: str, noun: str, role: str) -> dict[str, Any]:
    product = role.split("-", maxsplit=1)[0]
    chosen = rng.sample(PARAMETERS, rng.randint(1, 4))
    properties: dict[str, Any] = {}
    for key, kind, text in chosen:
        spec: dict[str, Any] = {"type": kind, "description": text}
        if kind == "array":
            spec["items"] = {"type": "string"}
        if kind == "integer":
            spec |= {"minimum": 1, "maximum": 100}
        properties[key] = spec
    required = [key for key, _, _ in chosen[: rng.randint(0, min(2, len(chosen)))]]
    description = (
        f"{verb.capitalize()} {_plural(noun)} in {product} ({role}) {rng.choice(QUALIFIERS)}. "
        f"Use it to {rng.choice(VERBS)} {_plural(rng.choice(NOUNS))} that belong to "
        f"{_plural(noun)}; it {rng.choice(QUALIFIERS)}."
    )
    read_only = verb in {"list", "get", "search", "export", "scan", "fetch", "count", "describe"}
    tool: dict[str, Any] = {
        "name": name,
        "title": f"{verb.capitalize()} {product} {_plural(noun)}",
        "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required},
        "annotations": {"readOnlyHint": read_only, "destructiveHint": verb == "delete"},
    }
    return tool


async def _module_tools(spec: str) -> list[dict[str, Any]]:
    """A built-in module's ``tools/list`` exactly as a node pushes it."""
    server = build_module(parse_module_spec(spec))
    tools = sorted(await server.list_tools(), key=lambda tool: tool.name)
    return [
        tool.to_mcp_tool().model_dump(by_alias=True, exclude_none=True, mode="json")
        for tool in tools
    ]


@dataclass
class Plan:
    """What the registry will hold: per machine, (role, module, kind, tools) assignments."""

    machines: list[str]
    assignments: dict[str, list[tuple[str, str, str, list[NewTool]]]] = field(default_factory=dict)
    tools: int = 0
    shared: int = 0


def _new_tools(definitions: list[dict[str, Any]]) -> list[NewTool]:
    return [NewTool(d["name"], d, contract_digest(d)) for d in definitions]


def plan_catalogue(tools: int, machines: int, seed: int) -> Plan:
    rng = random.Random(seed)
    node = _new_tools(asyncio.run(_module_tools("node")))
    postgres = _new_tools(asyncio.run(_module_tools("postgres:postgresql://bench@127.0.0.1/none")))
    plan = Plan([f"m{i:04d}" for i in range(machines)])
    for name in plan.machines:
        plan.assignments[name] = [
            ("node", "node", "node_seat", node),
            ("postgres", "postgres", "assignment", postgres),
        ]
    plan.shared = machines * (len(node) + len(postgres))
    if plan.shared > tools:
        raise SystemExit(f"--tools must be at least {plan.shared} for {machines} machines")
    left, index = tools - plan.shared, 0
    names = [f"{verb}_{noun}" for verb in VERBS for noun in NOUNS]
    while left > 0:
        machine = plan.machines[index % machines]
        index += 1
        held = {role for role, *_ in plan.assignments[machine]}
        product = rng.choice(PRODUCTS)
        role = next(f"{product}-{n}" for n in range(1, 10_000) if f"{product}-{n}" not in held)
        size = min(left, rng.randint(8, 60))
        chosen = rng.sample(names, size)
        definitions = []
        for name in chosen:
            verb, noun = name.split("_", 1)
            definitions.append(_unique_tool(rng, name, verb, noun, f"{machine}-{role}"))
        plan.assignments[machine].append((role, product, "assignment", _new_tools(definitions)))
        left -= size
    plan.tools = tools
    return plan


def fill_registry(url: str, plan: Plan) -> tuple[float, int]:
    """Write the plan through CatalogStore, a batch of machines per transaction; returns the
    seconds taken and the number of assignments written."""
    registry = Registry(url)
    started, count = time.perf_counter(), 0
    try:
        for first in range(0, len(plan.machines), MACHINES_PER_TRANSACTION):
            with registry.transaction() as session:
                store = CatalogStore(session)
                for machine in plan.machines[first : first + MACHINES_PER_TRANSACTION]:
                    for role, module, kind, tools in plan.assignments[machine]:
                        store.put_assignment(
                            machine,
                            role,
                            module=module,
                            kind=kind,
                            tools=tools,
                            endpoint=f"http://{machine}.bench.invalid:7801/mcp/{role}",
                        )
                        count += 1
    finally:
        registry.dispose()
    return time.perf_counter() - started, count


def add_principal(url: str, token: str) -> None:
    """The benchmark's principal: an administrator allowed every tool."""
    registry = Registry(url)
    try:
        with registry.transaction() as session:
            store = AccessStore(session)
            store.add_principal(PRINCIPAL, scopes=[ADMIN_SCOPE], token_hash=hash_token(token))
            store.grant(PRINCIPAL, "*/*/*", effect="allow")
    finally:
        registry.dispose()


# -- navigator processes ----------------------------------------------------------------------


@dataclass
class Navigator:
    name: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    ready_s: float = 0.0
    first_search_s: float = 0.0
    peak_rss: int = 0
    ready_cpu_s: float = 0.0  # the process's CPU time until /readyz: less shaken by a busy host
    worker_cpu_s: float = 0.0  # its index worker's (a forked child, reaped before /readyz)
    host_load: float = 0.0  # the host's 1-minute load average when it was spawned

    def rss(self) -> int:
        return int(psutil.Process(self.process.pid).memory_info().rss)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


class Processes:
    """Every navigator started, so that one place stops them all."""

    def __init__(self, root: Path, token: str) -> None:
        self.root = root
        self.token = token
        self.running: list[Navigator] = []

    def spawn(self, name: str, database_url: str) -> Navigator:
        port = free_port()
        log = self.root / f"navigator-{name}.log"
        with log.open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "meshnav", "navigator", "serve",
                 "--database", database_url, "--listen", f"127.0.0.1:{port}"],
                stdout=out, stderr=subprocess.STDOUT, cwd=self.root, env=dict(os.environ),
            )  # fmt: skip
        navigator = Navigator(name, f"http://127.0.0.1:{port}", process, log)
        self.running.append(navigator)
        return navigator

    async def start(self, name: str, database_url: str) -> Navigator:
        """Spawn a navigator and time it until /readyz answers and a first search answers."""
        started = time.perf_counter()
        navigator = self.spawn(name, database_url)
        navigator.host_load = os.getloadavg()[0]
        watched = psutil.Process(navigator.process.pid)
        deadline = started + START_TIMEOUT_S
        async with httpx.AsyncClient(timeout=2.0) as http:
            while True:
                if navigator.process.poll() is not None:
                    tail = navigator.log.read_text()[-3000:]
                    raise RuntimeError(f"navigator {name} exited:\n{tail}")
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"navigator {name} not ready in {START_TIMEOUT_S:.0f} s")
                navigator.peak_rss = max(navigator.peak_rss, int(watched.memory_info().rss))
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(navigator.url + "/readyz")).status_code == 200:
                        break
                await asyncio.sleep(POLL_S)
        navigator.ready_s = time.perf_counter() - started
        cpu = watched.cpu_times()
        navigator.ready_cpu_s = cpu.user + cpu.system
        navigator.worker_cpu_s = cpu.children_user + cpu.children_system
        async with mcp_client(navigator.url, self.token) as client:
            result = await client.call_tool("search", {"query": FIRST_QUERY}, raise_on_error=False)
        if result.is_error:
            raise RuntimeError(f"first search through {name} failed: {tool_result(result)}")
        navigator.first_search_s = time.perf_counter() - started
        navigator.peak_rss = max(navigator.peak_rss, navigator.rss())
        return navigator

    def stop_all(self) -> None:
        for navigator in self.running:
            navigator.stop()


# -- following another navigator's changes ----------------------------------------------------


@dataclass
class Poll:
    """When the first successful check was sent and answered (seconds after the change was
    answered), and how many checks it took."""

    sent_s: float
    answered_s: float
    checks: int


LOST = Poll(float("nan"), float("nan"), 0)


@dataclass
class FollowSample:
    register_post_s: float
    found: Poll
    deny_post_s: float
    refused: Poll
    call_s: float  # one call through B (answered node_unavailable), for scale


def _probe_tool(word: str) -> dict[str, Any]:
    return {
        "name": f"{word}_probe",
        "title": f"Probe {word}",
        "description": f"Report the {word} probe's state; read-only.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
    }


async def _until(since: float, check: Callable[[], Awaitable[bool]]) -> Poll:
    """Run ``check`` every 20 ms until it is true."""
    deadline = time.perf_counter() + FOLLOW_TIMEOUT_S
    checks = 0
    while time.perf_counter() < deadline:
        sent = time.perf_counter()
        checks += 1
        if await check():
            return Poll(sent - since, time.perf_counter() - since, checks)
        await asyncio.sleep(POLL_S)
    return LOST


async def follow(a: Navigator, b: Navigator, token: str, sample: int) -> FollowSample:
    """Register a one-tool assignment through A until B's search finds it, then deny it through
    A until B refuses a call to it. Before the deny, B answers ``node_unavailable`` (it has no
    endpoint), which is how a call that passed the grant check ends."""
    word = "zq" + "".join(random.Random(sample).choice("bcdfghjklmnpqrstvwxz") for _ in range(8))
    role = f"probe-{sample}"
    address = f"probe/{role}/{word}_probe"
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=30.0) as http,
        mcp_client(b.url, token) as client,
    ):

        async def found() -> bool:
            result = await client.call_tool("search", {"query": word}, raise_on_error=False)
            hits = tool_result(result).get("results", [])
            return any(hit["address"] == address for hit in hits)

        async def refusal() -> str:
            arguments = {"address": address, "args": {}}
            result = await client.call_tool("call", arguments, raise_on_error=False)
            return str(tool_result(result).get("error"))

        async def refused() -> bool:
            return await refusal() == "tool_not_granted"

        body = {"machine": "probe", "role": role, "module": "probe", "tools": [_probe_tool(word)]}
        posted = time.perf_counter()
        answer = await http.post(a.url + "/api/v1/assignments", json=body)
        answered = time.perf_counter()
        answer.raise_for_status()
        seen = await _until(answered, found)
        called = time.perf_counter()
        if (code := await refusal()) != "node_unavailable":
            raise RuntimeError(f"before the deny, a call through B answered {code}")
        call_s = time.perf_counter() - called
        grant = {"principal": PRINCIPAL, "target": address, "effect": "deny"}
        denied = time.perf_counter()
        answer = await http.post(a.url + "/api/v1/grants", json=grant)
        deny_answered = time.perf_counter()
        answer.raise_for_status()
        stopped = await _until(deny_answered, refused)
    return FollowSample(answered - posted, seen, deny_answered - denied, stopped, call_s)


# -- where a catalogue load goes (in a fresh process) ------------------------------------------


PROFILE_MODES = ("read", "load", "functions", "allocations")


def profile_load(mode: str, url: str) -> dict[str, Any]:
    """In a fresh process, one look at the catalogue load (``Catalog.load``):

    read         CatalogStore.stream_catalog_rows alone (the load's read): seconds, RSS growth
    load         the whole Catalog.load: seconds, CPU of the loading process and of its index
                 worker (a forked child analysing the texts), and RSS growth
    functions    the load's build (in its worker thread) under cProfile: most own time of the
                 loading process (the index worker's is not in it)
    allocations  Catalog.load under tracemalloc: live memory by the file that allocated it
    """
    import cProfile
    import pstats
    import tracemalloc

    from navigator.catalog.registry_reads import Progress
    from navigator.catalog.view import Catalog

    process = psutil.Process()
    registry = Registry(url)
    registry.ping()
    gc.collect()
    base = process.memory_info().rss
    figures: dict[str, Any] = {}
    started = time.perf_counter()
    cpu_started = time.process_time()
    if mode == "read":
        with registry.read_transaction() as session:
            rows = CatalogStore(session).stream_catalog_rows()
            figures["tools"] = sum(1 for row in rows if row.tool is not None)
    elif mode == "load":
        catalog = Catalog(registry)
        asyncio.run(catalog.load())
        figures["tools"] = sum(1 for _ in catalog.tools())
    elif mode == "functions":
        catalog = Catalog(registry)
        profiler = cProfile.Profile()
        profiler.runcall(catalog._read_whole, Progress())  # what load() runs in a worker thread
        stats = pstats.Stats(profiler)
        rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])  # type: ignore[attr-defined]
        figures["functions"] = [
            [f"{Path(file).name}:{line} {name}", own, total]
            for (file, line, name), (_, _, own, total, _) in rows[:12]
        ]
    elif mode == "allocations":
        tracemalloc.start()
        catalog = Catalog(registry)
        asyncio.run(catalog.load())
        snapshot = tracemalloc.take_snapshot()
        by_file = snapshot.statistics("filename")
        figures["allocations"] = [
            [_short(str(stat.traceback[0].filename)), stat.size, stat.count]
            for stat in by_file[:12]
        ]
        figures["traced"] = sum(stat.size for stat in by_file)
    figures["seconds"] = time.perf_counter() - started
    figures["cpu"] = time.process_time() - cpu_started
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures["worker_cpu"] = children.ru_utime + children.ru_stime
    gc.collect()
    figures["rss_growth"] = process.memory_info().rss - base
    registry.dispose()
    return figures


def _short(path: str) -> str:
    for marker in ("/site-packages/", str(ROOT) + "/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path.rsplit("/", 2)[-1] if "/lib/python" not in path else "stdlib/" + Path(path).name


def _profile_in_child(mode: str, url: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--profile-load", mode, url],
        capture_output=True, text=True, check=True, timeout=START_TIMEOUT_S,
    )  # fmt: skip
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def print_load_profile(url: str) -> None:
    read = _profile_in_child("read", url)
    load = _profile_in_child("load", url)
    print(f"load (Catalog.load in a fresh process, {load['tools']:,} live tools)")
    _row("CatalogStore.stream_catalog_rows (SQL, rows)", f"{read['seconds']:.2f} s")
    _row("  RSS growth", _mb(read["rss_growth"]))
    _row("whole Catalog.load", f"{load['seconds']:.2f} s")
    _row("  its CPU (user + system)", f"{load['cpu']:.2f} s")
    _row("  its index worker's CPU, beside it", f"{load['worker_cpu']:.2f} s")
    _row("  RSS growth", _mb(load["rss_growth"]))
    _row(
        "catalogue and index build (load minus read)", f"{load['seconds'] - read['seconds']:.2f} s"
    )
    functions = _profile_in_child("functions", url)
    print("  most own time under cProfile (own s / cumulative s)")
    for name, own, total in functions["functions"]:
        _row(f"    {name[:54]}", f"{own:.2f} / {total:.2f}")
    allocations = _profile_in_child("allocations", url)
    print(f"  live allocations by file under tracemalloc ({_mb(allocations['traced'])} traced)")
    for name, size, count in allocations["allocations"]:
        _row(f"    {name[:54]}", f"{size / (1 << 20):,.1f} MB {count:>9,}")


# -- the run ----------------------------------------------------------------------------------


def _mb(value: float) -> str:
    return f"{value / (1 << 20):,.0f} MB"


def _row(label: str, value: str) -> None:
    print(f"  {label:<58} {value:>16}")


def _counts(values: list[int]) -> str:
    return ", ".join(str(v) if v else "lost" for v in values)


def _stats(values: list[float]) -> str:
    done = [v for v in values if v == v]  # NaN: not seen within the timeout
    if not done:
        return f"> {FOLLOW_TIMEOUT_S:.0f} s"
    text = f"{statistics.median(done) * 1000:,.0f} / {max(done) * 1000:,.0f} ms"
    return text if len(done) == len(values) else text + f" ({len(values) - len(done)} lost)"


async def measure(
    args: argparse.Namespace, root: Path, full_url: str, empty_url: str, token: str
) -> None:
    processes = Processes(root, token)
    try:
        empty = await processes.start("empty", empty_url)
        full_a = await processes.start("A", full_url)
        full_b = await processes.start("B", full_url)
        await asyncio.sleep(1.0)  # let both settle before reading RSS side by side
        gc.collect()
        empty_rss, a_rss, b_rss = empty.rss(), full_a.rss(), full_b.rss()
        samples = [await follow(full_a, full_b, token, i) for i in range(args.samples)]
    finally:
        processes.stop_all()

    print(f"\n{args.tools:,} tools on {args.machines:,} machines")
    print(f"start (from spawn; host load average {full_a.host_load:.1f} on {os.cpu_count()} cores)")
    _row("empty registry: /readyz answers", f"{empty.ready_s:.2f} s")
    _row("  its CPU time until then (user + system)", f"{empty.ready_cpu_s:.2f} s")
    _row("empty registry: first search answers", f"{empty.first_search_s:.2f} s")
    _row("full registry, navigator A: /readyz answers", f"{full_a.ready_s:.2f} s")
    _row("  its CPU time until then (user + system)", f"{full_a.ready_cpu_s:.2f} s")
    _row("  its index worker's CPU, beside it", f"{full_a.worker_cpu_s:.2f} s")
    _row("full registry, navigator A: first search answers", f"{full_a.first_search_s:.2f} s")
    _row("full registry, navigator B (A running): first search", f"{full_b.first_search_s:.2f} s")
    print("memory (RSS after the first search, side by side)")
    _row("empty navigator", _mb(empty_rss))
    _row("full navigator A", _mb(a_rss))
    _row("full navigator B", _mb(b_rss))
    _row("full navigator A, peak while loading", _mb(full_a.peak_rss))
    _row("index estimate (A minus empty)", _mb(a_rss - empty_rss))
    _row("  per tool", f"{(a_rss - empty_rss) / args.tools:,.0f} B")
    print(f"follow (A changes, B polled every 20 ms; median / max of {args.samples})")
    _row("register through A: POST answered", _stats([s.register_post_s for s in samples]))
    _row("  then B's search finds it (answered)", _stats([s.found.answered_s for s in samples]))
    _row("  searches through B it took", _counts([s.found.checks for s in samples]))
    _row("deny through A: POST answered", _stats([s.deny_post_s for s in samples]))
    _row("  then B refuses a call (answered)", _stats([s.refused.answered_s for s in samples]))
    _row(
        "  calls through B it took (1: the first call after)",
        _counts([s.refused.checks for s in samples]),
    )
    _row("one call through B (node_unavailable), for scale", _stats([s.call_s for s in samples]))

    over = full_a.first_search_s > START_BUDGET_S or (a_rss >> 20) > MEMORY_BUDGET_MB
    if args.profile == "always" or (args.profile == "auto" and over):
        print_load_profile(full_url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=100_000)
    parser.add_argument("--machines", type=int, default=1_000)
    parser.add_argument("--samples", type=int, default=5, help="follow measurements")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--profile",
        choices=("auto", "always", "never"),
        default="auto",
        help="split the catalogue load (auto: when start or memory is over budget)",
    )
    parser.add_argument("--profile-load", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.profile_load:
        mode, url = args.profile_load
        print(json.dumps(profile_load(mode, url)))
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally blocks
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]

    with tempfile.TemporaryDirectory(prefix="meshnav-scale-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        plan = plan_catalogue(args.tools, args.machines, args.seed)
        planned_s = time.perf_counter() - started
        server = start_postgres(root)
        try:
            full_url = server.create_database("full")
            empty_url = server.create_database("empty")
            for url in (full_url, empty_url):
                migrate(url)
            token = mint_token()
            for url in (full_url, empty_url):
                add_principal(url, token)
            fill_s, assignments = fill_registry(full_url, plan)
            print("registry (PostgreSQL, written through CatalogStore.put_assignment)")
            _row("tools (of which in shared modules)", f"{plan.tools:,} ({plan.shared:,})")
            _row("machines", f"{args.machines:,}")
            _row("assignments", f"{assignments:,}")
            _row("tool definitions made, digests computed", f"{planned_s:.1f} s")
            _row(f"written, {MACHINES_PER_TRANSACTION} machines per transaction", f"{fill_s:.1f} s")
            del plan
            gc.collect()
            asyncio.run(measure(args, root, full_url, empty_url, token))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
