"""How common a word is in general English: a request's own words say less than its subject.

An agent asks in sentences ("Can you help me find the current price of Apple stock?"), and the
words that make the sentence a request — help, find, current, need, make — are the commonest
words of English. A catalogue of a few hundred tools cannot tell that from its own statistics: a
common word that only two tools happen to use is as rare there as "stock". The table
``data/common-words.tsv`` (built by ``scripts/build_common_words.py`` from wordfreq's English
list, licence in ``data/WORDFREQ-LICENSE``) gives the Zipf frequency — log10 of occurrences per
billion words — of the 2,800 words commoner than one in about 30,000; ``RankingSettings`` turns
it into a query word's weight (ADR 0020). Any other word is rare enough to count fully. A related
word (``thesaurus``) comes as a Snowball stem; a stem is as common as the commonest word with that
stem ("inform" as "information").
"""

from __future__ import annotations

import threading
from importlib import resources

from navigator.search.text import TextAnalyzer

__all__ = ["RARE_ZIPF", "stem_zipf_frequency", "zipf_frequency"]

# The table holds the words commoner than this; every other word counts as this rare.
RARE_ZIPF = 4.5

_TABLE = "common-words.tsv"
# word -> its Zipf frequency, and stem -> its commonest word's; read once, shared by every index
_tables: tuple[dict[str, float], dict[str, float]] | None = None
_tables_lock = threading.Lock()


def _load() -> tuple[dict[str, float], dict[str, float]]:
    global _tables  # noqa: PLW0603
    with _tables_lock:
        if _tables is None:
            text = resources.files("navigator.search").joinpath("data", _TABLE).read_text()
            rows = (line.split("\t") for line in text.splitlines())
            words = {word: float(zipf) for word, zipf in rows}
            analyzer = TextAnalyzer()  # stems as the index does; used under the lock, once
            stems: dict[str, float] = {}
            for word, zipf in words.items():
                key = analyzer.stem(word)
                stems[key] = max(zipf, stems.get(key, zipf))
            _tables = words, stems
        return _tables


def zipf_frequency(word: str) -> float:
    """The Zipf frequency of a case-folded word in general English; ``RARE_ZIPF`` for any word
    the table does not hold."""
    words, _ = _tables if _tables is not None else _load()
    return words.get(word, RARE_ZIPF)


def stem_zipf_frequency(stem: str) -> float:
    """The Zipf frequency of the commonest word with this Snowball stem; ``RARE_ZIPF`` when the
    table holds none."""
    _, stems = _tables if _tables is not None else _load()
    return stems.get(stem, RARE_ZIPF)
