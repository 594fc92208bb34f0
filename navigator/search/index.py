"""The in-memory search index: tools by address, ranked by text, narrowed by grants.

Documents with the same role, tool name and contract digest are one *tool text* however many
holders offer them: the text is indexed once (taken from the member whose address sorts first) and
the holders are its members, kept in holder order. Registering, changing or retiring an
assignment touches only the texts and members involved.

A search scores tool texts (see ``ranking``) against the statistics of the texts its caller
may call (the caller's part, kept per grant set until the index changes), then walks them best
first. For each it asks ``within`` and then ``permits`` of its members' concrete addresses — so
only tools that matched the query are ever checked — and makes one hit of what is permitted: a
collapsed ``*/ROLE/TOOL`` for two or more holders, the concrete address for one, nothing for none.
Hits leave in (score descending, address ascending) order, and the walk stops as soon as the page
and one more hit are known, so that grants are evaluated for a page, not for the catalogue.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from operator import itemgetter

import numpy as np
import numpy.typing as npt

from navigator.search.audience import Audience, audience_of
from navigator.search.build import BuildSettings, IndexBuild
from navigator.search.commonness import stem_zipf_frequency, zipf_frequency
from navigator.search.documents import Hit, SearchPage, ToolDocument, shown_holders
from navigator.search.holders import holder_bonuses, slot_bonuses, visible_holders
from navigator.search.members import (
    GroupKey,
    Members,
    ToolText,
    permitted_members,
    position,
    text_fields,
    text_of,
    text_terms,
)
from navigator.search.own import SIDE_TEXTS, OwnParts, visibility
from navigator.search.paging import first_hits
from navigator.search.postings import PostingIndex
from navigator.search.ranking import RankingSettings, plan_query
from navigator.search.scoring import document_frequencies
from navigator.search.scoring import scores as score
from navigator.search.text import TextAnalyzer
from navigator.search.thesaurus import related_words
from navigator.search.vocabulary import Vocabulary

__all__ = ["SearchIndex"]


class SearchIndex:
    """Tools by address, searchable by words, narrowed by the caller's grants.

    ``build``: how ``build()`` batches and starts its worker; ``side_texts``: from how many texts
    on the smaller side a caller's part stops counting their terms (``own.SIDE_TEXTS``).
    """

    def __init__(
        self,
        settings: RankingSettings | None = None,
        *,
        build: BuildSettings | None = None,
        side_texts: int = SIDE_TEXTS,
    ) -> None:
        self._settings = settings or RankingSettings()
        self._build = build or BuildSettings()
        self._analyzer = TextAnalyzer()
        self._postings = PostingIndex(self._settings)
        self._vocabulary = Vocabulary()
        self._members = Members()
        self._own = OwnParts(self._members, self._postings, self._analyzer, side_texts)
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._members)

    def build(self) -> IndexBuild:
        """Fill this empty index with many documents at once (``IndexBuild``)."""
        return IndexBuild(
            self._members, self._postings, self._vocabulary, self._analyzer, self._build,
            finishing=self._finishing, settle=self._settle_build,
        )  # fmt: skip

    @contextmanager
    def _finishing(self) -> Iterator[None]:
        """A build's finish: the index held, what it kept of callers' parts dropped."""
        with self._lock:
            self._own.clear()
            yield

    def _settle_build(
        self, first_changed: dict[GroupKey, None], repeated: list[ToolDocument]
    ) -> None:
        if first_changed:
            self._settle(first_changed)
        if repeated:
            self.upsert(repeated)

    # -- changes -------------------------------------------------------------------------------

    def upsert(self, documents: Iterable[ToolDocument]) -> None:
        """Add documents, or replace those already indexed at the same address."""
        with self._lock:
            members = self._members
            touched: dict[GroupKey, None] = {}
            pending: list[ToolText] = []
            for document in documents:
                previous = members.documents.get(document.address)
                if previous == document:
                    continue
                if previous is not None:
                    members.detach(previous, touched)
                members.attach(document, touched, pending)
            self._index_texts(pending)
            self._settle(touched)

    def remove(self, addresses: Iterable[str]) -> None:
        """Remove the documents at these addresses; unknown addresses are ignored."""
        with self._lock:
            members = self._members
            touched: dict[GroupKey, None] = {}
            for address in addresses:
                document = members.documents.get(address)
                if document is not None:
                    members.detach(document, touched)
            self._settle(touched)

    def remove_prefix(self, prefix: str) -> None:
        """Remove every document whose address starts with ``prefix`` (e.g. ``db1/postgres/``)."""
        with self._lock:
            by_holder = self._members.by_holder
            holder, slash, _ = prefix.partition("/")
            if slash:
                candidates = by_holder.get(holder, set())
            else:
                candidates = {
                    address
                    for name, addresses in by_holder.items()
                    if name.startswith(prefix)
                    for address in addresses
                }
            self.remove(sorted(address for address in candidates if address.startswith(prefix)))

    def _settle(self, touched: dict[GroupKey, None]) -> None:
        """Unindex texts left without members; re-index texts whose first member's text changed.
        Every change of the index ends here: what was kept of callers' own parts is dropped."""
        if touched:
            self._own.clear()
        members = self._members
        stale: dict[int, ToolText] = {}
        replacements: list[ToolText] = []
        for key in touched:
            tool_text = members.texts[key]
            if not tool_text.members:
                del members.texts[key]
                stale[tool_text.slot] = tool_text
                continue
            wanted = text_of(members.documents[tool_text.members[0]])
            if wanted != tool_text.text:
                stale[tool_text.slot] = tool_text
                replacement = ToolText(key, wanted, -1, tool_text.members, tool_text.holders)
                members.texts[key] = replacement
                replacements.append(replacement)
        self._index_texts(replacements)
        if stale:
            terms: dict[int, list[str]] = {}
            for slot, text in stale.items():
                kept = self._own.take_terms(slot)
                terms[slot] = kept or self._terms(text)
                # Slots are freed only below, after this batch's new texts took theirs: a stale
                # slot still maps to its stale text.
                members.unplace(slot, text)
            self._vocabulary.discard(self._postings.remove(terms))

    def _terms(self, text: ToolText) -> list[str]:
        """The distinct terms of an indexed text."""
        return text_terms(self._analyzer, text.key, text.text)

    def _index_texts(self, texts: list[ToolText]) -> None:
        """Index new texts in one batch, giving each its slot in turn."""
        if not texts:
            return
        fields = [text_fields(self._analyzer, text.key, text.text) for text in texts]
        slots, new_terms = self._postings.add_many(fields)
        self._vocabulary.add(new_terms)
        for text, slot in zip(texts, slots, strict=True):
            self._members.place(text, slot)

    # -- search --------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        permits: Audience | Callable[[str], bool],
        within: Callable[[str], bool] | None = None,
        offset: int = 0,
        limit: int = 8,
    ) -> SearchPage:
        """One page of the ranked, collapsed hits for ``query`` among the permitted tools.

        ``permits``: the caller's grants — an ``Audience`` such as the grant evaluator's
        ``Permissions``, or any predicate over addresses. The page is the one an index of the
        caller's own tools would give: hidden tools are never returned, and never counted in the
        statistics that rank the others (SPEC §3: a tool the caller may not call is never hinted
        at). An audience's shortcuts — its reach, its refusals, a tool decided alike on every
        holder — spare asking about every tool; a predicate is asked about every tool, every
        search.
        """
        if offset < 0 or limit < 1:
            raise ValueError("offset must be >= 0 and limit >= 1")
        audience = audience_of(permits)
        with self._lock:
            wanted = offset + limit + 1
            hits = self._ranked_hits(query, audience, within, wanted)
            return SearchPage(hits[offset : offset + limit], len(hits) > offset + limit)

    def _ranked_hits(
        self,
        query: str,
        audience: Audience,
        within: Callable[[str], bool] | None,
        wanted: int,
    ) -> list[Hit]:
        members, postings = self._members, self._postings
        permits = _asked_once(audience.permits)
        own = self._own.part(audience, permits)
        among = None if own is None else own.among
        words = self._analyzer.query_words(query)
        holders_by_word = visible_holders(members, words, permits, audience.reach)
        looked_at = _mask(members.narrowed_slots(within), postings.slot_count)
        if among is not None:  # the texts a hit may come from
            looked_at = among.texts if looked_at is None else looked_at & among.texts
        plan = plan_query(
            words,
            document_frequencies=lambda terms: document_frequencies(postings, terms, among),
            holder_words=holders_by_word,
            correct=self._vocabulary.correct,
            related=related_words,
            commonness=zipf_frequency,
            stem_commonness=stem_zipf_frequency,
            settings=self._settings,
            visible=visibility(members, postings, audience, permits, within, looked_at),
        )
        if plan.empty:
            return []
        scores = score(postings, plan.terms, among)
        bonuses = holder_bonuses(
            members, self._settings, plan.holder_words, holders_by_word, permits, own
        )
        bounds = scores
        if bonuses:
            bounds = scores.copy()
            for slot, bonus in slot_bonuses(members, bonuses).items():
                bounds[slot] += bonus
        candidates = np.flatnonzero(bounds > 0.0)
        if looked_at is not None:
            candidates = candidates[looked_at[candidates]]
        hits = first_hits(
            candidates,
            bounds,
            wanted,
            lambda slot: self._hit(slot, float(scores[slot]), bonuses, audience, permits, within),
        )
        floor = self._settings.relevance_floor
        if floor and hits:  # hits leave best first: the first is the best of every page
            least = floor * hits[0].score
            hits = [hit for hit in hits if hit.score >= least]
        return hits

    def _hit(
        self,
        slot: int,
        score: float,
        bonuses: dict[str, float],
        audience: Audience,
        permits: Callable[[str], bool],
        within: Callable[[str], bool] | None,
    ) -> Hit | None:
        tool_text = self._members.by_slot[slot]
        members = tool_text.members
        permitted = permitted_members(tool_text, audience, permits)
        if within is not None:
            permitted = [at for at in permitted if within(members[at])]
        if not permitted:
            return None
        named = {  # the permitted members on a holder the query names, with its bonus
            holder: bonus
            for holder, bonus in bonuses.items()
            if (at := tool_text.position(holder)) is not None
            and position(permitted, at) is not None
        }
        score += max(named.values(), default=0.0)
        if score <= 0.0:
            return None
        first = self._members.documents[members[permitted[0]]]
        if len(permitted) == 1:
            return Hit(first.address, first, (), 1, score)
        holders = tuple(tool_text.holders) if len(permitted) == len(members) else (
            itemgetter(*permitted)(tool_text.holders)
        )  # fmt: skip
        role, name, _ = tool_text.key
        return Hit(
            f"*/{role}/{name}", first, shown_holders(holders, sorted(named)), len(permitted), score,
            holders,
        )  # fmt: skip


def _asked_once(permits: Callable[[str], bool]) -> Callable[[str], bool]:
    """``permits``, asked at most once per address (a search asks about words, then hits)."""
    answers: dict[str, bool] = {}

    def asked(address: str) -> bool:
        answer = answers.get(address)
        if answer is None:
            answer = answers[address] = permits(address)
        return answer

    return asked


def _mask(slots: list[int] | None, size: int) -> npt.NDArray[np.bool_] | None:
    """``slots`` as a mask over ``size`` slots; ``None`` (nothing narrowed) stays ``None``."""
    if slots is None:
        return None
    kept = np.zeros(size, dtype=bool)
    kept[slots] = True
    return kept
