"""The poll watchdog: a stuck poll is abandoned, its late readings dropped, stuck threads bounded, the source alerted."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from ingest.live.freshness import Freshness
from ingest.live.pollers import make_poller, watched_poller
from ingest.live.runtime import build_hub
from ingest.live.watchdog import PollAbandoned, Watchdog
from ingest.sources.dcgm import parse_dcgm
from ingest.sources.samples import FetchResult

PAGE = 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="h1-r01-k01-n0"} 71\n'


def test_watchdog_returns_values_and_passes_errors_on():
    dog = Watchdog("t", deadline_s=2.0)
    assert dog.run(lambda: 42) == 42
    with pytest.raises(ZeroDivisionError):
        dog.run(lambda: 1 / 0)
    assert dog.abandoned_total == 0


def test_watchdog_abandons_and_bounds_stuck_threads():
    release = threading.Event()
    started = []

    def stuck():
        started.append(1)
        release.wait(10)

    dog = Watchdog("t", deadline_s=0.2, max_abandoned=2)
    for _ in range(2):
        t0 = time.monotonic()
        with pytest.raises(PollAbandoned, match="abandoned after 0.2 s"):
            dog.run(stuck)
        assert time.monotonic() - t0 < 1.0
    with pytest.raises(PollAbandoned, match="2 earlier poll"):
        dog.run(stuck)
    assert len(started) == 2 and dog.stuck == 2 and dog.abandoned_total == 2
    release.set()
    deadline = time.monotonic() + 5
    while dog.stuck and time.monotonic() < deadline:
        time.sleep(0.01)
    assert dog.stuck == 0 and dog.run(lambda: "fresh") == "fresh"  # polls resume once the threads end


@pytest.mark.slow
def test_stuck_source_is_abandoned_its_late_readings_dropped_and_alerted(tmp_path):
    hub = build_hub("demo", f"sqlite:///{tmp_path / 'stuck.db'}", sources=())
    release = threading.Event()
    calls = []

    def hanging_fetch() -> FetchResult:
        calls.append(1)
        release.wait(10)  # e.g. a DNS lookup that never returns: no socket deadline covers it
        return FetchResult("dcgm", "http://stuck/metrics", True, parse_dcgm(PAGE))

    freshness = Freshness(max_age_s=10.0)
    poller = watched_poller(
        "dcgm",
        [(hanging_fetch, "http://stuck/metrics")],
        _inventory(hub),
        interval_s=1.0,
        watchdog_s=0.3,
        freshness=freshness,
    )
    hub.ticker.pollers = [poller]
    t0 = time.monotonic()
    poller.run(hub.ticker.buffer)
    poller.run(hub.ticker.buffer)
    poller.run(hub.ticker.buffer)  # two threads stuck: this one does not start a third
    assert time.monotonic() - t0 < 2.0
    assert poller.failures == 3 and len(calls) == 2 and poller.watchdog.abandoned_total == 2
    assert freshness.report()[0]["failures_in_episode"] == 3
    assert "abandoned" in freshness.report()[0]["last_error"] or "stuck" in freshness.report()[0]["last_error"]

    release.set()  # the stuck fetches finish now: their readings must not land
    time.sleep(0.2)
    now = datetime.now(UTC).replace(microsecond=0)
    snap = hub.step(now)
    assert snap.gpu_temp_c[0] != 71
    hub.step(now + timedelta(seconds=1))
    stale = [a for a in hub.view.alerts() if a["entity_kind"] == "source"]
    assert len(stale) == 1 and stale[0]["entity_name"] == "dcgm"


def _inventory(hub):
    from ingest.sources.inventory import Inventory

    return Inventory.from_site(hub.state)


@pytest.mark.slow
def test_poller_against_a_server_sending_headers_forever_fails_at_the_fetch_deadline(http_server):
    def headers_forever(wfile, stopping):
        wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        wfile.flush()
        while not stopping.wait(0.05):
            wfile.write(b"a")
            wfile.flush()

    from ingest.sources.inventory import Inventory
    from twin.site.load import load_site

    server = http_server(lambda path, n: headers_forever)
    poller = make_poller(f"dcgm={server.url}/metrics", Inventory.from_site(load_site("demo")), interval_s=0.5)

    class Sink:  # the poll must not store anything
        def update(self, *args):
            raise AssertionError("nothing to store")

    t0 = time.monotonic()
    poller.run(Sink())
    assert time.monotonic() - t0 < 2.0
    assert poller.failures == 1 and poller.watchdog.abandoned_total == 0  # the fetch deadline ended it first


def test_a_live_prometheus_poll_of_an_endless_body_stops_at_the_live_cap(http_server):
    """An endless answer (no length) to the live poller: refused at 32 MiB, not the 256 MiB of a history import."""
    import resource

    from ingest.live.pollers import LIVE_PROMETHEUS_MAX_BYTES
    from ingest.sources.inventory import Inventory
    from twin.site.load import load_site

    def endless(wfile, stopping):
        wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
        chunk = b" " * 2**20
        while not stopping.is_set():
            wfile.write(chunk)

    server = http_server(lambda path, n: endless)
    poller = make_poller(f"prometheus={server.url}", Inventory.from_site(load_site("demo")), interval_s=5.0)
    seen = []

    class Sink:
        def update(self, *args):
            raise AssertionError("nothing to store")

    before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.monotonic()
    poller.run(Sink())
    seen.append(time.monotonic() - t0)
    grown_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before_mb
    assert poller.failures == 1 and seen[0] < 10.0
    assert grown_mb < 2 * LIVE_PROMETHEUS_MAX_BYTES / 2**20, grown_mb
