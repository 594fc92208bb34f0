"""Analysing many tool texts at once, for an index build: the terms ``TextAnalyzer.tool_terms``
gives each text, as numpy arrays instead of a list per text and field.

Text by text, analysis costs a dozen Python calls per text and a look-up per word. Here a batch's
titles (then its descriptions) are joined into one string, split into words in one pass, and each
word is turned into term numbers by a look-up of the whole list; a word is analysed (split, folded,
filtered, stemmed — by the ``TextAnalyzer`` itself) the first time it is seen. Texts this reading
does not cover — non-ASCII, possibly German, or with an apostrophe that does not join two words —
are analysed one by one with ``TextAnalyzer.prose_terms``. Either way each text and field gets
exactly the terms ``tool_terms`` gives it, and the batch's distinct terms come in the order
``tool_terms`` would first use them, text by text and field by field: postings built from a
``TermBatch`` are those built from the same texts' ``tool_terms``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import cast

import numpy as np
import numpy.typing as npt

from navigator.search.ascii_words import ASCII_APOSTROPHE_RUNS, ASCII_HYPHEN_RUNS, ascii_runs
from navigator.search.languages import maybe_german
from navigator.search.ranking import FIELD_COUNT
from navigator.search.text import (
    _MAX_PARAMETER_CHARS,
    _MAX_PARAMETERS,
    _MAX_PROSE_CHARS,
    TextAnalyzer,
    untitled,
)

__all__ = ["BatchAnalyzer", "TermBatch"]

IntArray = npt.NDArray[np.int64]

# (name, title, description, parameters, role): one text, as ``TextAnalyzer.tool_terms`` reads it
AnalysedText = tuple[str, str, str, tuple[tuple[str, str], ...], str]

# Joins the texts of a batch: a token no text of the fast reading holds (texts with \x01 are read
# one by one), with a hyphen so that the compound pass keeps it too.
_MARK = "\x01"
_JOIN = " -\x01- "
# Apostrophe-joined words kept whole, every other separator a space, \x01 kept.
_WORDS_TABLE = bytes(byte if byte == 1 else ASCII_APOSTROPHE_RUNS[byte] for byte in range(256))
# Hyphen-joined runs kept whole, every other separator (apostrophes too) a space, \x01 kept.
_COMPOUNDS_TABLE = bytes(byte if byte == 1 else ASCII_HYPHEN_RUNS[byte] for byte in range(256))
# Sort keys of an occurrence: its cell (text * FIELD_COUNT + field), then its source within the
# field (0: words, 1: hyphenated compounds, which ``prose_terms`` gives after the words), then its
# position among that source's occurrences.
_CELL_SHIFT = 40
_SOURCE_SHIFT = 32
# Whole parameter lists are cached (tools of a family share them), up to this many.
_PARAMETER_SETS = 50_000


@dataclass(frozen=True, slots=True)
class TermBatch:
    """The terms of a batch of texts: ``terms`` are its distinct terms in order of first use;
    occurrence ``i`` is of ``terms[codes[i]]`` in cell ``cells[i]`` (text * FIELD_COUNT + field),
    in no particular order."""

    count: int
    terms: list[str]
    codes: IntArray
    cells: IntArray


def _fast(text: str) -> bool:
    """Whether the joined reading gives this text's words: ASCII, no \\x01, not possibly German
    (German text is stemmed as German), and every apostrophe between two letters or digits (so
    that no apostrophe-joined run needs splitting)."""
    if not text.isascii() or _MARK in text or maybe_german(text):
        return False
    if "'" not in text:
        return True
    padded = " " + text.encode("ascii").translate(_WORDS_TABLE).decode("ascii") + " "
    return " '" not in padded and "' " not in padded and "''" not in padded


class BatchAnalyzer:
    """Term numbers for the words a ``TextAnalyzer`` reads; one per index build (it keeps every
    word it has seen, for the build's life)."""

    __slots__ = (
        "_analyzer",
        "_compound_ids",
        "_identifier_ids",
        "_parameter_ids",
        "_parameter_sets",
        "_term_ids",
        "_terms",
        "_word_counts",
        "_word_ids",
        "_word_starts",
        "_word_terms",
    )

    def __init__(self, analyzer: TextAnalyzer) -> None:
        self._analyzer = analyzer
        self._terms: list[str] = []
        self._term_ids: dict[str, int] = {}
        # prose words: word -> its number; per number, where its terms start and how many
        self._word_ids: dict[str, int] = {_MARK: 0}
        self._word_starts: list[int] = [0]
        self._word_counts: list[int] = [0]
        self._word_terms: list[int] = []
        self._compound_ids: dict[str, tuple[int, ...]] = {}
        self._identifier_ids: dict[str, tuple[int, ...]] = {}
        self._parameter_ids: dict[str, tuple[int, ...]] = {}
        self._parameter_sets: dict[tuple[tuple[str, str], ...], tuple[int, ...]] = {}

    def _ids(self, terms: list[str] | tuple[str, ...]) -> tuple[int, ...]:
        ids = self._term_ids
        numbers = tuple(map(ids.get, terms))
        if None not in numbers:  # the usual case: every term seen before
            return cast("tuple[int, ...]", numbers)
        found = []
        for term in terms:
            number = ids.get(term)
            if number is None:
                number = ids[term] = len(self._terms)
                self._terms.append(term)
            found.append(number)
        return tuple(found)

    def _memo(
        self, known: dict[str, tuple[int, ...]], text: str, analyse: Callable[[str], list[str]]
    ) -> tuple[int, ...]:
        numbers = known.get(text)
        if numbers is None:
            numbers = known[text] = self._ids(analyse(text))
        return numbers

    def _identifier(self, identifier: str) -> tuple[int, ...]:
        return self._memo(self._identifier_ids, identifier, self._analyzer.identifier_terms)

    def _parameter_text(self, text: str) -> tuple[int, ...]:
        return self._memo(self._parameter_ids, text, self._analyzer.prose_terms)

    def terms(self, texts: list[AnalysedText]) -> TermBatch:
        """The terms of ``texts``, as ``tool_terms`` gives them."""
        count = len(texts)
        if count * FIELD_COUNT >= 1 << (63 - _CELL_SHIFT):
            raise ValueError("too many texts for one batch")
        # Names, parameters and roles: identifiers and parameter texts, each analysed once.
        numbers: list[int] = []
        lengths: list[int] = []
        identifier, parameters_of = self._identifier, self._parameters
        # An untitled text's name is its title too (``tool_terms``); its title's prose is none.
        titles: list[str] = []
        for name, title, _, parameters, role in texts:
            name_terms = identifier(name)
            title_terms = name_terms if untitled(title) else ()
            parameter_terms = parameters_of(parameters)
            role_terms = identifier(role)
            numbers += name_terms
            numbers += title_terms
            numbers += parameter_terms
            numbers += role_terms
            lengths += (len(name_terms), len(title_terms), len(parameter_terms), len(role_terms))
            titles.append("" if title_terms else title)
        text_cells = np.arange(count, dtype=np.int64)[:, None] * FIELD_COUNT
        run_cells = (text_cells + np.asarray([0, 1, 3, 4], dtype=np.int64)).ravel()
        parts = [(np.asarray(numbers, dtype=np.int64), np.repeat(run_cells, lengths), 0)]
        descriptions = [text[2] for text in texts]
        for field, whole in ((1, titles), (2, descriptions)):
            column = [
                text[:_MAX_PROSE_CHARS] if len(text) > _MAX_PROSE_CHARS else text for text in whole
            ]
            parts += self._prose(column, field)
        all_numbers = np.concatenate([part[0] for part in parts])
        if not all_numbers.size:
            empty = np.zeros(0, dtype=np.int64)
            return TermBatch(count, [], empty, empty)
        all_cells = np.concatenate([part[1] for part in parts])
        # Each occurrence's place in the order tool_terms gives them: its cell, its source within
        # the cell, its place within that source (the parts list each cell's terms in order).
        keys = np.concatenate(
            [
                (cells << _CELL_SHIFT) + (source << _SOURCE_SHIFT) + np.arange(len(cells))
                for _, cells, source in parts
            ]
        )
        first = np.full(len(self._terms), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, all_numbers, keys)
        used = np.flatnonzero(first != np.iinfo(np.int64).max)
        by_first_use = used[np.argsort(first[used])]
        local = np.zeros(len(self._terms), dtype=np.int64)
        local[by_first_use] = np.arange(len(by_first_use), dtype=np.int64)
        terms = self._terms
        return TermBatch(
            count,
            [terms[number] for number in by_first_use.tolist()],
            local[all_numbers],
            all_cells,
        )

    def _parameters(self, parameters: tuple[tuple[str, str], ...]) -> tuple[int, ...]:
        numbers = self._parameter_sets.get(parameters)
        if numbers is None:
            found: list[int] = []
            for parameter, described in parameters[:_MAX_PARAMETERS]:
                found += self._identifier(parameter)
                found += self._parameter_text(described[:_MAX_PARAMETER_CHARS])
            numbers = tuple(found)
            if len(self._parameter_sets) >= _PARAMETER_SETS:
                self._parameter_sets.clear()
            self._parameter_sets[parameters] = numbers
        return numbers

    def _prose(self, column: list[str], field: int) -> list[tuple[IntArray, IntArray, int]]:
        """The terms of one prose field of every text, as (term numbers, cells, source) parts:
        the joined reading for most texts, one by one for the rest."""
        fast: list[int] = []
        slow_numbers: list[int] = []
        slow_cells: list[int] = []
        for text_number, text in enumerate(column):
            if not text:
                continue
            if _fast(text):
                fast.append(text_number)
                continue
            found = self._ids(self._analyzer.prose_terms(text))
            slow_numbers += found
            slow_cells += repeat(text_number * FIELD_COUNT + field, len(found))
        parts = [(np.asarray(slow_numbers, dtype=np.int64), np.asarray(slow_cells, np.int64), 0)]
        if not fast:
            return parts
        fast_texts = [column[number] for number in fast]
        fast_cells = np.asarray(fast, dtype=np.int64) * FIELD_COUNT + field
        joined = _JOIN.join(fast_texts).encode("ascii")
        # Words: each text's words in order, texts separated by the mark (word 0, no terms).
        words = joined.translate(_WORDS_TABLE).decode("ascii").split()
        word_numbers = self._word_numbers(words)
        counts = np.asarray(self._word_counts, dtype=np.int64)[word_numbers]
        starts = np.asarray(self._word_starts, dtype=np.int64)[word_numbers]
        text_of_word = np.cumsum(word_numbers == 0)
        total = int(counts.sum())
        if total:
            ends = np.cumsum(counts)
            within = np.arange(total, dtype=np.int64) - np.repeat(ends - counts, counts)
            term_numbers = np.asarray(self._word_terms, dtype=np.int64)[
                np.repeat(starts, counts) + within
            ]
            parts.append((term_numbers, fast_cells[np.repeat(text_of_word, counts)], 0))
        # Hyphenated compounds, after the words of their text.
        with_hyphens = [index for index, text in enumerate(fast_texts) if "-" in text]
        if not with_hyphens:
            return parts
        joined = _JOIN.join([fast_texts[index] for index in with_hyphens]).encode("ascii")
        tokens = joined.translate(_COMPOUNDS_TABLE).decode("ascii").split()
        compound_numbers: list[int] = []
        compound_cells: list[int] = []
        position = 0
        cell = int(fast_cells[with_hyphens[0]])
        compounds = self._compound_ids
        mark = _JOIN.strip()
        for token in [token for token in tokens if "-" in token]:
            if token == mark:
                position += 1
                cell = int(fast_cells[with_hyphens[position]])
                continue
            compound_terms = compounds.get(token)
            if compound_terms is None:
                # a token that is one run (the usual case) or holds several
                runs: list[int] = []
                for compound in ascii_runs(token, _COMPOUNDS_TABLE, "-", 2):
                    runs += self._ids(self._analyzer._analyse_compound(compound))
                compound_terms = compounds[token] = tuple(runs)
            compound_numbers += compound_terms
            compound_cells += repeat(cell, len(compound_terms))
        parts.append(
            (
                np.asarray(compound_numbers, dtype=np.int64),
                np.asarray(compound_cells, dtype=np.int64),
                1,
            )
        )
        return parts

    def _word_numbers(self, words: list[str]) -> IntArray:
        """Each word's number, analysing the words not seen before."""
        ids = self._word_ids
        found = np.fromiter(map(ids.get, words, repeat(-1)), np.int64, len(words))
        unknown = np.flatnonzero(found < 0)
        if unknown.size:
            analyse = self._analyzer._analyse_word
            for index in unknown.tolist():
                word = words[index]
                number = ids.get(word)
                if number is None:
                    terms = self._ids(analyse(word))
                    number = ids[word] = len(self._word_starts)
                    self._word_starts.append(len(self._word_terms))
                    self._word_counts.append(len(terms))
                    self._word_terms.extend(terms)
                found[index] = number
        return found
