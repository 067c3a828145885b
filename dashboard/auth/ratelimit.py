"""A bounded failure counter: at most N failures per key in a sliding window, in bounded memory."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque


class FailureLimiter:
    """Counts failures per key (an address, a user name) and says when a key must wait.

    At most ``max_keys`` keys are kept (the least recently failed ones are forgotten first),
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

    def retry_after_s(self, key: str) -> float:
        """Seconds ``key`` must wait before its next attempt (0: it may try now)."""
        with self._lock:
            now = self.clock()
            times = self._recent(key, now)
            if times is None or len(times) < self.limit:
                return 0.0
            return max(0.0, self.window_s - (now - times[0]))

    def fail(self, key: str) -> None:
        """Record one failure of ``key``."""
        with self._lock:
            now = self.clock()
            times = self._recent(key, now) or deque(maxlen=self.limit)
            times.append(now)
            self._failures[key] = times
            self._failures.move_to_end(key)
            while len(self._failures) > self.max_keys:
                self._failures.popitem(last=False)

    def clear(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)

    def __len__(self) -> int:
        return len(self._failures)
