"""The terms the index holds, and the correction of query words it does not.

A query word whose stem the index does not hold is compared — as written and as stemmed — with the
index's terms (stems) that share its first letter, by optimal-string-alignment distance (an edit,
or a swap of two neighbours, counts one): up to one edit for a word of 4 to 6 letters, two for a
longer one. Comparing with stems lets "databse" (stem ``databs``) meet "databases" (``databas``),
and "isue" (``isu``) meet "issue" (``issu``). The closest terms a caller may see win (``closest``),
ties broken alphabetically, so the same vocabulary always corrects the same way: a term only tools
hidden from the caller hold is never a correction, nor crowds one out. A misspelled first letter
is not corrected: it is rare in typing, and allowing it would turn "looking" into "cooking".
Corrections are cached per word, and a term coming or going drops the cached corrections of words
with its first letter. The cache is bounded per letter and in all: queries may bring words of any
of Unicode's letters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rapidfuzz import process
from rapidfuzz.distance import OSA

from navigator.search.text import WRITTEN

__all__ = ["Correction", "Vocabulary", "closest"]

# A correction: a term of the index, and its distance from the query word's stem.
Correction = tuple[str, int]

_MIN_CORRECTED_LENGTH = 4
_TWO_EDITS_FROM_LENGTH = 7
_MAX_CORRECTIONS = 3
_CACHE_LIMIT = 1024  # per first letter
_CACHE_TOTAL = 16_384  # in all


def _max_distance(word: str) -> int:
    return 2 if len(word) >= _TWO_EDITS_FROM_LENGTH else 1


class Vocabulary:
    """The index's terms grouped by first letter and length, for correction."""

    __slots__ = ("_buckets", "_cache", "_cached", "_size")

    def __init__(self) -> None:
        # (first letter, length) -> {term: term}; rapidfuzz reads a mapping's values and reports
        # its keys. A term within d edits of a word is within d letters of its length.
        self._buckets: dict[tuple[str, int], dict[str, str]] = {}
        # first letter -> {word: its corrections}; a term coming or going clears its letter only
        self._cache: dict[str, dict[str, tuple[Correction, ...]]] = {}
        self._cached = 0  # words cached, over every letter
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, terms: Iterable[str]) -> None:
        """Terms new to the index (words as written are left out: corrections are to stems)."""
        for term in terms:
            if term.startswith(WRITTEN):
                continue
            self._buckets.setdefault((term[0], len(term)), {})[term] = term
            self._size += 1
            self._forget(term[0])

    def discard(self, terms: Iterable[str]) -> None:
        """Terms the index no longer holds."""
        for term in terms:
            if term.startswith(WRITTEN):
                continue
            key = (term[0], len(term))
            bucket = self._buckets[key]
            del bucket[term]
            if not bucket:
                del self._buckets[key]
            self._size -= 1
            self._forget(term[0])

    def _forget(self, letter: str) -> None:
        dropped = self._cache.pop(letter, None)
        if dropped:
            self._cached -= len(dropped)

    def correct(self, word: str, stem: str) -> tuple[Correction, ...]:
        """Every term near enough to a query word or its stem, with its distance, closest first
        then alphabetically (none when nothing is near enough): ``closest`` picks among them."""
        cache = self._cache.setdefault(word[0], {})
        cached = cache.get(word)
        if cached is not None:
            return cached
        corrections: tuple[Correction, ...] = ()
        if len(word) >= _MIN_CORRECTED_LENGTH:
            limit = _max_distance(word)
            distances: dict[str, int] = {}
            for probe in dict.fromkeys((word, stem)):
                for length in range(len(probe) - limit, len(probe) + limit + 1):
                    bucket = self._buckets.get((word[0], length))
                    if not bucket:
                        continue
                    found = process.extract(
                        probe, bucket, scorer=OSA.distance, score_cutoff=limit, limit=None
                    )
                    for term, distance, _ in found:
                        distances[term] = min(int(distance), distances.get(term, limit))
            corrections = tuple(sorted(distances.items(), key=lambda item: (item[1], item[0])))
        if len(cache) >= _CACHE_LIMIT:
            self._cached -= len(cache)
            cache.clear()
        if self._cached >= _CACHE_TOTAL:
            self._cache = {word[0]: cache}
            self._cached = len(cache)
        cache[word] = corrections
        self._cached += 1
        return corrections


def closest(corrections: Iterable[Correction], visible: Callable[[str], bool]) -> list[Correction]:
    """The first few of ``corrections`` (as ``Vocabulary.correct`` orders them) at the smallest
    distance among the terms ``visible`` allows."""
    chosen: list[Correction] = []
    for term, distance in corrections:
        if chosen and distance > chosen[0][1]:
            break
        if visible(term):
            chosen.append((term, distance))
            if len(chosen) == _MAX_CORRECTIONS:
                break
    return chosen
