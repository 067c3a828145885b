"""Real peers for the ingest tests, all on 127.0.0.1 and always stopped.

* ``ipmi_bmc``: OpenIPMI ``ipmi_sim`` with 8 GPU temperature sensors and a PSU power sensor.
* ``prometheus_server``: the Debian ``prometheus`` binary on a backfilled TSDB, scraping
  ``dcgm_exporter`` (a dcgm-exporter-style ``/metrics`` served from a thread).
* ``slurm_cluster``: Debian's slurmctld and 32 slurmd (8 fake GPUs each) with a workload
  of running, pending, array, completed and failed jobs, a drained and a down node.
* ``http_server``: a factory for threaded HTTP servers with route functions (Redfish
  trees, broken answers).

Missing binaries fail the tests with a message naming the package (``make test``
installs them); they are never skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from servers import ipmi_sim  # noqa: E402
from servers import prometheus as prometheus_peer  # noqa: E402
from servers import slurm as slurm_peer  # noqa: E402
from servers.http_threads import HttpServer  # noqa: E402

LIVE_POWER_W = 650.0


def live_exposition(hit: int) -> str:
    """dcgm-exporter text for the live node; the energy counter grows 650 W × 1 s per scrape."""
    lines = []
    for name, typ, value in (
        ("DCGM_FI_DEV_GPU_TEMP", "gauge", lambda g: f"{60 + g}"),
        ("DCGM_FI_DEV_POWER_USAGE", "gauge", lambda g: f"{LIVE_POWER_W:.6f}"),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", lambda g: f"{7_000_000_000 + hit * 650_000}"),
    ):
        lines.append(f"# HELP {name} test\n# TYPE {name} {typ}\n")
        lines += [
            f"{name}{{{prometheus_peer.gpu_labels(prometheus_peer.LIVE_HOST, g)}}} {value(g)}\n" for g in range(8)
        ]
    return "".join(lines)


@pytest.fixture
def http_server():
    """Factory: ``http_server(route) -> HttpServer``; every server is stopped afterwards."""
    servers: list[HttpServer] = []

    def make(route) -> HttpServer:
        s = HttpServer(route)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.stop()


@pytest.fixture(scope="session")
def dcgm_exporter():
    def route(path: str, n: int):
        if path.split("?", 1)[0] != "/metrics":
            return None
        return 200, "text/plain; version=0.0.4", live_exposition(n)

    server = HttpServer(route)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def prometheus_server(tmp_path_factory, dcgm_exporter):
    server = prometheus_peer.start(tmp_path_factory.mktemp("prometheus"), f"127.0.0.1:{dcgm_exporter.port}")
    yield server
    server.stop()


@pytest.fixture
def ipmi_bmc(tmp_path):
    sim = ipmi_sim.start(tmp_path)
    yield sim
    sim.stop()


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real Slurm 22.05 cluster with its workload submitted (see servers/slurm.py); stopped afterwards."""
    cluster = slurm_peer.start(tmp_path_factory.mktemp("slurm"))
    try:
        slurm_peer.submit_workload(cluster)
        yield cluster
    finally:
        cluster.stop()
