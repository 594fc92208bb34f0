"""The inverted index over tool texts, updated in place and scored with numpy.

Each distinct tool text has a stable slot number; slots freed by removals are reused, smallest
first. Each term keeps three growable C arrays, read by a search as numpy views without copying:
the slots that use it, per slot one byte of term frequency per field (capped at 255), and per slot
the BM25F pseudo-frequency — the field-weighted, length-normalised sum — as a float32. So a search
costs, per query term, one saturation and one scatter-add over that term's postings; adding a text
appends a few bytes per term; removing texts rewrites only the arrays of the terms they used.

Length normalisation divides by each field's average length. To keep the stored pseudo-frequencies
valid while texts come and go, the average used is quantised to steps of 2 %: it moves only when
the true average has drifted that far. Then the normalisation's version changes, and each term
recomputes its pseudo-frequencies, from the bytes it keeps, the next time a search reads it. The
quantised average is a function of the indexed texts alone, so an index grown step by step scores
exactly as one built in one go.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from navigator.search.ranking import FIELD_COUNT, RankingSettings, bm25_idf

__all__ = ["PostingIndex"]

FloatArray = npt.NDArray[np.float64]

_MAX_FREQUENCY = 255
_INITIAL_SLOTS = 64
# Up to this many slots leaving one term are removed in place; more, with one numpy pass.
_FEW_SLOTS = 8
# Average field lengths are used rounded to a power of this ratio.
_AVERAGE_STEP = math.log(1.02)


class _TermPostings:
    """The slots using one term, its per-field frequencies in each, and its pseudo-frequencies
    as of normalisation ``version``."""

    __slots__ = ("frequencies", "pseudo", "slots", "version")

    def __init__(self, version: int) -> None:
        self.slots = array("i")
        self.frequencies = array("B")
        self.pseudo = array("f")
        self.version = version


def _quantised(total: int, count: int) -> float:
    if not total or not count:
        return 1.0
    return math.exp(round(math.log(total / count) / _AVERAGE_STEP) * _AVERAGE_STEP)


class PostingIndex:
    """Texts by slot: term postings, field lengths, and BM25F scores for weighted terms."""

    __slots__ = (
        "_averages",
        "_free",
        "_length_sums",
        "_lengths",
        "_live",
        "_next_slot",
        "_settings",
        "_terms",
        "_version",
        "_weights",
    )

    def __init__(self, settings: RankingSettings) -> None:
        self._settings = settings
        self._weights = np.asarray(settings.field_weights, dtype=np.float64)
        self._terms: dict[str, _TermPostings] = {}
        self._lengths = np.zeros((_INITIAL_SLOTS, FIELD_COUNT), dtype=np.float64)
        self._length_sums = [0] * FIELD_COUNT
        self._live = 0
        self._next_slot = 0
        self._free: list[int] = []
        self._averages = np.ones(FIELD_COUNT, dtype=np.float64)
        self._version = 0

    @property
    def text_count(self) -> int:
        """How many texts are indexed."""
        return self._live

    def __contains__(self, term: str) -> bool:
        return term in self._terms

    def document_frequency(self, term: str) -> int:
        """How many texts use ``term``."""
        postings = self._terms.get(term)
        return len(postings.slots) if postings is not None else 0

    # -- changes -------------------------------------------------------------------------------

    def add(self, fields: Sequence[Sequence[str]]) -> tuple[int, list[str]]:
        """Index one text given as its terms per field; its slot, and the terms new to the
        index."""
        slot = heapq.heappop(self._free) if self._free else self._grow()
        counts: dict[str, bytearray] = {}
        for field, terms in enumerate(fields):
            for term in terms:
                frequencies = counts.get(term)
                if frequencies is None:
                    frequencies = counts[term] = bytearray(FIELD_COUNT)
                if frequencies[field] < _MAX_FREQUENCY:
                    frequencies[field] += 1
        lengths = [len(terms) for terms in fields]
        self._lengths[slot] = lengths
        for field, length in enumerate(lengths):
            self._length_sums[field] += length
        self._live += 1
        self._renormalise()
        table = np.frombuffer(b"".join(counts.values()), dtype=np.uint8).reshape(-1, FIELD_COUNT)
        pseudo = self._pseudo(table, self._coefficients(self._lengths[slot : slot + 1]))
        new_terms: list[str] = []
        for (term, frequencies), value in zip(counts.items(), pseudo.tolist(), strict=True):
            postings = self._terms.get(term)
            if postings is None:
                postings = self._terms[term] = _TermPostings(self._version)
                new_terms.append(term)
            postings.slots.append(slot)
            postings.frequencies.frombytes(frequencies)
            postings.pseudo.append(value)
        return slot, new_terms

    def remove(self, texts: Mapping[int, Iterable[str]]) -> list[str]:
        """Unindex texts given as slot -> its distinct terms; their slots become free. Returns
        the terms no text uses any more."""
        if not texts:
            return []
        by_term: dict[str, list[int]] = {}
        for slot, terms in texts.items():
            for term in terms:
                by_term.setdefault(term, []).append(slot)
        gone = [term for term, slots in by_term.items() if not self._drop_slots(term, slots)]
        for slot in texts:
            for field in range(FIELD_COUNT):
                self._length_sums[field] -= int(self._lengths[slot, field])
            self._lengths[slot] = 0.0
            heapq.heappush(self._free, slot)
        self._live -= len(texts)
        self._renormalise()
        return gone

    def _drop_slots(self, term: str, slots: list[int]) -> bool:
        """Drop slots from a term's postings; whether any text still uses the term."""
        postings = self._terms[term]
        if len(slots) >= len(postings.slots):
            del self._terms[term]  # every slot using it goes: slots are distinct
            return False
        if len(slots) <= _FEW_SLOTS:
            for slot in slots:
                position = postings.slots.index(slot)
                del postings.slots[position]
                del postings.frequencies[position * FIELD_COUNT : (position + 1) * FIELD_COUNT]
                del postings.pseudo[position]
            return True
        current = np.frombuffer(postings.slots, dtype=np.int32)
        keep = ~np.isin(current, np.asarray(slots, dtype=np.int32))
        frequencies = np.frombuffer(postings.frequencies, dtype=np.uint8).reshape(-1, FIELD_COUNT)
        pseudo = np.frombuffer(postings.pseudo, dtype=np.float32)
        replacement = _TermPostings(postings.version)
        replacement.slots.frombytes(current[keep].tobytes())
        replacement.frequencies.frombytes(frequencies[keep].tobytes())
        replacement.pseudo.frombytes(pseudo[keep].tobytes())
        del current, frequencies, pseudo  # release the buffers before the old arrays go
        self._terms[term] = replacement
        return True

    def _grow(self) -> int:
        slot = self._next_slot
        if slot == len(self._lengths):
            grown = np.zeros((2 * len(self._lengths), FIELD_COUNT), dtype=np.float64)
            grown[:slot] = self._lengths
            self._lengths = grown
        self._next_slot += 1
        return slot

    def _renormalise(self) -> None:
        """Requantise the average field lengths; a new value invalidates every pseudo-frequency."""
        averages = np.array([_quantised(total, self._live) for total in self._length_sums])
        if not np.array_equal(averages, self._averages):
            self._averages = averages
            self._version += 1

    # -- scoring -------------------------------------------------------------------------------

    def _coefficients(self, lengths: FloatArray) -> FloatArray:
        """Per text (row) and field: the field's weight over its BM25 length normalisation."""
        b = self._settings.b
        return self._weights / ((1.0 - b) + b * (lengths / self._averages))

    @staticmethod
    def _pseudo(frequencies: npt.NDArray[np.uint8], coefficients: FloatArray) -> FloatArray:
        """BM25F pseudo-frequencies: each row's weighted, normalised frequencies, summed field by
        field in order (the same operations, in the same order, for one text or a thousand)."""
        weighted = frequencies * coefficients
        pseudo = weighted[:, 0].copy()
        for field in range(1, FIELD_COUNT):
            pseudo += weighted[:, field]
        return pseudo.astype(np.float32).astype(np.float64)

    def _current_pseudo(self, postings: _TermPostings) -> npt.NDArray[np.float32]:
        """A term's pseudo-frequencies, recomputed first if the normalisation moved since."""
        if postings.version != self._version:
            slots = np.frombuffer(postings.slots, dtype=np.int32)
            frequencies = np.frombuffer(postings.frequencies, dtype=np.uint8)
            table = frequencies.reshape(-1, FIELD_COUNT)
            fresh = self._pseudo(table, self._coefficients(self._lengths[slots]))
            postings.pseudo = array("f", fresh.astype(np.float32).tobytes())
            postings.version = self._version
        return np.frombuffer(postings.pseudo, dtype=np.float32)

    def scores(self, terms: Sequence[tuple[str, float]]) -> FloatArray:
        """BM25F score of every slot for the weighted terms (0 for slots that match none).

        Terms are summed in the order given; each slot's score depends only on its own text and
        the collection's statistics, never on where its postings sit.
        """
        k1 = self._settings.k1
        scores = np.zeros(self._next_slot, dtype=np.float64)
        for term, weight in terms:
            postings = self._terms.get(term)
            if postings is None:
                continue
            slots = np.frombuffer(postings.slots, dtype=np.int32)
            pseudo = self._current_pseudo(postings).astype(np.float64)
            factor = weight * bm25_idf(len(slots), self._live) * (k1 + 1.0)
            scores[slots] += factor * pseudo / (pseudo + k1)
        return scores
