"""Against a real Prometheus: backfilled history via query_range, a live scrape, error answers."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from servers import prometheus as peer
from servers.readiness import poll_until

from ingest.sources.counters import power_from_energy
from ingest.sources.prometheus_api import fetch_samples, query, query_range

pytestmark = pytest.mark.prometheus


def _wait_for(fn, base_s: float = 20.0):
    """``fn()`` once true, polled up to ``base_s`` seconds scaled by the machine's load."""
    return poll_until(fn, base_s, interval_s=0.3)


def test_backfilled_history_through_query_range(prometheus_server):
    end = prometheus_server.history_end_s
    start = end - (peer.HISTORY_POINTS - 1) * peer.HISTORY_STEP_S
    promql = f'DCGM_FI_DEV_POWER_USAGE{{Hostname="{peer.HISTORY_HOST}"}}'
    result = fetch_samples(prometheus_server.url, promql, range_s=(start, end, peer.HISTORY_STEP_S))
    assert result.ok, result.error
    batch = result.batch
    assert len(batch.entities) == 8 and set(batch.entities.host) == {peer.HISTORY_HOST}
    assert len(batch) == 8 * peer.HISTORY_POINTS
    for g in range(8):
        sel = batch.entity_index == g
        expected = [peer.history_power_w(g, k) for k in range(peer.HISTORY_POINTS)]
        assert np.allclose(batch.value[sel], expected)
        assert np.allclose(np.diff(batch.timestamp_s[sel]), peer.HISTORY_STEP_S)


def test_energy_counter_reset_flagged_and_power_derived_across_good_intervals(prometheus_server):
    end = prometheus_server.history_end_s
    start = end - (peer.HISTORY_POINTS - 1) * peer.HISTORY_STEP_S
    promql = f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{Hostname="{peer.HISTORY_HOST}"}}'
    result = fetch_samples(prometheus_server.url, promql, range_s=(start, end, peer.HISTORY_STEP_S))
    assert result.ok, result.error
    batch = result.batch
    assert batch.counts.counter_resets == 1
    sel = batch.entity_index == peer.RESET_GPU
    t, p, reset = power_from_energy(batch.timestamp_s[sel], batch.value[sel])
    assert reset.sum() == 1 and math.isnan(p[reset][0])
    good = ~reset
    expected = np.array([peer.history_power_w(peer.RESET_GPU, k) for k in range(1, peer.HISTORY_POINTS)])
    assert np.allclose(p[good], expected[good])


def test_live_scrape_of_threaded_exporter(prometheus_server, dcgm_exporter):
    promql = f'DCGM_FI_DEV_POWER_USAGE{{Hostname="{peer.LIVE_HOST}"}}'
    live = _wait_for(lambda: (r := fetch_samples(prometheus_server.url, promql)).ok and len(r.batch) == 8 and r)
    assert live, "the live exporter was not scraped in time"
    assert np.allclose(live.batch.value, 650.0)
    assert dcgm_exporter.hits["/metrics"] >= 1
    now = time.time()
    energy = f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{Hostname="{peer.LIVE_HOST}",gpu="0"}}'
    ranged = _wait_for(
        lambda: (
            (r := fetch_samples(prometheus_server.url, energy, range_s=(now - 30, now + 5, 1))).ok
            and len(r.batch) >= 3
            and r
        )
    )
    assert ranged, "fewer than 3 live points in time"
    assert ranged.batch.counts.counter_resets == 0
    assert np.all(np.diff(ranged.batch.value) >= 0)


def test_default_instant_query_and_error_answer(prometheus_server):
    result = fetch_samples(prometheus_server.url)
    assert result.ok and len(result.batch) > 0
    assert set(result.batch.metric_names()) <= {
        "gpu_temp_c",
        "gpu_power_w",
        "gpu_energy_j",
        "hbm_temp_c",
        "gpu_util_frac",
    }
    resp, attempts = query(prometheus_server.url, "sum(rate(")
    assert not resp.ok and resp.error_type == "bad_data" and attempts == 1
    bad = fetch_samples(prometheus_server.url, "sum(rate(")
    assert not bad.ok and bad.stale and "bad_data" in bad.error
    scalar, _ = query(prometheus_server.url, "scalar(vector(42))")
    assert scalar.ok and scalar.result_type == "scalar" and scalar.scalar == 42
    rng, _ = query_range(prometheus_server.url, "vector(1)", time.time() - 10, time.time(), 5)
    assert rng.ok and rng.result_type == "matrix" and len(rng.series[0].value) >= 2
