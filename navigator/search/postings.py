"""The inverted index over tool texts, updated in place and scored with numpy.

Each distinct tool text has a stable slot number; slots freed by removals are reused, smallest
first. Each term keeps three growable C arrays, read by a search as numpy views without copying:
the slots that use it, per slot one byte of term frequency per field (capped at 255), and per slot
the saturated BM25F pseudo-frequency — the field-weighted, length-normalised sum, saturated by
``k1`` — as a float32. So a search costs, per query term, one multiplication by the term's weight
and one scatter-add over that term's postings; adding a text appends a few bytes per term; removing
texts compacts, in place, only the arrays of the terms they used.

A field's length counts its words once: a word kept as written beside its stem (``text.WRITTEN``)
is not counted again, so a text's length does not depend on how many of its words are inflected.
Length normalisation divides by each field's average length. To keep the stored saturated
frequencies valid while texts come and go, the average used is quantised to steps of 2 %: it moves
only when the true average has drifted that far. Then the normalisation's version changes, and each
term recomputes its saturated frequencies, from the bytes it keeps, the next time a search reads
it. The
quantised average is a function of the indexed texts alone, so an index grown step by step scores
exactly as one built in one go.
"""

from __future__ import annotations

import heapq
import math
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

from navigator.search.ranking import FIELD_COUNT, RankingSettings, bm25_idf
from navigator.search.text import WRITTEN

__all__ = ["Among", "PostingIndex", "PostingState"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
# term -> its postings among some texts: slots and saturated frequencies
_OwnPostings = dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]]

_MAX_FREQUENCY = 255
_INITIAL_SLOTS = 64
#: What one term's entry in ``Among.postings`` holds besides its postings' 8 bytes each: its pair
#: of arrays (a tuple and two array headers) and at most its share of the dictionary's table.
_OWN_ENTRY_BYTES = sys.getsizeof((None, None)) + 2 * sys.getsizeof(np.zeros(0, np.int32)) + 48
#: The dictionary of ``Among.postings`` itself, before its entries' shares.
_OWN_TABLE_BYTES = 256
# Average field lengths are used rounded to a power of this ratio.
_AVERAGE_STEP = math.log(1.02)
# Batches are merged into their terms before any read, or once they hold this many postings.
_MERGE_PAIRS = 1 << 21


class _TermPostings:
    """The slots using one term, its per-field frequencies in each, and its saturated
    pseudo-frequencies as of normalisation ``version``."""

    __slots__ = ("frequencies", "saturated", "slots", "version")

    def __init__(self, version: int) -> None:
        self.slots = array("i")
        self.frequencies = array("B")
        self.saturated = array("f")
        self.version = version


class _Block:
    """One batch's postings, not yet moved into their terms: its distinct terms in order, how
    many postings each has, and the postings term by term (slots, frequencies, saturated frequencies
    as of normalisation ``version``)."""

    __slots__ = ("counts", "frequencies", "saturated", "slots", "terms", "version")

    def __init__(
        self,
        terms: list[str],
        counts: npt.NDArray[np.intp],
        slots: npt.NDArray[np.int32],
        frequencies: npt.NDArray[np.uint8],
        saturated: npt.NDArray[np.float32],
        version: int,
    ) -> None:
        self.terms = terms
        self.counts = counts
        self.slots = slots
        self.frequencies = frequencies
        self.saturated = saturated
        self.version = version


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


@dataclass(frozen=True, slots=True)
class Among:
    """The texts a search counts in its statistics — a caller's own, when it may not call every
    tool —: scored as if the index held those texts alone (``PostingIndex.among``).

    ``terms``, when known: how many of the texts on one side — those counted when ``counted`` is
    true, else those not counted — use each term; the smaller side's, so that a document
    frequency is a lookup rather than a pass over the term's postings.

    ``postings``: when the counted texts are the side ``terms`` counts (a few thousand at most),
    each term's postings among them as a search first reads them — slots and saturated
    frequencies —, so that later searches of these texts read their own postings, not every
    text's (a caller allowed one machine asks about a few hundred texts, not the index's
    100,000). They hold at most ``postings_bound`` bytes.
    """

    texts: npt.NDArray[np.bool_]
    count: int
    averages: FloatArray
    terms: Mapping[str, int] | None = None
    counted: bool = True
    postings: _OwnPostings | None = None

    @property
    def postings_bound(self) -> int:
        """The most bytes ``postings`` can hold: every posting of the counted texts."""
        if self.postings is None or self.terms is None:
            return 0
        return 8 * sum(self.terms.values()) + _OWN_ENTRY_BYTES * len(self.terms) + _OWN_TABLE_BYTES


def _length(terms: Sequence[str]) -> int:
    """A field's length: its terms, less the words kept as written beside their stems."""
    return len(terms) - sum(term.startswith(WRITTEN) for term in terms)


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
        self._terms: dict[str, _TermPostings] = {}
        self._lengths = np.zeros((_INITIAL_SLOTS, FIELD_COUNT), dtype=np.float64)
        self._length_sums = [0] * FIELD_COUNT
        self._live = 0
        self._next_slot = 0
        self._free: list[int] = []
        self._averages = np.ones(FIELD_COUNT, dtype=np.float64)
        self._version = 0
        self._pending: list[_Block] = []
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

    def document_frequencies(self, terms: Iterable[str], among: Among | None = None) -> list[int]:
        """How many texts use each of ``terms``, in order (0 for a term no text uses); of the
        texts ``among`` counts, when given (one gather over all the terms' postings)."""
        self._merge()
        terms = list(terms)
        found = list(map(self._terms.get, terms))
        if among is None:
            return [len(postings.slots) if postings is not None else 0 for postings in found]
        if among.terms is not None:
            side, counted = among.terms, among.counted
            return [
                0 if p is None else side.get(t, 0) if counted else len(p.slots) - side.get(t, 0)
                for t, p in zip(terms, found, strict=True)
            ]
        used = [postings for postings in found if postings is not None]
        if not used:
            return [0] * len(found)
        counted = iter(_counts_among(among, [p.slots for p in used]).tolist())
        return [0 if postings is None else next(counted) for postings in found]

    def among(
        self,
        texts: npt.NDArray[np.bool_],
        terms: Mapping[str, int] | None = None,
        counted: bool = True,
    ) -> Among:
        """The statistics of the texts ``texts`` marks (one flag per slot, ``slot_count`` of
        them; free slots unmarked): their number and their fields' average lengths, quantised as
        the whole index's are — so that a search ``among`` them scores exactly as a search of an
        index holding them alone. ``terms`` and ``counted``: as ``Among`` keeps them."""
        self._merge()
        count = int(np.count_nonzero(texts))
        lengths = self._lengths[: self._next_slot]
        if count <= self._live - count:  # summed over the smaller side (free slots' lengths are 0)
            totals = lengths[np.flatnonzero(texts)].sum(axis=0)
        else:
            totals = np.array(self._length_sums) - lengths[np.flatnonzero(~texts)].sum(axis=0)
        averages = np.array([_quantised(int(total), count) for total in totals.tolist()])
        own: _OwnPostings | None = {} if terms is not None and counted else None
        return Among(texts, count, averages, terms, counted, own)

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
        coefficients = self._coefficients(self._lengths[slot_array])[pair_texts]
        saturated = self._saturated(table, coefficients).astype(np.float32)
        bounds = np.flatnonzero(np.concatenate(([True], pair_terms[1:] != pair_terms[:-1])))
        counts = np.diff(np.append(bounds, len(pair_terms)))
        self._pending.append(
            _Block(distinct, counts, pair_slots.astype(np.int32), table, saturated, self._version)
        )
        self._pending_pairs += len(pair_terms)
        known, pending = self._terms, self._pending_terms
        new_terms = [term for term in distinct if term not in known and term not in pending]
        pending.update(dict.fromkeys(new_terms))
        if self._pending_pairs >= _MERGE_PAIRS:
            self._merge()
        return slots, new_terms

    def _merge(self) -> None:
        """Move the pending batches' postings into their terms: one step per term, not per term
        and batch. Entries reach a term in batch order, as if each batch had been added alone."""
        if not self._pending:
            return
        blocks, self._pending, self._pending_pairs = self._pending, [], 0
        self._pending_terms = {}
        block_terms = list(chain.from_iterable(block.terms for block in blocks))
        merged = list(dict.fromkeys(block_terms))
        ids = dict(zip(merged, range(len(merged)), strict=True))
        codes = np.fromiter(map(ids.__getitem__, block_terms), np.int64, len(block_terms))
        counts = np.concatenate([block.counts for block in blocks])
        order = np.argsort(np.repeat(codes, counts), kind="stable")
        slots = np.concatenate([block.slots for block in blocks])[order]
        table = np.concatenate([block.frequencies for block in blocks])[order]
        saturated = np.concatenate([block.saturated for block in blocks])[order]
        uniform = all(block.version == self._version for block in blocks)
        slot_bytes = memoryview(slots.tobytes())
        frequency_bytes = memoryview(table.tobytes())
        saturated_bytes = memoryview(saturated.tobytes())
        totals = np.bincount(codes, weights=counts, minlength=len(merged)).astype(np.int64)
        ends = np.cumsum(totals).tolist()
        terms = self._terms
        width = FIELD_COUNT
        start = 0
        for term, end in zip(merged, ends, strict=True):
            postings = terms.get(term)
            if postings is None:
                postings = terms[term] = _TermPostings(self._version if uniform else -1)
            elif not uniform:
                postings.version = -1  # some entries predate the normalisation: recompute
            postings.slots.frombytes(slot_bytes[4 * start : 4 * end])
            postings.frequencies.frombytes(frequency_bytes[width * start : width * end])
            postings.saturated.frombytes(saturated_bytes[4 * start : 4 * end])
            start = end

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
        still uses the term.

        The postings kept move up in place, in order — each run between two that leave is one
        contiguous move — and the arrays are cut after them: the term's postings are read once
        (which of them leave), and only those after the first leaving are moved. (Finding each
        slot with ``array.index`` compared Python ints one by one: a third of a second for 50
        texts at 100,000, most of it on the commonest terms.)
        """
        postings = self._terms[term]
        size = len(postings.slots)
        if leaving >= size:
            del self._terms[term]  # every slot using it goes: slots are distinct
            return False
        slots = np.frombuffer(postings.slots, dtype=np.int32)
        frequencies = np.frombuffer(postings.frequencies, dtype=np.uint8)
        saturated = np.frombuffer(postings.saturated, dtype=np.float32)
        positions = np.flatnonzero(dead[slots]).tolist()
        width = FIELD_COUNT
        write = positions[0]
        for position, end in zip(positions, [*positions[1:], size], strict=True):
            start = position + 1
            if start < end:
                moved = end - start
                slots[write : write + moved] = slots[start:end]
                frequencies[write * width : (write + moved) * width] = frequencies[
                    start * width : end * width
                ]
                saturated[write : write + moved] = saturated[start:end]
                write += moved
        del slots, frequencies, saturated  # release the buffers before the arrays shrink
        del postings.slots[write:]
        del postings.frequencies[write * width :]
        del postings.saturated[write:]
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
        terms: dict[str, _TermPostings] = {}
        width = FIELD_COUNT
        start = 0
        for term, version, count in zip(state.terms, state.versions, state.counts, strict=True):
            end = start + count
            postings = terms[term] = _TermPostings(version)
            postings.slots.frombytes(slot_bytes[4 * start : 4 * end])
            postings.frequencies.frombytes(frequency_bytes[width * start : width * end])
            postings.saturated.frombytes(saturated_bytes[4 * start : 4 * end])
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
        averages = np.array([_quantised(total, self._live) for total in self._length_sums])
        if not np.array_equal(averages, self._averages):
            self._averages = averages
            self._version += 1

    # -- scoring -------------------------------------------------------------------------------

    def _coefficients(self, lengths: FloatArray, averages: FloatArray | None = None) -> FloatArray:
        """Per text (row) and field: the field's weight over its BM25 length normalisation,
        against the index's average lengths or ``averages``."""
        b = self._settings.b
        averages = self._averages if averages is None else averages
        return self._weights / ((1.0 - b) + b * (lengths / averages))

    def _saturated(
        self, frequencies: npt.NDArray[np.uint8], coefficients: FloatArray
    ) -> FloatArray:
        """Saturated BM25F pseudo-frequencies: each row's weighted, normalised frequencies,
        summed field by field in order, then saturated (the same operations, in the same order,
        for one text or a thousand), as stored: rounded to float32."""
        weighted = frequencies * coefficients
        pseudo = weighted[:, 0].copy()
        for field in range(1, FIELD_COUNT):
            pseudo += weighted[:, field]
        return self._settings.saturate(pseudo).astype(np.float32).astype(np.float64)

    def _current_saturated(self, postings: _TermPostings) -> npt.NDArray[np.float32]:
        """A term's saturated frequencies, recomputed first if the normalisation moved since."""
        if postings.version != self._version:
            slots = np.frombuffer(postings.slots, dtype=np.int32)
            frequencies = np.frombuffer(postings.frequencies, dtype=np.uint8)
            table = frequencies.reshape(-1, FIELD_COUNT)
            fresh = self._saturated(table, self._coefficients(self._lengths[slots]))
            postings.saturated = array("f", fresh.astype(np.float32).tobytes())
            postings.version = self._version
        return np.frombuffer(postings.saturated, dtype=np.float32)

    def scores(self, terms: Sequence[tuple[str, float]], among: Among | None = None) -> FloatArray:
        """BM25F score of every slot for the weighted terms (0 for slots that match none); with
        ``among``, against the statistics of the texts it counts — only their scores mean
        anything then.

        Terms are summed in the order given; each slot's score depends only on its own text and
        the collection's statistics, never on where its postings sit. All terms' contributions
        are computed in one pass and summed per slot by ``bincount``, which adds them in the
        order given, as adding them term by term would.
        """
        self._merge()
        present = [(term, weight) for term, weight in terms if term in self._terms]
        used = [(weight, self._terms[term]) for term, weight in present]
        if not used:
            return np.zeros(self._next_slot, dtype=np.float64)
        if among is not None and among.postings is not None:  # the texts' own postings, kept
            kept = among.postings
            self._keep_own_postings([term for term, _ in present if term not in kept], among, kept)
            own = [kept[term] for term, _ in present]
            slots = np.concatenate([own_slots for own_slots, _ in own])
            saturated = np.concatenate([own_saturated for _, own_saturated in own])
            counts = np.array([len(own_slots) for own_slots, _ in own])
            frequencies = counts
        else:
            slots = np.concatenate([np.frombuffer(p.slots, dtype=np.int32) for _, p in used])
            if among is None or (
                among.terms is not None and np.array_equal(among.averages, self._averages)
            ):  # every posting as stored; with ``among``, at its idf (a lookup per term)
                saturated = np.concatenate([self._current_saturated(p) for _, p in used])
                counts = np.array([len(p.slots) for _, p in used])
                frequencies = counts
                if among is not None:
                    terms_used = [t for t, _ in present]
                    frequencies = np.array(self.document_frequencies(terms_used, among))
            else:
                slots, saturated, counts = self._among_postings(slots, [p for _, p in used], among)
                frequencies = counts
        texts = self._live if among is None else among.count
        factors = [
            weight * bm25_idf(frequency, texts)
            for (weight, _), frequency in zip(used, frequencies.tolist(), strict=True)
        ]
        contributions = np.repeat(np.asarray(factors, dtype=np.float64), counts) * saturated
        return np.bincount(slots, weights=contributions, minlength=self._next_slot).astype(
            np.float64, copy=False
        )

    def _keep_own_postings(self, terms: list[str], among: Among, kept: _OwnPostings) -> None:
        """Keep in ``kept`` (``among.postings``) the postings of ``terms`` among the texts
        ``among`` counts: the slots and saturated frequencies ``_among_postings`` gives, found
        for all the terms in one pass."""
        if not terms:
            return
        used = [self._terms[term] for term in terms]
        every = np.concatenate([np.frombuffer(p.slots, dtype=np.int32) for p in used])
        slots, saturated, counts = self._among_postings(every, used, among)
        saturated = saturated.astype(np.float32, copy=False)  # float32 values: nothing is lost
        ends = np.cumsum(counts).tolist()
        for term, start, end in zip(terms, [0, *ends[:-1]], ends, strict=True):
            kept[term] = (slots[start:end], saturated[start:end])

    def _among_postings(
        self, slots: npt.NDArray[np.int32], used: list[_TermPostings], among: Among
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.floating], npt.NDArray[np.intp]]:
        """The postings ``slots`` (the terms ``used``, end to end) of the texts ``among`` counts,
        their saturated frequencies against those texts' average lengths (the stored ones when the
        averages are the index's), and how many each term keeps."""
        kept = among.texts[slots]
        counts = _segment_sums(kept, [len(p.slots) for p in used])
        slots = slots[kept]
        if np.array_equal(among.averages, self._averages):
            saturated = np.concatenate([self._current_saturated(p) for p in used])[kept]
            return slots, saturated, counts
        table = np.concatenate(
            [np.frombuffer(p.frequencies, dtype=np.uint8) for p in used]
        ).reshape(-1, FIELD_COUNT)[kept]
        coefficients = self._coefficients(self._lengths[slots], among.averages)
        return slots, self._saturated(table, coefficients), counts


def _segment_sums(flags: npt.NDArray[np.bool_], sizes: list[int]) -> npt.NDArray[np.intp]:
    """How many of ``flags`` are set in each of the consecutive segments of ``sizes`` (each > 0)."""
    starts = np.zeros(len(sizes), dtype=np.intp)
    np.cumsum(sizes[:-1], out=starts[1:])
    return np.add.reduceat(flags.astype(np.intp), starts)


def _counts_among(among: Among, slot_arrays: list[array[int]]) -> npt.NDArray[np.intp]:
    """How many of each slot array's slots ``among`` counts."""
    slots = np.concatenate([np.frombuffer(slots, dtype=np.int32) for slots in slot_arrays])
    return _segment_sums(among.texts[slots], [len(slots) for slots in slot_arrays])
