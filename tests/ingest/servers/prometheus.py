"""A real Prometheus server on 127.0.0.1 with backfilled history and a live scrape target.

History: an OpenMetrics file (8 GPUs of one node, one hour at 15 s, temperature, power
and an energy counter that resets once) turned into TSDB blocks with
``promtool tsdb create-blocks-from openmetrics`` *before* the server starts.  Live: the
server scrapes a dcgm-exporter-style endpoint served from a thread every second.

:func:`start` returns only once the server's own socket listens (port 0, bound by the
server: see :mod:`.readiness`), ``/-/ready`` answers and the backfilled series answer a
query; each wait polls up to a deadline that grows with the machine's load.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from .readiness import listening_ports, load_scaled_s, poll_until

HISTORY_HOST = "h1-r01-k01-n0"
LIVE_HOST = "h1-r01-k01-n1"
HISTORY_STEP_S = 15
HISTORY_POINTS = 240  # one hour
RESET_GPU = 3  # its energy counter resets half-way through the history
RESET_AT = HISTORY_POINTS // 2
START_BASE_S = 30.0  # each start-up wait on an idle machine, scaled by load (servers.readiness)


def gpu_labels(host: str, g: int) -> str:
    return (
        f'gpu="{g}",UUID="GPU-{host}-{g}",pci_bus_id="00000000:{0x18 + g:02X}:00.0",device="nvidia{g}",'
        f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",DCGM_FI_DRIVER_VERSION="580.105.08"'
    )


def history_power_w(g: int, k: int) -> float:
    return 600.0 + 10.0 * g + (k % 4)


def history_openmetrics(end_s: int) -> str:
    """OpenMetrics text of the backfilled hour ending at ``end_s`` (ends with ``# EOF``)."""
    start = end_s - (HISTORY_POINTS - 1) * HISTORY_STEP_S
    out = []
    families = (
        ("DCGM_FI_DEV_GPU_TEMP", lambda g, k: f"{50 + g + (k % 5)}"),
        ("DCGM_FI_DEV_POWER_USAGE", lambda g, k: f"{history_power_w(g, k):.3f}"),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", None),
    )
    for name, fn in families:
        out.append(f"# TYPE {name} gauge\n")
        for g in range(8):
            energy_mj = 5_000_000_000.0
            for k in range(HISTORY_POINTS):
                t = start + k * HISTORY_STEP_S
                if fn is not None:
                    v = fn(g, k)
                else:
                    if k > 0:
                        energy_mj += history_power_w(g, k) * HISTORY_STEP_S * 1000.0
                    if g == RESET_GPU and k == RESET_AT:
                        energy_mj = 1000.0  # driver reload
                    v = f"{energy_mj:.0f}"
                out.append(f"{name}{{{gpu_labels(HISTORY_HOST, g)}}} {v} {t}\n")
    out.append("# EOF\n")
    return "".join(out)


@dataclass
class PrometheusServer:
    proc: subprocess.Popen
    url: str
    history_end_s: int
    log_path: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def start(directory: Path, scrape_target: str) -> PrometheusServer:
    """Backfill, then start Prometheus scraping ``scrape_target`` (host:port) every second."""
    for binary in ("prometheus", "promtool"):
        if shutil.which(binary) is None:
            raise RuntimeError(f"{binary} not found on PATH: install the Debian package 'prometheus' (make test does)")
    data = directory / "data"
    end_s = int(time.time()) - 120
    om = directory / "backfill.om"
    om.write_text(history_openmetrics(end_s))
    r = subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(om), str(data)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if r.returncode != 0:
        raise RuntimeError(f"promtool backfill failed: {r.stderr or r.stdout}")
    config = directory / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: dcgm\n"
        "    honor_labels: true\n"
        f"    static_configs: [{{targets: ['{scrape_target}']}}]\n"
    )
    log_path = directory / "prometheus.log"
    log = log_path.open("w")
    proc = subprocess.Popen(  # port 0: the server binds a free port itself, no other process can take it first
        [
            "prometheus",
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            "--web.listen-address=127.0.0.1:0",
            "--storage.tsdb.retention.time=30d",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        port = _wait_listening(proc, log_path)
        server = PrometheusServer(proc, f"http://127.0.0.1:{port}", end_s, log_path)
        _wait_ready(server)
        _wait_history_loaded(server)
    except BaseException:
        PrometheusServer(proc, "", end_s, log_path).stop()
        raise
    return server


def _check_alive(proc: subprocess.Popen, log_path: Path) -> None:
    if proc.poll() is not None:
        raise RuntimeError(f"prometheus exited {proc.returncode}: {log_path.read_text()[-2000:]}")


def _wait_listening(proc: subprocess.Popen, log_path: Path) -> int:
    """The port the server's own socket listens on (read from /proc, not assumed)."""

    def probe():
        _check_alive(proc, log_path)
        return listening_ports(proc.pid)

    ports = poll_until(probe, START_BASE_S)
    if len(ports) != 1:
        raise RuntimeError(
            f"prometheus listens on {sorted(ports) or 'no port'} after "
            f"{load_scaled_s(START_BASE_S):.0f} s: {log_path.read_text()[-2000:]}"
        )
    return ports.pop()


def _wait_ready(server: PrometheusServer) -> None:
    """Until ``/-/ready`` answers 200: the TSDB, backfilled blocks included, is open."""

    def probe():
        _check_alive(server.proc, server.log_path)
        try:
            return requests.get(f"{server.url}/-/ready", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    if not poll_until(probe, START_BASE_S):
        raise RuntimeError(
            f"prometheus not ready on {server.url} after {load_scaled_s(START_BASE_S):.0f} s: "
            f"{server.log_path.read_text()[-2000:]}"
        )


def _wait_history_loaded(server: PrometheusServer) -> None:
    """Until the last backfilled point of every history series answers an instant query at its time."""
    query = {"query": f'count(DCGM_FI_DEV_POWER_USAGE{{Hostname="{HISTORY_HOST}"}})', "time": server.history_end_s}

    def probe():
        _check_alive(server.proc, server.log_path)
        try:
            result = requests.get(f"{server.url}/api/v1/query", params=query, timeout=5).json()["data"]["result"]
        except (requests.RequestException, ValueError, KeyError):
            return False
        return bool(result) and result[0]["value"][1] == "8"

    if not poll_until(probe, START_BASE_S):
        raise RuntimeError(
            f"prometheus on {server.url} does not serve the backfilled history after "
            f"{load_scaled_s(START_BASE_S):.0f} s: {server.log_path.read_text()[-2000:]}"
        )
