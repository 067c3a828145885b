"""A real Prometheus server on 127.0.0.1 with backfilled history and a live scrape target.

History: an OpenMetrics file (8 GPUs of one node, one hour at 15 s, temperature, power
and an energy counter that resets once) turned into TSDB blocks with
``promtool tsdb create-blocks-from openmetrics`` *before* the server starts.  Live: the
server scrapes a dcgm-exporter-style endpoint served from a thread every second.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import requests

HISTORY_HOST = "h1-r01-k01-n0"
LIVE_HOST = "h1-r01-k01-n1"
HISTORY_STEP_S = 15
HISTORY_POINTS = 240  # one hour
RESET_GPU = 3  # its energy counter resets half-way through the history
RESET_AT = HISTORY_POINTS // 2


def gpu_labels(host: str, g: int) -> str:
    return (f'gpu="{g}",UUID="GPU-{host}-{g}",pci_bus_id="00000000:{0x18 + g:02X}:00.0",device="nvidia{g}",'
            f'modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",DCGM_FI_DRIVER_VERSION="580.105.08"')


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


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    r = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(om), str(data)],
                       capture_output=True, text=True, timeout=120)
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
    port = free_tcp_port()
    log_path = directory / "prometheus.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={data}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=30d"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    server = PrometheusServer(proc, f"http://127.0.0.1:{port}", end_s, log_path)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"prometheus exited {proc.returncode}: {log_path.read_text()[-2000:]}")
        try:
            if requests.get(f"{server.url}/-/ready", timeout=1).status_code == 200:
                return server
        except requests.RequestException:
            pass
        time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"prometheus not ready on {server.url}: {log_path.read_text()[-2000:]}")
