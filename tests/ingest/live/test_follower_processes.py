"""For real: one ``ingest run`` leader, two web processes following it, one PostgreSQL.

The web processes are ``serve --prod --follow --workers 2`` (gunicorn, two worker
processes) and ``serve --follow`` (a second host's web process); the test reads both over
HTTP, acknowledges an alert through one and sees it through the other, and keeps reading
through a leader takeover (the standby takes over) and a leader restart.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import requests
from servers.readiness import load_scaled_s
from sqlalchemy import create_engine, text

from ingest.store.db import open_database
from ingest.store.pgserver import free_port

pytestmark = pytest.mark.postgres

CLI = [sys.executable, "-m", "twin.cli"]
REPO = Path(__file__).resolve().parents[3]
FAULT = "xid:h1-r01-k01-n0/0=79"  # a GPU down: one critical alert to acknowledge


@pytest.fixture
def pg(postgres_url):
    engine = create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()
    open_database(postgres_url).dispose()  # migrated once, before the processes start
    return postgres_url


class Processes:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path, self.procs = tmp_path, {}

    def start(self, name: str, *args: str) -> subprocess.Popen:
        log = (self.tmp_path / f"{name}.log").open("w")
        proc = subprocess.Popen(
            [*CLI, *args], cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        return (self.tmp_path / f"{name}.log").read_text()[-3000:]

    def stop(self, name: str, sig=signal.SIGTERM) -> None:
        proc = self.procs.pop(name)
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)


def kpis(url: str) -> dict:
    return requests.get(f"{url}/api/v1/live/kpis", timeout=10).json()


def tick_ts(url: str) -> datetime | None:
    ts = kpis(url).get("ts")
    return datetime.fromisoformat(ts.replace("Z", "+00:00")) if ts else None


def wait_for(condition, timeout_s: float, what: str, procs: Processes) -> None:
    """Until ``condition()``; ``timeout_s`` is the idle machine's deadline, scaled by the load."""
    timeout_s = round(load_scaled_s(timeout_s))
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (requests.RequestException, ValueError, KeyError):
            pass
        time.sleep(0.3)
    logs = "\n".join(f"--- {name}\n{procs.log(name)}" for name in procs.procs)
    raise AssertionError(f"{what} not within {timeout_s} s\n{logs}")


def test_two_web_processes_follow_one_ingest_leader(pg, tmp_path):
    procs = Processes(tmp_path)
    ports = free_port(), free_port()
    web = [f"http://127.0.0.1:{port}" for port in ports]
    run = ["ingest", "run", "--site", "demo", "--db", pg, "--fault", FAULT]
    try:
        procs.start("leader", *run)
        wait_for(lambda: "now runs ingest" in procs.log("leader"), 60, "the leader", procs)
        procs.start("standby", *run)
        procs.start(
            "web-prod",
            "serve",
            "--prod",
            "--workers",
            "2",
            "--threads",
            "4",
            "--follow",
            "--site",
            "demo",
            "--db",
            pg,
            "--port",
            str(ports[0]),
        )
        procs.start("web", "serve", "--follow", "--site", "demo", "--db", pg, "--port", str(ports[1]))
        for url in web:
            wait_for(lambda url=url: tick_ts(url) is not None, 90, f"live state at {url}", procs)

        # the same tick and site power through both (within one 1 s tick; equal when the tick is equal)
        def same_tick() -> bool:
            a, b = kpis(web[0]), kpis(web[1])
            assert abs(datetime.fromisoformat(a["ts"]).timestamp() - datetime.fromisoformat(b["ts"]).timestamp()) <= 1.0
            return a["ts"] == b["ts"] and a["it_power_mw"] == b["it_power_mw"] and a["it_power_mw"] > 0

        wait_for(same_tick, 20, "the same tick through both web processes", procs)
        first = tick_ts(web[0])
        wait_for(lambda: tick_ts(web[0]) > first and tick_ts(web[1]) > first, 10, "live ticks", procs)

        # acknowledged through one, seen through the other
        alerts = requests.get(f"{web[0]}/api/v1/alerts", timeout=10).json()
        alert = next(a for a in alerts["items"] if a["severity"] == "critical")
        answer = requests.post(
            f"{web[0]}/api/v1/alerts/{alert['id']}/acknowledge", json={"comment": "swapping the GPU"}, timeout=10
        )
        assert answer.status_code == 200, answer.text

        def acknowledged_at(url: str) -> bool:
            items = requests.get(f"{url}/api/v1/alerts", timeout=10).json()["items"]
            seen = next(a for a in items if a["id"] == alert["id"])
            return seen["acknowledged"] and seen["ack_comment"] == "swapping the GPU"

        wait_for(
            lambda: all(acknowledged_at(url) for _ in range(4) for url in web),
            10,
            "the acknowledgement through the other process (and both gunicorn workers)",
            procs,
        )

        # takeover: the leader stops, the standby takes over, the web processes follow it
        procs.stop("leader")
        wait_for(lambda: "now runs ingest" in procs.log("standby"), 30, "the standby's takeover", procs)
        after = datetime.fromisoformat(kpis(web[1])["ts"])
        wait_for(lambda: all(tick_ts(url) > after for url in web), 20, "live ticks after the takeover", procs)

        # restart: the new leader stops and starts again (it counts its ticks from one)
        procs.stop("standby")
        time.sleep(1.0)
        stopped = max(tick_ts(url) for url in web)
        procs.start("restarted", *run)
        wait_for(lambda: all(tick_ts(url) > stopped for url in web), 60, "live ticks after the restart", procs)
        wait_for(same_tick, 20, "the same tick through both web processes after the restart", procs)
        for name in ("web-prod", "web"):
            assert "now runs ingest" not in procs.log(name)  # a web process never ran the twin
            assert "Traceback" not in procs.log(name), procs.log(name)
    finally:
        procs.stop_all()


def test_a_web_process_started_late_shows_the_leaders_trend_at_once(pg, tmp_path):
    from ingest.live.runtime import start_hub
    from ingest.store.livetrend import read_trend, rows_total

    procs = Processes(tmp_path)
    engine = create_engine(pg)
    try:
        procs.start("leader", "ingest", "run", "--site", "demo", "--db", pg)
        wait_for(lambda: rows_total(engine, "demo") >= 8, 90, "eight trend points of the leader", procs)
        web = start_hub("demo", pg, follow_only=True)  # what serve --follow starts
        try:
            trend = web.hub.view.trend(3600)  # at once: before any notification reached the new follower
            stored = read_trend(engine, "demo")
            assert len(trend) >= 8 and trend.index[0] == stored[0][0]  # from the leader's first tick on
            assert trend["it_power_mw"].iloc[0] == stored[0][1]["it_power_mw"] > 0
            assert not web.leading and web.hub.latest.adopted_total == 1
        finally:
            web.stop()
        assert "Traceback" not in procs.log("leader")
    finally:
        procs.stop_all()
        engine.dispose()
