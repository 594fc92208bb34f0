"""A caller's own part of the index: the texts it may call, and their statistics.

A search ranks tool texts against the statistics of the texts its caller may call, so that a tool
the caller may not call never changes how the others rank (SPEC §3). The part is measured once per
grant set and kept, under the audience's key, until the index changes; ``visibility`` answers,
for the query's planning, whether a tool the search may return holds a term.
"""

from __future__ import annotations

import sys
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from navigator.caches import WeightedCache
from navigator.search.audience import Audience
from navigator.search.members import Members, permitted_members, text_terms
from navigator.search.postings import PostingIndex
from navigator.search.scoring import Among, among
from navigator.search.text import TextAnalyzer

__all__ = ["KEPT_AUDIENCE_BYTES", "KEPT_TEXT_TERMS", "SIDE_TEXTS", "Own", "OwnParts", "visibility"]

#: How many bytes of callers' own statistics (``Own``) an index keeps, the least recently used
#: dropped: a flag per text and a small side's term counts each — some 250 KB at 100,000 tools, so
#: a few hundred grant sets in turn are each measured once per change of the index, not per search.
KEPT_AUDIENCE_BYTES = 64 * 2**20
#: A caller's texts, or the texts it may not call, whose terms are counted when they are no more
#: than this many: its document frequencies are then lookups, not passes over postings.
SIDE_TEXTS = 4096
#: How many texts' terms an index keeps for counting callers' parts again after a change.
KEPT_TEXT_TERMS = 4 * SIDE_TEXTS


@dataclass(frozen=True, slots=True)
class Own:
    """A caller's own part of the index, when it may not call every tool: the texts with a
    member it may call, their statistics, and how many documents it may call."""

    among: Among
    documents: int


#: Not a kept part: ``None`` is one (a caller that may call every tool).
_UNKNOWN: Any = object()


def _weight(own: Own | None) -> int:
    """Roughly the bytes a kept part holds of its own: its entry, its flags, its term counts'
    table (the terms themselves are the index's strings) and the most its own postings grow
    to."""
    if own is None:
        return 256
    among = own.among
    terms = 0 if among.terms is None else sys.getsizeof(among.terms)
    return 256 + among.texts.nbytes + terms + among.postings_bound


class OwnParts:
    """Callers' own parts of one index, kept per audience key until the index changes.

    ``analyzer`` analyses a text again for its terms; ``side_texts`` is ``SIDE_TEXTS``. (It holds
    the index's parts, never the index: an index dropped is freed at once, not by the cyclic
    collector.)
    ``measured`` counts the parts measured (not found kept) since the index was made.
    """

    __slots__ = (
        "_analyzer",
        "_kept",
        "_members",
        "_postings",
        "_side_texts",
        "_slot_terms",
        "measured",
    )

    def __init__(
        self,
        members: Members,
        postings: PostingIndex,
        analyzer: TextAnalyzer,
        side_texts: int = SIDE_TEXTS,
    ) -> None:
        self._members = members
        self._postings = postings
        self._analyzer = analyzer
        self._side_texts = side_texts
        # audience key -> its own part (None: every tool), as of the index's last change
        self._kept: WeightedCache[Hashable, Own | None] = WeightedCache(
            KEPT_AUDIENCE_BYTES, _weight
        )
        # slot -> its text's distinct terms, for the texts callers' parts counted last
        self._slot_terms: OrderedDict[int, list[str]] = OrderedDict()
        self.measured = 0

    def clear(self) -> None:
        """The index changed: every kept part is dropped."""
        self._kept.clear()

    def lookup(self, key: Hashable) -> Own | None:
        """The part kept under ``key``; ``None`` when none is (or it is every tool)."""
        kept = self._kept.lookup(key, None)
        return kept if isinstance(kept, Own) else None

    def take_terms(self, slot: int) -> list[str]:
        """A text's terms if kept, no longer kept (its slot is leaving); else empty."""
        return self._slot_terms.pop(slot, [])

    def part(self, audience: Audience, permits: Callable[[str], bool]) -> Own | None:
        """The caller's own part of the index, or ``None`` when it may call every tool: kept
        under the audience's key until the index changes."""
        key = audience.key  # a digest: a string, whose hash Python keeps
        if key is not None:
            kept = self._kept.lookup(key, _UNKNOWN)
            if kept is not _UNKNOWN:
                return kept
        own = self._measure(audience, permits)
        if key is not None:
            self._kept.put(key, own)
        return own

    def _measure(self, audience: Audience, permits: Callable[[str], bool]) -> Own | None:
        """Which texts have a member the caller may call, and how many documents it may call.

        Only the texts the grants leave in doubt are asked about: with a reach, the texts it
        reaches (no other holds a permitted tool); without one, the texts a refusal reaches (every
        other member is permitted) — every text when a refusal names no segment, or the audience
        gives no bound at all. The terms of the smaller side, the caller's texts or the others,
        are counted when it is small (``SIDE_TEXTS``): document frequencies are then lookups.
        """
        self.measured += 1
        members, postings = self._members, self._postings
        reach, refusals = audience.reach, audience.refusals
        if reach is None and refusals is not None and not refusals:
            return None
        doubtful: Collection[int] | None
        if reach is not None:  # none yet, then the texts it reaches that hold a permitted tool
            texts, documents = np.zeros(postings.slot_count, dtype=bool), 0
            doubtful = members.slots_matching(reach)
        else:  # all, then less the texts a refusal reaches that hold no permitted tool
            texts, documents = postings.live(), len(members.documents)
            doubtful = None if refusals is None else members.slots_matching(refusals)
        by_slot = members.by_slot
        for slot in by_slot if doubtful is None else doubtful:
            permitted = len(permitted_members(by_slot[slot], audience, permits))
            texts[slot] = permitted > 0
            if reach is None:  # counted as permitted above
                permitted -= len(by_slot[slot].members)
            documents += permitted
        if documents == len(members.documents):
            return None
        return Own(among(postings, texts, *self._side_terms(texts)), documents)

    def _side_terms(self, texts: npt.NDArray[np.bool_]) -> tuple[Counter[str] | None, bool]:
        """How many of the smaller side's texts — those ``texts`` marks, or the others — use
        each term, when it holds no more than ``SIDE_TEXTS``; and whether it is the marked side."""
        by_slot = self._members.by_slot
        marked = int(np.count_nonzero(texts))
        counted = marked <= len(by_slot) - marked
        if min(marked, len(by_slot) - marked) > self._side_texts:
            return None, counted
        if counted:
            side = np.flatnonzero(texts).tolist()
        else:  # the unmarked slots, less the free ones
            side = [slot for slot in np.flatnonzero(~texts).tolist() if slot in by_slot]
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
        tool_text = self._members.by_slot[slot]
        kept = text_terms(self._analyzer, tool_text.key, tool_text.text)
        self._slot_terms[slot] = kept
        if len(self._slot_terms) > KEPT_TEXT_TERMS:
            self._slot_terms.popitem(last=False)
        return kept


def visibility(
    members: Members,
    postings: PostingIndex,
    audience: Audience,
    permits: Callable[[str], bool],
    within: Callable[[str], bool] | None,
    looked_at: npt.NDArray[np.bool_] | None,
) -> Callable[[str], bool]:
    """Whether a tool the search may return holds a term, for ``plan_query``: the term's texts
    (those ``looked_at`` leaves) are looked at in turn until one has a member within ``within``
    that the caller may call; once per term and search. Without ``within``, a text ``looked_at``
    leaves has such a member (it is the caller's own)."""
    seen: dict[str, bool] = {}
    by_slot = members.by_slot

    def permitted(slot: int) -> bool:
        tool_text = by_slot[slot]
        addresses = tool_text.members
        return any(
            within is None or within(addresses[at])
            for at in permitted_members(tool_text, audience, permits)
        )

    def visible(term: str) -> bool:
        answer = seen.get(term)
        if answer is None:
            slots = postings.slots_of(term)
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
