"""Staleness of each (source, target): age of the last good read, failure episodes logged once.

A poller hands every :class:`ingest.sources.samples.FetchResult` to :meth:`Freshness.record`.
The first failure after a good read starts an *episode* and logs one warning; further
failures only count; the first good read after it logs one recovery line.  ``age_s``
is the time since the last good read (``inf`` if there never was one); a target is
stale when that age exceeds ``max_age_s``.  The clock is injectable for tests.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from ingest.sources.samples import FetchResult

log = logging.getLogger(__name__)


@dataclass
class TargetState:
    last_ok_s: float = -math.inf
    failures_in_episode: int = 0
    total_failures: int = 0
    total_reads: int = 0
    last_error: str = ""


class Freshness:
    """Tracks the last good read per (source, target); see module docstring."""

    def __init__(self, max_age_s: float, clock: Callable[[], float] = time.time) -> None:
        self.max_age_s = max_age_s
        self.clock = clock
        self._state: dict[tuple[str, str], TargetState] = {}

    def record(self, result: FetchResult) -> None:
        key = (result.source, result.target)
        st = self._state.setdefault(key, TargetState())
        st.total_reads += 1
        if result.ok:
            if st.failures_in_episode:
                log.info("%s %s: recovered after %d failed read(s)", *key, st.failures_in_episode)
            st.last_ok_s = self.clock()
            st.failures_in_episode = 0
            return
        st.total_failures += 1
        st.last_error = result.error
        if st.failures_in_episode == 0:
            log.warning("%s %s: read failed (%s); further failures counted silently", *key, result.error)
        st.failures_in_episode += 1

    def age_s(self, source: str, target: str) -> float:
        st = self._state.get((source, target))
        return math.inf if st is None else self.clock() - st.last_ok_s

    def is_stale(self, source: str, target: str) -> bool:
        return self.age_s(source, target) > self.max_age_s

    def report(self) -> list[dict]:
        """One row per target: age, stale flag, failure counts, last error."""
        now = self.clock()
        return [
            {
                "source": s,
                "target": t,
                "age_s": now - st.last_ok_s,
                "stale": now - st.last_ok_s > self.max_age_s,
                "failures_in_episode": st.failures_in_episode,
                "total_failures": st.total_failures,
                "total_reads": st.total_reads,
                "last_error": st.last_error,
            }
            for (s, t), st in self._state.items()
        ]
