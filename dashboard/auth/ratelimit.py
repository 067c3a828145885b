"""Login attempt counters: at most N counted attempts per key in a sliding window.

An attempt is counted when it starts (:meth:`FailureLimiter.reserve`), before the password
is checked, and forgotten again when it succeeds (:meth:`FailureLimiter.release`), so
concurrent attempts cannot pass the limit together.  :func:`make_limiter` picks the
storage: the database (:class:`ingest.store.loginlimits.StoredFailureLimiter`), shared by
every worker and server process of that database, or this process's memory when no
database is configured.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque


class FailureLimiter:
    """Counts attempts per key (an address, a user name) in this process, in bounded memory.

    At most ``max_keys`` keys are kept (the least recently counted ones are forgotten first),
    each with at most ``limit`` timestamps, so memory stays bounded whatever a client sends.
    """

    def __init__(self, limit: int, window_s: float, max_keys: int = 10_000, clock=time.monotonic):
        self.limit, self.window_s, self.max_keys, self.clock = limit, window_s, max_keys, clock
        self._failures: OrderedDict[str, deque] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> deque | None:
        times = self._failures.get(key)
        if times is None:
            return None
        while times and now - times[0] >= self.window_s:
            times.popleft()
        if not times:
            del self._failures[key]
            return None
        return times

    def _wait_s(self, times: deque | None, now: float) -> float:
        if times is None or len(times) < self.limit:
            return 0.0
        return max(0.0, self.window_s - (now - times[0]))

    def retry_after_s(self, key: str) -> float:
        """Seconds ``key`` must wait before its next attempt (0: it may try now)."""
        with self._lock:
            now = self.clock()
            return self._wait_s(self._recent(key, now), now)

    def reserve(self, key: str) -> tuple[float, tuple[str, float] | None]:
        """Count an attempt of ``key``: ``(0, ticket)`` when it may go on, ``(wait_s, None)`` when refused."""
        with self._lock:
            now = self.clock()
            times = self._recent(key, now)
            wait_s = self._wait_s(times, now)
            if wait_s > 0:
                return wait_s, None
            times = times if times is not None else deque(maxlen=self.limit)
            times.append(now)
            self._failures[key] = times
            self._failures.move_to_end(key)
            while len(self._failures) > self.max_keys:
                self._failures.popitem(last=False)
            return 0.0, (key, now)

    def release(self, ticket: tuple[str, float]) -> None:
        """The attempt of ``ticket`` succeeded: it does not count."""
        key, at = ticket
        with self._lock:
            times = self._failures.get(key)
            if times is not None and at in times:
                times.remove(at)
                if not times:
                    del self._failures[key]

    def clear(self, key: str) -> None:
        """Forget every counted attempt of ``key``."""
        with self._lock:
            self._failures.pop(key, None)

    def __len__(self) -> int:
        return len(self._failures)


def make_limiter(engine, scope: str, limit: int, window_s: float, max_keys: int = 10_000):
    """A limiter of ``limit`` attempts per ``window_s`` for keys of ``scope`` ("address", "user").

    Stored in ``engine`` (shared by every process of that database; at most ``max_keys`` ×
    ``limit`` rows) when there is one, else in this process.
    """
    if engine is None:
        return FailureLimiter(limit, window_s, max_keys)
    from ingest.store.loginlimits import StoredFailureLimiter

    return StoredFailureLimiter(engine, scope, limit, window_s, max_rows=max_keys * limit)
