"""The hub through a real PostgreSQL outage: the twin keeps ticking, one log line per edge, losses counted."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from ingest.live.runtime import build_hub
from ingest.store.pgserver import throwaway_postgres_server

T0 = datetime(2026, 7, 15, 14, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.postgres
def test_a_database_outage_is_logged_once_when_it_starts_and_once_when_it_ends(caplog):
    with throwaway_postgres_server("twin_outage") as server:
        hub = build_hub("demo", server.url, start=T0, record_every_s=1.0)
        for s in range(3):
            hub.step(at(s))
        alerts_before = hub.view.alerts()
        server.stop()
        caplog.clear()
        caplog.set_level(logging.INFO)
        for s in range(3, 9):  # six ticks with the database down
            snap = hub.step(at(s))
            assert snap.ts == at(s) and hub.view.latest() is snap  # the live view goes on
        assert hub.prune() == 0
        assert hub.view.alerts() == alerts_before  # the last list read, not an error
        assert hub.view.rack_history(3).empty and hub.view.cdu_history(0).empty  # no history, not an error
        assert hub.outage.active and hub.outage.lost["frames dropped"] == 6
        server.start()
        hub.step(at(9))
        assert not hub.outage.active

    records = [r for r in caplog.records if r.name == "ingest.live.hub"]
    messages = [r.getMessage() for r in records]
    assert [r.exc_info for r in records] == [None] * len(records), "a traceback was logged"
    assert len(messages) == 2, messages
    started, ended = messages
    assert records[0].levelno == logging.ERROR and "\n" not in started
    assert "write failed" in started and "dropping recorded frames" in started and "OperationalError" in started
    assert "work again after" in ended and "6 frames dropped" in ended and "1 prunes skipped" in ended


def test_frames_after_an_outage_are_stored_again(tmp_path):
    """Without a server to stop: an SQLite file made unwritable stands in for the outage."""
    db = tmp_path / "twin.db"
    hub = build_hub("demo", f"sqlite:///{db}", start=T0, record_every_s=1.0)
    hub.step(at(0))
    store_write = hub.recorder.store.write_frame

    def broken(*_a, **_k):
        from sqlalchemy.exc import OperationalError

        raise OperationalError("INSERT", {}, Exception("disk I/O error"))

    hub.recorder.store.write_frame = broken
    hub.step(at(1))
    hub.step(at(2))
    assert hub.outage.lost["frames dropped"] == 2
    hub.recorder.store.write_frame = store_write
    hub.step(at(3))
    assert not hub.outage.active
    ts, _ = hub.recorder.store.read_window("gpu", [0], at(0), at(3))
    assert len(ts) == 2  # the frames of 0 s and 3 s; those of 1 s and 2 s were dropped
