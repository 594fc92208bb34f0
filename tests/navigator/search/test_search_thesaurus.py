"""Related words: WordNet's table, its use by the ranker, and the bound on what it may cost."""

from __future__ import annotations

import gzip
from importlib import resources

import pytest

from navigator.search import RankingSettings, SearchIndex
from navigator.search.text import TextAnalyzer
from navigator.search.thesaurus import compound_parts, related_words
from tests.navigator.search.test_search import addresses, doc, index_of


def test_a_word_gives_the_stems_of_its_synonyms_and_hypernyms() -> None:
    near, far = related_words("documentary")
    assert {"film", "movi"} <= set(near)
    assert "documentari" not in near  # never the word's own stem
    assert set(near).isdisjoint(far)


@pytest.mark.parametrize(
    ("form", "lemma"),
    [("apartments", "apartment"), ("houses", "house"), ("boxes", "box"), ("mice", "mouse")],
)
def test_inflected_and_irregular_forms_reach_their_lemma(form: str, lemma: str) -> None:
    assert related_words(lemma)[0]
    assert set(related_words(form)[0]) >= set(related_words(lemma)[0])


@pytest.mark.parametrize("word", ["", "zzqx", "données", "a" * 500, "x1y2", "the"])
def test_unknown_odd_or_foreign_words_have_no_related_words(word: str) -> None:
    assert related_words(word) == ((), ())


def test_the_table_is_sorted_so_bisection_finds_every_word() -> None:
    packed = resources.files("navigator.search").joinpath("data", "related-words.tsv.gz")
    lines = gzip.decompress(packed.read_bytes()).decode("ascii").splitlines()
    words = [line.split("\t", 1)[0] for line in lines]
    assert words == sorted(words)
    assert len(set(words)) == len(words)
    for word in words[:: max(1, len(words) // 500)]:
        assert related_words(word) != ((), ())


def test_a_query_reaches_a_tool_through_a_related_word_only() -> None:
    index = index_of(
        doc("m/homes/renting", "Information about house renting"),
        doc("m/weather/forecast", "The weather forecast for a city"),
    )
    assert addresses(index, "cheap apartments") == ["m/homes/renting"]


def test_a_tool_using_the_query_word_outranks_one_reached_through_a_related_word() -> None:
    index = index_of(
        doc("m/films/watch", "Where to watch a film tonight"),
        doc("m/docs/find", "Find a documentary about nature"),
    )
    assert addresses(index, "documentary") == ["m/docs/find", "m/films/watch"]


def test_related_words_stay_within_their_postings_budget() -> None:
    documents = [doc(f"m/films/t{i:03d}", "Watch a film") for i in range(40)]
    documents.append(doc("m/movies/one", "A movie night"))
    settings = RankingSettings(related_postings=10, relevance_floor=0.0)
    index = SearchIndex(settings)
    index.upsert(documents)
    # "film" is on 40 tools, over the budget of 10 postings: only the rarer "movie" joins.
    assert addresses(index, "documentary") == ["m/movies/one"]
    unbounded = SearchIndex(RankingSettings(relevance_floor=0.0))  # every hit, however weak
    unbounded.upsert(documents)
    assert len(addresses(unbounded, "documentary", limit=50)) == 41


def test_a_word_reaches_its_family_among_the_far_related_words() -> None:
    # derivationally related forms and pertainyms: "finance" and "financial" stem apart
    assert "financ" in related_words("financial")[1]
    assert "financi" in related_words("finance")[1]
    index = index_of(
        doc("m/money/budget", "Plan your finances and budget"),
        doc("m/weather/forecast", "The weather forecast for a city"),
    )
    assert addresses(index, "financial news") == ["m/money/budget"]


def test_an_english_word_the_index_lacks_is_not_taken_for_a_misspelling() -> None:
    index = index_of(
        doc("m/view/see", "See what changed"),
        doc("m/db/query", "Query a database"),
    )
    # "seems" is a word WordNet knows: not corrected to "see"; its related words reach nothing
    assert addresses(index, "seems") == []
    # words WordNet does not know are still corrected
    assert addresses(index, "databse") == ["m/db/query"]
    assert addresses(index, "seee") == ["m/view/see"]


def test_a_word_reaches_the_words_of_its_definition_but_not_wordnets_common_ones() -> None:
    # "horoscope": a diagram of the positions of the planets and signs of the zodiac ...
    assert {"zodiac", "planet"} <= set(related_words("horoscope")[1])
    # words that more than one WordNet definition in 200 uses say nothing of one word
    for word in ("like", "tool", "list"):
        assert not {"use", "person", "someth", "relat"} & set(related_words(word)[1])
    index = index_of(
        doc("m/stars/reading", "Your day read from the zodiac"),
        doc("m/money/convert", "Convert an amount between currencies"),
    )
    assert addresses(index, "my horoscope") == ["m/stars/reading"]


@pytest.mark.parametrize(
    ("word", "parts"),
    [
        ("username", ("user", "name")),
        ("chargebacks", ("charge", "backs")),
        ("namespace", ("name", "space")),
        ("screenshot", ("screen", "shot")),
        ("passwordreset", ("password", "reset")),
        # two splits of four letters at least: the more even one, then the first
        ("teamspace", ("team", "space")),
        # a bound combining form and a word, when no split into two words exists
        ("cybersecurity", ("cyber", "security")),
        ("subdomains", ("sub", "domains")),
        ("cryptocurrencies", ("crypto", "currencies")),
        ("geolocation", ("geo", "location")),
    ],
)
def test_a_closed_compound_wordnet_lacks_splits_into_two_words_it_has(
    word: str, parts: tuple[str, str]
) -> None:
    assert related_words(word) == ((), ())
    assert compound_parts(word) == parts


@pytest.mark.parametrize(
    "word",
    [
        "database",  # WordNet has it
        "documentary",
        "webhook",  # "web" is too short a part
        "kubectl",  # no split into English words
        "postgresql",
        "unstaged",  # a form that negates its head is not a combining form here
        "nonblocking",
        "subs",  # the head is a word of four letters at least
        "données",
        "user_name",
        "a" * 500,
    ],
)
def test_a_word_wordnet_has_or_that_does_not_split_into_its_words_stays_whole(word: str) -> None:
    assert compound_parts(word) == ()


def test_a_compound_in_prose_is_kept_whole_beside_its_parts_unless_a_part_is_a_stopword() -> None:
    analyzer = TextAnalyzer()
    assert analyzer.prose_surfaces("Set the username.") == ["set", "username", "user", "name"]
    assert analyzer.prose_terms("username") == ["usernam", "=username", "user", "name"]
    assert analyzer.prose_surfaces("a dropdown") == ["dropdown"]  # drop + "down"
    words = analyzer.query_words("username")
    assert [word.surface for word in words] == ["username", "user", "name"]
    assert not words[0].correctable  # a compound of two words is not a misspelling


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("user name", "h/auth/set_handle"),  # "username"
        ("hostname", "h/dns/resolve"),  # "host name"
        ("web security", "h/scan/audit"),  # "cybersecurity": a combining form and its head
        ("a domain", "h/dns/list_records"),  # "subdomain"
    ],
)
def test_a_compound_and_its_open_form_find_each_other(query: str, first: str) -> None:
    index = index_of(
        doc("h/auth/set_handle", "Change the username of an account."),
        doc("h/dns/resolve", "Resolve a host name to its addresses."),
        doc("h/scan/audit", "Audit a site's cybersecurity."),
        doc("h/dns/list_records", "List the records of every subdomain."),
        doc("h/files/rename", "Give a file a new name."),
    )
    assert addresses(index, query)[0] == first
