"""Common words: wordfreq's table, the weight it gives a query word, and what that changes."""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import pytest

from navigator.search import RankingSettings, SearchIndex
from navigator.search.commonness import RARE_ZIPF, stem_zipf_frequency, zipf_frequency
from navigator.search.ranking import plan_query
from navigator.search.text import STOPWORDS, TextAnalyzer
from tests.navigator.search.test_search import addresses, doc

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from build_common_words import common_words

SETTINGS = RankingSettings()


def test_the_table_holds_only_common_words_sorted_once_each() -> None:
    text = resources.files("navigator.search").joinpath("data", "common-words.tsv").read_text()
    rows = [line.split("\t") for line in text.splitlines()]
    words = [word for word, _ in rows]
    assert words == sorted(words)
    assert len(set(words)) == len(words)
    assert all(word.isascii() and word.isalpha() and word.islower() for word in words)
    assert all(float(zipf) > RARE_ZIPF for _, zipf in rows)
    assert 2_000 < len(words) < 5_000


@pytest.mark.parametrize(
    ("word", "zipf"),
    [("make", 6.08), ("let", 5.60), ("everything", 5.54), ("information", 5.43), ("weather", 4.87)],
)
def test_a_common_word_has_its_general_english_frequency(word: str, zipf: float) -> None:
    # "let" is also "let's", as the analyser reads it; "everything" is weighed as the whole word
    assert zipf_frequency(word) == zipf


@pytest.mark.parametrize("word", ["kubernetes", "horoscope", "", "données", "Make"])
def test_any_other_word_counts_as_rare(word: str) -> None:
    assert zipf_frequency(word) == RARE_ZIPF
    assert SETTINGS.word_weight(zipf_frequency(word)) == 1.0


def test_a_stem_is_as_common_as_its_commonest_word() -> None:
    assert stem_zipf_frequency("inform") == zipf_frequency("information") > RARE_ZIPF
    assert stem_zipf_frequency("make") == zipf_frequency("make")
    assert stem_zipf_frequency("kubernet") == RARE_ZIPF


def test_a_word_weighs_less_the_commoner_it_is_down_to_the_floor() -> None:
    rare, common = SETTINGS.common_zipf
    zipfs = [rare - 1, rare, (rare + common) / 2, common, common + 1]
    weights = [SETTINGS.word_weight(zipf) for zipf in zipfs]
    assert weights == [1.0, 1.0, pytest.approx(0.75), 0.5, 0.5]
    assert RankingSettings(common_weight=1.0).word_weight(common + 1) == 1.0
    with pytest.raises(ValueError, match="common_zipf"):
        RankingSettings(common_zipf=(common, rare))


def test_a_request_weighs_its_subject_above_its_request_words() -> None:
    words = TextAnalyzer().query_words("can you help me find the weather forecast")
    related_of = {"forecast": (("prognosi", "inform"), ()), "help": (("succor",), ())}
    plan = plan_query(
        words,
        document_frequencies=lambda terms: [1 for _ in terms],
        holder_words={},
        correct=lambda _word, _stem: (),
        related=lambda word: related_of.get(word, ((), ())),
        commonness=zipf_frequency,
        stem_commonness=stem_zipf_frequency,
        settings=SETTINGS,
    )
    weights = dict(plan.terms)
    assert weights["forecast"] == 1.0  # not among the common words
    assert weights["help"] < weights["weather"] < weights["forecast"]
    assert weights["help"] == SETTINGS.word_weight(zipf_frequency("help")) >= 0.5
    # a related word counts its share of the word it comes from, and less if it is common itself
    near_weight = SETTINGS.related_weights[0]
    assert weights["prognosi"] == near_weight
    assert weights["succor"] == near_weight * weights["help"]
    information = SETTINGS.word_weight(zipf_frequency("information"))
    assert weights["inform"] == near_weight * information < near_weight


def test_the_subject_of_a_request_outranks_a_tool_named_by_its_request_word() -> None:
    tools = (doc("m/a/make_things", "Make things"), doc("m/b/soup_things", "Soup things"))
    flat = SearchIndex(RankingSettings(common_weight=1.0))
    shipped = SearchIndex()
    for index in (flat, shipped):
        index.upsert(tools)
    # counted alike, the two tie and the address decides; "make" is the commoner word
    assert addresses(flat, "make soup") == ["m/a/make_things", "m/b/soup_things"]
    assert addresses(shipped, "make soup") == ["m/b/soup_things", "m/a/make_things"]


def test_the_build_keeps_common_words_as_the_analyser_reads_them() -> None:
    top = int((9.0 - RARE_ZIPF) * 100)  # the cB bucket at RARE_ZIPF
    buckets: list[list[str]] = [[] for _ in range(top + 2)]
    buckets[0] = ["the", "make"]  # a stopword never reaches the weighting
    buckets[100] = ["let's", "don't", "u.s", "e-mail", "42", "café", "everything"]
    buckets[150] = ["let", "lets", "Weather"]  # "let" is already there ("let's"), commoner
    buckets[top] = ["approval"]  # exactly RARE_ZIPF: rare enough, left out
    # "everything" reads as itself, then its parts every and thing: one word
    expected = {"make": 9.0, "let": 8.0, "everything": 8.0, "lets": 7.5, "weather": 7.5}
    assert common_words(buckets) == expected


def test_no_stopword_is_in_the_table() -> None:
    assert all(zipf_frequency(word) == RARE_ZIPF for word in STOPWORDS)
