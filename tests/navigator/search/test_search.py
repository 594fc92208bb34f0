"""The search index: ranking, typos, collapse, grants before ranking, incremental updates."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from navigator.access.grants import Caller, Permissions, compile_permissions
from navigator.addresses import parse_pattern
from navigator.search import (
    Hit,
    SearchIndex,
    SearchPage,
    ToolDocument,
    document_from_tool,
    scoring,
    shown_holders,
)
from navigator.search.text import WRITTEN, TextAnalyzer, split_identifier
from navigator.search.vocabulary import Vocabulary
from registry import GrantRecord, GrantSnapshot

ROOT = Path(__file__).resolve().parents[3]


def doc(
    address: str,
    description: str = "",
    *,
    title: str = "",
    parameters: tuple[tuple[str, str], ...] = (),
    digest: str | None = None,
) -> ToolDocument:
    holder, role, name = address.split("/")
    if digest is None:
        text = json.dumps([name, title, description, parameters])
        digest = hashlib.sha256(text.encode()).hexdigest()
    return ToolDocument(address, holder, role, name, title, description, parameters, digest)


def index_of(*documents: ToolDocument) -> SearchIndex:
    index = SearchIndex()
    index.upsert(documents)
    return index


def allow_all(_address: str) -> bool:
    return True


def grants(*rows: tuple[str, str]) -> Permissions:
    """The grant evaluator's permissions for alice with these (target, effect) rows, in order."""
    records = tuple(
        GrantRecord(number, "alice", target, (), effect, number)
        for number, (target, effect) in enumerate(rows, start=1)
    )
    return compile_permissions(
        Caller("alice", frozenset()), GrantSnapshot(revision=len(records), rows=records)
    )


def addresses(index: SearchIndex, query: str, **kwargs: object) -> list[str]:
    permits = kwargs.pop("permits", allow_all)
    page = index.search(query, permits=permits, **kwargs)  # type: ignore[arg-type]
    return [hit.address for hit in page.hits]


# -- documents ---------------------------------------------------------------------------------


def test_document_from_tool_reads_title_description_and_parameters_in_order() -> None:
    tool = {
        "name": "list_tables",
        "description": "List tables.",
        "annotations": {"title": "List Tables"},
        "inputSchema": {
            "type": "object",
            "properties": {
                "schema": {"type": "string", "description": "Schema name"},
                "limit": {"type": "integer"},
            },
        },
    }
    document = document_from_tool("db1", "postgres", tool, "d1")
    assert document.address == "db1/postgres/list_tables"
    assert document.title == "List Tables"
    assert document.parameters == (("schema", "Schema name"), ("limit", ""))
    assert document.contract_digest == "d1"


def test_document_from_tool_prefers_the_tools_own_title_and_reads_junk_as_absent() -> None:
    tool = {"name": "t", "title": "Own", "annotations": {"title": "Other"}, "inputSchema": 5}
    document = document_from_tool("mesh", "seat", tool, "d")
    assert (document.title, document.description, document.parameters) == ("Own", "", ())


# -- words ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("identifier", "words"),
    [
        ("list_databases", ["list", "databases"]),
        ("listDatabases", ["list", "databases"]),
        ("list-databases.v2", ["list", "databases", "v2"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("base64Encode", ["base64", "encode"]),
        ("UPPER_CASE", ["upper", "case"]),
    ],
)
def test_identifiers_split_on_separators_and_camel_case(identifier: str, words: list[str]) -> None:
    assert split_identifier(identifier) == words


@pytest.mark.parametrize("name", ["listDatabases", "list_databases", "list-databases", "ListDBs"])
def test_a_query_in_words_finds_a_tool_named_in_any_case_style(name: str) -> None:
    index = index_of(doc(f"db1/postgres/{name}"), doc("db1/postgres/drop_index"))
    assert addresses(index, "list databases")[0] == f"db1/postgres/{name}"


def test_a_query_naming_a_tool_in_camel_case_finds_its_snake_case_twin() -> None:
    index = index_of(doc("db1/postgres/list_databases"), doc("db1/postgres/drop_index"))
    assert addresses(index, "listDatabases") == ["db1/postgres/list_databases"]


def test_stemming_meets_plural_and_verb_forms() -> None:
    index = index_of(doc("h/r/t", "Describes one table and its column."), doc("h/r/u", "Other."))
    assert addresses(index, "describing tables columns") == ["h/r/t"]


def test_an_inflected_word_is_kept_as_written_beside_its_stem() -> None:
    analyzer = TextAnalyzer()
    assert analyzer.prose_terms("Lists the Docker networks") == [
        "list",
        f"{WRITTEN}lists",
        "docker",
        "network",
        f"{WRITTEN}networks",
    ]
    assert analyzer.identifier_terms("list_networks") == ["list", "network", f"{WRITTEN}networks"]


def test_a_word_as_written_is_not_counted_again_in_its_fields_length() -> None:
    index = index_of(doc("h/r/a", "Docker networks"), doc("h/r/b", "Docker network"))
    first, second = index.search("docker", permits=allow_all).hits
    assert (first.address, second.address) == ("h/r/a", "h/r/b")  # a tie, in address order
    assert first.score == second.score


def test_the_word_as_written_orders_a_family_of_tools() -> None:
    index = index_of(
        doc("h/docker/create_network", "Create a Docker network."),
        doc("h/docker/list_networks", "List all Docker networks."),
        doc("h/docker/remove_network", "Remove a Docker network."),
    )
    assert addresses(index, "what docker networks exist")[0] == "h/docker/list_networks"
    # a word that is its own stem favours none of them: the three tie
    assert len({hit.score for hit in index.search("docker network", permits=allow_all).hits}) == 1
    # the stem still meets every inflection
    assert len(addresses(index, "networking")) == 3


def test_misspellings_are_corrected_to_stems_never_to_words_as_written() -> None:
    index = index_of(doc("h/docker/list_networks", "List all Docker networks."))
    assert addresses(index, "netwroks") == ["h/docker/list_networks"]
    assert len(index._vocabulary) == 3  # list, docker, network: not "=networks"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ9-_ '.,ésding", max_size=40))
def test_the_analyzers_fast_paths_give_what_the_plain_reading_gives(text: str) -> None:
    """Prose and identifiers read through the ASCII shortcuts and the whole-text caches give
    exactly the terms the plain reading gives — each word's stem, then the word as written when
    it is not its own stem — twice in a row."""
    analyzer = TextAnalyzer()

    def plain(words: list[str]) -> list[str]:
        terms = []
        for word in words:
            terms.append(analyzer.stem(word))
            if terms[-1] != word:
                terms.append(WRITTEN + word)
        return terms

    for _ in range(2):
        assert analyzer.prose_terms(text) == plain(analyzer.prose_surfaces(text))
        assert analyzer.identifier_terms(text) == plain(analyzer.identifier_surfaces(text))
        fields = analyzer.tool_terms(text, "", "", ((text, text),), text)
        assert fields[3] == analyzer.identifier_terms(text) + analyzer.prose_terms(text)


def test_camel_case_words_in_prose_are_matched_whole_and_in_parts() -> None:
    index = index_of(doc("h/r/t", "Opens an issue on GitHub."))
    assert addresses(index, "github") == ["h/r/t"]
    assert addresses(index, "hub") == ["h/r/t"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("databse", "db1/postgres/list_databases"),
        ("lsit databses", "db1/postgres/list_databases"),
        ("machnie", "web1/node/uptime"),
        ("uptme", "web1/node/uptime"),
        ("screnshot", "web1/browser/screenshot"),
    ],
)
def test_close_misspellings_still_match(query: str, expected: str) -> None:
    index = index_of(
        doc("db1/postgres/list_databases", "List the databases of the server."),
        doc("web1/node/uptime", "How long the machine has been running."),
        doc("web1/browser/screenshot", "Capture the page as an image."),
    )
    assert addresses(index, query)[0] == expected


@pytest.mark.parametrize(("query", "near"), [("would", "world"), ("2024", "2025")])
def test_a_common_english_word_or_a_number_is_never_read_as_a_misspelling(
    query: str, near: str
) -> None:
    """A word commoner than one in 30,000 words of English (the table ADR 0020 weighs them by),
    or digits alone, is never corrected: "would" is no typo of "world", nor 2024 of 2025."""
    index = index_of(doc(f"h/r/{near}_report", f"The {near} report."))
    assert addresses(index, near) == [f"h/r/{near}_report"]
    assert addresses(index, query) == []


def test_a_word_too_far_from_any_vocabulary_word_matches_nothing() -> None:
    index = index_of(doc("h/r/list_databases", "List the databases."))
    # no English word (those are never corrected), and "d" like "databases", three edits away
    assert addresses(index, "dtbsaex") == []
    assert addresses(index, "dtabases") == ["h/r/list_databases"]  # one swap away: corrected


def test_stopwords_alone_match_nothing() -> None:
    index = index_of(doc("h/r/t", "The tool of the mesh."))
    page = index.search("the of and", permits=allow_all)
    assert page.hits == []
    assert page.has_more is False


# -- ranking -------------------------------------------------------------------------------------


def test_a_word_in_the_name_outranks_the_same_word_in_a_long_description() -> None:
    index = index_of(
        doc("h/r/backup_database", "Copy everything somewhere safe."),
        doc("h/r/copy", "Copy a file; useful before a backup of a database or anything else."),
    )
    assert addresses(index, "backup")[0] == "h/r/backup_database"


def test_a_holder_named_in_the_query_boosts_its_tools() -> None:
    index = index_of(
        doc("db1/sqlite/list_tables", "List tables."), doc("db2/app/tables", "Tables.")
    )
    assert addresses(index, "db1 tables")[0] == "db1/sqlite/list_tables"
    assert addresses(index, "db2 tables")[0] == "db2/app/tables"


@pytest.mark.parametrize("hidden", ["film", "film-scanner"])
def test_a_holder_the_caller_cannot_see_changes_nothing_it_finds(hidden: str) -> None:
    """A word naming a holder is read as that holder's name (no related words, no correction):
    a hidden machine named after a word took "film" from the tool about movies, and so told the
    caller it existed."""
    index = index_of(doc("web1/media/list_movies", "List the movies in the library."))

    def web1_only(address: str) -> bool:
        return address.startswith("web1/")

    before = addresses(index, "film", permits=web1_only)
    index.upsert([doc(f"{hidden}/secret/scan", "Scan negatives.")])
    assert before == ["web1/media/list_movies"]
    assert addresses(index, "film", permits=web1_only) == before
    assert addresses(index, "film", permits=grants(("web1", "allow"))) == before
    # a holder the caller sees is still read as its name
    assert addresses(index, "film")[0] == f"{hidden}/secret/scan"


@pytest.mark.parametrize(
    ("holders", "hidden", "named"), [(16, 0, True), (17, 0, False), (17, 1, True)]
)
def test_a_word_naming_too_many_holders_names_none(holders: int, hidden: int, named: bool) -> None:
    """The "web" of web-00 … web-16 says no one machine, and reading it as their names walked
    every tool of every one of them; holders the caller cannot see are not counted."""
    index = index_of(
        doc("db1/app/report", "Report the status."),
        *(doc(f"web-{n:02d}/app/report_{n}", "Report the status.") for n in range(holders)),
    )
    seen = {f"web-{n:02d}" for n in range(holders - hidden)} | {"db1"}

    def permits(address: str) -> bool:
        return address.split("/", maxsplit=1)[0] in seen

    first = addresses(index, "web status", permits=permits)[0]
    assert first.startswith("web-") is named


def test_a_role_named_in_the_query_boosts_its_tools() -> None:
    index = index_of(
        doc("db1/postgres/query", "Run a read-only SQL query."),
        doc("db1/sqlite/query", "Run a read-only SQL query."),
    )
    assert addresses(index, "sqlite query")[0] == "db1/sqlite/query"


def test_a_holder_named_in_the_query_lifts_the_collapsed_group_it_belongs_to() -> None:
    index = index_of(
        doc("db1/node/uptime", "Time since boot.", digest="u"),
        doc("db2/node/uptime", "Time since boot.", digest="u"),
        doc("db3/other/boot_time", "Time since boot."),
    )
    hits = index.search("db2 boot", permits=allow_all).hits
    assert hits[0].address == "*/node/uptime"
    assert hits[0].score > hits[1].score


def test_equal_scores_are_ordered_by_address() -> None:
    index = index_of(
        doc("h/r/zeta", "Rotate the logs."),
        doc("a/r/alpha", "Rotate the logs."),
        doc("h/r/alpha", "Rotate the logs."),
    )
    hits = index.search("rotate logs", permits=allow_all).hits
    assert len({hit.score for hit in hits}) == 1
    assert [hit.address for hit in hits] == sorted(hit.address for hit in hits)


def test_results_are_in_score_then_address_order() -> None:
    index = index_of(
        *(doc(f"m{n}/r/tool{n % 3}", "disk usage " * (n % 4 + 1)) for n in range(12)),
        doc("m0/r/disk_usage", "Used space of each disk."),
    )
    hits = index.search("disk usage", permits=allow_all, limit=16).hits
    assert [(-h.score, h.address) for h in hits] == sorted((-h.score, h.address) for h in hits)


# -- collapse and grants -------------------------------------------------------------------------


def uptime_on(*holders: str) -> list[ToolDocument]:
    return [doc(f"{h}/node/uptime", "Time since the machine booted.", digest="u") for h in holders]


def test_the_same_tool_on_many_holders_is_one_collapsed_hit() -> None:
    index = index_of(*uptime_on("web1", "db2", "db1"))
    (hit,) = index.search("uptime", permits=allow_all).hits
    assert hit.address == "*/node/uptime"
    assert hit.holders == ("db1", "db2", "web1")
    assert hit.holder_count == 3
    assert hit.document.address == "db1/node/uptime"


def test_a_collapsed_hit_shows_sixteen_holders_and_counts_them_all() -> None:
    index = index_of(*uptime_on(*(f"m{n:02d}" for n in range(40))))
    (hit,) = index.search("uptime", permits=allow_all).hits
    assert hit.holders == tuple(f"m{n:02d}" for n in range(16))
    assert hit.holder_count == 40


def test_a_collapsed_hit_lists_the_holders_the_query_names_first() -> None:
    """Holder order alone would list m00 to m15 and leave out the machine the query asks about."""
    index = index_of(*uptime_on(*(f"m{n:02d}" for n in range(40))))
    (hit,) = index.search("uptime of m31 and m17", permits=allow_all).hits
    assert hit.holders == ("m17", "m31", *(f"m{n:02d}" for n in range(14)))
    assert hit.holder_count == 40
    assert hit.every_holder == tuple(f"m{n:02d}" for n in range(40))
    # a named holder the caller may not call is not listed, first or otherwise
    (hit,) = index.search("uptime of m31", permits=lambda a: not a.startswith("m31/")).hits
    assert hit.holders == tuple(f"m{n:02d}" for n in range(16))


def test_shown_holders_keeps_the_first_given_then_holder_order() -> None:
    holders = [f"h{n:02d}" for n in range(30)]
    assert shown_holders(holders) == tuple(holders[:16])
    assert shown_holders(holders, ["h20", "h03"]) == ("h20", "h03", *holders[:3], *holders[4:15])
    assert shown_holders(holders, holders[::-1]) == tuple(holders[::-1][:16])


def test_a_group_with_one_permitted_holder_is_a_concrete_hit() -> None:
    index = index_of(*uptime_on("db1", "db2", "web1"))
    (hit,) = index.search("uptime", permits=lambda a: a.startswith("db2/")).hits
    assert (hit.address, hit.holders, hit.holder_count) == ("db2/node/uptime", (), 1)


def test_collapse_counts_and_lists_only_permitted_holders() -> None:
    index = index_of(*uptime_on("db1", "db2", "db3", "web1"))
    (hit,) = index.search("uptime", permits=lambda a: not a.startswith("db2/")).hits
    assert hit.holders == ("db1", "db3", "web1")
    assert hit.holder_count == 3


def test_a_tool_the_caller_may_not_call_is_never_returned_nor_counted() -> None:
    index = index_of(doc("db1/postgres/drop_database", "Drop a database."), *uptime_on("a", "b"))
    page = index.search("drop database", permits=lambda a: "drop" not in a)
    assert page.hits == []
    assert page.has_more is False


def test_different_contracts_do_not_collapse() -> None:
    index = index_of(
        doc("db1/node/uptime", "Time since boot.", digest="v1"),
        doc("db2/node/uptime", "Time since boot.", digest="v2"),
    )
    assert addresses(index, "uptime") == ["db1/node/uptime", "db2/node/uptime"]


def asking(permissions: Permissions, asked: list[str]) -> Permissions:
    """``permissions``, noting in ``asked`` each address its ``permits`` is asked about."""
    permits = permissions.permits

    def noted(address: str) -> bool:
        asked.append(address)
        return permits(address)

    permissions.permits = noted  # type: ignore[method-assign]
    return permissions


# a refusal of a machine that holds nothing: every tool is asked about holder by holder
REFUSING_NOTHING = (("zz9", "deny"), ("*", "allow"))


def test_permits_is_asked_only_about_tools_that_match_the_query() -> None:
    index = index_of(
        *(doc(f"m{n}/app/tool{n}", f"Unrelated thing number {n}.") for n in range(50)),
        *uptime_on("db1", "db2"),
    )
    asked: list[str] = []
    page = index.search("uptime", permits=asking(grants(*REFUSING_NOTHING), asked))
    assert [hit.address for hit in page.hits] == ["*/node/uptime"]
    assert set(asked) <= {"db1/node/uptime", "db2/node/uptime"}


@pytest.mark.parametrize(
    ("rows", "answer", "asked_about"),
    [
        # every holder but those named answered alike: allowed, one named holder refused
        ((("h007", "deny"), ("h009/node/uptime", "allow"), ("*", "allow")), "all but h007",
         ["h007/node/uptime", "h009/node/uptime"]),
        # nothing allowed but the holders named
        ((("h007", "allow"), ("h009/node/uptime", "allow"), ("zz9", "allow")), "h007 and h009",
         ["h007/node/uptime", "h009/node/uptime"]),
    ],
)  # fmt: skip
def test_a_tool_on_many_holders_is_asked_about_only_on_the_holders_grants_name(
    rows: tuple[tuple[str, str], ...], answer: str, asked_about: list[str]
) -> None:
    holders = [f"h{n:03d}" for n in range(300)]
    index = index_of(*uptime_on(*holders))
    asked: list[str] = []
    (hit,) = index.search("uptime", permits=asking(grants(*rows), asked)).hits
    expected = [h for h in holders if h != "h007"] if answer == "all but h007" else ["h007", "h009"]
    assert hit.address == "*/node/uptime"
    assert hit.every_holder == tuple(expected)
    assert hit.holders == tuple(expected[:16])
    assert hit.holder_count == len(expected)
    assert hit.document.address == f"{expected[0]}/node/uptime"
    assert sorted(set(asked)) == asked_about


def test_permits_is_asked_only_for_the_page_not_the_catalogue() -> None:
    index = index_of(*(doc(f"m{n:03d}/app/sync_{n}", "Sync the calendar.") for n in range(300)))
    asked: list[str] = []
    index.search("sync calendar", permits=asking(grants(*REFUSING_NOTHING), asked), limit=8)
    assert len(asked) < 100


def test_a_predicate_is_asked_about_every_tool() -> None:
    """A plain predicate says nothing of sets of tools: the caller's own statistics need every
    tool asked about (the grant evaluator's shortcuts spare that)."""
    index = index_of(*(doc(f"m{n:03d}/app/sync_{n}", "Sync the calendar.") for n in range(30)))
    asked: list[str] = []

    def permits(address: str) -> bool:
        asked.append(address)
        return address.startswith("m00")

    found = index.search("sync calendar", permits=permits, limit=30).hits
    assert {hit.address for hit in found} == {f"m00{n}/app/sync_{n}" for n in range(10)}
    assert len(set(asked)) == 30


def test_within_narrows_before_collapsing() -> None:
    index = index_of(*uptime_on("db1", "db2", "web1"), doc("db1/sqlite/list_tables", "Tables."))
    assert addresses(index, "uptime", within=lambda a: a.startswith("db1/")) == ["db1/node/uptime"]
    hits = index.search("uptime", permits=allow_all, within=lambda a: a.startswith("db")).hits
    assert [(h.address, h.holders) for h in hits] == [("*/node/uptime", ("db1", "db2"))]


@pytest.mark.parametrize("pattern", ["db1/*/*", "*/node/*", "db1/node/*", "*/*/uptime", "db9"])
def test_a_parsed_pattern_narrows_exactly_as_a_plain_predicate(pattern: str) -> None:
    documents = [*uptime_on("db1", "db2", "web1"), doc("db1/sqlite/uptime", "Time since boot.")]
    documents += [doc(f"db1/app{n}/boot_{n}", "Boot time and uptime.") for n in range(5)]
    index = index_of(*documents)
    parsed = parse_pattern(pattern)
    wanted = pattern.split("/") + ["*"] * (3 - len(pattern.split("/")))

    def plain(address: str) -> bool:
        return all(w in ("*", s) for w, s in zip(wanted, address.split("/"), strict=True))

    assert index.search("uptime", permits=allow_all, within=parsed.matches_address) == (
        index.search("uptime", permits=allow_all, within=plain)
    )


@pytest.mark.parametrize(
    ("target", "tool"), [("*/*/uptime", "uptime"), ("*/app/restart", "restart")]
)
def test_a_pattern_naming_a_tool_narrows_before_ranking(target: str, tool: str) -> None:
    """A caller allowed one tool on every machine, or searching within it, pays for that tool:
    the texts of other tools the query's words reach are never asked about."""
    documents = [doc(f"m{n:03d}/app/sync_{n}", "Sync the calendar, restart.") for n in range(300)]
    documents += [*uptime_on("db1", "db2"), doc("web1/app/restart", "Restart the web app.")]
    index = index_of(*documents)
    asked: list[str] = []
    permissions = asking(grants((target, "allow")), asked)
    found = index.search("restart uptime sync", permits=permissions).hits
    assert {hit.document.name for hit in found} == {tool}
    assert {address.rsplit("/", 1)[1] for address in asked} <= {tool}
    asked.clear()
    within = parse_pattern(target).matches_address
    everyone = index.search("restart uptime sync", permits=grants(("*", "allow")), within=within)
    assert [hit.address for hit in everyone.hits] == [hit.address for hit in found]
    assert index.search("restart uptime sync", permits=permissions, within=within).hits == found
    assert {address.rsplit("/", 1)[1] for address in asked} <= {tool}


# -- paging --------------------------------------------------------------------------------------


def test_pages_follow_each_other_and_say_when_more_remain() -> None:
    index = index_of(*(doc(f"m{n:02d}/app/sync_{n}", "Sync the calendar.") for n in range(20)))
    whole = index.search("sync calendar", permits=allow_all, limit=16).hits
    first = index.search("sync calendar", permits=allow_all, limit=8)
    second = index.search("sync calendar", permits=allow_all, offset=8, limit=8)
    third = index.search("sync calendar", permits=allow_all, offset=16, limit=8)
    assert first.has_more
    assert second.has_more
    assert not third.has_more
    assert [*first.hits, *second.hits] == whole
    assert len(third.hits) == 4


def test_a_query_without_a_match_is_an_empty_page() -> None:
    index = index_of(doc("h/r/t", "Something."))
    assert index.search("nothing-like-it", permits=allow_all).hits == []


def test_offset_and_limit_are_checked() -> None:
    with pytest.raises(ValueError, match="offset"):
        SearchIndex().search("x", permits=allow_all, offset=-1)
    with pytest.raises(ValueError, match="limit"):
        SearchIndex().search("x", permits=allow_all, limit=0)


# -- incremental updates -------------------------------------------------------------------------


def test_replacing_a_document_replaces_its_words() -> None:
    index = index_of(doc("h/r/t", "Rotate the logs."))
    index.upsert([doc("h/r/t", "Compress the archive.")])
    assert addresses(index, "rotate") == []
    assert addresses(index, "compress") == ["h/r/t"]
    assert len(index) == 1


def test_removing_documents_by_address_and_prefix() -> None:
    index = index_of(
        *uptime_on("db1", "db10", "db2"),
        doc("db1/postgres/list_tables", "List tables."),
        doc("db1/postgres/query", "Run SQL."),
    )
    index.remove_prefix("db1/postgres/")
    assert addresses(index, "tables sql") == []
    index.remove_prefix("db1/")
    (hit,) = index.search("uptime", permits=allow_all).hits
    assert hit.holders == ("db10", "db2")
    index.remove(["db10/node/uptime", "nowhere/x/y"])
    assert addresses(index, "uptime") == ["db2/node/uptime"]
    assert len(index) == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_index_after_removals_answers_as_one_built_from_what_is_left(seed: int) -> None:
    """Removal compacts each term's postings in place: whichever slots leave (one or many per
    term, first, last or between), what is left scores and ranks exactly as a fresh index."""
    import random

    rng = random.Random(seed)
    words = ["list", "files", "rotate", "logs", "query", "tables", "backup", "disk", "network"]
    documents = [
        doc(
            f"h{rng.randrange(6)}/r{rng.randrange(3)}/t{i}",
            " ".join(rng.choice(words) for _ in range(rng.randrange(1, 8))),
        )
        for i in range(300)
    ]
    index = index_of(*documents)
    left = {document.address: document for document in documents}
    for size in (1, 3, 40, 7, 120):
        leaving = rng.sample(sorted(left), size)
        index.remove(leaving)
        for address in leaving:
            del left[address]
    fresh = index_of(*left.values())
    for query in ("list files", "rotate logs", "backup disk network", "tables", "query logs"):
        got = index.search(query, permits=allow_all, limit=16).hits
        expected = fresh.search(query, permits=allow_all, limit=16).hits
        assert [(h.address, h.score) for h in got] == [(h.address, h.score) for h in expected]


def test_a_new_word_is_searchable_and_a_retired_one_is_forgotten() -> None:
    index = index_of(doc("h/r/older", "Quarkbland."))
    index.upsert([doc("h/fresh/quarkblent", "Blends quarks.")])
    assert addresses(index, "quarkblent")[0] == "h/fresh/quarkblent"
    assert addresses(index, "quarkblnt")[0] == "h/fresh/quarkblent"  # corrected to the new word
    index.remove_prefix("h/fresh/")
    # the retired word left the vocabulary too: corrections now meet the word that is left
    assert addresses(index, "quarkblent") == ["h/r/older"]


def test_cached_corrections_are_bounded_whatever_letters_queries_bring() -> None:
    """The cache was bounded per first letter only, and a query may bring words of any of
    Unicode's letters: 2,000 queries of CJK words held 320,000 corrections (54 MB)."""
    vocabulary = Vocabulary()
    vocabulary.add(["quarkbl"])
    for i in range(40_000):
        word = chr(0x4E00 + i % 20_000) + chr(0xAC00 + i // 20_000) + "ab"
        assert vocabulary.correct(word, word) == ()
    cached = vocabulary._cache
    assert sum(len(words) for words in cached.values()) <= 16_384
    assert len(cached) <= 16_384
    assert vocabulary.correct("quarkbk", "quarkbk") == (("quarkbl", 1),)


def test_a_group_takes_its_text_from_its_first_member_whatever_the_order_of_arrival() -> None:
    odd = [
        doc("b/r/t", "Rotate logs.", digest="same"),
        doc("a/r/t", "Compress archives.", digest="same"),
    ]
    forward, backward = SearchIndex(), SearchIndex()
    for document in odd:
        forward.upsert([document])
    for document in reversed(odd):
        backward.upsert([document])
    for query in ("compress", "rotate"):
        assert forward.search(query, permits=allow_all) == backward.search(query, permits=allow_all)
    assert addresses(forward, "compress") == ["*/r/t"]
    assert addresses(forward, "rotate") == []


# -- properties ----------------------------------------------------------------------------------

WORDS = ["disk", "usage", "list", "tables", "query", "uptime", "backup", "logs", "rotate", "sync"]
HOLDERS = ["db1", "db2", "web1", "web1-b", "mesh"]  # "web1-b/…" sorts before "web1/…"
ROLES = ["node", "postgres", "app"]
NAMES = ["uptime", "list_tables", "query", "rotate_logs", "backupNow"]

tool_strategy = st.tuples(
    st.sampled_from(HOLDERS),
    st.sampled_from(ROLES),
    st.sampled_from(NAMES),
    st.integers(0, 2),  # contract version: same version, same text
)


def build(tools: Iterable[tuple[str, str, str, int]]) -> dict[str, ToolDocument]:
    documents: dict[str, ToolDocument] = {}
    for holder, role, name, version in tools:
        words = " ".join(WORDS[(len(name) + version + i) % len(WORDS)] for i in range(3))
        documents[f"{holder}/{role}/{name}"] = doc(
            f"{holder}/{role}/{name}", words, digest=f"{role}-{name}-{version}"
        )
    return documents


queries = st.lists(st.sampled_from([*WORDS, *HOLDERS, *ROLES, "lsit", "bakup"]), min_size=1)
withins = st.one_of(
    st.none(),
    st.sampled_from(HOLDERS).map(lambda h: f"{h}/*/*"),
    st.sampled_from(ROLES).map(lambda r: f"*/{r}/*"),
    st.tuples(
        st.sampled_from([*HOLDERS, "*"]), st.sampled_from([*ROLES, "*"]), st.sampled_from(NAMES)
    ).map("/".join),
)


def expected_members(
    documents: dict[str, ToolDocument],
    document: ToolDocument,
    permits: Callable[[str], bool],
    within: Callable[[str], bool] | None,
) -> list[str]:
    key = (document.role, document.name, document.contract_digest)
    return sorted(
        (
            address
            for address, other in documents.items()
            if (other.role, other.name, other.contract_digest) == key
            and permits(address)
            and (within is None or within(address))
        ),
        key=lambda address: address.split("/")[0],  # in holder order
    )


def is_shown_from(shown: tuple[str, ...], every: tuple[str, ...]) -> bool:
    """Whether ``shown`` lists 16 of ``every`` as ``shown_holders`` does: some of them (the
    named), in holder order, then the others in holder order."""
    return set(shown) <= set(every) and any(
        shown == shown_holders(every, shown[:named])
        and list(shown[:named]) == sorted(shown[:named])
        for named in range(len(shown) + 1)
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tools=st.lists(tool_strategy, max_size=30),
    allowed=st.sets(st.integers(0, 10**6)),
    words=queries,
    within_text=withins,
)
def test_no_hit_ever_reflects_an_address_the_caller_may_not_call(
    tools: list[tuple[str, str, str, int]],
    allowed: set[int],
    words: list[str],
    within_text: str | None,
) -> None:
    documents = build(tools)

    def permits(address: str) -> bool:  # a random grant predicate, fixed per example
        return int(hashlib.sha256(address.encode()).hexdigest(), 16) % 7 in {n % 7 for n in allowed}

    within = None if within_text is None else parse_pattern(within_text).matches_address
    index = index_of(*documents.values())
    page = index.search(" ".join(words), permits=permits, within=within, limit=16)
    seen: set[str] = set()
    for hit in page.hits:
        members = expected_members(documents, hit.document, permits, within)
        assert hit.score > 0
        assert hit.document.address == members[0]
        assert hit.holder_count == len(members)
        if hit.holder_count == 1:
            assert hit.address == hit.document.address
            assert hit.holders == ()
        else:
            assert hit.address == f"*/{hit.document.role}/{hit.document.name}"
            every = tuple(address.split("/")[0] for address in members)
            assert hit.every_holder == every
            assert is_shown_from(hit.holders, every)
        assert not seen & set(members)
        seen |= set(members)
    ranked = [(-hit.score, hit.address) for hit in page.hits]
    assert ranked == sorted(ranked)


grant_targets = st.tuples(
    st.sampled_from([*HOLDERS, "*"]), st.sampled_from([*ROLES, "*"]), st.sampled_from([*NAMES, "*"])
).map(lambda parts: "/".join(parts).removesuffix("/*"))
grant_rows = st.lists(st.tuples(grant_targets, st.sampled_from(["allow", "deny"])), max_size=5)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tools=st.lists(tool_strategy, max_size=30),
    rows=grant_rows,
    words=queries,
    within_text=withins,
)
def test_the_grants_shortcuts_change_no_page(
    tools: list[tuple[str, str, str, int]],
    rows: list[tuple[str, str]],
    words: list[str],
    within_text: str | None,
) -> None:
    """Tools neither the reach nor a refusal leaves in doubt are not asked about, and a tool the
    grants decide alike on every holder is not asked about holder by holder (ADR 0007 addendum):
    the pages are those of asking the grant evaluator about every tool."""
    permissions = grants(*rows)
    within = None if within_text is None else parse_pattern(within_text).matches_address
    index = index_of(*build(tools).values())
    query = " ".join(words)
    for offset in (0, 3):
        shortcuts = index.search(query, permits=permissions, within=within, offset=offset, limit=4)
        every = index.search(
            query, permits=permissions.permits, within=within, offset=offset, limit=4
        )
        assert shortcuts == every


# words with their misspellings and relatives: what a hidden tool could lend a query
TEXT_WORDS = ["database", "databse", "zookeeper", "zoekeepy", "film", "movie", "cinema",
              "backup", "bakup", "rotation", "journal", "logs", "uptime", "upload"]  # fmt: skip
worded_tools = st.lists(
    st.tuples(
        st.sampled_from(HOLDERS),
        st.sampled_from(ROLES),
        st.sampled_from(NAMES),
        st.lists(st.sampled_from(TEXT_WORDS), min_size=1, max_size=3),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tools=worded_tools,
    rows=st.one_of(  # a machine or two, or rows of every kind
        st.lists(st.sampled_from(HOLDERS).map(lambda h: (h, "allow")), min_size=1, max_size=2),
        grant_rows,
    ),
    words=st.lists(st.sampled_from([*TEXT_WORDS, "databas", "zoekeepx", "moive", *HOLDERS]),
                   min_size=1, max_size=3),
    within_text=withins,
    side_texts=st.sampled_from([0, 4096]),  # document frequencies counted, or looked up
)  # fmt: skip
# the caller's word is not corrected because a hidden tool holds the query's; a hidden word
# nearer the query takes the correction
@example(tools=[("db1", "app", "query", ["database"]), ("db2", "app", "query", ["databse"])],
         rows=[("db1", "allow")], words=["databse"], within_text=None, side_texts=0)  # fmt: skip
@example(tools=[("db1", "app", "query", ["zookeeper"]), ("db2", "app", "query", ["zoekeepy"])],
         rows=[("db1", "allow")], words=["zoekeepx"], within_text=None, side_texts=0)  # fmt: skip
def test_tools_hidden_from_a_caller_never_change_which_tools_it_finds(
    tools: list[tuple[str, str, str, list[str]]],
    rows: list[tuple[str, str]],
    words: list[str],
    within_text: str | None,
    side_texts: int,
) -> None:
    """SPEC §3: a tool the caller may not call is never hinted at. Its words neither count in
    the statistics that rank (document frequencies, average lengths, the holder's share), nor
    decide whether a query word is corrected, which correction wins, or which related words join:
    the page is the one an index of the caller's tools alone gives, to the score. Within a
    pattern, the tools found are those found among the caller's tools within it."""
    permissions = grants(*rows)
    documents = {
        f"{holder}/{role}/{name}": doc(
            f"{holder}/{role}/{name}", " ".join(text), digest=f"{role}-{name}-{' '.join(text)}"
        )
        for holder, role, name, text in tools
    }
    everything = SearchIndex(side_texts=side_texts)
    everything.upsert(documents.values())
    own = index_of(*(d for a, d in documents.items() if permissions.permits(a)))
    query = " ".join(words)

    within = None if within_text is None else parse_pattern(within_text).matches_address

    def found(index: SearchIndex) -> set[str]:
        page = index.search(query, permits=permissions, limit=64, within=within)
        return {hit.address for hit in page.hits}

    for offset in (0, 2):
        alone = own.search(query, permits=permissions, within=within, offset=offset, limit=3)
        for asked in (permissions, permissions.permits):  # with the shortcuts, and without
            page = everything.search(query, permits=asked, within=within, offset=offset, limit=3)
            assert page == alone
    if within is not None:
        inside = (d for a, d in documents.items() if permissions.permits(a) and within(a))
        assert found(everything) == found(index_of(*inside))


@pytest.mark.parametrize(
    ("hidden", "query"),
    [("databse rotation", "databse"),  # the hidden tool's word is the query's: not a correction
     ("zoekeepy", "zoekeepx")],  # nearer the query than the caller's word: not the correction
)  # fmt: skip
def test_a_hidden_tools_word_neither_stops_nor_takes_a_correction(hidden: str, query: str) -> None:
    visible = {"databse": doc("db1/pg/list_databases", "List the databases."),
               "zoekeepx": doc("db1/pg/vacuum", "The zookeeper ensemble.")}[query]  # fmt: skip
    index = index_of(visible)
    before = addresses(index, query, permits=lambda a: a.startswith("db1/"))
    index.upsert([doc("db2/secret/rotate", hidden)])
    assert before == [visible.address]
    assert addresses(index, query, permits=lambda a: a.startswith("db1/")) == before


def test_tools_hidden_from_a_caller_never_move_its_own_results() -> None:
    """A review (session 12): thirty tools a caller may not call, all about rotating, swapped the
    order of its own two results — and so told it that such tools exist. Scores come from the
    statistics of the caller's own tools."""
    index = index_of(
        doc("db1/files/rotate", "Rotate the files.", title="Rotate"),
        doc("db1/files/show_logs", "Show the logs.", title="Logs"),
    )
    db1 = grants(("db1", "allow"))
    before = index.search("rotate logs", permits=db1)
    assert [hit.address for hit in before.hits] == ["db1/files/rotate", "db1/files/show_logs"]
    index.upsert(
        doc(f"web{n}/ops/rotate_{n}", "Rotate and compress the files.", title="Rotate")
        for n in range(30)
    )
    assert index.search("rotate logs", permits=db1) == before
    # an administrator sees them all, and its statistics are the whole index's
    everyone = [hit.address for hit in index.search("rotate logs", permits=allow_all).hits]
    assert everyone[0] == "db1/files/show_logs"


def test_a_callers_own_postings_follow_every_change_of_the_index() -> None:
    """A caller allowed a few texts searches its own postings, kept as its searches read them:
    after a change they are read again, so the page stays the one of an index of its tools."""
    rotate = doc("db1/files/rotate", "Rotate the files.", title="Rotate")
    logs = doc("db1/files/show_logs", "Show the logs and rotate them.", title="Logs")
    index = index_of(rotate, doc("web1/ops/rotate", "Rotate the logs.", title="Rotate"))
    db1 = grants(("db1", "allow"))

    def page(of: SearchIndex) -> SearchPage:
        return of.search("rotate logs", permits=db1)

    assert [hit.address for hit in page(index).hits] == ["db1/files/rotate"]
    index.upsert([logs])
    assert page(index) == page(index_of(rotate, logs))
    index.remove(["db1/files/rotate"])
    assert page(index) == page(index_of(logs))


operations = st.lists(
    st.tuples(st.sampled_from(["upsert", "remove", "remove_prefix"]), st.lists(tool_strategy)),
    max_size=12,
)


def hits_of(index: SearchIndex, query: str) -> list[Hit]:
    return index.search(query, permits=allow_all, limit=16).hits


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=operations, words=queries)
def test_an_index_updated_step_by_step_answers_as_one_built_fresh(
    steps: list[tuple[str, list[tuple[str, str, str, int]]]], words: list[str]
) -> None:
    index = SearchIndex()
    live: dict[str, ToolDocument] = {}
    for operation, tools in steps:
        documents = build(tools)
        if operation == "upsert":
            index.upsert(documents.values())
            live.update(documents)
        elif operation == "remove":
            index.remove(documents)
            for address in documents:
                live.pop(address, None)
        else:
            for address in documents:
                prefix = address.split("/")[0] + "/"
                index.remove_prefix(prefix)
                live = {a: d for a, d in live.items() if not a.startswith(prefix)}
    fresh = index_of(*sorted(live.values(), key=lambda d: d.address, reverse=True))
    query = " ".join(words)
    assert len(index) == len(live)
    assert hits_of(index, query) == hits_of(fresh, query)


# -- determinism across processes ----------------------------------------------------------------

_PROGRAM = """
import json, sys
sys.path.insert(0, sys.argv[1])
from navigator.search import SearchIndex, ToolDocument
index = SearchIndex()
words = ["disk", "usage", "list", "tables", "query", "uptime", "backup", "logs", "rotate"]
docs = []
for n in range(300):
    holder, role, name = f"m{n % 17}", f"r{n % 5}", f"tool_{n % 23}"
    text = " ".join(words[(n * k) % len(words)] for k in range(1, 5))
    docs.append(ToolDocument(f"{holder}/{role}/{name}", holder, role, name, "", text, (),
                             f"{role}{name}{n % 2}"))
index.upsert(docs)
out = []
for query in ["disk usage", "lsit tables", "m3 backup", "r2 logs rotate", "uptme"]:
    page = index.search(query, permits=lambda a: not a.startswith("m4/"), limit=16)
    out.append([[h.address, list(h.holders), h.holder_count, repr(h.score)] for h in page.hits])
print(json.dumps(out))
"""


def test_the_same_query_gives_the_same_order_whatever_the_hash_seed() -> None:
    answers = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", _PROGRAM, str(ROOT)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        answers.add(result.stdout)
    assert len(answers) == 1


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("What's the weather?", ["weather"]),
        ("I'd like the weather", ["like", "weather"]),
        ("I'm sure you're right, we'll see, I've seen it", ["sure", "right", "see", "seen"]),
        ("don't, can't, isn't", []),
        ("the company's users' reports", ["company", "users", "reports"]),
        ("o'neil's rock'n'roll", ["oneil", "rocknroll"]),
    ],
)
def test_an_ending_clitic_is_not_part_of_its_word(query: str, words: list[str]) -> None:
    """An ending clitic goes: "what's" is "what" (a stopword), "I'd" is "I" — never the "id" a
    tool's parameter is."""
    assert [word.surface for word in TextAnalyzer().query_words(query)] == words


def test_a_query_saying_id_like_finds_no_identifier() -> None:
    index = index_of(doc("h/issues/get_issue", "One issue.", parameters=(("id", "Its number."),)))
    assert addresses(index, "I'd like a weather report") == []
    assert addresses(index, "issue by id") == ["h/issues/get_issue"]


def test_an_untitled_tool_is_called_by_its_name_as_a_titled_one_is() -> None:
    """MCP shows a tool without a title by its name, so the name's words count as a title's
    would: the same score as the tool whose title spells its name, above one whose title does
    not say it."""
    untitled = doc("h/a/weather_report", "Tells what tomorrow brings.")
    spelled = doc("h/b/weather_report", "Tells what tomorrow brings.", title="Weather report")
    other = doc("h/c/weather_report", "Tells what tomorrow brings.", title="Tomorrow")
    index = index_of(untitled, spelled, other)
    page = index.search("weather", permits=allow_all)
    scores = {hit.address: hit.score for hit in page.hits}
    assert scores["h/a/weather_report"] == pytest.approx(scores["h/b/weather_report"])
    assert scores["h/c/weather_report"] < scores["h/a/weather_report"]
    blank = doc("h/d/weather_report", "Tells what tomorrow brings.", title="   ")
    assert index_of(blank).search("weather", permits=allow_all).hits[0].score == pytest.approx(
        index_of(untitled).search("weather", permits=allow_all).hits[0].score
    )


def test_the_analyzer_drops_stopwords_and_keeps_query_order() -> None:
    words = TextAnalyzer().query_words("Show the tables of db1")
    assert [word.surface for word in words] == ["show", "tables", "db1"]


def test_bulk_built_index_pages_like_one_built_document_by_document() -> None:
    import random

    rng = random.Random(11)
    words = [
        "list", "tables", "database", "PostgreSQL", "container", "logs", "restart", "e-mail",
        "GitHub", "issues", "search", "the", "of", "memory", "disk", "usage", "sync", "calendar",
        "non-profit", "café", "user's", "report", "export", "kaloMi", "zorve", "ports",
    ]  # fmt: skip

    def text(low: int, high: int) -> str:
        return " ".join(rng.choices(words, k=rng.randint(low, high)))

    documents = []
    for number in range(300):
        holder = f"m{number % 7}"
        role = rng.choice(["postgres", "docker", f"app-{number % 11}"])
        name = rng.choice(["list", "get", "sync"]) + "_" + rng.choice(words).replace("-", "")
        params = tuple((rng.choice(["id", "userName", "query"]), text(0, 6)) for _ in range(2))
        digest = rng.choice(["a", "b"])
        documents.append(
            ToolDocument(
                f"{holder}/{role}/{name}",
                holder,
                role,
                name,
                text(0, 3),
                text(3, 20),
                params,
                digest,
            )
        )
    one_by_one, by_assignment, bulk = SearchIndex(), SearchIndex(), SearchIndex()
    for document in documents:
        one_by_one.upsert([document])
    for start in range(0, len(documents), 23):
        by_assignment.upsert(documents[start : start + 23])
    bulk.upsert(documents)
    queries = [text(1, 4) for _ in range(60)] + ["databse tabels", "m3 logs", "contaner"]
    for query in queries:
        pages = [
            index.search(query, permits=lambda _: True, limit=10)
            for index in (one_by_one, by_assignment, bulk)
        ]
        expected = [(hit.address, hit.score, hit.holders) for hit in pages[0].hits]
        for page in pages[1:]:
            assert [(hit.address, hit.score, hit.holders) for hit in page.hits] == expected
            assert page.has_more == pages[0].has_more
    # and removals keep them equal
    gone = [document.address for document in documents[::3]]
    for index in (one_by_one, by_assignment, bulk):
        index.remove(gone)
    for query in queries:
        pages = [
            index.search(query, permits=lambda _: True, limit=10)
            for index in (one_by_one, by_assignment, bulk)
        ]
        remaining = [(hit.address, hit.score) for hit in pages[0].hits]
        for page in pages[1:]:
            assert [(hit.address, hit.score) for hit in page.hits] == remaining


def test_a_caller_refused_everything_is_asked_about_nothing() -> None:
    """A review: a principal denied ``*/*/*`` while ``*`` is allowed it had no reach (an allow
    named no segment), so measuring its part asked about every tool after every change — 220 ms
    at 100,000 tools, for a caller that may call nothing. Rules after the first that names no
    segment decide nothing: its reach is empty."""
    records = (
        GrantRecord(1, "alice", "*/*/*", (), "deny", 1),
        GrantRecord(2, "*", "*/*/*", (), "allow", 1),
    )
    blocked = compile_permissions(Caller("alice", frozenset()), GrantSnapshot(2, records))
    index = index_of(*(doc(f"m{n:03d}/app/sync_{n}", "Sync the calendar.") for n in range(50)))
    asked: list[str] = []
    assert index.search("sync calendar", permits=asking(blocked, asked)).hits == []
    assert asked == [] and blocked.reach == ()


def test_many_grant_sets_searching_in_turn_are_each_measured_once_per_change() -> None:
    """A review: the index kept 64 callers' parts, so with a 65th grant set searching in turn
    every search measured its caller's part again (~10 ms at 100,000 tools, against ~2 for a kept
    one). Parts are kept up to a weight in bytes — a few hundred at that size — least recently
    used dropped first (``WeightedCache``), and all of them dropped when the index changes."""
    index = index_of(*(doc(f"m{n:03d}/app/sync_{n}", "Sync the calendar.") for n in range(300)))
    callers = [(n, grants((f"m{n:03d}", "allow"))) for n in range(200)]
    for _ in range(2):
        for n, caller in callers:
            assert addresses(index, "sync calendar", permits=caller) == [f"m{n:03d}/app/sync_{n}"]
    assert index._own.measured == len(callers)
    index.upsert([doc("m999/app/sync_999", "Sync the calendar.")])  # every part measured again
    for n, caller in callers:
        assert addresses(index, "sync calendar", permits=caller) == [f"m{n:03d}/app/sync_{n}"]
    assert index._own.measured == 2 * len(callers)


@pytest.mark.parametrize("machines", [1, 3, 20])
def test_a_callers_own_postings_hold_no_more_than_their_bound(machines: int) -> None:
    """A review: ``postings_bound`` allowed 256 bytes a term beside its postings, but a term's
    entry holds a pair and two arrays (56 + 2 × 112 bytes) and its share of the dictionary, so a
    part whose every term had been searched held a quarter more than its weight said, and the
    cache of parts grew past ``KEPT_AUDIENCE_BYTES`` by as much."""
    words = [f"word{n}x" for n in range(400)]
    index = index_of(
        *(
            doc(f"m{n % 50:02d}/app/tool_{n}", " ".join(words[(n * k) % 400] for k in range(1, 4)))
            for n in range(2000)
        )
    )
    caller = grants(*((f"m{n:02d}", "allow") for n in range(machines)))
    index.search("word1x", permits=caller)
    own = index._own.lookup(caller.key)
    assert own is not None
    among = own.among
    assert among.postings is not None and among.terms is not None
    for term in among.terms:  # every term of the part read once, as searches would in turn
        scoring.scores(index._postings, [(term, 1.0)], among)
    arrays = [array for entry in among.postings.values() for array in entry]
    # a term's arrays may be views of one array found for several terms: its bytes count once
    bases = {id(array.base): array.base for array in arrays if array.base is not None}
    held = (
        sys.getsizeof(among.postings)
        + sum(sys.getsizeof(entry) for entry in among.postings.values())
        + sum(sys.getsizeof(array) for array in arrays)
        + sum(base.nbytes for base in bases.values())
    )
    assert len(among.postings) == len(among.terms)
    assert held <= among.postings_bound


def test_a_dropped_index_is_freed_at_once_not_by_the_cyclic_collector() -> None:
    """A review: the caller's parts held the index's own bound method, a cycle that left a
    replaced index (165 MiB at 100,000 tools) to the cyclic collector, whose passes over it
    doubled the time of building the next one."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        index = SearchIndex()
        with index.build() as build:
            build.add([doc(f"m{n:02d}/app/sync_{n}", "Sync the calendar.") for n in range(20)])
        caller = grants(("m01", "allow"))
        assert addresses(index, "sync calendar", permits=caller) == ["m01/app/sync_1"]
        index.upsert([doc("m99/app/sync_99", "Sync the calendar.")])
        dropped = weakref.ref(index)
        del index, build
        assert dropped() is None
    finally:
        if enabled:
            gc.enable()
