"""``seats`` at scale: the walk's listings in process on a mesh of 100,000 tools, next to the same
listings made by looking at every assignment and every tool of the mesh (ADR 0025; the navigator
before it also put every tool through the grant evaluator, whatever the address).

    .venv/bin/python benchmarks/walk_scale.py [--tools 100000] [--machines 1000] [--samples 7]

The mesh is ``registry_scale``'s (every machine holds the ``node`` node seat and a ``postgres``
assignment with the real modules' tools; the rest are unique assignments of 8 to 60 tools), written
to a throwaway SQLite registry and loaded into a ``Catalog`` as a navigator loads it. For three
callers — an administrator allowed ``*/*/*``, one allowed one machine, and one allowed
``*/postgres/*`` with one tool denied by name — it times ``walk`` at the top, at a machine, at an
assignment, at the ``*/node`` node seat and at the mesh seats: the median of ``--samples`` runs,
wall time, with the baseline measured alternately in the same run. Then every page of the top for
the administrator through the navigator's ``seats``, whose later pages slice the listing the first
page walked, next to walking it again for each page (alternately). Last, what binding a cursor to
the contracts a caller may call costs once per grant set and view (ADR 0028), next to hashing
every tool the caller may call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import navigator.walker.seats as walk_module  # noqa: E402
from benchmarks.registry_scale import fill_registry, plan_catalogue  # noqa: E402
from navigator.access.grants import Caller, Permissions, compile_permissions  # noqa: E402
from navigator.addresses import parse_walk_address  # noqa: E402
from navigator.catalog.machines import RETIRED  # noqa: E402
from navigator.catalog.records import contracts_fingerprint  # noqa: E402
from navigator.catalog.view import Catalog  # noqa: E402
from navigator.nodes.connections import NodeConnections  # noqa: E402
from navigator.walker.cursors import Listings  # noqa: E402
from navigator.walker.operations import Navigator  # noqa: E402
from registry import CatalogStore, GrantRecord, GrantSnapshot, Registry, migrate  # noqa: E402
from tests.navigator.walker.test_walk import every_tool_decided  # noqa: E402

CALLER = Caller("bench", frozenset())


def _permissions(*rows: tuple[str, str]) -> Permissions:
    records = tuple(
        GrantRecord(number, CALLER.principal, target, (), effect, number)
        for number, (target, effect) in enumerate(rows, start=1)
    )
    return compile_permissions(CALLER, GrantSnapshot(revision=len(records), rows=records))


def _median_ms(run: Callable[[], object], samples: int) -> float:
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def measure(catalog: Catalog, machine: str, samples: int) -> None:
    callers = {
        "administrator (*/*/*)": _permissions(("*/*/*", "allow")),
        f"one machine ({machine})": _permissions((machine, "allow")),
        "*/postgres/*, one tool denied": _permissions(
            ("*/postgres/*", "allow"), (f"{machine}/postgres/query", "deny")
        ),
    }
    addresses = [None, machine, f"{machine}/postgres", "*/node", "mesh"]
    print(f"{'caller':<32} {'address':<16} {'walk':>9} {'baseline':>10} {'ratio':>8}")
    for name, permissions in callers.items():
        for address in addresses:
            parsed = None if address is None else parse_walk_address(address)

            def run(parsed: object = parsed, permissions: Permissions = permissions) -> object:
                try:
                    return walk_module.walk(catalog, permissions, parsed)  # type: ignore[arg-type]
                except Exception as error:  # nothing the caller may call there
                    return error

            quick, slow = [], []
            for _ in range(samples):  # alternate, so that a noisy moment hits both
                quick.append(_median_ms(run, 1))
                shipped = walk_module._holdings
                walk_module._holdings = every_tool_decided  # type: ignore[assignment]
                try:
                    slow.append(_median_ms(run, 1))
                finally:
                    walk_module._holdings = shipped
            q, s = statistics.median(quick), statistics.median(slow)
            label = "(top)" if address is None else address
            print(f"{name:<32} {label:<16} {q:7.1f} ms {s:7.1f} ms {q / s:6.3f}x")


def every_tool_digested(catalog: Catalog, permissions: Permissions) -> str:
    """The baseline of ``authorised_contracts``: every live tool the caller may call, decided and
    hashed one by one (the SPEC's words read literally)."""
    allowed = [
        tool
        for tool in catalog.tools()
        if catalog.status(tool) != RETIRED and permissions.permits(tool.address)
    ]
    return contracts_fingerprint(allowed)


def measure_binding(catalog: Catalog, machine: str, samples: int) -> None:
    """What a cursor's binding to the caller's contracts costs (ADR 0028): read once per grant
    set and view, after a change anywhere (the assignments' fingerprints kept, but the one that
    changed), and with no fingerprint kept (after a whole load), next to hashing every
    authorised tool."""
    callers = {
        "administrator (*/*/*)": _permissions(("*/*/*", "allow")),
        f"one machine ({machine})": _permissions((machine, "allow")),
        "*/postgres/*, one tool denied": _permissions(
            ("*/postgres/*", "allow"), (f"{machine}/postgres/query", "deny")
        ),
    }
    fingerprints = catalog._state.fingerprints
    print(f"{'cursor binding, caller':<32} {'kept':>9} {'none kept':>10} {'baseline':>10}")
    for name, permissions in callers.items():
        walk_module.authorised_contracts(catalog, permissions)  # fingerprints made once
        kept = _median_ms(
            lambda p=permissions: walk_module.authorised_contracts(catalog, p), samples
        )

        def cold(p: Permissions = permissions) -> object:
            fingerprints.clear()
            return walk_module.authorised_contracts(catalog, p)

        none_kept = _median_ms(cold, samples)
        baseline = _median_ms(lambda p=permissions: every_tool_digested(catalog, p), samples)
        print(
            f"{name:<32} {kept:6.1f} ms {none_kept:7.1f} ms {baseline:7.1f} ms"
            f"  ({kept / baseline:.3f}x, {none_kept / baseline:.3f}x)"
        )


async def measure_paging(catalog: Catalog, registry: Registry, samples: int) -> None:
    """Every page of the top of ``seats`` for an administrator, listings kept or walked again."""
    with registry.read_transaction() as session:
        revision = CatalogStore(session).revision("grants")
    rows = (GrantRecord(1, CALLER.principal, "*/*/*", (), "allow", revision),)
    caller = Caller(CALLER.principal, frozenset(), GrantSnapshot(revision=revision, rows=rows))
    navigator = Navigator(registry, catalog, NodeConnections(), deadline_s=30)
    kept = navigator._listings

    async def every_page() -> tuple[int, float]:
        started, cursor, pages = time.perf_counter(), None, 0
        while True:
            answer = await navigator.seats(caller, None, cursor)
            pages += 1
            cursor = answer.get("nextCursor")
            if cursor is None:
                return pages, (time.perf_counter() - started) * 1000

    quick, slow = [], []
    for _ in range(samples):
        navigator._listings = kept
        pages, elapsed = await every_page()
        quick.append(elapsed)
        navigator._listings = Listings(0)  # keeps nothing: every page walks
        slow.append((await every_page())[1])
    q, s = statistics.median(quick), statistics.median(slow)
    print(
        f"every page of the top ({pages} pages), administrator: {q:.1f} ms,"
        f" walked for each page {s:.1f} ms ({q / s:.3f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=100_000)
    parser.add_argument("--machines", type=int, default=1_000)
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    with tempfile.TemporaryDirectory(prefix="meshnav-walk-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'registry.db'}"
        migrate(url)
        plan = plan_catalogue(args.tools, args.machines, args.seed)
        fill_s, assignments = fill_registry(url, plan)
        registry = Registry(url)
        try:
            catalog = Catalog(registry)
            started = time.perf_counter()
            asyncio.run(catalog.load())
            print(
                f"{args.tools:,} tools, {args.machines:,} machines, {assignments:,} assignments"
                f" (written in {fill_s:.0f} s, loaded in {time.perf_counter() - started:.1f} s)"
            )
            measure(catalog, plan.machines[3], args.samples)
            measure_binding(catalog, plan.machines[3], args.samples)
            asyncio.run(measure_paging(catalog, registry, args.samples))
        finally:
            registry.dispose()


if __name__ == "__main__":
    main()
