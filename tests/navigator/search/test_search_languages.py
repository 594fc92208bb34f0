"""Catalogues in other languages than English: unspaced scripts by character bigrams, Russian and
German words by their own stemmers, and queries in a script no tool uses (ADR 0053)."""

from __future__ import annotations

import hashlib
import json

import pytest

from navigator.search import SearchIndex, ToolDocument
from navigator.search.languages import is_german, unspaced_pieces
from navigator.search.text import TextAnalyzer


def doc(address: str, description: str) -> ToolDocument:
    holder, role, name = address.split("/")
    digest = hashlib.sha256(json.dumps([name, description]).encode()).hexdigest()
    return ToolDocument(address, holder, role, name, "", description, (), digest)


def names(index: SearchIndex, query: str) -> list[str]:
    return [hit.document.name for hit in index.search(query, permits=lambda _: True).hits]


CHINESE = [
    doc("m/maps/maps_weather", "根据城市名称或者标准adcode查询指定城市的天气"),
    doc("m/maps/maps_bicycling", "骑行路径规划用于规划骑行通勤方案"),
    doc("m/cook/what_to_eat", "不知道吃什么？根据人数直接推荐适合的菜品组合"),
]
JAPANESE = [
    doc("m/grants/match", "企業情報から該当する補助金・助成金を判定し、マッチ度順にリストを返す"),
    doc("m/grants/checklist", "補助金IDから申請準備のチェックリストを生成する"),
]
RUSSIAN = [
    doc("m/firms/search_companies", "Подобрать список российских юрлиц по фильтрам"),
    doc("m/firms/get_company_timeline", "Лента событий компании: банкротные процедуры"),
]
GERMAN = [
    doc("m/law/urteil_lesen", "Liest den Volltext einer Gerichtsentscheidung als Markdown."),
    doc("m/law/gesetz_lesen", "Liest den Volltext einer einzelnen Norm des deutschen Rechts."),
]


@pytest.fixture(scope="module")
def index() -> SearchIndex:
    built = SearchIndex()
    built.upsert(CHINESE + JAPANESE + RUSSIAN + GERMAN)
    return built


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("明天上海的天气怎么样", "maps_weather"),  # no whole run of the query is in any text
        ("骑自行车的路线规划", "maps_bicycling"),
        ("今天吃什么", "what_to_eat"),
        ("使える補助金を探して", "match"),
        ("申請のチェックリストを作って", "checklist"),
    ],
)
def test_a_query_in_an_unspaced_script_finds_the_tool_by_its_characters(
    index: SearchIndex, query: str, expected: str
) -> None:
    assert names(index, query)[0] == expected


def test_russian_words_meet_in_another_inflection(index: SearchIndex) -> None:
    # "юрлица"/"юрлиц", "банкротство"/"банкротные" differ only in their endings
    assert names(index, "найди юрлица")[0] == "search_companies"
    assert names(index, "было ли банкротство у компаний")[0] == "get_company_timeline"


def test_german_words_meet_in_another_inflection(index: SearchIndex) -> None:
    # the German stemmer joins "Gerichtsentscheidungen" and "Gerichtsentscheidung"
    assert names(index, "alle Gerichtsentscheidungen der Woche")[0] == "urteil_lesen"


@pytest.mark.parametrize(
    "query",
    ["ما هو الطقس اليوم", "καιρός αύριο", "내일 날씨 어때", "พรุ่งนี้อากาศ", "🙂🙂", "。、"],
)
def test_a_query_in_a_script_no_tool_uses_finds_nothing(index: SearchIndex, query: str) -> None:
    assert names(index, query) == []


def test_unspaced_runs_become_bigrams_and_other_runs_stay_whole() -> None:
    assert unspaced_pieces("IP定位服务") == ["IP", "定位", "位服", "服务"]
    assert unspaced_pieces("吃") == ["吃"]
    assert unspaced_pieces("weather") is None


def test_a_text_is_german_by_its_function_words_not_by_a_german_word_in_english() -> None:
    assert is_german(["welche", "normen", "verweisen", "auf", "den", "paragraphen"])
    assert is_german(["frühere", "fassungen"])
    assert not is_german(["the", "list", "of", "gesetze", "in", "the", "index"])
    assert not is_german(["download", "the", "file", "from", "münchen"])


def test_bigrams_are_never_corrected_into_other_bigrams() -> None:
    words = TextAnalyzer().query_words("城市天气")
    assert [word.surface for word in words] == ["城市", "市天", "天气"]
    assert not any(word.correctable for word in words)
