"""Staleness tracking with a fake clock: ages, stale flags, one log line per failure episode."""

from __future__ import annotations

import logging
import math

from ingest.live.freshness import Freshness
from ingest.sources.samples import FetchResult, empty_batch, failed


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def ok(target: str = "http://n1:9400/metrics") -> FetchResult:
    return FetchResult("dcgm", target, True, empty_batch("dcgm"))


def test_age_stale_and_episode_logging(caplog):
    clock = FakeClock()
    fr = Freshness(max_age_s=30.0, clock=clock)
    target = "http://n1:9400/metrics"
    assert math.isinf(fr.age_s("dcgm", target)) and fr.is_stale("dcgm", target)
    fr.record(ok())
    clock.t += 10
    assert fr.age_s("dcgm", target) == 10 and not fr.is_stale("dcgm", target)
    with caplog.at_level(logging.INFO, logger="ingest.live.freshness"):
        for _ in range(5):
            clock.t += 10
            fr.record(failed("dcgm", target, "GET … timed out"))
        fr.record(ok())
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    infos = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(warnings) == 1 and "timed out" in warnings[0].getMessage()
    assert len(infos) == 1 and "5 failed" in infos[0].getMessage()
    row = fr.report()[0]
    assert row["total_failures"] == 5 and row["total_reads"] == 7 and row["age_s"] == 0 and not row["stale"]


def test_stale_while_failing():
    clock = FakeClock()
    fr = Freshness(max_age_s=30.0, clock=clock)
    fr.record(ok())
    clock.t += 31
    fr.record(failed("dcgm", "http://n1:9400/metrics", "HTTP 500"))
    assert fr.is_stale("dcgm", "http://n1:9400/metrics")
    assert fr.report()[0]["last_error"] == "HTTP 500"
