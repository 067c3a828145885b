"""Login attempt counters: a sliding window per key, in bounded memory or in the database shared by processes."""

import threading

import pytest

from dashboard.auth.ratelimit import FailureLimiter, make_limiter
from ingest.store.db import open_database
from ingest.store.loginlimits import StoredFailureLimiter


def fail(limiter, key: str) -> None:
    """One attempt of ``key`` that failed (its reservation stays counted)."""
    wait_s, ticket = limiter.reserve(key)
    assert wait_s == 0 and ticket is not None


def test_a_key_waits_once_over_the_limit_until_the_window_has_passed():
    now = [0.0]
    limiter = FailureLimiter(limit=3, window_s=60, clock=lambda: now[0])
    for _ in range(2):
        fail(limiter, "10.0.0.1")
    assert limiter.retry_after_s("10.0.0.1") == 0
    now[0] = 10
    fail(limiter, "10.0.0.1")
    assert limiter.retry_after_s("10.0.0.1") == 50  # the oldest failures (t=0) leave the window at t=60
    assert limiter.reserve("10.0.0.1") == (50, None)  # refused, and not counted
    assert limiter.retry_after_s("10.0.0.2") == 0  # other keys are not affected
    now[0] = 60
    assert limiter.retry_after_s("10.0.0.1") == 0
    fail(limiter, "10.0.0.1")
    now[0] = 69
    assert limiter.retry_after_s("10.0.0.1") == 0  # only the failures at 10 and 60 are left: 2 < 3
    wait_s, ticket = limiter.reserve("10.0.0.1")
    assert wait_s == 0 and limiter.retry_after_s("10.0.0.1") == 1  # 10, 60, 69: until 70
    limiter.release(ticket)  # the attempt at 69 succeeded
    assert limiter.retry_after_s("10.0.0.1") == 0
    limiter.clear("10.0.0.1")
    assert len(limiter) == 0


def test_memory_stays_bounded_whatever_clients_send():
    limiter = FailureLimiter(limit=5, window_s=300, max_keys=1000)
    for i in range(50_000):
        limiter.reserve(f"name-{i}")
        limiter.reserve("hammering")  # the most recently counted keys are kept
    assert len(limiter) == 1000
    assert limiter.retry_after_s("hammering") > 0
    assert limiter.retry_after_s("name-0") == 0  # forgotten first
    assert max(len(times) for times in limiter._failures.values()) == 5


def test_without_a_database_the_counters_live_in_the_process(db_url):
    assert isinstance(make_limiter(None, "user", 5, 300), FailureLimiter)
    engine = open_database(db_url)
    assert isinstance(make_limiter(engine, "user", 5, 300), StoredFailureLimiter)
    engine.dispose()


@pytest.fixture
def two_processes(db_url):
    """Two engines on one database, as two server processes have, and a clock they share."""
    engines = [open_database(db_url) for _ in range(2)]
    now = [1_000_000.0]
    yield engines, now
    for engine in engines:
        engine.dispose()


def test_attempts_through_two_processes_count_against_one_limit(two_processes):
    (first, second), now = two_processes
    a, b = (StoredFailureLimiter(e, "user", limit=3, window_s=60, clock=lambda: now[0]) for e in (first, second))
    other_scope = StoredFailureLimiter(second, "address", limit=3, window_s=60, clock=lambda: now[0])
    fail(a, "otto")
    now[0] += 10
    fail(b, "otto")
    fail(a, "otto")
    assert b.reserve("otto") == (pytest.approx(50), None)  # the first failure leaves the window at +60 s
    assert a.reserve("otto") == (pytest.approx(50), None)
    assert a.retry_after_s("otto") == pytest.approx(50)
    assert b.retry_after_s("ada") == 0 and other_scope.retry_after_s("otto") == 0
    assert a.rows_total() == 3  # refused attempts are not counted
    now[0] += 50
    wait_s, ticket = b.reserve("otto")  # old counters expire
    assert wait_s == 0 and a.retry_after_s("otto") > 0  # 10 s, 10 s and now: 3 again
    b.release(ticket)  # it succeeded
    assert a.retry_after_s("otto") == 0
    b.clear("otto")
    assert a.retry_after_s("otto") == 0 and a.rows_total() == 0


def test_concurrent_attempts_through_two_processes_cannot_pass_the_limit_together(two_processes):
    engines, _now = two_processes
    limiters = [StoredFailureLimiter(e, "user", limit=5, window_s=300) for e in engines]
    start, passed = threading.Barrier(12), []

    def attempt(limiter):
        start.wait()
        wait_s, _ticket = limiter.reserve("otto")
        if wait_s == 0:
            passed.append(1)

    threads = [threading.Thread(target=attempt, args=(limiters[i % 2],)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(passed) == 5  # counting before checking would let all 12 through
    assert limiters[0].rows_total() == len(passed)  # the refused ones took their rows back


def test_the_table_stays_bounded_whatever_clients_send(two_processes):
    (first, second), now = two_processes
    limiter = StoredFailureLimiter(
        first, "address", limit=5, window_s=300, max_rows=40, trim_every=8, clock=lambda: now[0]
    )
    users = StoredFailureLimiter(second, "user", limit=5, window_s=300, max_rows=40, trim_every=8, clock=lambda: now[0])
    fail(users, "otto")
    for i in range(300):
        fail(limiter, f"198.51.100.{i}" + "x" * 500)  # long keys are cut
    assert limiter.rows_total() <= 40 + 8
    assert users.rows_total() == 1  # one scope's flood does not push out the other's counters
    now[0] += 301
    for i in range(8):  # at least one of them does the housekeeping
        fail(users, f"ada{i}")
    assert limiter.rows_total() == 0 and users.rows_total() == 8  # expired rows are gone
