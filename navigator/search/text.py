"""Turning tool text and queries into index terms.

Two kinds of text reach the index. Identifiers — tool names, parameter names, roles and holders —
are split on ``_``, ``-``, ``.`` and camelCase boundaries (``listDatabases``, ``list_databases`` and
``list-databases`` all give ``list`` and ``databases``). Prose — titles and descriptions — is split
into words; a camelCase word in prose is usually a proper name (``GitHub``, ``PostgreSQL``), so it
is kept whole and its parts are added beside it. So is a closed compound that WordNet lacks but
whose two halves it has ("username": user, name; ADR 0021), so that it meets the same thing
written open. Every word is case-folded, English stopwords are dropped, and what remains is
reduced to its Snowball (Porter 2) stem, so that "tables", "table" and "tabled" meet. A word whose
stem differs from it is also kept as written, marked (``=networks`` beside ``network``): the stem
makes "networks" find "network", and the word as written lets a query for "networks" prefer the
tool that lists networks to the one that creates a network (ADR 0019).
Nothing here depends on the catalogue: the same text always gives the same terms.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain

import Stemmer  # type: ignore[import-not-found]  # PyStemmer ships no type hints

from navigator.search.ascii_words import (
    ASCII_APOSTROPHE_RUNS,
    ASCII_HYPHEN_RUNS,
    ascii_runs,
    ascii_words,
)
from navigator.search.languages import (
    GERMAN_STOPWORDS,
    RUSSIAN_STOPWORDS,
    STOPWORDS,
    is_german,
    is_russian,
    maybe_german,
    unspaced_pieces,
)
from navigator.search.thesaurus import compound_parts
from navigator.search.values import query_segments

__all__ = [
    "STOPWORDS",
    "WRITTEN",
    "QueryWord",
    "TextAnalyzer",
    "split_identifier",
    "untitled",
]

# The mark of a term that is a word as written rather than a stem ("=networks"): no stem has it,
# since words are runs of letters and digits.
WRITTEN = "="


# A word: a run of letters and digits (Unicode aware); apostrophes inside a word are dropped.
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# An English clitic that ends a word: "what's", "I'm", "I'd", "we'll", "you're", "I've", and the
# "t" of "n't", whose rest NLTK's list holds ("don", "can", "isn"). Its word is the rest.
_CLITIC = re.compile(r"'(?:s|m|d|ll|re|ve|t)$", re.IGNORECASE)
# Words joined by single hyphens, as in "non-profit" or "e-mail".
_HYPHENATED = re.compile(r"[^\W_]+(?:-[^\W_]+)+")
# Parts of one identifier word: ACRONYMS before a capitalised word, Capitalised or lower runs with
# trailing digits kept (``base64``, ``ec2``), upper-case runs, digit runs.
_CAMEL_PART = re.compile(r"[A-Z]{2,}(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")
_MIN_TERM_LENGTH = 2
# How much of a tool's text is read: the document keeps all of it, the index reads this much.
_MAX_PROSE_CHARS = 8192
_MAX_PARAMETERS = 64
_MAX_PARAMETER_CHARS = 1024
# Stems are cached; the cache is dropped whole when it grows past this many words.
_STEM_CACHE_LIMIT = 200_000
# Identifiers and parameter descriptions repeat across tools (the role on every tool of an
# assignment, ``limit`` and ``cursor`` everywhere): their terms are cached whole, up to this many.
_TEXT_CACHE_LIMIT = 50_000


def untitled(title: str) -> bool:
    """Whether a tool with this title has none to show: empty, or only white space."""
    return not title or title.isspace()


def _word_of(raw: str) -> str:
    """The word a run of letters joined by apostrophes stands for: without an ending clitic
    ("what's" is "what", "I'd" is "I" and not "id"), then without apostrophes ("O'Neil")."""
    if "'" not in raw:
        return raw
    return _CLITIC.sub("", raw).replace("'", "")


def _normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _camel_parts(word: str) -> list[str]:
    """The camelCase parts of one word, case-folded; ``[word]`` when it has none."""
    if word.islower() or word.isupper() or not word.isascii():
        return [word.casefold()]
    parts = _CAMEL_PART.findall(word)
    if len(parts) <= 1:
        return [word.casefold()]
    return [part.casefold() for part in parts]


def split_identifier(identifier: str) -> list[str]:
    """Split a tool, parameter, role or holder name into case-folded words.

    >>> split_identifier("getHTTPResponse_v2.list-all")
    ['get', 'http', 'response', 'v2', 'list', 'all']
    """
    words: list[str] = []
    for word in _WORD.findall(_normalize(identifier).replace("'", " ")):
        words.extend(_camel_parts(word))
    return words


def _prose_parts(word: str) -> list[str]:
    """The parts of one word of prose, case-folded: its camelCase parts, else the two words of a
    closed compound WordNet does not know ("username": user, name), unless one is a stopword
    ("dropdown" is not about dropping); ``[]`` when it has none."""
    parts = _camel_parts(word)
    if len(parts) > 1:
        return parts
    compound = compound_parts(parts[0])
    return [] if any(part in STOPWORDS for part in compound) else list(compound)


def _prose_words(text: str) -> list[tuple[str, bool]]:
    """Case-folded words of prose, each with whether it is a word as written.

    A camelCase word or a closed compound gives itself, then its parts; a hyphenated compound
    (``non-profit``) gives its parts, then the joined word. Joined words, camelCase wholes and
    closed compounds are not "as written".
    """
    normalized = _normalize(text)
    words: list[tuple[str, bool]] = []
    for raw in _WORD.findall(normalized):
        word = _word_of(raw)
        pieces = unspaced_pieces(word)
        if pieces is not None:  # bigrams are never corrected: two characters have no typo
            words.extend((piece.casefold(), not unspaced_pieces(piece)) for piece in pieces)
            continue
        parts = _prose_parts(word)
        words.append((word.casefold(), not parts))
        words.extend((part, True) for part in parts)
    for compound in _HYPHENATED.findall(normalized):
        words.append((compound.replace("-", "").replace("'", "").casefold(), False))
    return words


def _remember(
    cache: dict[str, tuple[str, ...]], text: str, terms: tuple[str, ...]
) -> tuple[str, ...]:
    """Cache a whole text's terms, dropping the cache first when it is full."""
    if len(cache) >= _TEXT_CACHE_LIMIT:
        cache.clear()
    cache[text] = terms
    return terms


@dataclass(frozen=True, slots=True)
class QueryWord:
    """One word of a query: its case-folded surface form, its stem, whether a misspelling of
    it may be corrected (not for a camelCase word, whose parts are words of the query too), and
    whether it is part of a value the query carries (``values``): a path, a quoted string, an id."""

    surface: str
    stem: str
    correctable: bool = True
    value: bool = False


class TextAnalyzer:
    """Stems words with bounded caches; one instance per index (PyStemmer is not thread-safe).

    A catalogue's vocabulary is small next to the number of words it holds, so what a raw word of
    prose, a hyphenated compound or a word of an identifier becomes — case-folded, split, filtered
    and stemmed — is cached by its raw text, and each occurrence costs one look-up. Identifiers
    and parameter descriptions, which repeat whole from tool to tool, are cached whole.
    """

    __slots__ = (
        "_cache",
        "_compounds",
        "_german",
        "_german_cache",
        "_german_words",
        "_identifier_words",
        "_identifiers",
        "_parameter_texts",
        "_russian",
        "_stemmer",
        "_words",
    )

    def __init__(self) -> None:
        self._stemmer = Stemmer.Stemmer("english")
        self._russian = Stemmer.Stemmer("russian")
        self._german = Stemmer.Stemmer("german")
        self._cache: dict[str, str] = {}
        self._german_cache: dict[str, str] = {}
        # raw word of German prose -> its terms, stemmed as German
        self._german_words: dict[str, tuple[str, ...]] = {}
        # raw word of prose -> the stems it gives (itself, then its camelCase parts; kept ones)
        self._words: dict[str, tuple[str, ...]] = {}
        # hyphenated compound as written -> the stem of the joined word, when kept
        self._compounds: dict[str, tuple[str, ...]] = {}
        # raw word of an identifier -> the stems of its (camelCase) parts
        self._identifier_words: dict[str, tuple[str, ...]] = {}
        # whole identifier -> its terms; whole parameter description -> its terms
        self._identifiers: dict[str, tuple[str, ...]] = {}
        self._parameter_texts: dict[str, tuple[str, ...]] = {}

    def stem(self, word: str) -> str:
        """The Snowball stem of one case-folded word: Russian for a Cyrillic word, else English."""
        stem = self._cache.get(word)
        if stem is None:
            if len(self._cache) >= _STEM_CACHE_LIMIT:
                self._cache.clear()
            stemmer = self._russian if is_russian(word) else self._stemmer
            stem = str(stemmer.stemWord(word))
            self._cache[word] = stem
        return stem

    def german_stem(self, word: str) -> str:
        """The stem of a case-folded word of German text: a Latin word's German Snowball stem."""
        if word.isascii() or not is_russian(word):
            stem = self._german_cache.get(word)
            if stem is None:
                if len(self._german_cache) >= _STEM_CACHE_LIMIT:
                    self._german_cache.clear()
                stem = self._german_cache[word] = str(self._german.stemWord(word))
            return stem
        return self.stem(word)

    def _keep(self, word: str) -> bool:
        return (
            len(word) >= _MIN_TERM_LENGTH
            and word not in STOPWORDS
            and (word.isascii() or word not in RUSSIAN_STOPWORDS)
        )

    def _keep_german(self, word: str) -> bool:
        return self._keep(word) and word not in GERMAN_STOPWORDS

    def prose_surfaces(self, text: str) -> list[str]:
        """The words of prose that become terms, before stemming."""
        return [word for word, _ in _prose_words(text) if self._keep(word)]

    def identifier_surfaces(self, identifier: str) -> list[str]:
        """The words of an identifier that become terms, before stemming."""
        return [word for word in split_identifier(identifier) if self._keep(word)]

    def prose_terms(self, text: str) -> list[str]:
        """The terms of prose: ``prose_surfaces`` in order, each as its stem and, where that
        differs, as written (``_word_terms``)."""
        if text.isascii():  # NFKC leaves ASCII as it is
            if "'" in text:  # ``_WORD``: words joined by apostrophes are one
                raws = ascii_runs(text, ASCII_APOSTROPHE_RUNS, "'", 1)
            else:
                raws = ascii_words(text)
            compounds = ascii_runs(text, ASCII_HYPHEN_RUNS, "-", 2) if "-" in text else []
        else:
            normalized = _normalize(text)
            raws = _WORD.findall(normalized)
            compounds = _HYPHENATED.findall(normalized) if "-" in normalized else []
        if maybe_german(text) and is_german([_word_of(raw).casefold() for raw in raws]):
            return self._cached(self._german_words, raws, self._analyse_german_word)
        terms = self._cached(self._words, raws, self._analyse_word)
        if compounds:
            terms += self._cached(self._compounds, compounds, self._analyse_compound)
        return terms

    def identifier_terms(self, identifier: str) -> list[str]:
        """The terms of an identifier: ``identifier_surfaces`` in order, as ``prose_terms``."""
        terms = self._identifiers.get(identifier)
        if terms is None:
            if identifier.isascii():
                raws = ascii_words(identifier)
            else:
                raws = _WORD.findall(_normalize(identifier).replace("'", " "))
            words = self._cached(self._identifier_words, raws, self._analyse_identifier_word)
            terms = _remember(self._identifiers, identifier, tuple(words))
        return list(terms)

    def _parameter_prose_terms(self, text: str) -> tuple[str, ...]:
        """``prose_terms`` of a parameter's description, cached whole."""
        terms = self._parameter_texts.get(text)
        if terms is None:
            terms = _remember(self._parameter_texts, text, tuple(self.prose_terms(text)))
        return terms

    def _cached(
        self,
        cache: dict[str, tuple[str, ...]],
        raws: list[str],
        analyse: Callable[[str], tuple[str, ...]],
    ) -> list[str]:
        """The terms of each raw text in turn, analysed once and then looked up."""
        try:
            return list(chain.from_iterable(map(cache.__getitem__, raws)))
        except KeyError:
            if len(cache) + len(raws) > _STEM_CACHE_LIMIT:
                cache.clear()
            for raw in raws:
                if raw not in cache:
                    cache[raw] = analyse(raw)
            return list(chain.from_iterable(map(cache.__getitem__, raws)))

    def _word_terms(self, words: list[str], german: bool = False) -> tuple[str, ...]:
        """The terms of case-folded words: each kept word's stem, followed by the word as
        written (``WRITTEN`` + word) when the stem is another string; ``german``: of German
        text (German stems, German stopwords dropped)."""
        terms: list[str] = []
        keep, stem_of = (self._keep_german, self.german_stem) if german else (self._keep, self.stem)
        for word in words:
            if keep(word):
                stem = stem_of(word)
                terms.append(stem)
                if stem != word:
                    terms.append(WRITTEN + word)
        return tuple(terms)

    def _analyse_word(self, raw: str) -> tuple[str, ...]:
        word = _word_of(raw)
        pieces = unspaced_pieces(word)
        if pieces is not None:
            return self._word_terms([piece.casefold() for piece in pieces])
        return self._word_terms([word.casefold(), *_prose_parts(word)])

    def _analyse_german_word(self, raw: str) -> tuple[str, ...]:
        word = _word_of(raw)
        return self._word_terms([word.casefold(), *_prose_parts(word)], german=True)

    def _analyse_compound(self, compound: str) -> tuple[str, ...]:
        return self._word_terms([compound.replace("-", "").replace("'", "").casefold()])

    def _analyse_identifier_word(self, raw: str) -> tuple[str, ...]:
        pieces = unspaced_pieces(raw)
        if pieces is not None:
            return self._word_terms([piece.casefold() for piece in pieces])
        return self._word_terms(_camel_parts(raw))

    def tool_terms(
        self,
        name: str,
        title: str,
        description: str,
        parameters: tuple[tuple[str, str], ...],
        role: str,
    ) -> tuple[list[str], list[str], list[str], list[str], list[str]]:
        """The terms of a tool's fields: name, title, description, parameters (names and
        descriptions), role. Long texts are read up to a bound.

        A tool without a title (``untitled``) is shown by its name (MCP: "if not provided, the
        name should be used for display"), so its name's terms are its title's too: what a tool
        is called counts the same whether or not its author wrote it out twice (ADR 0027).
        """
        parameter_terms: list[str] = []
        for parameter, described in parameters[:_MAX_PARAMETERS]:
            parameter_terms += self.identifier_terms(parameter)
            parameter_terms += self._parameter_prose_terms(described[:_MAX_PARAMETER_CHARS])
        name_terms = self.identifier_terms(name)
        return (
            name_terms,
            list(name_terms) if untitled(title) else self.prose_terms(title[:_MAX_PROSE_CHARS]),
            self.prose_terms(description[:_MAX_PROSE_CHARS]),
            parameter_terms,
            self.identifier_terms(role),
        )

    def query_words(self, query: str) -> list[QueryWord]:
        """The words of a query, in order, with their stems (repeats kept: they add weight).

        Underscores, dots and hyphens split words as in identifiers, so a query may name a tool
        (``list_databases``); a camelCase word is kept whole and split, as in prose.
        """
        words = [
            (word, as_written and not value, value)
            for segment, value in query_segments(query)
            for word, as_written in _prose_words(segment)
        ]
        keep, stem = self._keep, self.stem
        if maybe_german(query) and is_german([word for word, _, _ in words]):
            keep, stem = self._keep_german, self.german_stem
        return [
            QueryWord(word, stem(word), correctable, value)
            for word, correctable, value in words
            if keep(word)
        ]
