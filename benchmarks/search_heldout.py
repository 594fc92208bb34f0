"""Search quality on a held-out catalogue: meshnav beside BM25, with paired bootstrap intervals.

    .venv/bin/python benchmarks/search_heldout.py [--half tuning|test|both] [--resamples N]

The catalogue (benchmarks/data/mcp_heldout_catalog.json) holds the ``tools/list`` answers of 13
MCP servers installed from npm and PyPI — none of them among mcp_catalog.json's, none of them
ever looked at while the ranker was built before it — in English, Chinese, German, Russian and
Japanese, and 336 queries written from the user's side, each labelled with its relevant tools and
a class: names_vs_descriptions, list_vs_get, paths_and_values, side_intent, non_english, padding
(an intent among unrelated words), no_match (nothing in the catalogue answers it: other scripts,
other topics) and plain.

The queries are frozen: the run refuses a set whose SHA-256 is not ``QUERIES_SHA256``. They are
split, class by class, by ``SPLIT_SEED`` into a tuning half (what ranking changes may be tried
against) and a test half (what is reported); neither changes without changing this file.

Every query is ranked by meshnav's ``SearchIndex`` (the settings it ships, relevance floor
included), by bm25s over name + title + description (plain, and with PyStemmer's English
stemmer) in the same run. Per class and overall: recall@1/@5/@10 and MRR@10 of each, and the
paired bootstrap 95 % interval (percentile, ``--resamples`` resamples of the queries) of meshnav
minus the stronger BM25 on that subset and metric. The no_match class has no relevant tool: it
reports the share of queries answered with nothing, and the mean number of results, instead.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_quality import (
    DEPTH,
    ROOT,
    Query,
    Ranker,
    Tool,
    bm25s_ranker,
    catalogue_tools,
    meshnav_ranker,
)

CATALOGUE = ROOT / "benchmarks" / "data" / "mcp_heldout_catalog.json"
QUERIES_SHA256 = "cead0f3adc75197ac3aae53313ada072d78b5ec6e246d8c84b8db251721ea1ee"
SPLIT_SEED = 4040
CLASSES = (
    "names_vs_descriptions",
    "list_vs_get",
    "paths_and_values",
    "side_intent",
    "non_english",
    "padding",
    "no_match",
    "plain",
)
METRICS = ("R@1", "R@5", "R@10", "MRR")
NO_MATCH_METRICS = ("empty", "results")


def load() -> tuple[list[Tool], list[Query]]:
    data = json.loads(CATALOGUE.read_text())
    digest = hashlib.sha256(
        json.dumps(data["queries"], ensure_ascii=False, sort_keys=True).encode()
    ).hexdigest()
    if digest != QUERIES_SHA256:
        raise SystemExit(f"the held-out queries changed (sha256 {digest}): they are frozen")
    queries = [Query(q["query"], frozenset(q["relevant"]), q["class"]) for q in data["queries"]]
    return catalogue_tools(data), queries


def split(queries: Sequence[Query]) -> dict[str, list[Query]]:
    """The tuning and test halves: each class's queries shuffled by ``SPLIT_SEED``, halved."""
    rng = random.Random(SPLIT_SEED)
    halves: dict[str, list[Query]] = {"tuning": [], "test": []}
    for kind in CLASSES:
        members = sorted((q for q in queries if q.kind == kind), key=lambda q: q.text)
        rng.shuffle(members)
        middle = (len(members) + 1) // 2
        halves["tuning"] += members[:middle]
        halves["test"] += members[middle:]
    return halves


def per_query(rank: Ranker, queries: Sequence[Query]) -> dict[str, np.ndarray]:
    """Each query's figures: recall@1/@5/@10 and reciprocal rank, or, with no relevant tool,
    whether the answer was empty and how many results it held."""
    rows: dict[str, list[float]] = {m: [] for m in METRICS + NO_MATCH_METRICS}
    for query in queries:
        ranked = rank(query.text)[:DEPTH]
        rows["empty"].append(float(not ranked))
        rows["results"].append(float(len(ranked)))
        if not query.relevant:
            for metric in METRICS:
                rows[metric].append(float("nan"))
            continue
        for k in (1, 5, 10):
            rows[f"R@{k}"].append(len(query.relevant & set(ranked[:k])) / len(query.relevant))
        first = next((i for i, ident in enumerate(ranked) if ident in query.relevant), None)
        rows["MRR"].append(0.0 if first is None else 1.0 / (first + 1))
    return {metric: np.array(values) for metric, values in rows.items()}


def interval(
    difference: np.ndarray, resamples: int, rng: np.random.Generator
) -> tuple[float, float]:
    """The paired bootstrap's 95 % percentile interval of the mean of per-query differences."""
    picks = rng.integers(0, len(difference), size=(resamples, len(difference)))
    means = difference[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def report(
    title: str,
    figures: dict[str, dict[str, np.ndarray]],
    queries: Sequence[Query],
    resamples: int,
) -> None:
    rng = np.random.default_rng(SPLIT_SEED)
    print(f"\n{title}")
    subsets = [("all (with relevant tools)", [q.kind != "no_match" for q in queries])]
    subsets += [(kind, [q.kind == kind for q in queries]) for kind in CLASSES]
    for label, flags in subsets:
        mask = np.array(flags)
        count = int(mask.sum())
        metrics = NO_MATCH_METRICS if label == "no_match" else METRICS
        print(f"  {label} ({count} queries)")
        print(f"    {'ranker':<18}" + "".join(f"{m:>9}" for m in metrics))
        means = {
            name: {m: float(values[m][mask].mean()) for m in metrics}
            for name, values in figures.items()
        }
        for name, row in means.items():
            print(f"    {name:<18}" + "".join(f"{row[m]:>9.3f}" for m in metrics))
        cells = []
        for metric in metrics:
            stronger = max(("bm25s", "bm25s+stem"), key=lambda n: means[n][metric])
            if metric == "results":  # fewer results for nothing is better: no interval here
                continue
            difference = figures["meshnav"][metric][mask] - figures[stronger][metric][mask]
            low, high = interval(difference, resamples, rng)
            cells.append(
                f"{metric} {difference.mean():+.3f} [{low:+.3f}, {high:+.3f}] vs {stronger}"
            )
        print("    meshnav − stronger BM25, 95 % CI: " + "; ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("tuning", "test", "both"), default="both")
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args()
    tools, queries = load()
    rankers: dict[str, Ranker] = {
        "meshnav": meshnav_ranker(tools),
        "bm25s": bm25s_ranker(tools, stem=False),
        "bm25s+stem": bm25s_ranker(tools, stem=True),
    }
    halves = split(queries)
    print(f"Held-out MCP catalogue: {len(tools)} tools of 13 servers, {len(queries)} queries")
    for half in ("tuning", "test") if args.half == "both" else (args.half,):
        chosen = halves[half]
        figures = {name: per_query(rank, chosen) for name, rank in rankers.items()}
        report(f"{half} half ({len(chosen)} queries)", figures, chosen, args.resamples)


if __name__ == "__main__":
    main()
