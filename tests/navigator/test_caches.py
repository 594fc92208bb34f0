"""The cache bounded by the weight of what it holds."""

from __future__ import annotations

from navigator.caches import WeightedCache

MISSING = object()


def test_the_least_recently_used_go_first_once_the_weights_pass_the_bound() -> None:
    cache: WeightedCache[str, str] = WeightedCache(10, len)
    for key in "abc":
        cache.put(key, key * 3)  # 9 in all
    assert cache.lookup("a", MISSING) == "aaa"  # now the most recently used
    cache.put("d", "dd")  # 11: "b" goes
    assert [cache.lookup(k, MISSING) for k in "abcd"] == ["aaa", MISSING, "ccc", "dd"]
    assert cache.weight == 8 == sum(map(len, cache.values()))


def test_the_newest_is_kept_whatever_it_weighs_and_a_held_key_keeps_its_value() -> None:
    cache: WeightedCache[str, str] = WeightedCache(4, len)
    cache.put("a", "a")
    cache.put("big", "x" * 50)
    assert len(cache) == 1 and cache.lookup("big", MISSING) == "x" * 50
    cache.put("big", "y")
    assert cache.lookup("big", MISSING) == "x" * 50 and cache.weight == 50


def test_none_is_a_value_and_clearing_drops_every_weight() -> None:
    cache: WeightedCache[str, None] = WeightedCache(100, lambda _: 7)
    cache.put("every tool", None)
    assert cache.lookup("every tool", MISSING) is None
    assert cache.lookup("other", MISSING) is MISSING
    cache.clear()
    assert len(cache) == 0 and cache.weight == 0
