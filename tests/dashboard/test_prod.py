"""``clustertwin serve --prod``: gunicorn serves pages, the API and /metrics, and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from ingest.store.db import open_database
from ingest.store.lease import Lease, lease_name
from ingest.store.pgserver import free_port
from tests.ingest.servers.readiness import load_scaled_s

CLI = [sys.executable, "-m", "twin.cli"]
REPO = Path(__file__).resolve().parents[2]


def _serve(tmp_path, *extra: str) -> tuple[subprocess.Popen, str, Path]:
    port = free_port()
    log = tmp_path / "serve.log"
    db = tmp_path / "prod.db"
    proc = subprocess.Popen(
        [
            *CLI,
            "serve",
            "--prod",
            "--site",
            "demo",
            "--db",
            f"sqlite:///{db}",
            "--port",
            str(port),
            "--threads",
            "4",
            *extra,
        ],
        cwd=REPO,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    return proc, f"http://127.0.0.1:{port}", log


def _wait_up(proc, url: str, log: Path, timeout_s: float = 60.0) -> None:
    """Until the server answers a live tick; ``timeout_s`` (idle machine) is scaled by the load."""
    timeout_s = round(load_scaled_s(timeout_s))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"serve --prod exited {proc.returncode}: {log.read_text()[-2000:]}"
        try:
            if requests.get(f"{url}/api/v1/live/kpis", timeout=2).json().get("ts"):
                return
        except (requests.RequestException, ValueError):
            pass
        time.sleep(0.3)
    raise AssertionError(f"serve --prod not up in {timeout_s} s: {log.read_text()[-2000:]}")


@pytest.mark.slow
def test_serve_prod_serves_pages_api_and_metrics_then_stops_cleanly(tmp_path):
    proc, url, log = _serve(tmp_path)
    try:
        _wait_up(proc, url, log)
        page = requests.get(f"{url}/cooling", timeout=10)
        assert page.status_code == 200 and "<title>ClusterTwin</title>" in page.text
        assert page.headers["Server"].startswith("gunicorn") and "Werkzeug" not in page.headers["Server"]
        assert requests.get(f"{url}/_dash-layout", timeout=10).status_code == 200
        assert requests.get(f"{url}/api/v1/site", timeout=10).json()["n_gpus"] == 1024
        assert "clustertwin_it_power_watts" in requests.get(f"{url}/metrics", timeout=10).text
        with requests.Session() as session:  # a kept-alive connection serves several polls
            assert all(session.get(f"{url}/api/v1/live/kpis", timeout=10).ok for _ in range(5))
        workers = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert len(workers) == 1, workers
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    output = log.read_text()
    assert code == 0, output
    assert "Traceback" not in output and "Werkzeug" not in output, output
    try:
        requests.get(f"{url}/api/v1/site", timeout=2)
        raise AssertionError("still serving after SIGTERM")
    except requests.ConnectionError:
        pass
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    engine = open_database(f"sqlite:///{tmp_path / 'prod.db'}")
    holder, expires_at = Lease(engine, lease_name("demo", "0/1")).current()
    engine.dispose()
    assert expires_at < datetime.now(UTC), "the worker did not release the ingest lease on its way out"


@pytest.mark.slow
def test_serve_prod_bad_site_is_one_line(tmp_path):
    r = subprocess.run(
        [*CLI, "serve", "--prod", "--site", "nosuchsite", "--db", f"sqlite:///{tmp_path / 'x.db'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and "nosuchsite" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.slow
def test_serve_prod_bad_fault_stops_with_the_worker_message(tmp_path):
    proc, url, log = _serve(tmp_path, "--fault", "xid:no-such-node/0=79")
    code = proc.wait(timeout=120)
    output = log.read_text()
    assert code == 2 and "error: --fault" in output and "Traceback" not in output, output


def test_bind_addresses_of_ipv6_hosts_are_bracketed():
    from dashboard.prod import bind_address

    assert bind_address("::1", 8050) == "[::1]:8050" and bind_address("[::1]", 1) == "[::1]:1"
    assert bind_address("127.0.0.1", 8050) == "127.0.0.1:8050"


@pytest.mark.slow
def test_serve_prod_on_ipv6_loopback(tmp_path):
    proc, url, log = _serve(tmp_path, "--host", "::1")
    url = url.replace("127.0.0.1", "[::1]")
    try:
        _wait_up(proc, url, log)
        assert requests.get(f"{url}/api/v1/site", timeout=10).json()["n_gpus"] == 1024
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
