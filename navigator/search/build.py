"""Filling an empty index with many documents at once, its text analysed by a forked worker.

``IndexBuild`` makes the index that ``SearchIndex.upsert`` of the same documents, in the same
order, makes — the same texts, members, slots, postings and vocabulary — for less. The index gives
it the parts it fills (``SearchIndex.build``); ``BuildSettings`` says how it batches and whether,
and how, it starts a worker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from navigator.search.batch import BatchAnalyzer
from navigator.search.documents import ToolDocument
from navigator.search.members import Analysed, GroupKey, Members
from navigator.search.postings import PostingIndex, PostingState
from navigator.search.text import TextAnalyzer
from navigator.search.vocabulary import Vocabulary
from navigator.search.worker import ForkedWorker, WorkerFailed, can_fork

__all__ = ["BUILD_BATCH", "WORKER_MIN_TEXTS", "BuildSettings", "IndexBuild", "Worker"]

log = logging.getLogger(__name__)

#: Texts analysed at once while an index is built: each batch's postings are counted in one numpy
#: pass, and the text sent to the worker a batch at a time.
BUILD_BATCH = 8192
#: A build with more new texts than this analyses them in a forked worker process (``worker``),
#: beside the caller's own work; a smaller one analyses them itself, as cheap as starting a worker.
WORKER_MIN_TEXTS = BUILD_BATCH

#: What a worker runs: the batches sent to it in, its result out.
Work = Callable[[Iterator[Any]], Any]


class Worker(Protocol):
    """Runs a build's work elsewhere (``worker.ForkedWorker``)."""

    def send(self, batch: Any) -> None: ...

    def result(self) -> Any: ...

    def abandon(self) -> None: ...


@dataclass(frozen=True, slots=True)
class BuildSettings:
    """How a build batches its texts (``BUILD_BATCH``), from how many new texts it starts a
    worker (``WORKER_MIN_TEXTS``), and what starts one (given the work it is to run)."""

    batch: int = BUILD_BATCH
    worker_min_texts: int = WORKER_MIN_TEXTS
    worker: Callable[[Work], Worker] = ForkedWorker


def _analyse(
    postings: PostingIndex, terms: BatchAnalyzer, texts: list[Analysed], first_slot: int
) -> list[str]:
    """Index texts into ``postings``, which must give them the slots from ``first_slot`` on; the
    terms new to the postings, in order of first use."""
    batch = terms.terms(texts)
    slots, new_terms = postings.add_occurrences(batch.count, batch.terms, batch.codes, batch.cells)
    if slots != list(range(first_slot, first_slot + len(texts))):
        raise RuntimeError("an index build's texts did not get the slots it gave them")
    return new_terms


def analyse_batches(analyzer: TextAnalyzer, postings: PostingIndex) -> Work:
    """What a build's worker runs: every batch into the (forked copy of the) index's empty
    postings, then the postings and their new terms, for the parent to restore."""

    def work(batches: Iterator[list[Analysed]]) -> tuple[PostingState, list[str]]:
        terms = BatchAnalyzer(analyzer)
        new_terms: list[str] = []
        slot = 0
        for batch in batches:
            new_terms += _analyse(postings, terms, batch, slot)
            slot += len(batch)
        return postings.export(), new_terms

    return work


class IndexBuild:
    """Fills an empty index with many documents: the index that ``upsert`` of the same documents,
    in the same order, makes — the same texts, members, slots, postings and vocabulary — for less.

    Documents are placed as they come; each new text gets the next slot at once, and its words are
    analysed a batch at a time. A build of more than ``WORKER_MIN_TEXTS`` texts sends them to a
    forked worker process (``worker.ForkedWorker``) that analyses them on another core while the
    caller reads and places the rest, and restores the postings it sends back on ``finish``; if
    the worker fails, the texts are analysed here instead. Used as a context manager, a build
    finishes when its block ends and is abandoned if the block raises: an unfinished index is
    not searchable.

    The index gives it its parts, ``finishing`` (the index held for the finish, what it kept of
    callers' parts dropped) and ``settle`` (what ``upsert`` would have settled on the way: the
    texts whose first member changed, then the documents placed twice).
    """

    __slots__ = (
        "_analysed",
        "_analyzer",
        "_finished",
        "_finishing",
        "_first_changed",
        "_members",
        "_next_slot",
        "_postings",
        "_queued",
        "_repeated",
        "_sent",
        "_settings",
        "_settle",
        "_terms",
        "_vocabulary",
        "_worker",
    )

    def __init__(
        self,
        members: Members,
        postings: PostingIndex,
        vocabulary: Vocabulary,
        analyzer: TextAnalyzer,
        settings: BuildSettings,
        *,
        finishing: Callable[[], AbstractContextManager[object]],
        settle: Callable[[dict[GroupKey, None], list[ToolDocument]], None],
    ) -> None:
        if members.documents or postings.text_count or members.texts:
            raise ValueError("only an empty index is built")
        self._members = members
        self._postings = postings
        self._vocabulary = vocabulary
        self._analyzer = analyzer
        self._settings = settings
        self._finishing = finishing
        self._settle = settle
        self._next_slot = 0
        self._finished = False
        self._analysed = 0  # texts analysed here
        self._queued: list[Analysed] = []  # texts waiting for their batch
        self._sent: list[Analysed] = []  # texts the worker analyses, kept in case it fails
        self._worker: Worker | None = None
        self._terms: BatchAnalyzer | None = None  # for texts analysed here
        # texts whose first member changed since their text was taken from another member
        self._first_changed: dict[GroupKey, None] = {}
        # documents at an address already placed in this build: applied by ``upsert`` at the end
        self._repeated: list[ToolDocument] = []

    def __enter__(self) -> IndexBuild:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.finish()
        else:
            self.abandon()

    def add(self, documents: Iterable[ToolDocument]) -> None:
        """Place documents, as ``upsert`` would."""
        members = self._members
        placed, attach = members.documents, members.attach_placed
        batch = self._settings.batch
        for document in documents:
            if document.address in placed:
                self._repeated.append(document)
                continue
            tool_text, new = attach(document, self._next_slot)
            if new:
                self._next_slot += 1
                self._queued.append((document.name, *tool_text.text, document.role))
                if len(self._queued) >= batch:
                    self._flush()
            elif tool_text.holders[0] == document.holder:
                self._first_changed[tool_text.key] = None

    def _flush(self) -> None:
        batch, self._queued = self._queued, []
        if not batch:
            return
        fresh = self._worker is None and not self._analysed
        if fresh and len(batch) >= self._settings.worker_min_texts and can_fork():
            self._worker = self._settings.worker(analyse_batches(self._analyzer, self._postings))
        if self._worker is not None:
            self._worker.send(batch)
            self._sent += batch
            return
        self._analyse_here(batch, self._analysed)
        self._analysed += len(batch)

    def _analyse_here(self, texts: list[Analysed], first_slot: int) -> None:
        if self._terms is None:
            self._terms = BatchAnalyzer(self._analyzer)
        self._vocabulary.add(_analyse(self._postings, self._terms, texts, first_slot))

    def finish(self, meanwhile: Callable[[], object] | None = None) -> None:
        """Analyse what is left, take in the worker's postings, and settle what ``upsert`` would
        have settled on the way: the index is then complete. ``meanwhile`` is called once the
        last texts are sent, while the worker finishes them (or at once, without a worker).
        Finishing a finished build does nothing."""
        if self._finished:
            return
        self._finished = True
        with self._finishing():
            self._flush()
            if meanwhile is not None:
                meanwhile()
            worker, self._worker = self._worker, None
            if worker is not None:
                sent, self._sent = self._sent, []
                try:
                    state, new_terms = worker.result()
                except WorkerFailed:
                    log.warning("the index worker failed; analysing its texts in this process")
                    batch = self._settings.batch
                    for start in range(0, len(sent), batch):
                        self._analyse_here(sent[start : start + batch], start)
                else:
                    self._postings.restore(state)
                    self._vocabulary.add(new_terms)
            self._terms = None
            self._settle(self._first_changed, self._repeated)

    def abandon(self) -> None:
        """Stop the worker, if any; the index stays incomplete and is to be dropped."""
        self._finished = True
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.abandon()
