"""Reading the registry into a view: the whole catalogue at a load, one machine at a catch-up.

Both run off the event loop (``navigator.catalog.registry_reads``); ``Catalog`` decides when, and
holds its lock over them. A whole load builds a new ``CatalogState`` and its search index while
the rows stream in; a machine's re-read changes the current one in place, assignment by assignment.
"""

from __future__ import annotations

import gc
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator

from navigator.catalog.contracts import ContractReader, SharedContracts
from navigator.catalog.records import CatalogAssignment
from navigator.catalog.registry_reads import Progress
from navigator.catalog.state import CatalogState
from navigator.search import SearchIndex
from navigator.search.ranking import RankingSettings
from registry import CatalogRow, CatalogStore, MachineRecord, NotFound, Registry

__all__ = ["CATCH_UP_PAGE", "place_machine", "read_machine", "read_whole"]

#: Log entries read at once when catching up; further behind than this, reload everything.
CATCH_UP_PAGE = 1000


def read_whole(
    registry: Registry,
    shared: SharedContracts,
    progress: Progress,
    meanwhile: Callable[[], object] | None = None,
    ranking: RankingSettings | None = None,
) -> tuple[int, dict[str, bytes], CatalogState]:
    """The catalogue's revision, every machine's call-token key, and a new view of it all, its
    contracts shared through ``shared`` with the views before it (``Catalog.load``); its search
    index ranks by ``ranking``."""
    state = CatalogState(index=SearchIndex(ranking))
    contracts = ContractReader(shared)
    # Building creates a million small objects and frees few: collecting meanwhile only walks
    # them again and again. Once built they are frozen out of every later collection's walk:
    # a view holds no reference cycles, so refcounting frees it when the next one replaces it.
    collecting = gc.isenabled()
    gc.disable()
    build = state.index.build()
    try:
        with registry.read_transaction() as session:
            store = CatalogStore(session)
            revision = store.last_change()
            keys = store.node_keys()
            for machine in store.machines():
                state.put_machine(machine)
            progress.tick()
            for assignment, rows in _assignments(store.stream_catalog_rows()):
                progress.tick()
                build.add(state.put_assignment(assignment, rows, contracts))
        progress.done()
        # beside the index worker's last texts: the first cursor a grant set asks of this view
        # reads them (ADR 0028)
        state.fingerprint_every_assignment()
        build.finish(meanwhile)  # the transaction is over: the rest reads no row
        gc.freeze()
    except BaseException:
        build.abandon()
        raise
    finally:
        if collecting:
            gc.enable()
    return revision, keys, state


def read_machine(
    registry: Registry, name: str
) -> tuple[MachineRecord | None, list[CatalogRow], bytes | None]:
    """Machine ``name``'s record, catalogue rows and call-token key; no record, no rows and no
    key once it is gone from the registry."""
    with registry.read_transaction() as session:
        store = CatalogStore(session)
        try:
            machine = store.machine(name)
        except NotFound:
            return None, [], None
        return machine, store.catalog_rows(machine=name), store.node_key(name)


def place_machine(
    state: CatalogState,
    name: str,
    machine: MachineRecord | None,
    rows: list[CatalogRow],
    shared: SharedContracts,
) -> None:
    """Apply ``read_machine``'s answer to ``state``: the record, each assignment in ``rows``
    placed again (and indexed), and the machine's assignments no longer among them dropped."""
    if machine is not None:
        state.put_machine(machine)
    stale = {(name, role) for role in state.by_machine.get(name, ())}
    contracts = ContractReader(shared)
    for assignment, tools in _assignments(rows):
        stale.discard((assignment.machine, assignment.role))
        state.index.upsert(state.put_assignment(assignment, tools, contracts))
    for gone in stale:
        state.drop_assignment(gone)


def _assignments(
    rows: Iterable[CatalogRow],
) -> Iterator[tuple[CatalogAssignment, list[CatalogRow]]]:
    """Flat rows (ordered by machine, role, tool) grouped back into assignments."""
    for _, grouped in itertools.groupby(rows, key=operator.itemgetter(0, 1)):
        group = list(grouped)
        first = group[0]
        tools = group if first.tool is not None else []  # no tools: one row, joined to none
        yield (
            CatalogAssignment(
                machine=first.machine,
                role=first.role,
                module=first.module,
                kind=first.kind,
                endpoint=first.endpoint,
                seat=first.seat,
                scopes=tuple(first.scopes),
                retired=bool(first.retired),
                not_listing=first.not_listing,
                tools=tuple([str(row.tool) for row in tools]),
            ),
            tools,
        )
