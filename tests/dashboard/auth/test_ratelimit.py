"""The login failure counter: a sliding window per key, in bounded memory."""

from dashboard.auth.ratelimit import FailureLimiter


def test_a_key_waits_once_over_the_limit_until_the_window_has_passed():
    now = [0.0]
    limiter = FailureLimiter(limit=3, window_s=60, clock=lambda: now[0])
    for _ in range(2):
        limiter.fail("10.0.0.1")
    assert limiter.retry_after_s("10.0.0.1") == 0
    now[0] = 10
    limiter.fail("10.0.0.1")
    assert limiter.retry_after_s("10.0.0.1") == 50  # the oldest failures (t=0) leave the window at t=60
    assert limiter.retry_after_s("10.0.0.2") == 0  # other keys are not affected
    now[0] = 60
    assert limiter.retry_after_s("10.0.0.1") == 0
    limiter.fail("10.0.0.1")
    now[0] = 69
    assert limiter.retry_after_s("10.0.0.1") == 0  # only the failures at 10 and 60 are left: 2 < 3
    limiter.fail("10.0.0.1")
    assert limiter.retry_after_s("10.0.0.1") == 1  # 10, 60, 69: until 70
    limiter.clear("10.0.0.1")
    assert len(limiter) == 0


def test_memory_stays_bounded_whatever_clients_send():
    limiter = FailureLimiter(limit=5, window_s=300, max_keys=1000)
    for i in range(50_000):
        limiter.fail(f"name-{i}")
        limiter.fail("hammering")  # the most recently failed keys are kept
    assert len(limiter) == 1000
    assert limiter.retry_after_s("hammering") > 0
    assert limiter.retry_after_s("name-0") == 0  # forgotten first
    assert max(len(times) for times in limiter._failures.values()) == 5
