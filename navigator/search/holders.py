"""Holders named by a query, and what naming one adds to the score of its tools.

A query word naming a holder ("db1", or "web" of "web-1") is read as that holder's name, never
corrected and given no related words; each named holder adds a BM25 term to the documents on it,
its frequency counted over the documents the caller may call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from navigator.addresses import Pattern
from navigator.search.members import Members
from navigator.search.own import Own
from navigator.search.ranking import RankingSettings, bm25_idf
from navigator.search.text import QueryWord

__all__ = ["HOLDER_WORD_HOLDERS", "holder_bonuses", "slot_bonuses", "visible_holders"]

#: A query word naming more holders than this (among those the caller sees) names none of them.
HOLDER_WORD_HOLDERS = 16


def visible_holders(
    members: Members,
    words: list[QueryWord],
    permits: Callable[[str], bool],
    reach: Sequence[Pattern] | None,
) -> dict[str, list[str]]:
    """The holders each of the query's words names, among those the caller sees a tool of.

    A word naming a holder is read as that holder's name (never corrected, no related words), so
    a holder the caller cannot see must not count: a hidden machine named "film" would otherwise
    change which visible tools "film" finds, and tell the caller it exists.

    A word that names more than ``HOLDER_WORD_HOLDERS`` holders the caller sees (the "web" of
    web-001 … web-900) names none of them: it is read as a word, and the holders are not looked
    at past the first that many.
    """
    named: dict[str, list[str]] = {}
    holders_by_word, by_holder = members.holders_by_word, members.by_holder
    for word in words:
        if word.surface in named or word.surface not in holders_by_word:
            continue
        visible: list[str] = []
        for holder in sorted(holders_by_word[word.surface]):
            if (reach is None or any(pattern.covers_holder(holder) for pattern in reach)) and any(
                permits(address) for address in by_holder[holder]
            ):
                visible.append(holder)
                if len(visible) > HOLDER_WORD_HOLDERS:
                    break
        if visible and len(visible) <= HOLDER_WORD_HOLDERS:
            named[word.surface] = visible
    return named


def holder_bonuses(
    members: Members,
    settings: RankingSettings,
    holder_words: tuple[tuple[str, float], ...],
    holders_by_word: dict[str, list[str]],
    permits: Callable[[str], bool],
    own: Own | None,
) -> dict[str, float]:
    """What each holder named by the query adds to the score of its documents: a BM25 term
    whose frequency is counted over the documents the caller may call."""
    bonuses: dict[str, float] = {}
    if not holder_words:
        return bonuses
    by_holder = members.by_holder
    saturated = settings.saturate(settings.holder_weight)
    documents = len(members.documents) if own is None else own.documents
    for word, weight in holder_words:
        holders = holders_by_word[word]
        if own is None:
            on_holders = sum(len(by_holder[holder]) for holder in holders)
        else:
            on_holders = sum(sum(map(permits, by_holder[holder])) for holder in holders)
        bonus = weight * bm25_idf(on_holders, documents) * saturated
        for holder in holders:
            bonuses[holder] = bonuses.get(holder, 0.0) + bonus
    return bonuses


def slot_bonuses(members: Members, bonuses: dict[str, float]) -> dict[int, float]:
    """For each text with a member on a named holder, the largest such holder's bonus."""
    best: dict[int, float] = {}
    for holder, bonus in bonuses.items():
        for address in members.by_holder[holder]:
            slot = members.slot_of(members.documents[address])
            best[slot] = max(best.get(slot, 0.0), bonus)
    return best
