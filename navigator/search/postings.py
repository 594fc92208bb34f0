"""The inverted index over tool texts, updated in place (scored by ``scoring``).

Each distinct tool text has a stable slot number; slots freed by removals are reused, smallest
first. Each term keeps three growable C arrays, read by a search as numpy views without copying:
the slots that use it, per slot one byte of term frequency per field (capped at 255), and per slot
the saturated BM25F pseudo-frequency — the field-weighted, length-normalised sum, saturated by
``k1`` — as a float32. So a search costs, per query term, one multiplication by the term's weight
and one scatter-add over that term's postings; adding a text appends a few bytes per term; removing
texts compacts, in place, only the arrays of the terms they used (``term_arrays``).

A field's length counts its words once: a word kept as written beside its stem (``text.WRITTEN``)
is not counted again, so a text's length does not depend on how many of its words are inflected.
Length normalisation divides by each field's average length. To keep the stored saturated
frequencies valid while texts come and go, the average used is quantised to steps of 2 %: it moves
only when the true average has drifted that far. Then the normalisation's version changes, and each
term recomputes its saturated frequencies, from the bytes it keeps, the next time a search reads
it. The quantised average is a function of the indexed texts alone, so an index grown step by
step scores exactly as one built in one go.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

from navigator.search.ranking import FIELD_COUNT, RankingSettings
from navigator.search.term_arrays import Block, TermPostings, merge
from navigator.search.text import WRITTEN

__all__ = ["PostingIndex", "PostingState", "quantised"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_MAX_FREQUENCY = 255
_INITIAL_SLOTS = 64
# Average field lengths are used rounded to a power of this ratio.
_AVERAGE_STEP = math.log(1.02)
# Batches are merged into their terms before any read, or once they hold this many postings.
_MERGE_PAIRS = 1 << 21


@dataclass(frozen=True, slots=True)
class PostingState:
    """A ``PostingIndex`` as ``export`` gives it: its terms in order, each term's normalisation
    version and number of postings, and every term's postings end to end in three buffers."""

    terms: list[str]
    versions: list[int]
    counts: list[int]
    slots: bytes
    frequencies: bytes
    saturated: bytes
    lengths: FloatArray
    length_sums: list[int]
    live: int
    next_slot: int
    free: list[int]
    averages: FloatArray
    version: int


def _length(terms: Sequence[str]) -> int:
    """A field's length: its terms, less the words kept as written beside their stems."""
    return len(terms) - sum(term.startswith(WRITTEN) for term in terms)


def quantised(total: int, count: int) -> float:
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
        "_pending",
        "_pending_pairs",
        "_pending_terms",
        "_settings",
        "_terms",
        "_version",
        "_weights",
    )

    def __init__(self, settings: RankingSettings) -> None:
        self._settings = settings
        self._weights = np.asarray(settings.field_weights, dtype=np.float64)
        self._terms: dict[str, TermPostings] = {}
        self._lengths = np.zeros((_INITIAL_SLOTS, FIELD_COUNT), dtype=np.float64)
        self._length_sums = [0] * FIELD_COUNT
        self._live = 0
        self._next_slot = 0
        self._free: list[int] = []
        self._averages = np.ones(FIELD_COUNT, dtype=np.float64)
        self._version = 0
        self._pending: list[Block] = []
        self._pending_pairs = 0
        self._pending_terms: dict[str, None] = {}

    @property
    def text_count(self) -> int:
        """How many texts are indexed."""
        return self._live

    def __contains__(self, term: str) -> bool:
        self._merge()
        return term in self._terms

    def live(self) -> npt.NDArray[np.bool_]:
        """One flag per slot (``slot_count`` of them): whether a text holds it."""
        live = np.ones(self._next_slot, dtype=bool)
        live[self._free] = False
        return live

    @property
    def terms(self) -> Mapping[str, TermPostings]:
        """Every term's postings, the pending batches merged first (read, never changed)."""
        self._merge()
        return self._terms

    @property
    def lengths(self) -> FloatArray:
        """Each slot's field lengths (a row per slot; free slots' are 0)."""
        return self._lengths

    @property
    def length_sums(self) -> list[int]:
        """Each field's length summed over the texts."""
        return self._length_sums

    @property
    def averages(self) -> FloatArray:
        """Each field's average length, quantised (see the module's docstring)."""
        return self._averages

    @property
    def slot_count(self) -> int:
        """One more than the highest slot ever given: the length of ``scores``' answer."""
        return self._next_slot

    def slots_of(self, term: str) -> npt.NDArray[np.int32]:
        """The slots of the texts that use ``term`` (a view: valid until the index changes)."""
        self._merge()
        postings = self._terms.get(term)
        if postings is None:
            return np.zeros(0, dtype=np.int32)
        return np.frombuffer(postings.slots, dtype=np.int32)

    # -- changes -------------------------------------------------------------------------------

    def add(self, fields: Sequence[Sequence[str]]) -> tuple[int, list[str]]:
        """Index one text given as its terms per field; its slot, and the terms new to the
        index."""
        slots, new_terms = self.add_many([fields])
        return slots[0], new_terms

    def add_many(self, texts: Sequence[Sequence[Sequence[str]]]) -> tuple[list[int], list[str]]:
        """Index texts, each given as its terms per field; their slots, in order, and the terms
        new to the index, in order of first use.

        The batch is counted in one numpy pass and each term's postings grow once per batch; the
        averages are requantised once. The postings are those of adding the texts one by one.
        """
        if not texts:
            return [], []
        count = len(texts)
        sizes = [len(terms) for fields in texts for terms in fields]
        lengths = np.array(
            [[_length(terms) for terms in fields] for fields in texts], dtype=np.intp
        ).reshape(count, FIELD_COUNT)
        occurrences = list(chain.from_iterable(chain.from_iterable(texts)))
        distinct = list(dict.fromkeys(occurrences))  # batch term ids, in order of first use
        ids = dict(zip(distinct, range(len(distinct)), strict=True))
        codes = np.fromiter(map(ids.__getitem__, occurrences), np.int64, len(occurrences))
        cells = np.repeat(np.arange(count * FIELD_COUNT, dtype=np.int64), sizes)
        return self._add(count, lengths, distinct, codes, cells)

    def add_occurrences(
        self, count: int, terms: list[str], codes: IntArray, cells: IntArray
    ) -> tuple[list[int], list[str]]:
        """``add_many`` of ``count`` texts given as their term occurrences, in any order:
        ``terms`` are the distinct terms in the order ``add_many`` would first meet them, and
        occurrence ``i`` is of ``terms[codes[i]]`` in cell ``cells[i]`` (text * FIELD_COUNT +
        field). The same slots, postings and new terms as ``add_many`` of the same texts."""
        if not count:
            return [], []
        written = np.fromiter((term.startswith(WRITTEN) for term in terms), bool, len(terms))
        counted = cells[~written[codes]] if written.any() else cells
        lengths = np.bincount(counted, minlength=count * FIELD_COUNT).astype(np.intp)
        return self._add(count, lengths.reshape(count, FIELD_COUNT), terms, codes, cells)

    def _add(
        self,
        count: int,
        lengths: npt.NDArray[np.intp],
        distinct: list[str],
        codes: IntArray,
        occurrence_cells: IntArray,
    ) -> tuple[list[int], list[str]]:
        slots = [heapq.heappop(self._free) if self._free else self._grow() for _ in range(count)]
        slot_array = np.asarray(slots, dtype=np.intp)
        self._lengths[slot_array] = lengths
        for field, total in enumerate(lengths.sum(axis=0).tolist()):
            self._length_sums[field] += total
        self._live += count
        self._renormalise()
        if not len(codes):
            return slots, []
        cells = count * FIELD_COUNT  # cell: text * FIELD_COUNT + field
        keys = codes * cells + occurrence_cells
        unique, tallies = np.unique(keys, return_counts=True)  # by term, then text, then field
        pairs = unique // FIELD_COUNT  # term * count + text
        starts = np.flatnonzero(np.concatenate(([True], pairs[1:] != pairs[:-1])))
        table = np.zeros((len(starts), FIELD_COUNT), dtype=np.uint8)
        rows = np.cumsum(np.concatenate(([True], pairs[1:] != pairs[:-1]))) - 1
        table[rows, unique % FIELD_COUNT] = np.minimum(tallies, _MAX_FREQUENCY)
        pair_terms = pairs[starts] // count
        pair_texts = pairs[starts] % count
        pair_slots = slot_array[pair_texts]
        # each text's coefficients once, then one row per posting: the same values
        coefficients = self.coefficients(self._lengths[slot_array])[pair_texts]
        saturated = self.saturated(table, coefficients).astype(np.float32)
        bounds = np.flatnonzero(np.concatenate(([True], pair_terms[1:] != pair_terms[:-1])))
        counts = np.diff(np.append(bounds, len(pair_terms)))
        self._pending.append(
            Block(distinct, counts, pair_slots.astype(np.int32), table, saturated, self._version)
        )
        self._pending_pairs += len(pair_terms)
        known, pending = self._terms, self._pending_terms
        new_terms = [term for term in distinct if term not in known and term not in pending]
        pending.update(dict.fromkeys(new_terms))
        if self._pending_pairs >= _MERGE_PAIRS:
            self._merge()
        return slots, new_terms

    def _merge(self) -> None:
        """Move the pending batches' postings into their terms (``term_arrays.merge``)."""
        if not self._pending:
            return
        blocks, self._pending, self._pending_pairs = self._pending, [], 0
        self._pending_terms = {}
        merge(self._terms, blocks, self._version)

    def remove(self, texts: Mapping[int, Iterable[str]]) -> list[str]:
        """Unindex texts given as slot -> its distinct terms; their slots become free. Returns
        the terms no text uses any more."""
        if not texts:
            return []
        self._merge()
        leaving: dict[str, int] = {}
        for terms in texts.values():
            for term in terms:
                leaving[term] = leaving.get(term, 0) + 1
        dead = np.zeros(self._next_slot, dtype=bool)
        dead[list(texts)] = True
        gone = [term for term, count in leaving.items() if not self._drop_slots(term, count, dead)]
        for slot in texts:
            for field in range(FIELD_COUNT):
                self._length_sums[field] -= int(self._lengths[slot, field])
            self._lengths[slot] = 0.0
            heapq.heappush(self._free, slot)
        self._live -= len(texts)
        self._renormalise()
        return gone

    def _drop_slots(self, term: str, leaving: int, dead: npt.NDArray[np.bool_]) -> bool:
        """Drop the ``leaving`` slots marked ``dead`` from a term's postings; whether any text
        still uses the term."""
        postings = self._terms[term]
        if leaving >= len(postings.slots):
            del self._terms[term]  # every slot using it goes: slots are distinct
            return False
        postings.drop(dead)
        return True

    def export(self) -> PostingState:
        """Everything this index holds, compact (a few buffers, not an object per term): what
        ``restore`` turns an empty index into a copy of. For an index built in another process."""
        self._merge()
        postings = list(self._terms.values())
        return PostingState(
            terms=list(self._terms),
            versions=[entry.version for entry in postings],
            counts=[len(entry.slots) for entry in postings],
            slots=b"".join([entry.slots.tobytes() for entry in postings]),
            frequencies=b"".join([entry.frequencies.tobytes() for entry in postings]),
            saturated=b"".join([entry.saturated.tobytes() for entry in postings]),
            lengths=self._lengths,
            length_sums=list(self._length_sums),
            live=self._live,
            next_slot=self._next_slot,
            free=list(self._free),
            averages=self._averages,
            version=self._version,
        )

    def restore(self, state: PostingState) -> None:
        """Become the index ``state`` was exported from (this one must be empty)."""
        if self._live or self._next_slot or self._pending:
            raise ValueError("only an empty index is restored")
        slot_bytes = memoryview(state.slots)
        frequency_bytes = memoryview(state.frequencies)
        saturated_bytes = memoryview(state.saturated)
        terms: dict[str, TermPostings] = {}
        start = 0
        for term, version, count in zip(state.terms, state.versions, state.counts, strict=True):
            end = start + count
            terms[term] = TermPostings(version)
            terms[term].extend(slot_bytes, frequency_bytes, saturated_bytes, start, end)
            start = end
        self._terms = terms
        self._lengths = state.lengths
        self._length_sums = list(state.length_sums)
        self._live = state.live
        self._next_slot = state.next_slot
        self._free = list(state.free)
        self._averages = state.averages
        self._version = state.version

    def _grow(self) -> int:
        slot = self._next_slot
        if slot == len(self._lengths):
            grown = np.zeros((2 * len(self._lengths), FIELD_COUNT), dtype=np.float64)
            grown[:slot] = self._lengths
            self._lengths = grown
        self._next_slot += 1
        return slot

    def _renormalise(self) -> None:
        """Requantise the average field lengths; a new value invalidates every stored saturated
        frequency."""
        averages = np.array([quantised(total, self._live) for total in self._length_sums])
        if not np.array_equal(averages, self._averages):
            self._averages = averages
            self._version += 1

    # -- BM25F saturation (``scoring`` reads it too) -----------------------------------------------

    def coefficients(self, lengths: FloatArray, averages: FloatArray | None = None) -> FloatArray:
        """Per text (row) and field: the field's weight over its BM25 length normalisation,
        against the index's average lengths or ``averages``."""
        b = self._settings.b
        averages = self._averages if averages is None else averages
        return self._weights / ((1.0 - b) + b * (lengths / averages))

    def saturated(self, frequencies: npt.NDArray[np.uint8], coefficients: FloatArray) -> FloatArray:
        """Saturated BM25F pseudo-frequencies: each row's weighted, normalised frequencies,
        summed field by field in order, then saturated (the same operations, in the same order,
        for one text or a thousand), as stored: rounded to float32."""
        weighted = frequencies * coefficients
        pseudo = weighted[:, 0].copy()
        for field in range(1, FIELD_COUNT):
            pseudo += weighted[:, field]
        return self._settings.saturate(pseudo).astype(np.float32).astype(np.float64)

    def current_saturated(self, postings: TermPostings) -> npt.NDArray[np.float32]:
        """A term's saturated frequencies, recomputed first if the normalisation moved since."""
        if postings.version != self._version:
            slots = np.frombuffer(postings.slots, dtype=np.int32)
            frequencies = np.frombuffer(postings.frequencies, dtype=np.uint8)
            table = frequencies.reshape(-1, FIELD_COUNT)
            fresh = self.saturated(table, self.coefficients(self._lengths[slots]))
            postings.saturated = array("f", fresh.astype(np.float32).tobytes())
            postings.version = self._version
        return np.frombuffer(postings.saturated, dtype=np.float32)
