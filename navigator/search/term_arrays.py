"""Each term's postings as three growable C arrays, appended a batch at a time, compacted in place.

Per term: the slots of the texts that use it, per slot one byte of term frequency per field, and
per slot its saturated BM25F pseudo-frequency (float32) as of a normalisation version. A search
reads them as numpy views without copying. A batch of texts waits as one ``Block`` until a read
needs its terms (``merge``): then each term's arrays grow once for all the pending batches.
Removing texts moves the postings kept up in place (``TermPostings.drop``), never copying a term's
arrays.
"""

from __future__ import annotations

from array import array
from itertools import chain

import numpy as np
import numpy.typing as npt

from navigator.search.ranking import FIELD_COUNT

__all__ = ["Block", "TermPostings", "merge"]


class TermPostings:
    """The slots using one term, its per-field frequencies in each, and its saturated
    pseudo-frequencies as of normalisation ``version``."""

    __slots__ = ("frequencies", "saturated", "slots", "version")

    def __init__(self, version: int) -> None:
        self.slots = array("i")
        self.frequencies = array("B")
        self.saturated = array("f")
        self.version = version

    def extend(
        self,
        slots: memoryview,
        frequencies: memoryview,
        saturated: memoryview,
        start: int,
        end: int,
    ) -> None:
        """Append postings ``start`` to ``end`` of three buffers laid out as these arrays are."""
        width = FIELD_COUNT
        self.slots.frombytes(slots[4 * start : 4 * end])
        self.frequencies.frombytes(frequencies[width * start : width * end])
        self.saturated.frombytes(saturated[4 * start : 4 * end])

    def drop(self, dead: npt.NDArray[np.bool_]) -> None:
        """Drop the postings of the slots marked ``dead`` (at least one of them is here).

        The postings kept move up in place, in order — each run between two that leave is one
        contiguous move — and the arrays are cut after them: the term's postings are read once
        (which of them leave), and only those after the first leaving are moved. (Finding each
        slot with ``array.index`` compared Python ints one by one: a third of a second for 50
        texts at 100,000, most of it on the commonest terms.)
        """
        size = len(self.slots)
        slots = np.frombuffer(self.slots, dtype=np.int32)
        frequencies = np.frombuffer(self.frequencies, dtype=np.uint8)
        saturated = np.frombuffer(self.saturated, dtype=np.float32)
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
        del self.slots[write:]
        del self.frequencies[write * width :]
        del self.saturated[write:]


class Block:
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


def merge(terms: dict[str, TermPostings], blocks: list[Block], version: int) -> None:
    """Move the blocks' postings into their terms: one step per term, not per term and batch.
    Entries reach a term in batch order, as if each batch had been added alone; a term with
    entries of another normalisation than ``version`` is marked for recomputing."""
    block_terms = list(chain.from_iterable(block.terms for block in blocks))
    merged = list(dict.fromkeys(block_terms))
    ids = dict(zip(merged, range(len(merged)), strict=True))
    codes = np.fromiter(map(ids.__getitem__, block_terms), np.int64, len(block_terms))
    counts = np.concatenate([block.counts for block in blocks])
    order = np.argsort(np.repeat(codes, counts), kind="stable")
    slots = np.concatenate([block.slots for block in blocks])[order]
    table = np.concatenate([block.frequencies for block in blocks])[order]
    saturated = np.concatenate([block.saturated for block in blocks])[order]
    uniform = all(block.version == version for block in blocks)
    slot_bytes = memoryview(slots.tobytes())
    frequency_bytes = memoryview(table.tobytes())
    saturated_bytes = memoryview(saturated.tobytes())
    totals = np.bincount(codes, weights=counts, minlength=len(merged)).astype(np.int64)
    ends = np.cumsum(totals).tolist()
    start = 0
    for term, end in zip(merged, ends, strict=True):
        postings = terms.get(term)
        if postings is None:
            postings = terms[term] = TermPostings(version if uniform else -1)
        elif not uniform:
            postings.version = -1  # some entries predate the normalisation: recompute
        postings.extend(slot_bytes, frequency_bytes, saturated_bytes, start, end)
        start = end
