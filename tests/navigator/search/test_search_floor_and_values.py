"""What a query carries besides its intent, and what is too weak to return: values count little
(ADR 0054), hits below the relevance floor are not returned (ADR 0055)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from navigator.catalog.view import Catalog
from navigator.search import SearchIndex, ToolDocument
from navigator.search.ranking import RankingSettings
from navigator.search.text import TextAnalyzer
from navigator.search.values import query_segments
from navigator.settings import NavigatorSettings
from registry import CatalogStore, Registry, migrate
from tests.navigator.meshes import tools


def doc(address: str, description: str) -> ToolDocument:
    holder, role, name = address.split("/")
    digest = hashlib.sha256(json.dumps([name, description]).encode()).hexdigest()
    return ToolDocument(address, holder, role, name, "", description, (), digest)


TOOLS = [
    doc("m/files/write_file", "Create a new file or overwrite an existing one with content."),
    doc("m/web/site_assets", "List the assets of a static web site: css, images, scripts."),
    doc("m/web/css_lint", "Lint css stylesheets of a site."),
    doc("m/disk/disk_usage", "Free and used disk space of a volume."),
    doc("m/exec/execute", "Execute a shell command on the machine and return its output."),
    doc("m/exec/execute_sql", "Execute a SQL statement against a database."),
]


def names(index: SearchIndex, query: str) -> list[str]:
    page = index.search(query, permits=lambda _: True, limit=8)
    return [hit.document.name for hit in page.hits]


def index_with(settings: RankingSettings) -> SearchIndex:
    index = SearchIndex(settings)
    index.upsert(TOOLS)
    return index


def test_a_path_in_a_query_counts_less_than_the_words_of_its_intent() -> None:
    index = index_with(RankingSettings())
    assert names(index, "create /srv/site/assets/main.css as a new file")[0] == "write_file"


@pytest.mark.parametrize(
    ("query", "values"),
    [
        ("open https://example.com/a in the browser", ["https://example.com/a"]),
        ("fetch the secret 'db-password' now", ["'db-password'"]),
        ("delete vm-test-07 please", ["vm-test-07"]),
        ("email ops@contoso.com", ["ops@contoso.com"]),
        (r"upload C:\Users\me\x.png", [r"C:\Users\me\x.png"]),
        ("list the e-mail lists of a non-profit", []),  # hyphenated words are words
        ("what's on the calendar", []),  # an apostrophe is not a quote
    ],
)
def test_values_are_found_by_their_shape(query: str, values: list[str]) -> None:
    assert [text for text, value in query_segments(query) if value] == values


def test_the_words_of_a_value_are_marked_and_never_corrected() -> None:
    words = TextAnalyzer().query_words("read /srv/site/main.css")
    assert [(word.surface, word.value, word.correctable) for word in words] == [
        ("read", False, True),
        ("srv", True, False),
        ("site", True, False),
        ("main", True, False),
        ("css", True, False),
    ]


def test_hits_below_the_floor_are_not_returned_and_zero_returns_every_match() -> None:
    # "disk" and "space" are the disk tool's; a word related to one of them is the linter's
    assert names(index_with(RankingSettings(relevance_floor=0.0)), "disk space") == [
        "disk_usage",
        "css_lint",
    ]
    assert names(index_with(RankingSettings(relevance_floor=0.2)), "disk space") == ["disk_usage"]


def test_the_floor_is_a_share_below_one() -> None:
    with pytest.raises(ValueError, match="share"):
        RankingSettings(relevance_floor=1.0)


def test_the_navigator_setting_defaults_to_the_ranker_s_floor() -> None:
    assert NavigatorSettings().search_relevance_floor == RankingSettings().relevance_floor


@pytest.mark.parametrize(("floor", "expected"), [(0.0, {"query", "drop"}), (0.5, {"query"})])
async def test_the_catalogues_index_ranks_by_the_settings_it_is_given(
    tmp_path: Path, floor: float, expected: set[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    migrate(url)
    registry = Registry(url)
    with registry.transaction() as session:
        CatalogStore(session).put_assignment(
            "db1", "pg", module="postgres", tools=tools("query", "drop")
        )
    catalog = Catalog(registry, ranking=RankingSettings(relevance_floor=floor))
    await catalog.load()
    # "query" thrice, "drop" once: the drop tool scores about a third of the query tool
    page = catalog.index.search("query query query drop", permits=lambda _: True)
    assert {hit.document.name for hit in page.hits} == expected
