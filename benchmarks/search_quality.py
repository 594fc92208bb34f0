"""Search quality: meshnav's ranker next to plain BM25 on two labelled catalogues.

    .venv/bin/python benchmarks/search_quality.py [--quick]

Catalogues:
  * MetaTool (shared/datasets/metatool): 199 tools, 20,544 single-tool queries, 497 two-tool
    queries (MIT, Huang et al. 2023).
  * Real MCP servers (benchmarks/data/mcp_catalog.json): 179 real tools of 23 servers (the
    reference servers, docker, stripe and kubernetes), with hand-written queries; the misspelled
    ones are scored apart.

Each is indexed by meshnav's ``SearchIndex`` with the settings the product ships (every tool on
holder ``mesh``; MetaTool's under one role, the MCP tools under their server's name), and by the
baselines over the same tools in the same run:
  * bm25s over name + title + description, English stopwords, no stemmer (its defaults);
  * the same with PyStemmer's English stemmer;
  * FastMCP's own BM25 (the index behind ``BM25SearchTransform``) over the text it extracts.
Metrics: recall@1/5/10 (share of a query's relevant tools in the first k), MRR@10, nDCG@10.
``--quick`` scores every fourth MetaTool single-tool query.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The shared data sets beside the tree, or where ``MESHNAV_SHARED`` says (a worktree elsewhere).
SHARED = Path(os.environ.get("MESHNAV_SHARED") or ROOT.parent / "shared")
sys.path.insert(0, str(ROOT))

import bm25s  # noqa: E402
import Stemmer  # noqa: E402
from fastmcp.server.transforms.search.bm25 import _BM25Index  # noqa: E402

from navigator.search import EVERYONE, SearchIndex, document_from_tool  # noqa: E402

CUTOFFS = (1, 5, 10)
DEPTH = 10


@dataclass(frozen=True)
class Tool:
    ident: str  # how queries name it
    role: str
    spec: dict[str, Any]  # the tools/list entry


@dataclass(frozen=True)
class Query:
    text: str
    relevant: frozenset[str]
    kind: str = "plain"


# A ranker takes a query and answers tool idents, best first, at most DEPTH of them.
Ranker = Callable[[str], list[str]]


def load_metatool() -> tuple[list[Tool], list[Query], list[Query]]:
    folder = SHARED / "datasets" / "metatool"
    tools = [
        Tool(spec["name"], "plugins", spec)
        for spec in map(json.loads, (folder / "catalog.jsonl").read_text().splitlines())
    ]

    def queries(name: str) -> list[Query]:
        rows = map(json.loads, (folder / name).read_text().splitlines())
        return [Query(row["query"], frozenset(row["relevant"])) for row in rows]

    return tools, queries("queries.jsonl"), queries("queries_multi.jsonl")


def catalogue_tools(data: dict[str, Any]) -> list[Tool]:
    """The tools of a catalogue of MCP servers, named ``server/tool``, each under its server."""
    return [
        Tool(f"{server['server']}/{spec['name']}", server["server"], spec)
        for server in data["servers"]
        for spec in server["tools"]
    ]


def load_mcp_catalog() -> tuple[list[Tool], list[Query]]:
    data = json.loads((ROOT / "benchmarks" / "data" / "mcp_catalog.json").read_text())
    queries = [Query(q["query"], frozenset(q["relevant"]), q["kind"]) for q in data["queries"]]
    return catalogue_tools(data), queries


def meshnav_ranker(tools: Sequence[Tool]) -> Ranker:
    index = SearchIndex()
    ident_of: dict[str, str] = {}
    documents = []
    for tool in tools:
        digest = hashlib.sha256(json.dumps(tool.spec, sort_keys=True).encode()).hexdigest()
        document = document_from_tool("mesh", tool.role, tool.spec, digest)
        ident_of[document.address] = tool.ident
        documents.append(document)
    index.upsert(documents)

    def rank(query: str) -> list[str]:
        page = index.search(query, permits=EVERYONE, limit=DEPTH)
        return [ident_of[hit.document.address] for hit in page.hits]

    return rank


def bm25s_ranker(tools: Sequence[Tool], *, stem: bool) -> Ranker:
    stemmer = Stemmer.Stemmer("english") if stem else None
    corpus = [
        " ".join(str(tool.spec.get(field) or "") for field in ("name", "title", "description"))
        for tool in tools
    ]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )

    def rank(query: str) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        results, scores = retriever.retrieve(tokens, k=min(DEPTH, len(tools)), show_progress=False)
        return [tools[int(i)].ident for i, s in zip(results[0], scores[0], strict=True) if s > 0]

    return rank


def fastmcp_ranker(tools: Sequence[Tool]) -> Ranker:
    """FastMCP's BM25 over the text its search transform extracts (name, description, params)."""

    def text(spec: dict[str, Any]) -> str:
        parts = [spec["name"], spec.get("description") or ""]
        for name, info in (spec.get("inputSchema", {}).get("properties") or {}).items():
            parts.append(name)
            if isinstance(info, dict) and info.get("description"):
                parts.append(info["description"])
        return " ".join(parts)

    index = _BM25Index()
    index.build([text(tool.spec) for tool in tools])

    def rank(query: str) -> list[str]:
        return [tools[i].ident for i in index.query(query, DEPTH)]

    return rank


def measure(rank: Ranker, queries: Sequence[Query]) -> dict[str, float]:
    totals = {f"R@{k}": 0.0 for k in CUTOFFS} | {"MRR@10": 0.0, "nDCG@10": 0.0}
    for query in queries:
        ranked = rank(query.text)[:DEPTH]
        for k in CUTOFFS:
            found = len(query.relevant & set(ranked[:k]))
            totals[f"R@{k}"] += found / len(query.relevant)
        first = next((i for i, ident in enumerate(ranked) if ident in query.relevant), None)
        totals["MRR@10"] += 0.0 if first is None else 1.0 / (first + 1)
        gains = sum(
            1.0 / math.log2(i + 2) for i, ident in enumerate(ranked) if ident in query.relevant
        )
        ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(query.relevant), DEPTH)))
        totals["nDCG@10"] += gains / ideal
    return {name: value / len(queries) for name, value in totals.items()}


def print_table(title: str, rows: list[tuple[str, dict[str, float]]], count: int) -> None:
    columns = list(rows[0][1])
    print(f"\n{title} ({count} queries)")
    print(f"  {'ranker':<34}" + "".join(f"{c:>9}" for c in columns))
    for name, figures in rows:
        print(f"  {name:<34}" + "".join(f"{figures[c]:>9.3f}" for c in columns))


def compare(title: str, tools: Sequence[Tool], queries: Sequence[Query]) -> None:
    rankers: list[tuple[str, Ranker]] = [
        ("meshnav SearchIndex (shipped)", meshnav_ranker(tools)),
        ("bm25s, stopwords (plain BM25)", bm25s_ranker(tools, stem=False)),
        ("bm25s, stopwords + stemmer", bm25s_ranker(tools, stem=True)),
        ("FastMCP BM25SearchTransform index", fastmcp_ranker(tools)),
    ]
    rows = []
    for name, rank in rankers:
        started = time.perf_counter()
        figures = measure(rank, queries)
        figures["ms/query"] = (time.perf_counter() - started) * 1000 / len(queries)
        rows.append((name, figures))
    print_table(title, rows, len(queries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every 4th MetaTool single query")
    args = parser.parse_args()

    tools, single, multi = load_metatool()
    if args.quick:
        single = single[::4]
    compare("MetaTool, single-tool queries", tools, single)
    compare("MetaTool, multi-tool queries", tools, multi)

    mcp_tools, mcp_queries = load_mcp_catalog()
    plain = [q for q in mcp_queries if q.kind == "plain"]
    typos = [q for q in mcp_queries if q.kind == "typo"]
    compare(f"Real MCP servers, {len(mcp_tools)} tools", mcp_tools, plain)
    compare("Real MCP servers, misspelled queries", mcp_tools, typos)


if __name__ == "__main__":
    main()
