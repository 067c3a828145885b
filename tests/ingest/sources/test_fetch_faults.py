"""Fetch-fault handling against real HTTP servers: timeouts, 5xx, garbage, duplicates, counter resets.

Each failure mode has a documented outcome: how many attempts, whether the result is
stale, what is counted — and never an exception in the caller.
"""

from __future__ import annotations

import math
import random
import threading
import time

import pytest

from ingest.sources import http
from ingest.sources.counters import EnergyTracker
from ingest.sources.dcgm import fetch_dcgm
from ingest.sources.prometheus_api import fetch_samples
from ingest.sources.redfish import parse_resource, to_samples

GOOD = (
    "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
    'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="n1"} 40\n'
    'DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-b",Hostname="n1"} 41\n'
)
FAST = dict(timeout_s=0.5, backoff_s=0.01)


@pytest.mark.slow
def test_timeout_retries_then_stale_result(http_server):
    release = threading.Event()

    def slow(path, n):
        release.wait(3)
        return 200, "text/plain", GOOD

    server = http_server(slow)
    t0 = time.monotonic()
    result = fetch_dcgm(server.url + "/metrics", retries=2, **FAST)
    elapsed = time.monotonic() - t0
    release.set()
    assert not result.ok and result.stale
    assert result.attempts == 3 and "timed out" in result.error
    assert len(result.batch) == 0
    assert elapsed < 3 * 0.5 + 1.0


def test_500_then_recovers_within_retries(http_server):
    server = http_server(lambda path, n: (500, "text/plain", "boom") if n <= 2 else (200, "text/plain", GOOD))
    result = fetch_dcgm(server.url + "/metrics", retries=2, **FAST)
    assert result.ok and result.attempts == 3 and len(result.batch) == 2
    assert server.hits["/metrics"] == 3


def test_persistent_500_gives_up_after_retries(http_server):
    server = http_server(lambda path, n: (503, "text/plain", "unavailable"))
    result = fetch_dcgm(server.url + "/metrics", retries=3, **FAST)
    assert not result.ok and result.attempts == 4 and "HTTP 503" in result.error
    assert server.hits["/metrics"] == 4


def test_404_is_not_retried(http_server):
    server = http_server(lambda path, n: None)
    result = fetch_dcgm(server.url + "/metrics", retries=3, **FAST)
    assert not result.ok and result.attempts == 1 and "HTTP 404" in result.error


def test_connection_refused_is_a_result():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = fetch_dcgm(f"http://127.0.0.1:{port}/metrics", retries=1, **FAST)
    assert not result.ok and result.attempts == 2 and "connection failed" in result.error


def test_garbage_body_counts_malformed_and_keeps_good_lines(http_server):
    body = "<html><body>502 proxy error</body></html>\n" + GOOD + "\x00\x01binary junk\n"
    server = http_server(lambda path, n: (200, "text/html", body))
    result = fetch_dcgm(server.url + "/metrics", **FAST)
    assert result.ok
    assert result.batch.counts.malformed_lines == 2
    assert sorted(result.batch.value.tolist()) == [40.0, 41.0]


def test_garbage_from_prometheus_api_is_a_failed_result(http_server):
    server = http_server(lambda path, n: (200, "text/html", "<html>not json</html>"))
    result = fetch_samples(server.url, "up", **FAST)
    assert not result.ok and "bad_response" in result.error and result.attempts == 1


def test_prometheus_422_error_body_is_read_not_retried(http_server):
    body = '{"status":"error","errorType":"execution","error":"query timed out in expression evaluation"}'
    server = http_server(lambda path, n: (422, "application/json", body))
    result = fetch_samples(server.url, "up", retries=3, **FAST)
    assert not result.ok and result.attempts == 1 and "execution: query timed out" in result.error


def test_duplicate_series_keep_last(http_server):
    dup = GOOD + 'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",Hostname="n1"} 45\n'
    server = http_server(lambda path, n: (200, "text/plain", dup))
    result = fetch_dcgm(server.url + "/metrics", **FAST)
    assert result.ok and result.batch.counts.duplicates == 1
    temps = dict(zip(result.batch.entity_index.tolist(), result.batch.value.tolist()))
    assert temps == {0: 45.0, 1: 41.0}


def test_counter_reset_between_scrapes(http_server):
    energy_mj = [1_000_000_000, 1_007_000_000, 500_000]  # +7 kJ, then a driver reload

    def route(path, n):
        v = energy_mj[min(n, len(energy_mj)) - 1]
        return 200, "text/plain", f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="0",UUID="GPU-a",Hostname="n1"}} {v}\n'

    server = http_server(route)
    tracker = EnergyTracker()
    powers = []
    resets = 0
    for i in range(3):
        r = fetch_dcgm(server.url + "/metrics", **FAST)
        assert r.ok
        r.batch.timestamp_s[:] = 100.0 + 10.0 * i  # a fake clock: scrapes 10 s apart
        powers.append(tracker.update(r.batch))
        resets += r.batch.counts.counter_resets
    key = ("n1", 0, "GPU-a", "")
    assert powers[0] == {}
    assert powers[1][key] == pytest.approx(700.0)
    assert math.isnan(powers[2][key]) and resets == 1


def test_backoff_grows_exponentially_with_bounded_jitter():
    rng = random.Random(1)
    for attempt in range(5):
        d = http.backoff_delay_s(attempt, 0.1, 10.0, rng)
        assert 0.1 * 2**attempt <= d <= 1.5 * 0.1 * 2**attempt
    assert http.backoff_delay_s(20, 0.1, 2.0, rng) == 2.0


def test_get_sleeps_between_retries_with_fake_sleep(http_server):
    server = http_server(lambda path, n: (500, "text/plain", "x"))
    sleeps: list[float] = []
    with pytest.raises(http.FetchError) as err:
        http.get(server.url + "/", retries=3, backoff_s=0.05, timeout_s=1, sleep=sleeps.append)
    assert err.value.attempts == 4 and err.value.status == 500 and server.url in str(err.value)
    assert len(sleeps) == 3 and sleeps[0] < sleeps[1] < sleeps[2]  # 0.05–0.075, 0.1–0.15, 0.2–0.3 s


def test_redfish_odd_shapes_and_warning_leak():
    doc = {
        "@odata.type": "#LeakDetector.v1_2_0.LeakDetector",
        "@odata.id": "/redfish/v1/ThermalEquipment/CDUs/7/LeakDetection/LeakDetectors/Tray",
        "DetectorState": "Warning",
    }
    batch = to_samples(parse_resource(doc), "cdu-7")
    assert batch.select("leak_detected_flag").value.tolist() == [1.0]
    weird = {
        "@odata.type": "#Thermal.v1_7_0.Thermal",
        "@odata.id": "/redfish/v1/Chassis/1/Thermal",
        "Temperatures": "oops",
    }
    from ingest.sources.samples import IngestCounts

    counts = IngestCounts()
    assert parse_resource(weird, None, counts) == [] and counts.malformed_lines == 1
    assert parse_resource(["not", "a", "dict"], None, counts) == [] and counts.malformed_lines == 2
