"""A real Prometheus Alertmanager on 127.0.0.1 (Debian's ``prometheus-alertmanager``), no clustering.

The configuration groups alerts by ClusterTwin's ``site`` and ``cause`` labels (one
notification per root cause), inhibits a cause's warnings while a critical alert of
the same cause fires, and inhibits the alerts a maintenance window or scoped silence
mutes (``muted_by``) while the window's own alert fires, routed to nobody, as
docs/alerts.md tells operators to.  Notifications go nowhere, or to ``webhook_url`` when given.  :func:`start`
returns once the server's own socket listens (port 0, bound by the server, see
:mod:`.readiness`) and ``/-/ready`` answers.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import requests

from .readiness import listening_ports, load_scaled_s, poll_until

BINARY = "prometheus-alertmanager"
START_BASE_S = 30.0

CONFIG = """\
route:
  receiver: hold
  group_by: [site, cause]
  group_wait: 1s
  group_interval: 5s
  repeat_interval: 1h
  routes:
    - matchers: [alertname="ClusterTwinMute"]
      receiver: blackhole
receivers:
  - name: blackhole
  - name: hold
{webhook}inhibit_rules:
  - source_matchers: [severity="critical"]
    target_matchers: [severity="warning"]
    equal: [site, cause]
  - source_matchers: [alertname="ClusterTwinMute"]
    target_matchers: [muted_by=~".+"]
    equal: [site, muted_by]
"""
WEBHOOK = """\
    webhook_configs:
      - url: {url}
        send_resolved: true
"""


@dataclass
class AlertmanagerServer:
    proc: subprocess.Popen
    url: str
    log_path: Path

    def groups(self) -> list[dict]:
        """``GET /api/v2/alerts/groups``: the alert groups Alertmanager formed."""
        return requests.get(f"{self.url}/api/v2/alerts/groups", timeout=5).json()

    def alerts(self, **params) -> list[dict]:
        """``GET /api/v2/alerts`` (e.g. ``inhibited=False``)."""
        return requests.get(f"{self.url}/api/v2/alerts", params=params, timeout=5).json()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def start(directory: Path, webhook_url: str = "") -> AlertmanagerServer:
    """Start Alertmanager with :data:`CONFIG` and its data in ``directory``; notifications to ``webhook_url``."""
    if shutil.which(BINARY) is None:
        raise RuntimeError(f"{BINARY} not found on PATH: install the Debian package '{BINARY}' (make test does)")
    config = directory / "alertmanager.yml"
    config.write_text(CONFIG.format(webhook=WEBHOOK.format(url=webhook_url) if webhook_url else ""))
    log_path = directory / "alertmanager.log"
    proc = subprocess.Popen(
        [
            BINARY,
            f"--config.file={config}",
            f"--storage.path={directory / 'data'}",
            "--web.listen-address=127.0.0.1:0",
            "--cluster.listen-address=",  # no gossip port: a single instance
        ],
        stdout=log_path.open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        port = _wait_listening(proc, log_path)
        server = AlertmanagerServer(proc, f"http://127.0.0.1:{port}", log_path)
        _wait_ready(server)
    except BaseException:
        AlertmanagerServer(proc, "", log_path).stop()
        raise
    return server


def _check_alive(proc: subprocess.Popen, log_path: Path) -> None:
    if proc.poll() is not None:
        raise RuntimeError(f"alertmanager exited {proc.returncode}: {log_path.read_text()[-2000:]}")


def _wait_listening(proc: subprocess.Popen, log_path: Path) -> int:
    def probe():
        _check_alive(proc, log_path)
        return listening_ports(proc.pid)

    ports = poll_until(probe, START_BASE_S)
    if len(ports) != 1:
        raise RuntimeError(
            f"alertmanager listens on {sorted(ports) or 'no port'} after "
            f"{load_scaled_s(START_BASE_S):.0f} s: {log_path.read_text()[-2000:]}"
        )
    return ports.pop()


def _wait_ready(server: AlertmanagerServer) -> None:
    def probe():
        _check_alive(server.proc, server.log_path)
        try:
            return requests.get(f"{server.url}/-/ready", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    if not poll_until(probe, START_BASE_S):
        raise RuntimeError(
            f"alertmanager not ready on {server.url} after {load_scaled_s(START_BASE_S):.0f} s: "
            f"{server.log_path.read_text()[-2000:]}"
        )
