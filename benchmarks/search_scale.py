"""Search at scale: latency, memory and indexing time on synthetic meshes, next to FastMCP's BM25.

    .venv/bin/python benchmarks/search_scale.py [--sizes 1000 10000 100000] [--seed 7]

Each mesh is built the way a real one grows: every machine holds the ``node`` and ``fail2ban`` node
seats, shared modules (postgres, sqlite, docker, nginx, redis) run on a share of the machines with
one contract each, a few mesh seats hold unique tools, and the rest are unique assignments whose
text is drawn from the words of real tool descriptions (MetaTool and the MCP reference servers,
Zipf-weighted) plus invented product words. Sections, per size:

  index    build time (one upsert per assignment, as registrations arrive), and memory: the
           index's own allocations (tracemalloc; the documents themselves counted apart) and the
           process's RSS growth
  queries  p50/p95/p99 of SearchIndex.search in process (limit 8), over natural-language, keyword,
           holder-naming and misspelled queries, asked as the navigator asks it: a caller's grants
           (a dozen rows of every kind) compiled by the grant evaluator for each query: wall and
           CPU time once the caches are warm, and the first (cold) pass; then the same with
           ``within`` patterns
  restricted  callers allowed one machine, one module or one tool, next to asking the grant
           evaluator about every tool, as a plain predicate is (to know the caller's own
           statistics; alternating, query by query; every 8th query from 50,000 tools on)
  assign   one new assignment of 50 tools: upsert time, and upsert + the first search finding it;
           then retiring it, and retiring (and putting back) assignments indexed at the build
  peer     FastMCP's BM25SearchTransform over the same tools (flattened names, as it needs) in the
           same run: its first search (which builds its index) and later ones; at 100k it is
           sampled on fewer queries, and says so

A section is a function ``(Mesh, args) -> None`` listed in ``SECTIONS``; a new measurement (e.g. the
through-MCP one) is one more function there.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import os
import random
import re
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
# The shared data sets beside the tree, or where ``MESHNAV_SHARED`` says (a worktree elsewhere).
SHARED = Path(os.environ.get("MESHNAV_SHARED") or ROOT.parent / "shared")
sys.path.insert(0, str(ROOT))

from fastmcp.server.transforms.search.bm25 import BM25SearchTransform  # noqa: E402
from fastmcp.tools.base import Tool as FastMCPTool  # noqa: E402

from navigator.access.grants import Caller, Permissions, compile_permissions  # noqa: E402
from navigator.addresses import parse_pattern  # noqa: E402
from navigator.search import EVERYONE, SearchIndex, ToolDocument, document_from_tool  # noqa: E402
from registry import GrantRecord, GrantSnapshot  # noqa: E402

# -- the shared modules: one contract each, on many machines ------------------------------------


def _tool(name: str, description: str, /, **params: str) -> dict[str, Any]:
    properties = {key: {"type": "string", "description": text} for key, text in params.items()}
    return {"name": name, "description": description, "inputSchema": {"properties": properties}}


NODE = [
    _tool("hostname", "The machine's host name and fully qualified domain name."),
    _tool("uptime", "How long the machine has been running since its last boot."),
    _tool("load", "Load averages over 1, 5 and 15 minutes, and the number of CPUs."),
    _tool("memory", "Physical memory and swap: total, used, free and cached, in bytes."),
    _tool("disk_usage", "Used and free space of each mounted filesystem.", path="Mount point"),
    _tool("listening_ports", "TCP and UDP ports the machine listens on, with their processes."),
    _tool("processes", "Running processes sorted by CPU or memory use.", sort="cpu or memory"),
    _tool("kernel", "Kernel release, architecture and operating system version."),
]
FAIL2BAN = [
    _tool("jails", "List fail2ban jails and how many addresses each has banned."),
    _tool("banned", "Addresses currently banned by a fail2ban jail.", jail="Jail name"),
    _tool("unban", "Lift a fail2ban ban on an IP address.", jail="Jail name", ip="IP address"),
]
POSTGRES = [
    _tool("list_databases", "List the databases of the PostgreSQL server with their sizes."),
    _tool("list_schemas", "List schemas in a PostgreSQL database.", database="Database name"),
    _tool("list_tables", "List tables of a schema with row estimates.", schema="Schema name"),
    _tool("describe_table", "Columns, types, indexes and constraints of a table.", table="Table"),
    _tool("query", "Run a read-only SQL query with a row and time limit.", sql="SELECT query"),
    _tool("execute", "Run a SQL statement that writes: INSERT, UPDATE, DELETE.", sql="Statement"),
    _tool("explain", "Show the query plan PostgreSQL chooses for a query.", sql="Query"),
    _tool("active_queries", "Queries running now, with their duration and wait events."),
    _tool("locks", "Locks held and awaited, with the blocking sessions."),
    _tool("replication_status", "Replication lag and state of each standby server."),
]
SQLITE = [
    _tool("list_databases", "SQLite database files of this machine."),
    _tool("list_tables", "Tables of one SQLite database.", database="Database file"),
    _tool("describe_table", "Columns and types of a SQLite table.", table="Table name"),
    _tool("query", "Read-only SQL query on a SQLite database.", sql="SELECT statement"),
    _tool("execute", "A SQL statement that writes to a SQLite database.", sql="Statement"),
]
DOCKER = [
    _tool(
        "list_containers", "Containers with their image, status and ports.", all="Include stopped"
    ),
    _tool("container_logs", "The last lines of a container's logs.", container="Container id"),
    _tool("restart_container", "Restart a running container.", container="Container id"),
    _tool("stop_container", "Stop a running container.", container="Container id"),
    _tool("list_images", "Images stored on the machine with their tags and sizes."),
    _tool("pull_image", "Pull an image from a registry.", image="Image reference"),
    _tool("container_stats", "CPU, memory and network use of each container."),
    _tool("inspect_container", "Full configuration of a container.", container="Container id"),
]
NGINX = [
    _tool("test_config", "Check the nginx configuration for errors."),
    _tool("reload", "Reload nginx to apply a new configuration."),
    _tool("access_log", "The latest requests in the nginx access log.", lines="How many lines"),
    _tool("list_sites", "Enabled virtual hosts with their server names and ports."),
]
REDIS = [
    _tool("info", "Redis server statistics: memory, clients, keyspace, persistence."),
    _tool("get", "Read the value stored at a key.", key="Key"),
    _tool("set", "Store a value at a key, with an optional expiry.", key="Key", value="Value"),
    _tool("keys", "Keys matching a glob pattern.", pattern="Glob pattern"),
    _tool("delete", "Delete keys.", keys="Keys to delete"),
    _tool("slowlog", "The slowest recent commands."),
]
# module name, tools, on every k-th machine
SHARED_MODULES = [
    ("node", NODE, 1),
    ("fail2ban", FAIL2BAN, 1),
    ("postgres", POSTGRES, 3),
    ("sqlite", SQLITE, 2),
    ("docker", DOCKER, 4),
    ("nginx", NGINX, 5),
    ("redis", REDIS, 6),
]

# -- synthetic unique tools ---------------------------------------------------------------------

_VERB_TEXT = """get list create update delete search find read write send fetch run check sync
export import start stop describe count"""
_PARAMETER_TEXT = """id name query path url limit cursor owner project region account user channel
date format since until"""
VERBS = _VERB_TEXT.split()
PARAMETERS = _PARAMETER_TEXT.split()


def _corpus_words() -> list[str]:
    """Words of real tool descriptions, most frequent first."""
    texts: list[str] = []
    for line in (SHARED / "datasets" / "metatool" / "catalog.jsonl").read_text().splitlines():
        row = json.loads(line)
        texts += [row.get("title") or "", row.get("description") or ""]
    mcp = json.loads((ROOT / "benchmarks" / "data" / "mcp_catalog.json").read_text())
    for server in mcp["servers"]:
        for tool in server["tools"]:
            texts.append(tool["description"])
            texts += [p.get("description", "") for p in tool["inputSchema"]["properties"].values()]
    counts: dict[str, int] = {}
    for word in re.findall(r"[a-z]{3,}", " ".join(texts).lower()):
        counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda word: (-counts[word], word))


@dataclass
class Mesh:
    size: int
    assignments: list[list[ToolDocument]]  # in registration order
    holders: list[str]
    queries: list[str]
    rng: random.Random
    words: list[str]
    weights: list[float]
    index: SearchIndex | None = None
    results: dict[str, Any] = field(default_factory=dict)

    @property
    def documents(self) -> list[ToolDocument]:
        return [document for assignment in self.assignments for document in assignment]


def _digest(tool: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(tool, sort_keys=True).encode()).hexdigest()


def _invented_word(rng: random.Random) -> str:
    syllables = ["ka", "lo", "mi", "zor", "ve", "tan", "qu", "rex", "bi", "dul", "sen", "no"]
    return "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))


def _unique_tool(mesh: Mesh) -> dict[str, Any]:
    rng = mesh.rng

    def words(low: int, high: int) -> list[str]:
        chosen = rng.choices(mesh.words, mesh.weights, k=rng.randint(low, high))
        return [word if rng.random() > 0.08 else _invented_word(rng) for word in chosen]

    name = "_".join([rng.choice(VERBS), *words(1, 2)])
    params = {rng.choice(PARAMETERS): " ".join(words(3, 10)) for _ in range(rng.randint(0, 4))}
    description = " ".join(words(8, 40)).capitalize() + "."
    return _tool(name, description, **params)


def build_mesh(size: int, seed: int, queries: list[str]) -> Mesh:
    rng = random.Random(seed)
    words = _corpus_words()
    weights = [1.0 / (rank + 10) for rank in range(len(words))]
    machine_count = max(10, size // 200)
    holders = [f"m{number:04d}" for number in range(machine_count)]
    mesh = Mesh(size, [], holders, queries, rng, words, weights)
    for position, holder in enumerate(holders):
        for module, tools, every in SHARED_MODULES:
            if position % every == 0:
                mesh.assignments.append(
                    [document_from_tool(holder, module, tool, _digest(tool)) for tool in tools]
                )
    for seat in range(5):
        tools = [_unique_tool(mesh) for _ in range(20)]
        mesh.assignments.append(
            [document_from_tool("mesh", f"seat-{seat}", t, _digest(t)) for t in tools]
        )
    count = sum(len(assignment) for assignment in mesh.assignments)
    number = 0
    while count < size:
        tools_here = min(size - count, rng.randint(20, 80))
        holder = holders[number % machine_count]
        seen: set[str] = set()
        tools = []
        while len(tools) < tools_here:
            tool = _unique_tool(mesh)
            if tool["name"] not in seen:
                seen.add(tool["name"])
                tools.append(tool)
        role = f"app-{number:05d}"
        mesh.assignments.append([document_from_tool(holder, role, t, _digest(t)) for t in tools])
        count += tools_here
        number += 1
    return mesh


def load_queries(seed: int) -> list[str]:
    rng = random.Random(seed)
    mcp = json.loads((ROOT / "benchmarks" / "data" / "mcp_catalog.json").read_text())
    natural = [query["query"] for query in mcp["queries"]]
    lines = (SHARED / "datasets" / "metatool" / "queries.jsonl").read_text().splitlines()
    natural += [json.loads(line)["query"] for line in rng.sample(lines, 100)]
    keywords = [
        "uptime", "disk usage", "memory", "listening ports", "postgres list tables",
        "restart container", "reload nginx", "redis slowlog", "banned addresses", "kernel version",
        "m0003 uptime", "m0007 disk", "db tables on m0002", "postgre", "databse schemas",
        "contaner logs", "replicaton lag", "export report", "sync calendar", "search issues",
    ]  # fmt: skip
    return natural + keywords


#: The benchmark's caller: a dozen grant rows of every kind, as an operator writes them.
GRANT_ROWS = [
    ("*/*/*", "allow"), ("*/node/*", "allow"), ("*/fail2ban/unban", "deny"),
    ("*/postgres/*", "allow"), ("*/postgres/execute", "deny"), ("*/sqlite/execute", "deny"),
    ("*/docker/stop_container", "deny"), ("m0001", "deny"), ("m0002", "allow"),
    ("mesh/seat-4", "deny"), ("*/redis/delete", "deny"), ("*/redis/set", "deny"),
]  # fmt: skip


def _permissions(rows: list[tuple[str, str]]) -> Permissions:
    """The navigator's grant evaluator for a caller with ``rows``."""
    records = tuple(
        GrantRecord(number, "bench", target, (), effect, number)
        for number, (target, effect) in enumerate(rows, start=1)
    )
    return compile_permissions(
        Caller("bench", frozenset()), GrantSnapshot(revision=len(records), rows=records)
    )


def _search(index: SearchIndex, query: str, permissions: Permissions, **options: Any) -> object:
    """``search`` as the navigator asks it: the grant evaluator with its shortcuts."""
    return index.search(query, permits=permissions, **options)


def _within(pattern: str) -> Callable[[str], bool]:
    """A ``within`` narrowing as the navigator passes it: its parsed pattern's matcher."""
    return parse_pattern(pattern).matches_address


def _percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)

    def at(share: float) -> float:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))]

    return (
        f"p50 {at(0.5):7.3f} ms  p95 {at(0.95):7.3f} ms  p99 {at(0.99):7.3f} ms  (n={len(ordered)})"
    )


# -- sections -------------------------------------------------------------------------------


def measure_index(mesh: Mesh, args: argparse.Namespace) -> None:
    gc.collect()
    process = psutil.Process()
    rss_before = process.memory_info().rss
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    documents = mesh.documents
    index = SearchIndex()
    for assignment in mesh.assignments:
        index.upsert(assignment)
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    rss = process.memory_info().rss - rss_before
    gc.collect()
    started = time.perf_counter()
    index = SearchIndex()
    for assignment in mesh.assignments:
        index.upsert(assignment)
    built = time.perf_counter() - started
    mesh.index = index
    shared = len(documents) - sum(len(a) for a in mesh.assignments if a[0].role.startswith("app-"))
    print(
        f"  index    {len(index):,} tools on {len(mesh.holders)} machines ({shared:,} in shared "
        f"modules), built in {built:.2f} s ({built / len(mesh.assignments) * 1000:.2f} ms per "
        f"assignment)"
    )
    print(
        f"           memory: {traced / 2**20:.1f} MiB traced (index only; documents apart), "
        f"RSS +{rss / 2**20:.1f} MiB (documents and tracemalloc's own books included)"
    )
    mesh.results["memory_mib"] = traced / 2**20


def measure_queries(mesh: Mesh, args: argparse.Namespace) -> None:
    assert mesh.index is not None
    index = mesh.index
    started = time.perf_counter()
    calls = 20_000
    for number in range(calls):  # a request compiles its grants once, then asks
        _permissions(GRANT_ROWS).permits(f"m{number % 500:04d}/postgres/list_tables")
    per_call = (time.perf_counter() - started) / calls * 1e6
    cold = []
    for query in mesh.queries:  # the first pass warms the caches, as a running navigator has them
        started = time.perf_counter_ns()
        _search(index, query, _permissions(GRANT_ROWS))
        cold.append((time.perf_counter_ns() - started) / 1e6)
    samples, cpu = [], []
    for query in mesh.queries:
        started, started_cpu = time.perf_counter_ns(), time.thread_time_ns()
        _search(index, query, _permissions(GRANT_ROWS))
        cpu.append((time.thread_time_ns() - started_cpu) / 1e6)
        samples.append((time.perf_counter_ns() - started) / 1e6)
    print(
        f"  queries  wall {_percentiles(samples)}   grants compiled and first asked"
        f" {per_call:.2f} µs ({len(GRANT_ROWS)} rows)"
    )
    print(f"           cpu  {_percentiles(cpu)}")
    print(
        f"           cold {_percentiles(cold)}   (first pass after the bulk load: terms renormalise, corrections uncached)"
    )
    mesh.results["p95_ms"] = sorted(samples)[int(0.95 * len(samples))]
    patterns = [f"{mesh.holders[3]}/*/*", "*/postgres/*", "*/node/*", "mesh/*/*", "*/*/list_tables"]
    narrowed, narrowed_cpu = [], []
    for number, query in enumerate(mesh.queries):
        within = _within(patterns[number % len(patterns)])
        started, started_cpu = time.perf_counter_ns(), time.thread_time_ns()
        _search(index, query, _permissions(GRANT_ROWS), within=within)
        narrowed_cpu.append((time.thread_time_ns() - started_cpu) / 1e6)
        narrowed.append((time.perf_counter_ns() - started) / 1e6)
    print(f"  within   wall {_percentiles(narrowed)}   patterns {', '.join(patterns)}")
    print(f"           cpu  {_percentiles(narrowed_cpu)}")


def measure_restricted(mesh: Mesh, args: argparse.Namespace) -> None:
    """Callers allowed a part of the mesh: with the grant evaluator's shortcuts (its part of the
    index measured once per change over the tools its grants leave in doubt, and kept; a tool
    decided alike on every holder is not asked about holder by holder), and, alternately, with
    ``permits`` alone, which is asked about every tool on every search (ADR 0007)."""
    assert mesh.index is not None
    index = mesh.index
    callers = {
        f"one machine ({mesh.holders[3]})": [(mesh.holders[3], "allow")],
        "one module (*/postgres)": [("*/postgres", "allow")],
        "one tool": [(f"{mesh.holders[3]}/node/uptime", "allow")],
        "one tool on every machine (*/*/list_tables)": [("*/*/list_tables", "allow")],
    }
    sampled = 1 if mesh.size < 50_000 else 8  # the baseline takes up to a second a query there
    for name, rows in callers.items():
        quick, every = [], []
        for number, query in enumerate(mesh.queries):
            started = time.perf_counter_ns()
            _search(index, query, _permissions(rows))
            quick.append((time.perf_counter_ns() - started) / 1e6)
            if number % sampled == 0:
                started = time.perf_counter_ns()
                index.search(query, permits=_permissions(rows).permits)
                every.append((time.perf_counter_ns() - started) / 1e6)
        print(f"  caller   {name}")
        print(f"           wall {_percentiles(quick)}")
        print(f"           every tool asked: {_percentiles(every)}")


def measure_assignment(mesh: Mesh, args: argparse.Namespace) -> None:
    assert mesh.index is not None
    index = mesh.index
    upserts, upserts_cpu, visible, retired = [], [], [], []
    for attempt in range(10):
        marker = f"quarkblend{attempt}"
        tools = [_unique_tool(mesh) for _ in range(50)]
        tools[17]["description"] += f" Handles {marker} exports."
        holder = mesh.holders[attempt % len(mesh.holders)]
        role = f"fresh-{attempt}"
        documents = [document_from_tool(holder, role, tool, _digest(tool)) for tool in tools]
        started, started_cpu = time.perf_counter(), time.thread_time()
        index.upsert(documents)
        upserted, upserted_cpu = time.perf_counter(), time.thread_time()
        page = index.search(marker, permits=EVERYONE)
        found = time.perf_counter()
        upserts_cpu.append((upserted_cpu - started_cpu) * 1000)
        if not page.hits or page.hits[0].document.role != role:
            raise RuntimeError("the new assignment was not found")
        upserts.append((upserted - started) * 1000)
        visible.append((found - started) * 1000)
        started = time.perf_counter()
        index.remove_prefix(f"{holder}/{role}/")
        retired.append((time.perf_counter() - started) * 1000)
    # assignments indexed at the build: their postings sit anywhere in each term's, not last
    built, built_tools = [], 0
    for assignment in mesh.assignments[:: max(1, len(mesh.assignments) // 10)][:10]:
        started = time.perf_counter()
        index.remove([document.address for document in assignment])
        built.append((time.perf_counter() - started) * 1000)
        built_tools += len(assignment)
        index.upsert(assignment)
    print(
        f"  assign   50 tools: upsert median {statistics.median(upserts):.2f} ms (max "
        f"{max(upserts):.2f}; cpu median {statistics.median(upserts_cpu):.2f}); upsert + first "
        f"search finding it median {statistics.median(visible):.2f} ms (max {max(visible):.2f})"
    )
    print(
        f"  retire   the new 50 tools: median {statistics.median(retired):.2f} ms (max "
        f"{max(retired):.2f}); {len(built)} assignments indexed at the build "
        f"({built_tools / len(built):.0f} tools on average): median "
        f"{statistics.median(built):.2f} ms (max {max(built):.2f})"
    )
    mesh.results["assign_ms"] = max(visible)


def measure_peer(mesh: Mesh, args: argparse.Namespace) -> None:
    tools = [
        FastMCPTool(
            name=document.address.replace("/", "_"),
            description=document.description,
            parameters={
                "type": "object",
                "properties": {
                    name: {"type": "string", "description": text}
                    for name, text in document.parameters
                },
            },
        )
        for document in mesh.documents
    ]
    transform = BM25SearchTransform(max_results=8)
    sampled = (
        mesh.queries if mesh.size < 50_000 else mesh.queries[:: max(1, len(mesh.queries) // 12)]
    )

    async def run() -> tuple[float, list[float]]:
        started = time.perf_counter()
        await transform._search(tools, mesh.queries[0])
        first = (time.perf_counter() - started) * 1000
        samples = []
        for query in sampled:
            started = time.perf_counter_ns()
            await transform._search(tools, query)
            samples.append((time.perf_counter_ns() - started) / 1e6)
        return first, samples

    first, samples = asyncio.run(run())
    note = "" if len(sampled) == len(mesh.queries) else f" — sampled {len(sampled)} queries only"
    print(
        f"  peer     FastMCP BM25SearchTransform._search: first (builds) {first:.0f} ms; "
        f"then {_percentiles(samples)}{note}"
    )


def _definition(document: Any) -> dict[str, Any]:
    properties = {
        name: {"type": "string", "description": text} for name, text in document.parameters
    }
    return {
        "name": document.name,
        "title": document.title,
        "description": document.description,
        "inputSchema": {"type": "object", "properties": properties},
    }


def measure_through_mcp(mesh: Mesh, args: argparse.Namespace) -> None:
    """``search`` through a real navigator process over MCP, against a trivial MCP tool call on a
    plain FastMCP server, alternating in one run (the issue's target: p50 within 2x)."""
    import tempfile

    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    from mesh.digests import contract_digest
    from registry import CatalogStore, NewTool
    from tests.harness import MeshHarness, start_backend

    with tempfile.TemporaryDirectory() as tmp:
        harness = MeshHarness(Path(tmp))
        started = time.perf_counter()
        with harness.registry.transaction() as session:
            store = CatalogStore(session)
            for assignment in mesh.assignments:
                holder, role = assignment[0].holder, assignment[0].role
                machine, seat = (f"seat-host-{role}", role) if holder == "mesh" else (holder, None)
                tools = [
                    NewTool(d.name, _definition(d), contract_digest(_definition(d)))
                    for d in assignment
                ]
                store.put_assignment(machine, role, module=role, tools=tools, seat=seat)
        written = time.perf_counter() - started
        token = harness.principal("bench")
        harness.grant("bench", "*/*/*")
        backend, port = start_backend()
        try:
            started = time.perf_counter()
            harness.start_navigator()
            ready = time.perf_counter() - started

            async def run() -> tuple[list[float], list[float]]:
                plain = Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"))
                navigator = Client(
                    StreamableHttpTransport(
                        harness.navigator_url + "/mcp", headers={"Authorization": f"Bearer {token}"}
                    )
                )
                trivial: list[float] = []
                searched: list[float] = []
                async with plain, navigator:
                    for round_ in range(args.mcp_rounds + 10):
                        query = mesh.queries[round_ % len(mesh.queries)]
                        t0 = time.perf_counter()
                        await plain.call_tool_mcp("echo", {"text": "hi"})
                        t1 = time.perf_counter()
                        result = await navigator.call_tool_mcp("search", {"query": query})
                        t2 = time.perf_counter()
                        assert not result.is_error, result
                        if round_ >= 10:
                            trivial.append((t1 - t0) * 1000)
                            searched.append((t2 - t1) * 1000)
                return trivial, searched

            trivial, searched = asyncio.run(run())
        finally:
            harness.close()
            backend.terminate()
            backend.wait(timeout=10)
    ratio = statistics.median(searched) / statistics.median(trivial)
    print(
        f"  mcp      registry written in {written:.1f} s; navigator up in {ready:.1f} s; "
        f"search over MCP {_percentiles(searched)}; trivial MCP call {_percentiles(trivial)}; "
        f"p50 ratio {ratio:.2f}x"
    )


SECTIONS: list[Callable[[Mesh, argparse.Namespace], None]] = [
    measure_index,
    measure_queries,
    measure_restricted,
    measure_assignment,
    measure_peer,
    measure_through_mcp,
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-peer", action="store_true", help="skip FastMCP's transform")
    parser.add_argument("--no-mcp", action="store_true", help="skip the through-MCP section")
    parser.add_argument("--mcp-rounds", type=int, default=200)
    args = parser.parse_args()
    queries = load_queries(args.seed)
    for size in args.sizes:
        mesh = build_mesh(size, args.seed, queries)
        print(f"\n{size:,} tools, {len(mesh.assignments):,} assignments, {len(queries)} queries")
        for section in SECTIONS:
            if (section is measure_peer and args.no_peer) or (
                section is measure_through_mcp and args.no_mcp
            ):
                continue
            section(mesh, args)


if __name__ == "__main__":
    main()
