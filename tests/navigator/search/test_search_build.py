"""Building an index in one go (``SearchIndex.build``): the index ``upsert`` makes, in this process
or with a forked worker analysing the texts."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from navigator.search import SearchIndex, ToolDocument
from navigator.search.batch import BatchAnalyzer
from navigator.search.build import BuildSettings, Work
from navigator.search.scoring import document_frequencies
from navigator.search.text import TextAnalyzer
from navigator.search.worker import ForkedWorker, WorkerFailed, can_fork

WORDS = [
    "list", "tables", "database", "PostgreSQL", "container", "logs", "restart", "e-mail",
    "GitHub", "issues", "search", "the", "of", "memory", "disk", "usage", "sync", "calendar",
    "non-profit", "café", "user's", "report", "export", "kaloMi", "zorve", "ports", "backup",
]  # fmt: skip


def catalogue(count: int, seed: int = 5) -> list[ToolDocument]:
    """Documents as a catalogue load gives them: assignment by assignment, texts shared by some
    holders (the same digest), a mesh seat, and tools whose first member arrives late."""
    rng = random.Random(seed)

    def text(low: int, high: int) -> str:
        return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))

    documents = []
    for number in range(count):
        holder = rng.choice([f"m{number % 13}", "mesh", "a-first"])
        role = rng.choice(["postgres", "docker", f"app-{number % 11}"])
        name = rng.choice(["list", "get", "sync"]) + "_" + rng.choice(WORDS).replace("-", "")
        params = tuple((rng.choice(["id", "userName", "query"]), text(0, 6)) for _ in range(2))
        digest = rng.choice(["a", "b", f"u{number}"])
        title, description = ("", "shared text") if digest == "a" else (text(0, 3), text(3, 20))
        documents.append(
            ToolDocument(
                f"{holder}/{role}/{name}", holder, role, name, title, description, params, digest
            )
        )
    return documents


QUERIES = [
    "list tables",
    "databse tabels",
    "m3 logs",
    "contaner",
    "e-mail report",
    "postgres",
    "mesh sync",
    "shared",
    "café",
    "kalomi zorve",
    "a-first export",
    "user's memory",
]


def answers(index: SearchIndex) -> list[Any]:
    pages = [index.search(query, permits=lambda _: True, limit=12) for query in QUERIES]
    return [
        (page.has_more, [(hit.address, hit.holders, hit.score) for hit in page.hits])
        for page in pages
    ]


def upserted(documents: list[ToolDocument], batch: int = 50) -> SearchIndex:
    index = SearchIndex()
    for start in range(0, len(documents), batch):
        index.upsert(documents[start : start + batch])
    return index


def built(
    documents: list[ToolDocument], batch: int = 50, settings: BuildSettings | None = None
) -> SearchIndex:
    index = SearchIndex(build=settings)
    with index.build() as build:
        for start in range(0, len(documents), batch):
            build.add(documents[start : start + batch])
    return index


def assert_same(index: SearchIndex, expected: SearchIndex, documents: list[ToolDocument]) -> None:
    assert len(index) == len(expected)
    assert answers(index) == answers(expected)
    terms = sorted({term for term in expected._postings.terms})
    assert sorted(index._postings.terms) == terms
    assert document_frequencies(index._postings, terms) == document_frequencies(
        expected._postings, terms
    )
    assert len(index._vocabulary) == len(expected._vocabulary)
    assert {key: text.members for key, text in index._members.texts.items()} == {
        key: text.members for key, text in expected._members.texts.items()
    }
    # and it keeps changing as an upserted one does
    index.remove([document.address for document in documents[::3]])
    expected.remove([document.address for document in documents[::3]])
    index.upsert(documents[:40:2])
    expected.upsert(documents[:40:2])
    assert answers(index) == answers(expected)


def test_a_build_in_this_process_is_the_index_upsert_makes() -> None:
    documents = catalogue(400)
    assert_same(built(documents), upserted(documents), documents)


@pytest.mark.skipif(not can_fork(), reason="no fork on this platform")
def test_a_build_with_a_worker_is_the_index_upsert_makes() -> None:
    started: list[ForkedWorker] = []

    def spy(work: Work) -> ForkedWorker:
        started.append(ForkedWorker(work))
        return started[-1]

    documents = catalogue(600)
    settings = BuildSettings(batch=37, worker_min_texts=10, worker=spy)
    assert_same(built(documents, settings=settings), upserted(documents), documents)
    assert len(started) == 1


@pytest.mark.skipif(not can_fork(), reason="no fork on this platform")
def test_a_failed_worker_leaves_the_analysis_to_the_build() -> None:
    def failing(_work: Work) -> ForkedWorker:
        def work(batches: Iterator[Any]) -> Any:
            next(batches)
            raise RuntimeError("worker down")

        return ForkedWorker(work)

    documents = catalogue(300)
    settings = BuildSettings(batch=37, worker_min_texts=10, worker=failing)
    assert_same(built(documents, settings=settings), upserted(documents), documents)


@pytest.mark.skipif(not can_fork(), reason="no fork on this platform")
def test_a_worker_sends_back_what_its_work_returns_and_reports_a_failure() -> None:
    worker = ForkedWorker(lambda batches: [sum(batch) for batch in batches])
    for batch in ([1, 2], [3], []):
        worker.send(batch)
    assert worker.result() == [3, 3, 0]

    def crash(batches: Iterator[Any]) -> Any:
        os.kill(os.getpid(), 9)

    with pytest.raises(WorkerFailed):
        ForkedWorker(crash).result()


@pytest.mark.skipif(not can_fork(), reason="no fork on this platform")
def test_a_worker_that_raises_or_never_finishes_fails_and_does_not_hang() -> None:
    def raises(batches: Iterator[Any]) -> Any:
        raise RuntimeError("in the child")

    with pytest.raises(WorkerFailed):
        ForkedWorker(raises).result()

    def stuck(batches: Iterator[Any]) -> Any:
        threading.Event().wait()  # as a lock held by a thread the fork did not copy

    with pytest.raises(WorkerFailed):
        ForkedWorker(stuck, limit_s=1).result()


@pytest.mark.skipif(not can_fork(), reason="no fork on this platform")
def test_an_abandoned_build_stops_its_worker() -> None:
    started: list[int] = []

    def spy(work: Work) -> ForkedWorker:
        worker = ForkedWorker(work)
        started.append(worker._pid)
        return worker

    def load() -> None:
        settings = BuildSettings(batch=20, worker_min_texts=10, worker=spy)
        with SearchIndex(build=settings).build() as build:
            build.add(catalogue(100))
            raise RuntimeError("read failed")

    with pytest.raises(RuntimeError, match="read failed"):
        load()
    assert len(started) == 1
    with pytest.raises(ChildProcessError):
        os.waitpid(started[0], os.WNOHANG)  # reaped


def test_only_an_empty_index_is_built() -> None:
    documents = catalogue(10)
    index = upserted(documents)
    with pytest.raises(ValueError, match="empty"):
        index.build()


def test_a_build_given_an_address_twice_keeps_the_last_as_upsert_does() -> None:
    documents = catalogue(120)
    first = documents[7]
    again = ToolDocument(
        first.address, first.holder, first.role, first.name, "", "zorve rewritten", (), "new"
    )
    sequence = [*documents, again]
    assert_same(built(sequence), upserted(sequence), sequence)


# -- the batch analysis gives each text the terms tool_terms gives it ----------------------------

prose = st.lists(
    st.sampled_from(
        [
            *"ab Zc1-'_.,\x01é",
            "Kalo",
            "mi",
            "GitHub",
            "networks",
            "the",
            " ",
            "  ",
            "'s",
            "'D",
            "n't",
            " der ",
            "Entscheidungen",
            "ü",
            "查询天气",
            "компании",
        ]
    ),
    max_size=30,
).map("".join)
analysed = st.tuples(
    st.sampled_from(["list_tables", "getHTTP", "a", ""]),
    prose,
    prose,
    st.lists(st.tuples(st.sampled_from(["id", "userName", "x"]), prose), max_size=3).map(tuple),
    st.sampled_from(["postgres", "app-1", "mesh"]),
)


def sequential(texts: list[Any]) -> tuple[list[list[list[str]]], list[str]]:
    analyzer = TextAnalyzer()
    fields = [[list(field) for field in analyzer.tool_terms(*text)] for text in texts]
    first_use = list(dict.fromkeys(t for text in fields for field in text for t in field))
    return fields, first_use


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(analysed, max_size=12))
def test_a_batch_has_the_terms_tool_terms_gives_each_text(texts: list[Any]) -> None:
    fields, first_use = sequential(texts)
    terms = BatchAnalyzer(TextAnalyzer())
    for _ in range(2):  # and again, once every word is known
        batch = terms.terms(texts)
        assert batch.terms == first_use
        got: list[list[list[str]]] = [[[] for _ in range(5)] for _ in texts]
        for code, cell in zip(batch.codes.tolist(), batch.cells.tolist(), strict=True):
            got[cell // 5][cell % 5].append(batch.terms[code])
        assert [[sorted(field) for field in text] for text in got] == [
            [sorted(field) for field in text] for text in fields
        ]


def test_a_batch_reads_long_texts_as_tool_terms_does() -> None:
    long = " ".join(f"word{n} well-known user's" for n in range(2000))
    parameters = tuple((f"p{n}", long) for n in range(70))
    texts = [("name", long, "café " + long, parameters, "role"), ("x", "", "", (), "r")]
    fields, first_use = sequential(texts)
    batch = BatchAnalyzer(TextAnalyzer()).terms(texts)
    assert batch.terms == first_use
    assert len(batch.codes) == sum(len(field) for text in fields for field in text)


@pytest.mark.parametrize("worker", [False, True])
def test_work_given_to_finish_runs_once_while_the_worker_finishes(worker: bool) -> None:
    if worker and not can_fork():
        pytest.skip("no fork on this platform")
    documents = catalogue(200)
    index = SearchIndex(build=BuildSettings(batch=37, worker_min_texts=10 if worker else 10**9))
    calls: list[bool] = []
    with index.build() as build:
        build.add(documents)
        build.finish(lambda: calls.append(build._worker is not None))
    assert calls == [worker]  # before the worker's result was taken
    assert answers(index) == answers(upserted(documents))
