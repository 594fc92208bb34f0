"""Walking scored texts best first into hits, in the order a page shows them.

The walk asks grants only of the texts it visits, so it visits as few as it can: a hit leaves as
soon as no text still unvisited could beat it, and the walk stops once it holds the hits wanted.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from navigator.search.documents import Hit

__all__ = ["first_hits"]

# How many of the best-scored texts a search sorts first; later chunks grow fourfold.
_FIRST_CHUNK = 64


def first_hits(
    candidates: npt.NDArray[np.intp],
    bounds: npt.NDArray[np.float64],
    wanted: int,
    hit_for: Callable[[int], Hit | None],
) -> list[Hit]:
    """The first ``wanted`` hits in (score descending, address ascending) order.

    ``bounds[slot]`` is at least the score of the hit ``hit_for(slot)`` makes, so slots are visited
    in descending bound, and a hit leaves once no unvisited slot could make a better one. Slots are
    taken in growing chunks of the best remaining bounds (whole ties included), so that a query
    matching most of the catalogue sorts only what it visits.
    """
    heap: list[tuple[float, str, str, Hit]] = []
    hits: list[Hit] = []
    remaining = candidates
    chunk_size = max(_FIRST_CHUNK, 4 * wanted)
    while remaining.size:
        remaining_bounds = bounds[remaining]
        if remaining.size > chunk_size:
            cut = remaining.size - chunk_size
            threshold = np.partition(remaining_bounds, cut)[cut]
            taken = remaining_bounds >= threshold
            chunk, remaining = remaining[taken], remaining[~taken]
            rest = float(bounds[remaining].max()) if remaining.size else -1.0
        else:
            chunk, remaining, rest = remaining, remaining[:0], -1.0
        ordered = chunk[np.argsort(-bounds[chunk], kind="stable")].tolist()
        for position, slot in enumerate(ordered):
            hit = hit_for(slot)
            if hit is not None:
                heapq.heappush(heap, (-hit.score, hit.address, hit.document.address, hit))
            following = rest
            if position + 1 < len(ordered):
                following = float(bounds[ordered[position + 1]])
            while heap and -heap[0][0] > following:
                hits.append(heapq.heappop(heap)[3])
                if len(hits) == wanted:
                    return hits
        chunk_size *= 4
    while heap and len(hits) < wanted:
        hits.append(heapq.heappop(heap)[3])
    return hits
