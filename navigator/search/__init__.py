"""Search over the mesh's tools: a local, lexical, incrementally updated index (ADR 0007).

index        SearchIndex: changes and the search itself
members      the tool texts and their members, by slot, role, tool name and holder
own          a caller's own part (the texts it may call, their statistics), and visibility
holders      holders a query names, and their bonuses
build        IndexBuild: filling an empty index at once, beside a forked worker (worker)
postings     the slots, lengths and normalisation; term_arrays each term's C arrays
scoring      BM25F scores, and statistics among a caller's texts (Among)
ranking      the query's plan and the BM25F settings; text, batch the analysis;
languages    unspaced scripts' bigrams, Russian and German; ascii_words, values a query's values
vocabulary   corrections; thesaurus, commonness related and common words
audience     what a search asks of the caller's grants; documents, paging the answer
"""

from __future__ import annotations

from navigator.search.audience import EVERYONE, Audience
from navigator.search.documents import (
    Hit,
    SearchPage,
    ToolDocument,
    document_from_tool,
    shown_holders,
)
from navigator.search.index import SearchIndex
from navigator.search.ranking import RankingSettings

__all__ = [
    "EVERYONE",
    "Audience",
    "Hit",
    "RankingSettings",
    "SearchIndex",
    "SearchPage",
    "ToolDocument",
    "document_from_tool",
    "shown_holders",
]
