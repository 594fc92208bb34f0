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

import logging
import sys
import threading
from bisect import bisect_left
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from navigator.addresses import Pattern
from navigator.caches import WeightedCache
from navigator.search.audience import Audience, audience_of
from navigator.search.batch import BatchAnalyzer
from navigator.search.commonness import stem_zipf_frequency, zipf_frequency
from navigator.search.documents import Hit, SearchPage, ToolDocument, shown_holders
from navigator.search.paging import first_hits
from navigator.search.postings import Among, PostingIndex, PostingState
from navigator.search.ranking import RankingSettings, bm25_idf, plan_query
from navigator.search.text import QueryWord, TextAnalyzer, split_identifier
from navigator.search.thesaurus import related_words
from navigator.search.vocabulary import Vocabulary
from navigator.search.worker import ForkedWorker, WorkerFailed, can_fork

__all__ = ["IndexBuild", "SearchIndex"]

log = logging.getLogger(__name__)

#: Texts analysed at once while an index is built: each batch's postings are counted in one numpy
#: pass, and the text sent to the worker a batch at a time.
BUILD_BATCH = 8192
#: A query word naming more holders than this (among those the caller sees) names none of them.
HOLDER_WORD_HOLDERS = 16
#: How many bytes of callers' own statistics (``_Own``) an index keeps, the least recently used
#: dropped: a flag per text and a small side's term counts each — some 250 KB at 100,000 tools, so
#: a few hundred grant sets in turn are each measured once per change of the index, not per search.
KEPT_AUDIENCE_BYTES = 64 * 2**20
#: A caller's texts, or the texts it may not call, whose terms are counted when they are no more
#: than this many: its document frequencies are then lookups, not passes over postings.
SIDE_TEXTS = 4096
#: How many texts' terms an index keeps for counting callers' parts again after a change.
KEPT_TEXT_TERMS = 4 * SIDE_TEXTS
#: A build with more new texts than this analyses them in a forked worker process (``worker``),
#: beside the caller's own work; a smaller one analyses them itself, as cheap as starting a worker.
WORKER_MIN_TEXTS = BUILD_BATCH

# (role, tool name, contract digest): the tools that are the same tool on another holder
_GroupKey = tuple[str, str, str]
# (title, description, parameters): what of a document is indexed besides its role and name
_Text = tuple[str, str, tuple[tuple[str, str], ...]]
# (name, title, description, parameters, role): what the analyzer reads of one text
_Analysed = tuple[str, str, str, tuple[tuple[str, str], ...], str]


def _text_of(document: ToolDocument) -> _Text:
    return (document.title, document.description, document.parameters)


def _holder_words(holder: str) -> set[str]:
    """The words that name a holder in a query: its whole name and its parts."""
    words = {holder.casefold()}
    words.update(part for part in split_identifier(holder) if len(part) > 1)
    return words


@dataclass(slots=True)
class _ToolText:
    """One indexed text and the addresses of the documents that share it, with their holders
    beside them (a holder has at most one member: its tool of this key). Members are kept in
    holder order, as ``seats`` lists holders — "web" before "web-1", which address order puts
    after it.

    Its words are not kept: unindexing analyses the text again, which costs a removal what adding
    cost, and saves the index a copy of every text's words.
    """

    key: _GroupKey
    text: _Text
    slot: int
    members: list[str]
    holders: list[str]

    def add(self, address: str, holder: str) -> None:
        """Add a member in holder order."""
        holders = self.holders
        at = len(holders) if not holders or holder > holders[-1] else bisect_left(holders, holder)
        self.members.insert(at, address)
        holders.insert(at, holder)

    def discard(self, holder: str) -> None:
        at = self.position(holder)
        if at is not None:
            del self.members[at], self.holders[at]

    def position(self, holder: str) -> int | None:
        """Where the member on ``holder`` is, if it has one."""
        return _position(self.holders, holder)


@dataclass(frozen=True, slots=True)
class _Own:
    """A caller's own part of the index, when it may not call every tool: the texts with a
    member it may call, their statistics, and how many documents it may call."""

    among: Among
    documents: int


#: Not a kept part: ``None`` is one (a caller that may call every tool).
_UNKNOWN: Any = object()


def _weight(own: _Own | None) -> int:
    """Roughly the bytes a kept part holds of its own: its entry, its flags, its term counts'
    table (the terms themselves are the index's strings) and the most its own postings grow
    to."""
    if own is None:
        return 256
    among = own.among
    terms = 0 if among.terms is None else sys.getsizeof(among.terms)
    return 256 + among.texts.nbytes + terms + among.postings_bound


class SearchIndex:
    """Tools by address, searchable by words, narrowed by the caller's grants."""

    def __init__(self, settings: RankingSettings | None = None) -> None:
        self._settings = settings or RankingSettings()
        self._analyzer = TextAnalyzer()
        self._postings = PostingIndex(self._settings)
        self._vocabulary = Vocabulary()
        self._documents: dict[str, ToolDocument] = {}
        self._texts: dict[_GroupKey, _ToolText] = {}
        self._by_slot: dict[int, _ToolText] = {}
        self._slots_by_role: dict[str, set[int]] = {}
        # most names are one text's: a list costs a quarter of a set
        self._slots_by_name: dict[str, list[int]] = {}
        self._by_holder: dict[str, set[str]] = {}
        self._holders_by_word: dict[str, set[str]] = {}
        # audience key -> its own part (None: every tool), as of the index's last change
        self._own: WeightedCache[Hashable, _Own | None] = WeightedCache(
            KEPT_AUDIENCE_BYTES, _weight
        )
        # slot -> its text's distinct terms, for the texts callers' parts counted last
        self._slot_terms: OrderedDict[int, list[str]] = OrderedDict()
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._documents)

    def build(self) -> IndexBuild:
        """Fill this empty index with many documents at once (``IndexBuild``)."""
        return IndexBuild(self)

    # -- changes -------------------------------------------------------------------------------

    def upsert(self, documents: Iterable[ToolDocument]) -> None:
        """Add documents, or replace those already indexed at the same address."""
        with self._lock:
            touched: dict[_GroupKey, None] = {}
            pending: list[_ToolText] = []
            for document in documents:
                previous = self._documents.get(document.address)
                if previous == document:
                    continue
                if previous is not None:
                    self._detach(previous, touched)
                self._attach(document, touched, pending)
            self._index_texts(pending)
            self._settle(touched)

    def remove(self, addresses: Iterable[str]) -> None:
        """Remove the documents at these addresses; unknown addresses are ignored."""
        with self._lock:
            touched: dict[_GroupKey, None] = {}
            for address in addresses:
                document = self._documents.get(address)
                if document is not None:
                    self._detach(document, touched)
            self._settle(touched)

    def remove_prefix(self, prefix: str) -> None:
        """Remove every document whose address starts with ``prefix`` (e.g. ``db1/postgres/``)."""
        with self._lock:
            holder, slash, _ = prefix.partition("/")
            if slash:
                candidates = self._by_holder.get(holder, set())
            else:
                candidates = {
                    address
                    for name, addresses in self._by_holder.items()
                    if name.startswith(prefix)
                    for address in addresses
                }
            self.remove(sorted(address for address in candidates if address.startswith(prefix)))

    def _attach(
        self, document: ToolDocument, touched: dict[_GroupKey, None], pending: list[_ToolText]
    ) -> None:
        """Add a document; a text new to the index waits in ``pending`` for its slot."""
        key = (document.role, document.name, document.contract_digest)
        self._documents[document.address] = document
        self._by_holder.setdefault(document.holder, set()).add(document.address)
        if len(self._by_holder[document.holder]) == 1:
            for word in _holder_words(document.holder):
                self._holders_by_word.setdefault(word, set()).add(document.holder)
        tool_text = self._texts.get(key)
        if tool_text is None:
            tool_text = _ToolText(key, _text_of(document), -1, [], [])
            self._texts[key] = tool_text
            pending.append(tool_text)
        tool_text.add(document.address, document.holder)
        touched[key] = None

    def _detach(self, document: ToolDocument, touched: dict[_GroupKey, None]) -> None:
        key = (document.role, document.name, document.contract_digest)
        del self._documents[document.address]
        on_holder = self._by_holder[document.holder]
        on_holder.discard(document.address)
        if not on_holder:
            del self._by_holder[document.holder]
            for word in _holder_words(document.holder):
                holders = self._holders_by_word[word]
                holders.discard(document.holder)
                if not holders:
                    del self._holders_by_word[word]
        self._texts[key].discard(document.holder)
        touched[key] = None

    def _settle(self, touched: dict[_GroupKey, None]) -> None:
        """Unindex texts left without members; re-index texts whose first member's text changed.
        Every change of the index ends here: what was kept of callers' own parts is dropped."""
        if touched:
            self._own.clear()
        stale: dict[int, _ToolText] = {}
        replacements: list[_ToolText] = []
        for key in touched:
            tool_text = self._texts[key]
            if not tool_text.members:
                del self._texts[key]
                stale[tool_text.slot] = tool_text
                continue
            wanted = _text_of(self._documents[tool_text.members[0]])
            if wanted != tool_text.text:
                stale[tool_text.slot] = tool_text
                replacement = _ToolText(key, wanted, -1, tool_text.members, tool_text.holders)
                self._texts[key] = replacement
                replacements.append(replacement)
        self._index_texts(replacements)
        if stale:
            terms: dict[int, list[str]] = {}
            for slot, text in stale.items():
                kept = self._slot_terms.pop(slot, [])
                terms[slot] = kept or self._terms(text.key, text.text)
                # Slots are freed only below, after this batch's new texts took theirs: a stale
                # slot still maps to its stale text.
                del self._by_slot[slot]
                _discard(self._slots_by_role, text.key[0], slot)
                _discard(self._slots_by_name, text.key[1], slot)
            self._vocabulary.discard(self._postings.remove(terms))

    def _fields(self, key: _GroupKey, text: _Text) -> tuple[list[str], ...]:
        """A text's terms per field."""
        role, name, _ = key
        title, description, parameters = text
        return self._analyzer.tool_terms(name, title, description, parameters, role)

    def _terms(self, key: _GroupKey, text: _Text) -> list[str]:
        """The distinct terms of a text."""
        return list(dict.fromkeys(t for field in self._fields(key, text) for t in field))

    def _index_texts(self, texts: list[_ToolText]) -> None:
        """Index new texts in one batch, giving each its slot in turn."""
        if not texts:
            return
        fields = [self._fields(text.key, text.text) for text in texts]
        slots, new_terms = self._postings.add_many(fields)
        self._vocabulary.add(new_terms)
        for text, slot in zip(texts, slots, strict=True):
            self._place(text, slot)

    def _place(self, text: _ToolText, slot: int) -> None:
        """Give an indexed text its slot, findable by its role and by its tool name."""
        text.slot = slot
        self._by_slot[slot] = text
        self._slots_by_role.setdefault(text.key[0], set()).add(slot)
        self._slots_by_name.setdefault(text.key[1], []).append(slot)

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
        permits = _asked_once(audience.permits)
        own = self._own_part(audience, permits)
        among = None if own is None else own.among
        words = self._analyzer.query_words(query)
        holders_by_word = self._visible_holders(words, permits, audience.reach)
        looked_at = _mask(self._narrowed_slots(within), self._postings.slot_count)
        if among is not None:  # the texts a hit may come from
            looked_at = among.texts if looked_at is None else looked_at & among.texts
        plan = plan_query(
            words,
            document_frequencies=lambda terms: self._postings.document_frequencies(terms, among),
            holder_words=holders_by_word,
            correct=self._vocabulary.correct,
            related=related_words,
            commonness=zipf_frequency,
            stem_commonness=stem_zipf_frequency,
            settings=self._settings,
            visible=self._visibility(audience, permits, within, looked_at),
        )
        if plan.empty:
            return []
        scores = self._postings.scores(plan.terms, among)
        bonuses = self._holder_bonuses(plan.holder_words, holders_by_word, permits, own)
        bounds = scores
        if bonuses:
            bounds = scores.copy()
            for slot, bonus in self._slot_bonuses(bonuses).items():
                bounds[slot] += bonus
        candidates = np.flatnonzero(bounds > 0.0)
        if looked_at is not None:
            candidates = candidates[looked_at[candidates]]
        return first_hits(
            candidates,
            bounds,
            wanted,
            lambda slot: self._hit(slot, float(scores[slot]), bonuses, audience, permits, within),
        )

    # -- the caller's own part -----------------------------------------------------------------

    def _own_part(self, audience: Audience, permits: Callable[[str], bool]) -> _Own | None:
        """The caller's own part of the index, or ``None`` when it may call every tool: kept
        under the audience's key until the index changes."""
        key = audience.key  # a digest: a string, whose hash Python keeps
        if key is not None:
            kept = self._own.lookup(key, _UNKNOWN)
            if kept is not _UNKNOWN:
                return kept
        own = self._measure_own(audience, permits)
        if key is not None:
            self._own.put(key, own)
        return own

    def _measure_own(self, audience: Audience, permits: Callable[[str], bool]) -> _Own | None:
        """Which texts have a member the caller may call, and how many documents it may call.

        Only the texts the grants leave in doubt are asked about: with a reach, the texts it
        reaches (no other holds a permitted tool); without one, the texts a refusal reaches (every
        other member is permitted) — every text when a refusal names no segment, or the audience
        gives no bound at all. The terms of the smaller side, the caller's texts or the others,
        are counted when it is small (``SIDE_TEXTS``): document frequencies are then lookups.
        """
        reach, refusals = audience.reach, audience.refusals
        if reach is None and refusals is not None and not refusals:
            return None
        doubtful: Collection[int] | None
        if reach is not None:  # none yet, then the texts it reaches that hold a permitted tool
            texts, documents = np.zeros(self._postings.slot_count, dtype=bool), 0
            doubtful = self._slots_matching(reach)
        else:  # all, then less the texts a refusal reaches that hold no permitted tool
            texts, documents = self._postings.live(), len(self._documents)
            doubtful = None if refusals is None else self._slots_matching(refusals)
        for slot in self._by_slot if doubtful is None else doubtful:
            permitted = len(self._permitted(self._by_slot[slot], audience, permits))
            texts[slot] = permitted > 0
            if reach is None:  # counted as permitted above
                permitted -= len(self._by_slot[slot].members)
            documents += permitted
        if documents == len(self._documents):
            return None
        return _Own(self._postings.among(texts, *self._side_terms(texts)), documents)

    def _side_terms(self, texts: npt.NDArray[np.bool_]) -> tuple[Counter[str] | None, bool]:
        """How many of the smaller side's texts — those ``texts`` marks, or the others — use
        each term, when it holds no more than ``SIDE_TEXTS``; and whether it is the marked side."""
        marked = int(np.count_nonzero(texts))
        counted = marked <= len(self._by_slot) - marked
        if min(marked, len(self._by_slot) - marked) > SIDE_TEXTS:
            return None, counted
        if counted:
            side = np.flatnonzero(texts).tolist()
        else:  # the unmarked slots, less the free ones
            side = [slot for slot in np.flatnonzero(~texts).tolist() if slot in self._by_slot]
        terms: Counter[str] = Counter()
        for slot in side:
            terms.update(self._terms_of(slot))
        return terms, counted

    def _terms_of(self, slot: int) -> list[str]:
        """A text's distinct terms, analysed again unless kept (``KEPT_TEXT_TERMS``): callers'
        parts count the same few texts after each change of the index."""
        kept = self._slot_terms.get(slot)
        if kept is not None:
            self._slot_terms.move_to_end(slot)
            return kept
        tool_text = self._by_slot[slot]
        kept = self._slot_terms[slot] = self._terms(tool_text.key, tool_text.text)
        if len(self._slot_terms) > KEPT_TEXT_TERMS:
            self._slot_terms.popitem(last=False)
        return kept

    @staticmethod
    def _permitted(
        tool_text: _ToolText, audience: Audience, permits: Callable[[str], bool]
    ) -> Sequence[int]:
        """The positions of the members the caller may call, ascending: a ``range`` when it may
        call all of them. Where the grants decide a tool alike on every holder but a few
        (``holder_exceptions``), only the members on those few are asked: a module on 500
        machines costs a few lookups, not 500 decisions."""
        members = tool_text.members
        everyone = range(len(members))
        if len(members) == 1:
            return everyone if permits(members[0]) else ()
        role, name, _ = tool_text.key
        every = audience.permits_every_holder(role, name)
        if every is not None:
            return everyone if every else ()
        exceptions = audience.holder_exceptions(role, name)
        if exceptions is None or len(exceptions[1]) >= len(members):
            return [at for at in everyone if permits(members[at])]
        answer, named = exceptions
        asked = sorted(at for holder in named if (at := tool_text.position(holder)) is not None)
        if not answer:
            return [at for at in asked if permits(members[at])]
        refused = {at for at in asked if not permits(members[at])}
        return [at for at in everyone if at not in refused] if refused else everyone

    def _slots_matching(self, patterns: Sequence[Pattern]) -> Collection[int] | None:
        """The slots with a member one of ``patterns`` may match; ``None`` when one of them names
        no segment (every slot)."""
        slots: set[int] = set()
        for pattern in patterns:
            matched = self._pattern_slots(pattern)
            if matched is None:
                return None
            slots |= matched
        return slots

    def _visibility(
        self,
        audience: Audience,
        permits: Callable[[str], bool],
        within: Callable[[str], bool] | None,
        looked_at: npt.NDArray[np.bool_] | None,
    ) -> Callable[[str], bool]:
        """Whether a tool the search may return holds a term, for ``plan_query``: the term's texts
        (those ``looked_at`` leaves) are looked at in turn until one has a member within
        ``within`` that the caller may call; once per term and search. Without ``within``, a
        text ``looked_at`` leaves has such a member (it is the caller's own)."""
        seen: dict[str, bool] = {}

        def permitted(slot: int) -> bool:
            tool_text = self._by_slot[slot]
            members = tool_text.members
            return any(
                within is None or within(members[at])
                for at in self._permitted(tool_text, audience, permits)
            )

        def visible(term: str) -> bool:
            answer = seen.get(term)
            if answer is None:
                slots = self._postings.slots_of(term)
                if looked_at is not None:
                    slots = slots[looked_at[slots]]
                    if within is None:
                        answer = seen[term] = bool(len(slots))
                        return answer
                answer = seen[term] = any(
                    permitted(slot)
                    for start in range(0, len(slots), 64)
                    for slot in slots[start : start + 64].tolist()
                )
            return answer

        return visible

    def _narrowed_slots(self, within: Callable[[str], bool] | None) -> list[int] | None:
        """The slots that can hold a match of ``within``, when it is the navigator's parsed
        pattern (``Pattern.matches_address``) naming a segment; else ``None``.

        Only a shortcut: ``within`` is still asked of every member of what is left.
        """
        pattern = getattr(within, "__self__", None)
        if not isinstance(pattern, Pattern) or getattr(within, "__func__", None) is not (
            Pattern.matches_address
        ):
            return None
        slots = self._pattern_slots(pattern)
        return None if slots is None else sorted(slots)

    def _named_slots(self, pattern: Pattern) -> list[Collection[int]]:
        """The texts of the role and of the tool name ``pattern`` names (none, one or both)."""
        return [
            slots.get(segment, ())
            for slots, segment in ((self._slots_by_role, pattern.role),
                                   (self._slots_by_name, pattern.tool))
            if segment is not None
        ]  # fmt: skip

    def _pattern_slots(self, pattern: Pattern) -> set[int] | None:
        """The slots with a member ``pattern`` may match, when it names a segment: a holder's
        tools, or the texts of a role and of a tool name, the fewer first."""
        if pattern.holder is not None:
            slots: set[int] = set()
            for address in self._by_holder.get(pattern.holder, ()):
                document = self._documents[address]
                if pattern.matches(document.holder, document.role, document.name):
                    key = (document.role, document.name, document.contract_digest)
                    slots.add(self._texts[key].slot)
            return slots
        named = self._named_slots(pattern)
        if not named:
            return None
        fewer, *more = sorted(named, key=len)
        return set(fewer).intersection(*more)

    def _visible_holders(
        self,
        words: list[QueryWord],
        permits: Callable[[str], bool],
        reach: Sequence[Pattern] | None,
    ) -> dict[str, list[str]]:
        """The holders each of the query's words names, among those the caller sees a tool of.

        A word naming a holder is read as that holder's name (never corrected, no related words),
        so a holder the caller cannot see must not count: a hidden machine named "film" would
        otherwise change which visible tools "film" finds, and tell the caller it exists.

        A word that names more than ``HOLDER_WORD_HOLDERS`` holders the caller sees (the "web"
        of web-001 … web-900) names none of them: it is read as a word, and the holders are not
        looked at past the first that many.
        """
        named: dict[str, list[str]] = {}
        for word in words:
            if word.surface in named or word.surface not in self._holders_by_word:
                continue
            visible: list[str] = []
            for holder in sorted(self._holders_by_word[word.surface]):
                if (
                    reach is None or any(pattern.covers_holder(holder) for pattern in reach)
                ) and any(permits(address) for address in self._by_holder[holder]):
                    visible.append(holder)
                    if len(visible) > HOLDER_WORD_HOLDERS:
                        break
            if visible and len(visible) <= HOLDER_WORD_HOLDERS:
                named[word.surface] = visible
        return named

    def _holder_bonuses(
        self,
        holder_words: tuple[tuple[str, float], ...],
        holders_by_word: dict[str, list[str]],
        permits: Callable[[str], bool],
        own: _Own | None,
    ) -> dict[str, float]:
        """What each holder named by the query adds to the score of its documents: a BM25 term
        whose frequency is counted over the documents the caller may call."""
        bonuses: dict[str, float] = {}
        if not holder_words:
            return bonuses
        settings = self._settings
        saturated = settings.saturate(settings.holder_weight)
        documents = len(self._documents) if own is None else own.documents
        for word, weight in holder_words:
            holders = holders_by_word[word]
            if own is None:
                on_holders = sum(len(self._by_holder[holder]) for holder in holders)
            else:
                on_holders = sum(sum(map(permits, self._by_holder[holder])) for holder in holders)
            bonus = weight * bm25_idf(on_holders, documents) * saturated
            for holder in holders:
                bonuses[holder] = bonuses.get(holder, 0.0) + bonus
        return bonuses

    def _slot_bonuses(self, bonuses: dict[str, float]) -> dict[int, float]:
        """For each text with a member on a named holder, the largest such holder's bonus."""
        best: dict[int, float] = {}
        for holder, bonus in bonuses.items():
            for address in self._by_holder[holder]:
                document = self._documents[address]
                slot = self._texts[(document.role, document.name, document.contract_digest)].slot
                best[slot] = max(best.get(slot, 0.0), bonus)
        return best

    def _hit(
        self,
        slot: int,
        score: float,
        bonuses: dict[str, float],
        audience: Audience,
        permits: Callable[[str], bool],
        within: Callable[[str], bool] | None,
    ) -> Hit | None:
        tool_text = self._by_slot[slot]
        members = tool_text.members
        permitted = self._permitted(tool_text, audience, permits)
        if within is not None:
            permitted = [at for at in permitted if within(members[at])]
        if not permitted:
            return None
        named = {  # the permitted members on a holder the query names, with its bonus
            holder: bonus
            for holder, bonus in bonuses.items()
            if (at := tool_text.position(holder)) is not None
            and _position(permitted, at) is not None
        }
        score += max(named.values(), default=0.0)
        if score <= 0.0:
            return None
        first = self._documents[members[permitted[0]]]
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


def _position(ordered: Sequence[Any], value: Any) -> int | None:
    """Where ``value`` stands in the ascending ``ordered``, if it does (by bisection)."""
    at = bisect_left(ordered, value)
    return at if at < len(ordered) and ordered[at] == value else None


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


def _discard(slots_by: dict[str, set[int]] | dict[str, list[int]], segment: str, slot: int) -> None:
    slots = slots_by[segment]
    slots.remove(slot)
    if not slots:
        del slots_by[segment]


def _analyse(
    index: SearchIndex, terms: BatchAnalyzer, texts: list[_Analysed], first_slot: int
) -> list[str]:
    """Index texts into ``index``'s postings, which must give them the slots from ``first_slot``
    on; the terms new to the postings, in order of first use."""
    batch = terms.terms(texts)
    slots, new_terms = index._postings.add_occurrences(
        batch.count, batch.terms, batch.codes, batch.cells
    )
    if slots != list(range(first_slot, first_slot + len(texts))):
        raise RuntimeError("an index build's texts did not get the slots it gave them")
    return new_terms


def _analyse_batches(index: SearchIndex) -> Callable[[Iterator[list[_Analysed]]], object]:
    """What a build's worker runs: every batch into the (forked copy of the) index's empty
    postings, then the postings and their new terms, for the parent to restore."""

    def work(batches: Iterator[list[_Analysed]]) -> tuple[PostingState, list[str]]:
        terms = BatchAnalyzer(index._analyzer)
        new_terms: list[str] = []
        slot = 0
        for batch in batches:
            new_terms += _analyse(index, terms, batch, slot)
            slot += len(batch)
        return index._postings.export(), new_terms

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
    """

    __slots__ = (
        "_analysed",
        "_finished",
        "_first_changed",
        "_index",
        "_next_slot",
        "_queued",
        "_repeated",
        "_sent",
        "_terms",
        "_worker",
    )

    def __init__(self, index: SearchIndex) -> None:
        if index._documents or index._postings.text_count or index._texts:
            raise ValueError("only an empty index is built")
        self._index = index
        self._next_slot = 0
        self._finished = False
        self._analysed = 0  # texts analysed here
        self._queued: list[_Analysed] = []  # texts waiting for their batch
        self._sent: list[_Analysed] = []  # texts the worker analyses, kept in case it fails
        self._worker: ForkedWorker | None = None
        self._terms: BatchAnalyzer | None = None  # for texts analysed here
        # texts whose first member changed since their text was taken from another member
        self._first_changed: dict[_GroupKey, None] = {}
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
        index = self._index
        placed, texts, by_holder = index._documents, index._texts, index._by_holder
        for document in documents:
            address = document.address
            if address in placed:
                self._repeated.append(document)
                continue
            placed[address] = document
            holder = document.holder
            on_holder = by_holder.get(holder)
            if on_holder is None:
                on_holder = by_holder[holder] = set()
                for word in _holder_words(holder):
                    index._holders_by_word.setdefault(word, set()).add(holder)
            on_holder.add(address)
            key = (document.role, document.name, document.contract_digest)
            tool_text = texts.get(key)
            if tool_text is None:
                text = (document.title, document.description, document.parameters)
                slot = self._next_slot
                self._next_slot += 1
                texts[key] = tool_text = _ToolText(key, text, slot, [address], [holder])
                index._place(tool_text, slot)
                self._queued.append((document.name, *text, document.role))
                if len(self._queued) >= BUILD_BATCH:
                    self._flush()
                continue
            tool_text.add(address, holder)
            if tool_text.holders[0] == holder:
                self._first_changed[key] = None

    def _flush(self) -> None:
        batch, self._queued = self._queued, []
        if not batch:
            return
        fresh = self._worker is None and not self._analysed
        if fresh and len(batch) >= WORKER_MIN_TEXTS and can_fork():
            self._worker = ForkedWorker(_analyse_batches(self._index))
        if self._worker is not None:
            self._worker.send(batch)
            self._sent += batch
            return
        self._analyse_here(batch, self._analysed)
        self._analysed += len(batch)

    def _analyse_here(self, texts: list[_Analysed], first_slot: int) -> None:
        if self._terms is None:
            self._terms = BatchAnalyzer(self._index._analyzer)
        index = self._index
        index._vocabulary.add(_analyse(index, self._terms, texts, first_slot))

    def finish(self, meanwhile: Callable[[], object] | None = None) -> None:
        """Analyse what is left, take in the worker's postings, and settle what ``upsert`` would
        have settled on the way: the index is then complete. ``meanwhile`` is called once the
        last texts are sent, while the worker finishes them (or at once, without a worker).
        Finishing a finished build does nothing."""
        if self._finished:
            return
        self._finished = True
        index = self._index
        with index._lock:
            index._own.clear()
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
                    for start in range(0, len(sent), BUILD_BATCH):
                        self._analyse_here(sent[start : start + BUILD_BATCH], start)
                else:
                    index._postings.restore(state)
                    index._vocabulary.add(new_terms)
            if self._first_changed:
                index._settle(self._first_changed)
            self._terms = None
            if self._repeated:
                index.upsert(self._repeated)

    def abandon(self) -> None:
        """Stop the worker, if any; the index stays incomplete and is to be dropped."""
        self._finished = True
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.abandon()
