"""Followers: a hub that shows the ingest leader's live state through the database, doing no twin work."""

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from servers.readiness import load_scaled_s, poll_until

from ingest.live.follower import Follower
from ingest.live.runtime import build_hub, start_hub
from ingest.store.db import open_database

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
FAULT = "xid:h1-r01-k01-n0/0=79"


def wait_for(condition, timeout_s: float = 10.0) -> bool:
    """True once ``condition()`` is; polled up to ``timeout_s`` (idle machine) scaled by the load."""
    return bool(poll_until(condition, timeout_s, interval_s=0.05))


def wait_listening(watcher: Follower) -> None:
    """On PostgreSQL, until ``watcher`` listens: notifications sent before are not heard (by design)."""
    if watcher.uses_notify:
        assert watcher.listening.wait(load_scaled_s(10.0)), "the follower did not start listening"


def never_ticks(hub):
    """Make any twin tick, settle or synthetic step of ``hub`` fail the test."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("a follower ran twin work")

    hub.ticker.twin.tick = hub.ticker.twin.settle = refuse
    hub.ticker.synthetic.step = refuse
    hub.step = refuse


def empty_postgres(postgres_url: str) -> str:
    """``postgres_url`` after dropping every table, as ``db_url`` gives (for tests of notifications)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()
    return postgres_url


@pytest.fixture
def leader_and_followers(db_url):
    yield from running_leader_and_followers(db_url)


@pytest.fixture
def pg_leader_and_followers(postgres_url):
    """The same on PostgreSQL only: followers that LISTEN."""
    yield from running_leader_and_followers(empty_postgres(postgres_url))


def running_leader_and_followers(db_url: str):
    """A leader with a fault and two followers listening (PostgreSQL) or polling (SQLite); stopped after."""
    open_database(db_url).dispose()
    leader = build_hub("demo", db_url, start=T0, faults=(FAULT,))
    leader.publisher.holder = "leader:1:aa"
    followers = [build_hub("demo", db_url, start=T0) for _ in range(2)]
    for hub in followers:
        hub.writable = False
        never_ticks(hub)
    watchers = [Follower(hub, poll_s=0.05, resync_s=0.5).start() for hub in followers]
    for watcher in watchers:
        wait_listening(watcher)
    yield leader, followers, watchers
    for watcher in watchers:
        watcher.stop()
    for hub in [leader, *followers]:
        hub.db.dispose()


@pytest.mark.slow
def test_followers_show_each_tick_of_the_leader_without_twin_work(leader_and_followers):
    leader, followers, watchers = leader_and_followers
    for second in range(4):
        snap = leader.step(T0 + timedelta(seconds=second))
        for hub in followers:
            assert wait_for(
                lambda hub=hub, snap=snap: hub.view.latest() is not None and hub.view.latest().ts == snap.ts
            )
            got = hub.view.latest_tick()
            assert got.snapshot.it_power_mw == snap.it_power_mw
            assert got.detail.balance == leader.view.detail().balance
            assert (got.snapshot.gpu_state == snap.gpu_state).all()
    assert all(hub.latest.adopted_total == 4 and hub.latest.seq == leader.latest.seq == 4 for hub in followers)
    follower = followers[0]
    assert len(follower.view.trend(60)) == 4  # the trend fills from the adopted ticks
    assert follower.view.job_timeline(leader.ticker.jobs.placed[0].spec.name) == leader.view.job_timeline(
        leader.ticker.jobs.placed[0].spec.name
    )
    assert follower.view.job_timeline(leader.ticker.jobs.placed[0].spec.name)  # the down GPU stopped the job
    ages = follower.view.source_ages(snap.ts.timestamp() + 2.0)
    assert ages == {"synthetic": pytest.approx(leader.view.source_ages(snap.ts.timestamp())["synthetic"] + 2.0)}
    assert watchers[0].uses_notify == (follower.db.dialect.name == "postgresql")
    assert leader.publisher.bytes > 0


@pytest.mark.slow
def test_an_acknowledgement_through_a_follower_is_seen_by_all(leader_and_followers):
    leader, (first, second), watchers = leader_and_followers
    leader.step(T0)
    alert = first.view.alerts()[0]
    first.alert_actions.acknowledge(alert["id"], "pump swapped", user="ops")
    second.alert_actions.silence(alert["id"], 600)
    for hub in (leader, first, second):
        seen = next(a for a in hub.view.alerts() if a["id"] == alert["id"])
        assert seen["acknowledged"] and seen["ack_comment"] == "pump swapped" and seen["acknowledged_by"] == "ops"
        assert seen["silenced_until"] is not None
    if watchers[0].uses_notify:  # each follower heard both changes
        assert wait_for(lambda: all(h.live_alerts.changes_total >= 2 for h in (first, second))), [
            (h.live_alerts.changes_total, w.notifications_total, w.listening.is_set())
            for h, w in zip((first, second), watchers)
        ]
    leader.step(T0 + timedelta(seconds=1))  # the leader's next tick keeps the operator's changes
    kept = next(a for a in leader.view.alerts() if a["id"] == alert["id"])
    assert kept["acknowledged"] and kept["silenced_until"] is not None
    with pytest.raises(KeyError):
        first.alert_actions.acknowledge(10**9)


@pytest.mark.postgres
def test_alert_changes_notified_together_are_each_counted(pg_leader_and_followers):
    """Two alert changes committed while the follower is busy reach it in one batch of notifications."""
    import threading

    leader, (follower, other), (watcher, _) = pg_leader_and_followers
    leader.step(T0)
    alert = follower.view.alerts()[0]
    gate, busy = threading.Event(), threading.Event()
    refresh = watcher.refresh

    def held_refresh():
        busy.set()
        assert gate.wait(load_scaled_s(30.0)), "the test never released the follower"
        return refresh()

    watcher.refresh = held_refresh  # the follower's next read of the state waits for the gate
    assert busy.wait(load_scaled_s(10.0))  # it re-reads within resync_s
    other.alert_actions.acknowledge(alert["id"], "pump swapped", user="ops")
    other.alert_actions.silence(alert["id"], 600)
    gate.set()
    assert wait_for(lambda: follower.live_alerts.changes_total >= 2), follower.live_alerts.changes_total
    assert follower.live_alerts.changes_total == 2


@pytest.mark.postgres
def test_changes_made_between_connect_and_listen_are_not_missed(postgres_url, monkeypatch):
    """A tick and an acknowledgement committed after the follower connects but before its
    LISTEN are never notified to it: it must read them once listening, and must not keep
    showing the alert list it read before them when the database goes down."""
    from types import SimpleNamespace

    import psycopg
    from sqlalchemy.exc import OperationalError

    import ingest.live.follower as follower_module
    import ingest.live.live_alerts as alerts_module

    open_database(empty_postgres(postgres_url)).dispose()
    leader = build_hub("demo", postgres_url, start=T0, faults=(FAULT,))
    leader.publisher.holder = "leader:1:aa"
    leader.step(T0)
    follower = build_hub("demo", postgres_url, start=T0)
    follower.writable = False
    never_ticks(follower)
    alert = follower.view.alerts()[0]  # kept for an outage
    assert not alert["acknowledged"]

    def connect_then_change(*args, **kwargs):
        conn = psycopg.connect(*args, **kwargs)
        leader.step(T0 + timedelta(seconds=1))
        leader.alert_actions.acknowledge(alert["id"], "pump swapped", user="ops")
        return conn

    monkeypatch.setattr(follower_module, "psycopg", SimpleNamespace(connect=connect_then_change))
    watcher = Follower(follower, poll_s=0.05, resync_s=3600.0).start()  # no periodic re-read to hide a miss
    try:
        wait_listening(watcher)
        assert follower.view.latest().ts == T0 + timedelta(seconds=1)  # read when LISTEN started, not notified

        def database_down(*_args, **_kwargs):
            raise OperationalError("SELECT", {}, Exception("connection refused"))

        monkeypatch.setattr(alerts_module, "list_alerts", database_down)
        shown = follower.view.alerts()  # no list read since the change: none kept, so none shown
        assert all(a["acknowledged"] for a in shown if a["id"] == alert["id"])  # never the old, unacknowledged one
        assert not follower.view.database_reachable()  # and the outage is shown
    finally:
        watcher.stop()
        leader.db.dispose()
        follower.db.dispose()


@pytest.mark.slow
def test_a_follower_skips_states_older_than_its_own_and_follows_a_restarted_leader(leader_and_followers):
    leader, (follower, _), watchers = leader_and_followers
    for second in range(3):
        leader.step(T0 + timedelta(seconds=second))
    assert wait_for(lambda: follower.latest.seq == 3)
    restarted = build_hub("demo", leader.db.url.render_as_string(hide_password=False), start=T0)
    restarted.publisher.holder = "leader:2:bb"  # a new process counts its ticks from one again
    snap = restarted.step(T0 + timedelta(seconds=10))
    assert wait_for(lambda: follower.view.latest().ts == snap.ts)
    assert follower.latest.seq == 1
    restarted.db.dispose()


@pytest.mark.slow
def test_runtimes_follow_then_take_over_and_publish(tmp_path):
    url = f"sqlite:///{tmp_path / 'twin.db'}"
    first = start_hub("demo", url, lease_s=30.0, renew_s=0.3)
    second = start_hub("demo", url, lease_s=30.0, renew_s=0.3)
    web = start_hub("demo", url, follow_only=True, renew_s=0.3)
    try:
        assert first.leading and not second.leading and not web.leading
        assert second.follower.running and web.follower.running and first.follower is None
        assert "never leads" in web.notes[0]
        assert wait_for(lambda: second.hub.view.latest() is not None and web.hub.view.latest() is not None)
        first.stop()
        assert wait_for(lambda: second.leading, 5.0)
        assert second.follower is None and second.hub.publisher.holder == second.lease.holder
        taken = second.hub.view.latest().ts
        assert wait_for(lambda: web.hub.view.latest().ts > taken, 5.0)  # the web process follows the new leader
        assert not web.leading
    finally:
        for runtime in (first, second, web):
            runtime.stop()


def test_a_leader_publishes_at_its_publish_cadence(db_url):
    open_database(db_url).dispose()
    leader = build_hub("demo", db_url, start=T0, publish_every_s=2.0)
    leader.publisher.holder = "leader:1:aa"
    follower = build_hub("demo", db_url, start=T0)
    follower.writable = False
    never_ticks(follower)
    watcher = Follower(follower, poll_s=0.05, resync_s=0.5)
    try:
        for second in range(5):
            leader.step(T0 + timedelta(seconds=second))
            watcher.refresh()
        assert follower.latest.adopted_total == 3 and follower.view.latest().ts == T0 + timedelta(
            seconds=4
        )  # 0, 2 and 4 s
    finally:
        leader.db.dispose()
        follower.db.dispose()


def test_ingest_run_refuses_a_publish_cadence_out_of_range(capsys):
    from twin.cli import main

    assert main(["ingest", "run", "--site", "demo", "--publish-every-s", "0.1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --publish-every-s 0.1: expected 1..60 s") and err.count("\n") == 1


def same_trend(follower, leader, window_s: float = 3600.0) -> bool:
    mine, theirs = follower.view.trend(window_s), leader.view.trend(window_s)
    return mine.index.equals(theirs.index) and np.allclose(mine.to_numpy(float), theirs.to_numpy(float), equal_nan=True)


@pytest.mark.slow
def test_a_follower_started_late_shows_the_leaders_trend_at_once(db_url):
    open_database(db_url).dispose()
    leader = build_hub("demo", db_url, start=T0, faults=(FAULT,))
    leader.publisher.holder = "leader:1:aa"
    for second in range(20):
        leader.step(T0 + timedelta(seconds=second))
    follower = build_hub("demo", db_url, start=T0)
    follower.writable = False
    never_ticks(follower)
    watcher = Follower(follower, poll_s=0.05, resync_s=0.5).start()
    try:
        assert len(follower.view.trend(3600)) == 20 and same_trend(follower, leader)  # at once, before another tick
        assert follower.view.trend(3600)["gpus_down"].dtype == leader.view.trend(3600)["gpus_down"].dtype
        leader.step(T0 + timedelta(seconds=20))
        assert wait_for(lambda: len(follower.view.trend(3600)) == 21)
        assert same_trend(follower, leader)
    finally:
        watcher.stop()
        leader.db.dispose()
        follower.db.dispose()


@pytest.mark.slow
def test_a_follower_that_missed_notifications_catches_up_from_the_database(leader_and_followers):
    leader, (follower, _), (watcher, _) = leader_and_followers
    leader.step(T0)
    assert wait_for(lambda: follower.latest.seq == 1)
    if watcher.uses_notify:  # the follower's LISTEN connection drops: nothing is notified until it reconnects
        from sqlalchemy import text

        with leader.db.begin() as conn:
            cut = conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()"
                )
            ).all()
        assert cut
    else:  # SQLite: the follower stops polling for a while
        watcher.stop()
    for second in range(1, 8):
        leader.step(T0 + timedelta(seconds=second))
    if not watcher.uses_notify:
        watcher.start()
    assert wait_for(lambda: follower.view.latest().ts == T0 + timedelta(seconds=7), 15.0)
    assert len(follower.view.trend(3600)) == 8 and same_trend(follower, leader)  # every missed tick, not the last only


@pytest.mark.slow
def test_the_stored_trend_keeps_one_window_per_site(db_url):
    from ingest.live.trend import TrendBuffer
    from ingest.store.livetrend import rows_total

    open_database(db_url).dispose()
    leader = build_hub("demo", db_url, start=T0)
    leader.publisher.holder = "leader:1:aa"
    leader.latest.trend = TrendBuffer(window_s=10.0)
    try:
        for second in range(30):
            leader.step(T0 + timedelta(seconds=second))
        assert rows_total(leader.db, "demo") == len(leader.view.trend(3600)) == 11  # 19..29 s: older rows are deleted
    finally:
        leader.db.dispose()


def test_a_new_leader_continues_the_stored_trend(tmp_path):
    from ingest.store.models import utcnow

    url = f"sqlite:///{tmp_path / 'twin.db'}"
    earlier = utcnow().replace(microsecond=0) - timedelta(seconds=20)
    old = build_hub("demo", url, start=earlier)
    old.publisher.holder = "leader:1:aa"  # a leader that stopped (it held no lease any more)
    for second in range(5):
        old.step(earlier + timedelta(seconds=second))
    runtime = start_hub("demo", url, renew_s=0.3)
    try:
        assert runtime.leading
        trend = runtime.hub.view.trend(3600)
        assert trend.index[0] == earlier and len(trend) >= 6  # the old leader's five points, then its own
    finally:
        runtime.stop()
        old.db.dispose()
