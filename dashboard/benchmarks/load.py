"""Load benchmark: 50 live dashboards and a few API clients against ``serve --prod`` on colossus (loopback).

The server is ``clustertwin serve --prod`` on the colossus site (synthetic source, SQLite,
2 s dashboard tick) in its own process group.  A headless Chromium opens each page once
and the interval-driven ``/_dash-update-component`` requests it sends are captured
(:mod:`dashboard.benchmarks.load_capture`); locust (:mod:`dashboard.benchmarks.locustfile`) then replays
them as many viewers, each on one page and ticking every 2 s, beside API clients.

Two runs, same server: the peer is one dashboard alone, then 50 dashboards and 5 API
clients.  Figures: sustained requests/s, p50/p95/p99 latency (ms) and the error rate of
the loaded run, and its p95 over the lone dashboard's p95 (``*_ratio``).  Target on a
2-core machine: p95 ≤ 300 ms with zero errors.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import requests

from twin.bench import benchmark
from twin.errors import InputError

SITE = "colossus"
PAGES = ("/", "/cooling", "/power", "/alerts")
DASHBOARDS = 50
API_CLIENTS = 5
TICK_S = 2.0
PEER_RUN_S = 30
LOAD_RUN_S = 90
P95_TARGET_MS = 300.0
SERVER_THREADS = 16
LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(site: str, workdir: Path, threads: int = SERVER_THREADS, port: int | None = None):
    """``clustertwin serve --prod`` on loopback (``port``, else a free one); yields its base URL, stops it on exit."""
    port = port or _free_port()
    log = (workdir / "serve.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "twin.cli",
            "serve",
            "--prod",
            "--site",
            site,
            "--db",
            f"sqlite:///{workdir / 'load.db'}",
            "--port",
            str(port),
            "--threads",
            str(threads),
            "--tick-ms",
            str(int(TICK_S * 1000)),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"serve --prod exited {proc.returncode}: {(workdir / 'serve.log').read_text()[-1500:]}"
                )
            try:
                if requests.get(f"{url}/api/v1/live/kpis", timeout=5).json().get("ts"):
                    break
            except (requests.RequestException, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("serve --prod did not come up in 180 s")
            time.sleep(1.0)
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        log.close()


def run_locust(
    url: str, payloads: Path, workdir: Path, dashboards: int, api_clients: int, duration_s: int, tag: str
) -> dict:
    """One headless locust run; the aggregated figures of the run after every user started."""
    prefix = workdir / tag
    env = {
        **os.environ,
        "CLUSTERTWIN_LOAD_PAYLOADS": str(payloads),
        "CLUSTERTWIN_LOAD_TICK_S": str(TICK_S),
        "CLUSTERTWIN_LOAD_API_USERS": str(api_clients),
    }
    users = dashboards + api_clients
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(LOCUSTFILE),
            "--headless",
            "--host",
            url,
            "-u",
            str(users),
            "-r",
            str(max(users // 5, 1)),
            "-t",
            f"{duration_s}s",
            "--reset-stats",
            "--csv",
            str(prefix),
            "--only-summary",
            "--loglevel",
            "WARNING",
            "--stop-timeout",
            "10",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=duration_s + 120,
        check=False,
    )
    stats = Path(f"{prefix}_stats.csv")
    if not stats.exists():
        raise RuntimeError(f"locust wrote no statistics (exit {run.returncode}): {run.stderr[-1500:]}")
    with stats.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    total = next(r for r in rows if r["Name"] == "Aggregated")
    count, failures = int(total["Request Count"]), int(total["Failure Count"])
    return {
        "requests_count": count,
        "failures_count": failures,
        "error_frac": failures / count if count else 1.0,
        "requests_per_s": float(total["Requests/s"]),
        "p50_ms": float(total["50%"]),
        "p95_ms": float(total["95%"]),
        "p99_ms": float(total["99%"]),
        "by_name": {
            r["Name"]: {"requests_count": int(r["Request Count"]), "p95_ms": float(r["95%"])}
            for r in rows
            if r["Name"] != "Aggregated"
        },
    }


def load_figures(
    site: str = SITE,
    dashboards: int = DASHBOARDS,
    api_clients: int = API_CLIENTS,
    peer_s: int = PEER_RUN_S,
    load_s: int = LOAD_RUN_S,
    port: int | None = None,
) -> dict:
    """Serve ``site``, capture the pages' live updates, run the peer and the loaded run (see module docstring)."""
    from dashboard.benchmarks.load_capture import capture_ticks

    with tempfile.TemporaryDirectory(prefix="clustertwin-load-") as tmp:
        workdir = Path(tmp)
        with served(site, workdir, port=port) as url:
            captured = capture_ticks(url, PAGES)
            payloads = workdir / "payloads.json"
            payloads.write_text(json.dumps(captured))
            peer = run_locust(url, payloads, workdir, 1, 0, peer_s, "peer")
            load = run_locust(url, payloads, workdir, dashboards, api_clients, load_s, "load")
    ratio = load["p95_ms"] / peer["p95_ms"] if peer["p95_ms"] > 0 else float("nan")
    return {
        "dashboards_count": dashboards,
        "api_clients_count": api_clients,
        "tick_s": TICK_S,
        "tick_requests_per_dashboard_count": round(sum(len(v) for v in captured.values()) / len(captured), 2),
        "load_requests_per_s": round(load["requests_per_s"], 1),
        "load_p50_ms": load["p50_ms"],
        "load_p95_ms": load["p95_ms"],
        "load_p99_ms": load["p99_ms"],
        "load_error_frac": load["error_frac"],
        "load_requests_count": load["requests_count"],
        "peer_single_dashboard_p95_ms": peer["p95_ms"],
        "load_p95_vs_single_dashboard_ratio": round(ratio, 2),
        "p95_within_target_flag": load["p95_ms"] <= P95_TARGET_MS and load["failures_count"] == 0,
        "load_p95_by_request_ms": {name: v["p95_ms"] for name, v in load["by_name"].items()},
    }


@benchmark("load_dashboards")
def load_dashboards_benchmark(port: int | None = None, seconds: int | None = None) -> dict:
    """``clustertwin bench --only load_dashboards [--port P] [--seconds S]`` (S: the loaded run, 10..3600)."""
    if port is not None and not 1024 <= port <= 65535:
        raise InputError(f"--port {port}: expected 1024..65535")
    if seconds is not None and not 10 <= seconds <= 3600:
        raise InputError(f"--seconds {seconds}: expected 10..3600")
    return load_figures(load_s=seconds or LOAD_RUN_S, port=port)


if __name__ == "__main__":  # a shorter run by hand: python -m dashboard.benchmarks.load [dashboards] [seconds]
    n = int(sys.argv[1]) if len(sys.argv) > 1 else DASHBOARDS
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else LOAD_RUN_S
    print(json.dumps(load_figures(dashboards=n, load_s=seconds), indent=2))
