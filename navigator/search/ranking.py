"""How relevance is scored: BM25F over a tool's fields, and what a query asks of them.

A tool's text is scored as one BM25F document (Robertson, Zaragoza & Taylor, 2004): each field's
term frequency is weighted and normalised by that field's length against its average, the weighted
sum is saturated once, and multiplied by the term's inverse document frequency. Frequencies are
counted over distinct tool texts, not over holders, so a module running on 500 machines does not
make its words look common. The holder is not part of a tool's text (identical tools on many
holders share one); a query word naming a holder adds a separate BM25 term for the documents on
that holder, with its frequency counted over documents.

The same settings ship for every catalogue: none of them is fitted to a benchmark.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from navigator.search.text import WRITTEN, QueryWord
from navigator.search.thesaurus import Related
from navigator.search.vocabulary import Correction, closest

__all__ = ["FIELDS", "FIELD_COUNT", "QueryPlan", "RankingSettings", "bm25_idf", "plan_query"]

FIELDS: tuple[str, ...] = ("name", "title", "description", "parameters", "role")
FIELD_COUNT = len(FIELDS)

#: A pseudo-frequency, or a row of them
_Frequency = TypeVar("_Frequency", float, npt.NDArray[np.float64])


@dataclass(frozen=True, slots=True)
class RankingSettings:
    """BM25F's constants: saturation ``k1``, length normalisation ``b``, and field weights.

    A tool's name and title say what it is in a few words, so a word there counts several times
    one in the description; parameters mostly say how, not what, and the role is shared by every
    tool of an assignment, so both count less. ``b`` sits between BM25's usual 0.75 and no length
    normalisation: a long description is usually a thorough one, not a diluted one.
    """

    k1: float = 1.2
    b: float = 0.5
    field_weights: tuple[float, ...] = (3.0, 2.0, 1.0, 0.25, 0.5)
    holder_weight: float = 0.5
    # A corrected query word counts this much of a word as written, by edit distance (1, 2).
    corrected_weights: tuple[float, ...] = (0.5, 0.3)
    # A word related to a query word (``thesaurus``) counts this much: near, far; and the related
    # words of a query touch at most this many postings in all.
    related_weights: tuple[float, float] = (0.25, 0.125)
    related_postings: int = 8_192
    # A query word whose stem is another string also asks for itself as written, at this weight
    # (on top of its stem's): the tool that says "networks" before the one that says "network".
    written_weight: float = 0.25
    # A query word counts fully up to the first Zipf frequency in general English (one word in
    # about 30,000), then less as it gets commoner, down to ``common_weight`` at the second (one
    # word in about 300) and beyond: "help me find" says less than "stock" (``commonness``).
    common_zipf: tuple[float, float] = (4.5, 6.5)
    common_weight: float = 0.5
    # A hit scoring less than this share of the best hit's score is not returned (0: every hit
    # is; ADR 0055).
    relevance_floor: float = 0.2
    # A word of a value the query carries (a path, a URL, a quoted string, an id: ``values``)
    # counts this much of a word that says the intent, and brings no related words (ADR 0054).
    value_weight: float = 0.25

    def __post_init__(self) -> None:
        if len(self.field_weights) != FIELD_COUNT:
            raise ValueError("one weight per field")
        if not self.common_zipf[0] < self.common_zipf[1]:
            raise ValueError("common_zipf runs from the rare end to the common one")
        if not 0.0 <= self.relevance_floor < 1.0:
            raise ValueError("relevance_floor is a share of the best hit's score, below 1")

    def word_weight(self, zipf: float) -> float:
        """A query word's weight by its Zipf frequency in general English: 1 for a word no
        commoner than the first of ``common_zipf``, falling linearly in Zipf to
        ``common_weight`` at the second."""
        rare, common = self.common_zipf
        share = min(max((zipf - rare) / (common - rare), 0.0), 1.0)
        return 1.0 - share * (1.0 - self.common_weight)

    def saturate(self, pseudo_frequency: _Frequency) -> _Frequency:
        """BM25's term-frequency saturation of a (weighted, normalised) frequency, or of each of
        a row of them."""
        return pseudo_frequency * (self.k1 + 1.0) / (pseudo_frequency + self.k1)


def bm25_idf(document_frequency: int, document_count: int) -> float:
    """BM25's inverse document frequency, in the form that is never negative."""
    return math.log(1.0 + (document_count - document_frequency + 0.5) / (document_frequency + 0.5))


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """What a query asks: index terms with their weights, and holder words with theirs.

    Both lists keep the order in which the query first names each term, so that scores are summed
    in the same order every time.
    """

    terms: tuple[tuple[str, float], ...]
    holder_words: tuple[tuple[str, float], ...]

    @property
    def empty(self) -> bool:
        return not self.terms and not self.holder_words


_NO_RELATED: Related = ((), ())


def _accumulate(weights: dict[str, float], key: str, weight: float) -> None:
    weights[key] = weights.get(key, 0.0) + weight


def plan_query(
    words: Iterable[QueryWord],
    *,
    document_frequencies: Callable[[Iterable[str]], list[int]],
    holder_words: Mapping[str, object],
    correct: Callable[[str, str], tuple[Correction, ...]],
    related: Callable[[str], Related],
    commonness: Callable[[str], float],
    stem_commonness: Callable[[str], float],
    settings: RankingSettings,
    visible: Callable[[str], bool] = lambda term: True,
) -> QueryPlan:
    """Turn a query's words into weighted index terms and holder words.

    A word whose stem the index holds is a term with the word's weight per occurrence: one, less
    for a word common in general English (``commonness`` gives its Zipf frequency; ADR 0020). If
    the word is not its own stem and the index holds it as written too, that form joins at
    ``written_weight`` of the word's weight (ADR 0019). A word naming a holder (or a part of a
    holder's name) weighs on that holder and is never corrected. Any other word written as such
    is corrected against the vocabulary, at a reduced weight — unless it is an English word
    WordNet knows (it has related words): "seems" is not a misspelling of "see" or "seen"; such a
    word reaches tools through its related words only. Nor is a word common in general English
    (``commonness`` above the first of ``common_zipf``: "would" is not "world") or a number
    (2024 is not 2025) ever corrected (ADR 0027).

    Last, the words related to the query's words (``related``) that the index holds and the query
    does not name join at a small weight, scaled by the weight of the word they come from and by
    their own commonness (``stem_commonness``: "get" or "information" says little wherever it
    comes from): the largest any of the query's words gives them, never a sum, so that a long
    query does not drown its own words in related ones. They join rarest first — a rare word says
    the most and costs the least to score — while they touch no more than ``related_postings``
    postings in all, so that related words add a bounded amount of work to any query on any
    catalogue.

    ``visible(term)``: whether a tool the search may return holds the term. A word is corrected,
    and a correction chosen, by the terms such tools hold: a hidden tool never decides whether
    a caller's word is corrected or which correction wins (SPEC §3: a tool the caller may not
    call is never hinted at). Other terms need no such test: a term only hidden tools hold
    scores only them. ``document_frequencies`` counts the caller's own texts (ADR 0007).
    """
    words = list(words)
    terms: dict[str, float] = {}
    holders: dict[str, float] = {}
    written = [WRITTEN + word.surface if word.surface != word.stem else "" for word in words]
    found = document_frequencies([word.stem for word in words] + written)
    indexed, written_indexed = found[: len(words)], found[len(words) :]
    relations = [
        _NO_RELATED if word.surface in holder_words or word.value else related(word.surface)
        for word in words
    ]
    zipfs = [commonness(word.surface) for word in words]
    weights = [
        settings.word_weight(zipf) * (settings.value_weight if word.value else 1.0)
        for word, zipf in zip(words, zipfs, strict=True)
    ]
    for word, frequency, as_written, written_frequency, relation, zipf, weight in zip(
        words, indexed, written, written_indexed, relations, zipfs, weights, strict=True
    ):
        if word.surface in holder_words:
            _accumulate(holders, word.surface, 1.0)
        correctable = (
            word.correctable
            and word.surface not in holder_words
            and relation == _NO_RELATED
            and zipf <= settings.common_zipf[0]
            and not word.surface.isdigit()
        )
        if frequency and not (correctable and not visible(word.stem)):
            _accumulate(terms, word.stem, weight)
            if written_frequency:
                _accumulate(terms, as_written, settings.written_weight * weight)
        elif correctable:
            for term, distance in closest(correct(word.surface, word.stem), visible):
                _accumulate(terms, term, settings.corrected_weights[distance - 1])
    near_weight, far_weight = settings.related_weights
    candidates: dict[str, float] = {}
    for (near, far), weight in zip(relations, weights, strict=True):
        for stems, related_weight in ((near, near_weight * weight), (far, far_weight * weight)):
            for stem in stems:
                if stem not in terms and candidates.get(stem, 0.0) < related_weight:
                    candidates[stem] = related_weight
    frequencies = dict(zip(candidates, document_frequencies(candidates), strict=True))
    rarest_first = sorted(
        (s for s in candidates if frequencies[s]), key=lambda s: (frequencies[s], s)
    )
    budget = settings.related_postings
    for stem in rarest_first:
        if frequencies[stem] > budget:
            break
        budget -= frequencies[stem]
        # the stem's own commonness is the same whichever word brought it: applied once, here
        terms[stem] = candidates[stem] * settings.word_weight(stem_commonness(stem))
    return QueryPlan(tuple(terms.items()), tuple(holders.items()))
