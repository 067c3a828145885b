"""Real sources feeding the live twin: a dcgm-exporter endpoint for the demo site's hosts."""

import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ingest.live.pollers import SourceSpecError, parse_source_spec
from ingest.live.runtime import build_hub
from twin.site.load import load_site

LABELS = (
    'gpu="{i}",UUID="GPU-{u:08x}-0000-0000-0000-000000000000",pci_bus_id="00000000:{i:02X}:00.0",'
    'device="nvidia{i}",modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",DCGM_FI_DRIVER_VERSION="550.54.15"'
)
FIELDS = (
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "temp"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power"),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "util"),
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", "clock"),
)


def exposition(hosts: list[str], temp_c: float, util_pct: float, skip_host: str = "") -> str:
    """A dcgm-exporter page for every GPU of ``hosts`` (one federated page, as a Prometheus would)."""
    values = {"temp": f"{temp_c:.0f}", "power": "512.250000", "util": f"{util_pct:.0f}", "clock": "1755"}
    lines = []
    for name, kind, help_text, key in FIELDS:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
        for h, host in enumerate(hosts):
            if host == skip_host:
                continue
            for i in range(8):
                lines.append(f"{name}{{{LABELS.format(i=i, u=h * 8 + i, host=host)}}} {values[key]}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def demo():
    return load_site("demo")


@pytest.mark.slow
def test_the_twin_runs_on_scraped_readings(http_server, demo, tmp_path):
    page = {"text": exposition(demo.node_name + ["stranger-node"], temp_c=63, util_pct=88)}
    server = http_server(
        lambda path, n: (200, "text/plain; version=0.0.4", page["text"]) if path == "/metrics" else None
    )
    hub = build_hub("demo", f"sqlite:///{tmp_path / 'dcgm.db'}", sources=(f"dcgm={server.url}/metrics",))
    poller = hub.ticker.pollers[0]
    poller.run(hub.ticker.buffer)
    assert poller.failures == 0
    now = datetime.now(UTC).replace(microsecond=0)
    snap = hub.step(now)
    assert (snap.gpu_temp_c == 63).all()  # measured values replace the twin's
    assert np.allclose(snap.gpu_power_w, 512.25)
    assert np.allclose(snap.gpu_util_frac, 0.88, atol=0.01)
    assert snap.source_age_s["dcgm"] < 5

    # a node disappears from the scrape: once its readings age out, its GPUs fall back on the twin
    hub.ticker.reading_max_age_s = 0.5
    time.sleep(0.6)
    page["text"] = exposition(demo.node_name, temp_c=64, util_pct=88, skip_host="h1-r01-k01-n0")
    poller.run(hub.ticker.buffer)
    later = hub.step(datetime.now(UTC))
    missing = demo.gpu_node == 0
    assert (later.gpu_temp_c[~missing] == 64).all()
    assert np.isfinite(later.gpu_temp_c[missing]).all() and (later.gpu_temp_c[missing] != 64).all()


@pytest.mark.slow
def test_a_dead_source_goes_stale_and_raises_one_alert(http_server, tmp_path):
    server = http_server(lambda path, n: (500, "text/plain", "exporter crashed"))
    hub = build_hub("demo", f"sqlite:///{tmp_path / 'dead.db'}", sources=(f"dcgm={server.url}/metrics",))
    poller = hub.ticker.pollers[0]
    for _ in range(2):
        poller.run(hub.ticker.buffer)  # retried with back-off inside, never raises
    assert poller.failures == 2
    now = datetime.now(UTC)
    hub.step(now)
    hub.step(now + timedelta(seconds=1))
    stale = [a for a in hub.view.alerts() if a["entity_kind"] == "source"]
    assert len(stale) == 1 and stale[0]["entity_name"] == "dcgm" and stale[0]["message"] == "no reading yet"


@pytest.mark.parametrize(
    "spec, expected",
    [
        (
            "dcgm=http://a:9400/metrics,http://b:9400/metrics",
            ("dcgm", ["http://a:9400/metrics", "http://b:9400/metrics"], ""),
        ),
        (
            "ipmi=ipmi://admin:secret@127.0.0.1:9623#h1-r01-k01-n0",
            ("ipmi", ["ipmi://admin:secret@127.0.0.1:9623"], "h1-r01-k01-n0"),
        ),
    ],
)
def test_source_specs(spec, expected):
    assert parse_source_spec(spec) == expected


@pytest.mark.parametrize("spec", ["dcgm", "snmp=udp://x", "redfish="])
def test_bad_source_specs_are_named(spec):
    with pytest.raises(SourceSpecError, match="expected KIND=TARGET"):
        parse_source_spec(spec)
