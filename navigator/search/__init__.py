"""Search over the mesh's tools: a local, lexical, incrementally updated index (ADR 0007)."""

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
