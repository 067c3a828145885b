"""The one bounded cache (twin.cache): bounded, least recently used first out, safe under threads."""

import threading

import pytest

from twin.cache import BoundedCache


def test_the_least_recently_used_entry_goes_first_and_the_bound_holds():
    cache = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), len(cache)) == (1, None, 3, 2)


def test_a_kept_value_that_is_no_longer_valid_is_made_again():
    held, other = object(), object()
    cache = BoundedCache(4)
    assert cache.get_or_make(1, lambda: (held, "first"), valid=lambda hit: hit[0] is held)[1] == "first"
    # the same key (an id reused by another object) must not answer with the first object's value
    assert cache.get_or_make(1, lambda: (other, "second"), valid=lambda hit: hit[0] is other)[1] == "second"


def test_none_is_a_value_and_is_made_once():
    made = []
    cache = BoundedCache(4)
    for _ in range(3):
        assert cache.get_or_make("k", lambda: made.append(1)) is None
    assert made == [1]


def test_single_flight_makes_a_missing_value_once_however_many_threads_ask():
    made, gate = [], threading.Event()
    cache = BoundedCache(4, single_flight=True)

    def make():
        gate.wait(5)
        made.append(1)
        return "value"

    answers = []
    threads = [threading.Thread(target=lambda: answers.append(cache.get_or_make("k", make))) for _ in range(8)]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(10)
    assert made == [1] and answers == ["value"] * 8


def test_a_cache_without_room_is_refused():
    with pytest.raises(ValueError, match="at least one entry"):
        BoundedCache(0)
