"""BM25F scores over the postings, and a search's statistics among some texts (``Among``).

A search scores every slot for its weighted terms in one pass: each term's stored saturated
frequencies (``postings.PostingIndex``) times its weight and idf, summed per slot by
``bincount``. A caller that may not call every tool is scored as if the index held its texts
alone: their number, their fields' average lengths (quantised as the whole index's are) and their
document frequencies — and, for a few thousand texts, their own postings, kept as searches first
read them.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from navigator.search.postings import FloatArray, PostingIndex, quantised
from navigator.search.ranking import FIELD_COUNT, bm25_idf
from navigator.search.term_arrays import TermPostings

__all__ = ["Among", "among", "document_frequencies", "scores"]

# term -> its postings among some texts: slots and saturated frequencies
_OwnPostings = dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]]

#: What one term's entry in ``Among.postings`` holds besides its postings' 8 bytes each: its pair
#: of arrays (a tuple and two array headers) and at most its share of the dictionary's table.
_OWN_ENTRY_BYTES = sys.getsizeof((None, None)) + 2 * sys.getsizeof(np.zeros(0, np.int32)) + 48
#: The dictionary of ``Among.postings`` itself, before its entries' shares.
_OWN_TABLE_BYTES = 256


@dataclass(frozen=True, slots=True)
class Among:
    """The texts a search counts in its statistics — a caller's own, when it may not call every
    tool —: scored as if the index held those texts alone (``among``).

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


def document_frequencies(
    index: PostingIndex, terms: Iterable[str], among: Among | None = None
) -> list[int]:
    """How many texts use each of ``terms``, in order (0 for a term no text uses); of the
    texts ``among`` counts, when given (one gather over all the terms' postings)."""
    terms = list(terms)
    found = list(map(index.terms.get, terms))
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
    index: PostingIndex,
    texts: npt.NDArray[np.bool_],
    terms: Mapping[str, int] | None = None,
    counted: bool = True,
) -> Among:
    """The statistics of the texts ``texts`` marks (one flag per slot, ``slot_count`` of
    them; free slots unmarked): their number and their fields' average lengths, quantised as
    the whole index's are — so that a search ``among`` them scores exactly as a search of an
    index holding them alone. ``terms`` and ``counted``: as ``Among`` keeps them."""
    count = int(np.count_nonzero(texts))
    lengths = index.lengths[: index.slot_count]
    if (
        count <= index.text_count - count
    ):  # summed over the smaller side (free slots' lengths are 0)
        totals = lengths[np.flatnonzero(texts)].sum(axis=0)
    else:
        totals = np.array(index.length_sums) - lengths[np.flatnonzero(~texts)].sum(axis=0)
    averages = np.array([quantised(int(total), count) for total in totals.tolist()])
    own: _OwnPostings | None = {} if terms is not None and counted else None
    return Among(texts, count, averages, terms, counted, own)


def scores(
    index: PostingIndex, terms: Sequence[tuple[str, float]], among: Among | None = None
) -> FloatArray:
    """BM25F score of every slot for the weighted terms (0 for slots that match none); with
    ``among``, against the statistics of the texts it counts — only their scores mean
    anything then.

    Terms are summed in the order given; each slot's score depends only on its own text and
    the collection's statistics, never on where its postings sit. All terms' contributions
    are computed in one pass and summed per slot by ``bincount``, which adds them in the
    order given, as adding them term by term would.
    """
    index_terms = index.terms
    present = [(term, weight) for term, weight in terms if term in index_terms]
    used = [(weight, index_terms[term]) for term, weight in present]
    if not used:
        return np.zeros(index.slot_count, dtype=np.float64)
    if among is not None and among.postings is not None:  # the texts' own postings, kept
        kept = among.postings
        _keep_own_postings(index, [term for term, _ in present if term not in kept], among, kept)
        own = [kept[term] for term, _ in present]
        slots = np.concatenate([own_slots for own_slots, _ in own])
        saturated = np.concatenate([own_saturated for _, own_saturated in own])
        counts = np.array([len(own_slots) for own_slots, _ in own])
        frequencies = counts
    else:
        slots = np.concatenate([np.frombuffer(p.slots, dtype=np.int32) for _, p in used])
        if among is None or (
            among.terms is not None and np.array_equal(among.averages, index.averages)
        ):  # every posting as stored; with ``among``, at its idf (a lookup per term)
            saturated = np.concatenate([index.current_saturated(p) for _, p in used])
            counts = np.array([len(p.slots) for _, p in used])
            frequencies = counts
            if among is not None:
                terms_used = [t for t, _ in present]
                frequencies = np.array(document_frequencies(index, terms_used, among))
        else:
            slots, saturated, counts = _among_postings(index, slots, [p for _, p in used], among)
            frequencies = counts
    texts = index.text_count if among is None else among.count
    factors = [
        weight * bm25_idf(frequency, texts)
        for (weight, _), frequency in zip(used, frequencies.tolist(), strict=True)
    ]
    contributions = np.repeat(np.asarray(factors, dtype=np.float64), counts) * saturated
    return np.bincount(slots, weights=contributions, minlength=index.slot_count).astype(
        np.float64, copy=False
    )


def _keep_own_postings(
    index: PostingIndex, terms: list[str], among: Among, kept: _OwnPostings
) -> None:
    """Keep in ``kept`` (``among.postings``) the postings of ``terms`` among the texts
    ``among`` counts: the slots and saturated frequencies ``_among_postings`` gives, found
    for all the terms in one pass."""
    if not terms:
        return
    used = [index.terms[term] for term in terms]
    every = np.concatenate([np.frombuffer(p.slots, dtype=np.int32) for p in used])
    slots, saturated, counts = _among_postings(index, every, used, among)
    saturated = saturated.astype(np.float32, copy=False)  # float32 values: nothing is lost
    ends = np.cumsum(counts).tolist()
    for term, start, end in zip(terms, [0, *ends[:-1]], ends, strict=True):
        kept[term] = (slots[start:end], saturated[start:end])


def _among_postings(
    index: PostingIndex, slots: npt.NDArray[np.int32], used: list[TermPostings], among: Among
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.floating], npt.NDArray[np.intp]]:
    """The postings ``slots`` (the terms ``used``, end to end) of the texts ``among`` counts,
    their saturated frequencies against those texts' average lengths (the stored ones when the
    averages are the index's), and how many each term keeps."""
    kept = among.texts[slots]
    counts = _segment_sums(kept, [len(p.slots) for p in used])
    slots = slots[kept]
    if np.array_equal(among.averages, index.averages):
        saturated = np.concatenate([index.current_saturated(p) for p in used])[kept]
        return slots, saturated, counts
    table = np.concatenate([np.frombuffer(p.frequencies, dtype=np.uint8) for p in used]).reshape(
        -1, FIELD_COUNT
    )[kept]
    coefficients = index.coefficients(index.lengths[slots], among.averages)
    return slots, index.saturated(table, coefficients), counts


def _segment_sums(flags: npt.NDArray[np.bool_], sizes: list[int]) -> npt.NDArray[np.intp]:
    """How many of ``flags`` are set in each of the consecutive segments of ``sizes`` (each > 0)."""
    starts = np.zeros(len(sizes), dtype=np.intp)
    np.cumsum(sizes[:-1], out=starts[1:])
    return np.add.reduceat(flags.astype(np.intp), starts)


def _counts_among(among: Among, slot_arrays: list[array[int]]) -> npt.NDArray[np.intp]:
    """How many of each slot array's slots ``among`` counts."""
    slots = np.concatenate([np.frombuffer(slots, dtype=np.int32) for slots in slot_arrays])
    return _segment_sums(among.texts[slots], [len(slots) for slots in slot_arrays])
