"""/metrics: the twin's figures in the exposition format, checked by the real promtool and scraped by Prometheus."""

from __future__ import annotations

import math
import subprocess
from datetime import UTC, datetime, timedelta

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.ingest.servers import prometheus
from tests.ingest.servers.readiness import poll_until

START = datetime(2026, 7, 15, 14, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    from ingest.live.runtime import build_hub

    db = tmp_path_factory.mktemp("metrics") / "metrics.db"
    hub = build_hub("demo", f"sqlite:///{db}", faults=("xid:h1-r01-k01-n0/0=79",), start=START)
    for k in range(3):
        hub.step(START + timedelta(seconds=k + 1))
    yield hub
    hub.db.dispose()


@pytest.fixture(scope="module")
def app(hub):
    from dashboard.app import app_for_hub

    return app_for_hub(hub)


@pytest.fixture(scope="module")
def exposition(app) -> str:
    r = app.server.test_client().get("/metrics")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return r.get_data(as_text=True)


def _samples(text: str) -> dict[tuple, float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.mark.slow
def test_promtool_check_metrics_accepts_the_exposition(exposition):
    r = subprocess.run(["promtool", "check", "metrics"], input=exposition, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "" and r.stderr.strip() == "", r.stdout + r.stderr


def test_figures_are_the_hub_latest_tick(exposition, hub):
    snap, detail = hub.view.latest(), hub.view.detail()
    samples = _samples(exposition)
    site = (("site", "demo"),)
    assert samples[("clustertwin_it_power_watts", site)] == pytest.approx(snap.it_power_mw * 1e6)
    bal = detail.balance
    assert samples[("clustertwin_generation_n1_headroom_watts", site)] == pytest.approx(
        (bal.generation_n1_capacity_mw - bal.facility_mw) * 1e6
    )
    assert samples[("clustertwin_gpus", (("site", "demo"), ("state", "down")))] == 1
    pump = samples[("clustertwin_time_to_throttle_seconds", (("failure", "pump_loss"), ("site", "demo")))]
    expected = float(snap.rack_time_to_throttle_s.min())
    assert pump == pytest.approx(expected) if math.isfinite(expected) else math.isinf(pump)
    hall = samples[
        ("clustertwin_hall_time_to_throttle_seconds", (("failure", "pump_loss"), ("hall", "H1"), ("site", "demo")))
    ]
    assert hall == pump  # the demo site has one hall
    job = snap.jobs[0]
    assert samples[("clustertwin_job_tokens_per_second", (("job", job.name), ("site", "demo")))] == pytest.approx(
        job.tokens_per_s
    )
    assert ("clustertwin_job_interruptions_total", (("job", job.name), ("site", "demo"))) in samples
    critical = sum(1 for a in hub.view.alerts(True) if a["severity"] == "critical")
    assert samples[("clustertwin_alerts_open", (("severity", "critical"), ("site", "demo")))] == critical
    use = snap.cdu_heat_kw / snap.cdu_capacity_kw
    assert samples[("clustertwin_cdu_capacity_used_max_ratio", (("hall", "H1"), ("site", "demo")))] == pytest.approx(
        float(use.max())
    )


@pytest.mark.prometheus
def test_prometheus_scrapes_the_twin(tmp_path, app, serve_app):
    served = serve_app(app)
    target = served.base_url.removeprefix("http://")
    server = prometheus.start(tmp_path, target)
    try:
        result = poll_until(
            lambda: requests.get(
                f"{server.url}/api/v1/query", timeout=5, params={"query": "clustertwin_it_power_watts"}
            ).json()["data"]["result"],
            30.0,
            interval_s=0.5,
        )
        assert result, f"Prometheus never scraped the twin: {server.log_path.read_text()[-1500:]}"
        assert result[0]["metric"]["site"] == "demo" and float(result[0]["value"][1]) > 1e5
        targets = requests.get(f"{server.url}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
        assert [t["health"] for t in targets] == ["up"], targets
    finally:
        server.stop()
