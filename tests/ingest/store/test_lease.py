"""The ingest lease on SQLite and a real PostgreSQL: one holder, expiry, takeover by a follower."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from servers.readiness import poll_until

from ingest.live.runtime import start_hub
from ingest.store.db import open_database
from ingest.store.lease import LEASE_S, RENEW_S, TAKEOVER_S, Lease

T0 = datetime(2026, 7, 15, 14, 0, tzinfo=UTC)
REPO_DIR = Path(__file__).resolve().parents[3]


def test_one_holder_until_the_lease_expires(db_url):
    engine = open_database(db_url)
    a, b = Lease(engine, "demo#0/1", "a"), Lease(engine, "demo#0/1", "b")
    assert a.try_acquire(T0)
    assert not b.try_acquire(T0 + timedelta(seconds=1))
    assert a.try_acquire(T0 + timedelta(seconds=10))  # renewed: now valid until T0 + 25 s
    assert not b.try_acquire(T0 + timedelta(seconds=24))
    assert b.try_acquire(T0 + timedelta(seconds=25.5))  # expired: taken over
    assert b.current()[0] == "b"
    assert not a.try_acquire(T0 + timedelta(seconds=26))  # the old leader learns it lost
    assert Lease(engine, "demo#1/2", "a").try_acquire(T0 + timedelta(seconds=26))  # other shards are separate
    engine.dispose()


def test_a_released_lease_is_taken_at_once(db_url):
    engine = open_database(db_url)
    a, b = Lease(engine, "demo#0/1", "a"), Lease(engine, "demo#0/1", "b")
    assert a.try_acquire()
    assert not b.try_acquire()
    a.release()
    assert b.try_acquire()
    engine.dispose()


def test_exactly_one_of_many_racing_followers_takes_an_expired_lease(db_url):
    engine = open_database(db_url)
    assert Lease(engine, "demo#0/1", "old").try_acquire(T0)
    contenders = [Lease(engine, "demo#0/1", f"f{i}") for i in range(8)]
    start, wins, errors = threading.Barrier(len(contenders)), [], []

    def race(lease):
        start.wait()
        try:
            if lease.try_acquire(T0 + timedelta(seconds=LEASE_S + 1)):
                wins.append(lease.holder)
        except Exception as exc:  # noqa: BLE001 — reported below
            errors.append(exc)

    threads = [threading.Thread(target=race, args=(lease,)) for lease in contenders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == [] and len(wins) == 1
    assert Lease(engine, "demo#0/1", "x").current()[0] == wins[0]
    engine.dispose()


def test_the_stated_takeover_time_is_lease_plus_check_interval():
    assert (LEASE_S, RENEW_S, TAKEOVER_S) == (15.0, 5.0, 20.0)


LEADER_SCRIPT = """
import sys, time
from ingest.live.runtime import start_hub
runtime = start_hub("demo", sys.argv[1], lease_s=float(sys.argv[2]), renew_s=float(sys.argv[3]))
print("leading" if runtime.leading else "following", flush=True)
time.sleep(600)
"""


@pytest.mark.slow
def test_a_follower_takes_over_when_the_leader_is_killed(db_url):
    """Two runtimes on one database: the leader is a process killed with SIGKILL (no release)."""
    lease_s, renew_s = 3.0, 0.5
    open_database(db_url).dispose()  # migrate before two processes race to
    leader = subprocess.Popen(
        [sys.executable, "-c", LEADER_SCRIPT, db_url, str(lease_s), str(renew_s)],
        cwd=REPO_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_DIR)},
    )
    follower = None
    try:
        assert leader.stdout.readline().strip() == "leading"
        follower = start_hub("demo", db_url, lease_s=lease_s, renew_s=renew_s)
        assert not follower.leading and "taking over within 4 s" in follower.notes[0]
        assert follower.follower.running and not follower.hub.writable
        leader.send_signal(signal.SIGKILL)
        leader.wait(timeout=10)
        killed = time.monotonic()
        while not follower.leading and time.monotonic() - killed < 3 * (lease_s + renew_s):
            time.sleep(0.1)
        waited_s = time.monotonic() - killed
        assert follower.leading, f"no takeover {waited_s:.1f} s after the leader died"
        assert waited_s <= lease_s + renew_s + 1.0  # + 1 s for a loaded machine
        assert follower.hub.view.latest() is not None and follower.hub.writable
        assert follower.lease.current()[0] == follower.lease.holder
    finally:
        if leader.poll() is None:
            leader.kill()
            leader.wait(timeout=10)
        if follower is not None:
            follower.stop()


@pytest.mark.slow
def test_a_clean_stop_hands_over_at_the_next_check(tmp_path):
    url = f"sqlite:///{tmp_path / 'twin.db'}"
    first = start_hub("demo", url, lease_s=30.0, renew_s=0.3)
    second = start_hub("demo", url, lease_s=30.0, renew_s=0.3)
    try:
        assert first.leading and not second.leading
        first.stop()
        stopped = time.monotonic()
        assert poll_until(lambda: second.leading, 5.0, interval_s=0.05)
        assert time.monotonic() - stopped < 30.0  # at a check (0.3 s apart), not at the 30 s expiry
    finally:
        first.stop()
        second.stop()


def test_a_leader_cut_off_from_the_database_leads_until_its_lease_would_expire(tmp_path, caplog, monkeypatch):
    from sqlalchemy.exc import OperationalError

    runtime = start_hub("demo", f"sqlite:///{tmp_path / 'twin.db'}", lease_s=15.0, renew_s=3600.0)
    try:
        assert runtime.leading
        until = runtime.lease.held_until

        def unreachable(now=None):
            raise OperationalError("UPDATE ingest_lease", {}, Exception("connection refused"))

        monkeypatch.setattr(runtime.lease, "try_acquire", unreachable)
        caplog.clear()
        assert runtime.check_lease(until - timedelta(seconds=1)) and runtime.leading
        assert runtime.check_lease(until - timedelta(seconds=0.5)) and runtime.leading
        assert not runtime.check_lease(until + timedelta(seconds=0.1))
        assert not runtime.leading and not runtime.hub.writable
        lease_lines = [r.getMessage() for r in caplog.records if "ingest lease" in r.getMessage()]
        assert len([m for m in lease_lines if "not checked" in m]) == 1, lease_lines
        assert all(r.exc_info is None for r in caplog.records)
        monkeypatch.undo()
        assert runtime.check_lease() and runtime.leading  # back: nobody else took it, so it leads again
    finally:
        runtime.stop()
