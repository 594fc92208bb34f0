"""Words related to a query word, from WordNet: how "apartments" reaches a tool about houses.

A tool's text says what it does in its own words; an agent asks in its own. The table
``data/related-words.tsv.gz`` (built by ``scripts/build_thesaurus.py`` from Princeton WordNet 3.0,
licence in ``data/WORDNET-LICENSE``) gives each English word the stems of its synonyms and
hypernyms (*near*: "documentary" gives film, movie, picture), and of its derivationally related
forms and pertainyms, its hypernyms' hypernyms and the words of its definitions (*far*: "financial"
gives finance; "documentary" gives product; "horoscope" gives zodiac). It is a fixed lexical
resource — no model, nothing learnt from a catalogue or a benchmark — so the same query always
gives the same related words (ADR 0014).

A word not in the table is reduced to its lemma by WordNet's own detachment rules ("apartments"
to "apartment", "renting" to "rent"); irregular forms ("mice") are in the table already. The table
is read on first use, kept as one bytes object, and searched by bisection over its sorted lines.
The same table tells which words WordNet has, so that a closed compound it lacks ("username") can
be split into two words it has (``compound_parts``, ADR 0021).
"""

from __future__ import annotations

import gzip
import threading
from array import array
from collections.abc import Iterator
from functools import lru_cache
from importlib import resources
from itertools import chain

__all__ = ["Related", "compound_parts", "related_words"]

# (near stems, far stems)
Related = tuple[tuple[str, ...], tuple[str, ...]]
_NOTHING: Related = ((), ())

_TABLE = "related-words.tsv.gz"
_MAX_WORD_LENGTH = 40
# A closed compound splits into words of at least this many letters: shorter ones are too often
# abbreviations, names or fragments that WordNet happens to list ("bse", "gen", "his").
_MIN_PART_LENGTH = 4
# English's bound combining forms: prefixes that are not words themselves but make compounds whose
# head is one ("cybersecurity" is security, "geolocation" a location, "subdomain" a domain). Those
# that negate or reverse their head (un-, non-, dis-, de-, in-, mis-) are not here: "unstaged" is
# not about what is staged. Forms that are words too ("micro", "auto", "super") split as words do.
_COMBINING_FORMS: tuple[str, ...] = (
    "aero", "agri", "agro", "astro", "bio", "crypto", "cyber", "eco", "electro", "geo", "giga",
    "hetero", "hydro", "inter", "intra", "meta", "multi", "nano", "neo", "neuro", "omni", "pre",
    "proto", "quasi", "socio", "sub", "tele", "thermo", "trans", "tri", "uni",
)  # fmt: skip
# WordNet's detachment rules (morphy), for nouns, verbs and adjectives in turn.
_DETACHMENTS: tuple[tuple[str, str], ...] = (
    ("s", ""),
    ("ses", "s"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("ies", "y"),
    ("es", "e"),
    ("es", ""),
    ("ed", "e"),
    ("ed", ""),
    ("ing", "e"),
    ("ing", ""),
    ("er", ""),
    ("est", ""),
    ("er", "e"),
    ("est", "e"),
)


class _Table:
    """The sorted lines of the table, and where each starts."""

    __slots__ = ("_data", "_starts")

    def __init__(self, data: bytes) -> None:
        self._data = data
        starts = array("I", [0])
        at = data.find(b"\n")
        while at != -1 and at + 1 < len(data):
            starts.append(at + 1)
            at = data.find(b"\n", at + 1)
        self._starts = starts

    def line(self, word: str) -> bytes | None:
        """The fields after ``word`` on its line, when the table has it."""
        key = word.encode("ascii") + b"\t"
        data, starts = self._data, self._starts
        low, high = 0, len(starts)
        while low < high:
            middle = (low + high) // 2
            start = starts[middle]
            if data[start : start + len(key)] < key:
                low = middle + 1
            else:
                high = middle
        if low == len(starts):
            return None
        start = starts[low]
        if data[start : start + len(key)] != key:
            return None
        end = data.find(b"\n", start)
        return data[start + len(key) : end if end != -1 else len(data)]


_table: _Table | None = None
_table_lock = threading.Lock()


def _load() -> _Table:
    global _table  # noqa: PLW0603  # read once, shared by every index
    with _table_lock:
        if _table is None:
            packed = resources.files("navigator.search").joinpath("data", _TABLE).read_bytes()
            _table = _Table(gzip.decompress(packed))
        return _table


def _parse(fields: bytes) -> Related:
    near, _, far = fields.decode("ascii").partition("\t")
    return tuple(near.split()), tuple(far.split())


def _lemmas(word: str) -> Iterator[str]:
    """The forms WordNet's detachment rules reduce a word to, in rule order."""
    for suffix, ending in _DETACHMENTS:
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            yield word[: -len(suffix)] + ending


def _plain(word: str) -> bool:
    return word.isascii() and word.isalpha() and len(word) <= _MAX_WORD_LENGTH


@lru_cache(maxsize=8192)
def related_words(word: str) -> Related:
    """The stems related to a case-folded word: near (synonyms, hypernyms) and far (derived
    forms and pertainyms, then hypernyms' hypernyms)."""
    if not _plain(word):
        return _NOTHING
    table = _load()
    fields = table.line(word)
    if fields is not None:
        return _parse(fields)
    near: dict[str, None] = {}
    far: dict[str, None] = {}
    for lemma in _lemmas(word):
        lemma_fields = table.line(lemma)
        if lemma_fields is not None:
            lemma_near, lemma_far = _parse(lemma_fields)
            near.update(dict.fromkeys(lemma_near))
            far.update(dict.fromkeys(lemma_far))
    return tuple(near), tuple(stem for stem in far if stem not in near)


def _known(table: _Table, word: str) -> bool:
    """Whether WordNet has a case-folded word, as written or through its lemma."""
    return any(table.line(form) is not None for form in chain((word,), _lemmas(word)))


@lru_cache(maxsize=8192)
def compound_parts(word: str) -> tuple[str, ...]:
    """The two parts a closed compound is written of, when WordNet has the head and not the whole:
    "username" gives user and name, "chargebacks" charge and backs, "cryptocurrency" crypto and
    currency; () for any other word.

    The first part is a word WordNet has or one of English's bound combining forms (``sub``,
    ``geo``, ``crypto``; tried only when no split into two words exists). Each word part has at
    least four letters, and the most even split wins (the first, of equals), so the same word
    always splits the same way. Tools and agents write the same thing closed, open or hyphenated
    ("user name", "user-name"); the parts let each reach the other (ADR 0021).
    """
    if len(word) < 2 * _MIN_PART_LENGTH - 1 or not _plain(word):
        return ()
    table = _load()
    if _known(table, word):
        return ()
    best: tuple[str, ...] = ()
    best_shorter = 0
    for cut in range(_MIN_PART_LENGTH, len(word) - _MIN_PART_LENGTH + 1):
        shorter = min(cut, len(word) - cut)
        if shorter > best_shorter and _known(table, word[:cut]) and _known(table, word[cut:]):
            best, best_shorter = (word[:cut], word[cut:]), shorter
    if best:
        return best
    for form in _COMBINING_FORMS:
        head = word[len(form) :]
        if word.startswith(form) and len(head) >= _MIN_PART_LENGTH and _known(table, head):
            return (form, head)
    return ()
