"""How common a word is in general English: a request's own words say less than its subject.

An agent asks in sentences ("Can you help me find the current price of Apple stock?"), and the
words that make the sentence a request — help, find, current, need, make — are the commonest
words of English. A catalogue of a few hundred tools cannot tell that from its own statistics: a
common word that only two tools happen to use is as rare there as "stock". The table
``data/common-words.tsv`` (built by ``scripts/build_common_words.py`` from wordfreq's English
list, licence in ``data/WORDFREQ-LICENSE``) gives the Zipf frequency — log10 of occurrences per
billion words — of the 2,900 words commoner than one in about 30,000; ``RankingSettings`` turns
it into a query word's weight (ADR 0020). Any other word is rare enough to count fully.
"""

from __future__ import annotations

import threading
from importlib import resources

__all__ = ["RARE_ZIPF", "zipf_frequency"]

# The table holds the words commoner than this; every other word counts as this rare.
RARE_ZIPF = 4.5

_TABLE = "common-words.tsv"
_table: dict[str, float] | None = None
_table_lock = threading.Lock()


def _load() -> dict[str, float]:
    global _table  # noqa: PLW0603  # read once, shared by every index
    with _table_lock:
        if _table is None:
            text = resources.files("navigator.search").joinpath("data", _TABLE).read_text()
            _table = {
                word: float(zipf) for word, zipf in (line.split("\t") for line in text.splitlines())
            }
        return _table


def zipf_frequency(word: str) -> float:
    """The Zipf frequency of a case-folded word in general English; ``RARE_ZIPF`` for any word
    the table does not hold."""
    table = _table if _table is not None else _load()
    return table.get(word, RARE_ZIPF)
