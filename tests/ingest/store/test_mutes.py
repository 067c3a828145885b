"""Scoped silences and maintenance windows in the store, on SQLite and a real PostgreSQL; migration 0009 up and down."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from alembic import command
from sqlalchemy import inspect

from ingest.store.db import alembic_config, migrate, open_database
from ingest.store.livestate import ALERTS_CHANNEL
from ingest.store.mutes import (
    MAX_OPEN_MUTES,
    MuteError,
    add_mute,
    check_times,
    expire_mute,
    list_mutes,
)

NOW = datetime(2026, 7, 15, 14, 0, tzinfo=UTC)
HALL = ("hall", "H1", "", "")


def _add(engine, kind="silence", start=NOW, hours=1.0, site="demo", scope=HALL, comment="pump swap", now=NOW):
    return add_mute(
        engine,
        site,
        kind=kind,
        scope=scope,
        comment=comment,
        created_by="otto",
        starts_at=start,
        ends_at=start + timedelta(hours=hours),
        now=now,
    )


@pytest.fixture()
def engine(db_url):
    engine = open_database(db_url)
    yield engine
    engine.dispose()


def test_added_listed_expired(engine):
    silence = _add(engine)
    window = _add(engine, "maintenance", NOW + timedelta(days=2), hours=4, scope=("entity", "H1-R0*", "gpu_hot", ""))
    assert silence["state"] == "active" and silence["created_by"] == "otto" and silence["starts_at"] == NOW
    assert window["state"] == "upcoming" and window["rule_name"] == "gpu_hot"
    assert [m["id"] for m in list_mutes(engine, "demo", NOW)] == [silence["id"], window["id"]]
    assert list_mutes(engine, "other", NOW) == []
    later = NOW + timedelta(minutes=10)
    before, after = expire_mute(engine, "demo", window["id"], "ada", later)  # cancelled before it started
    assert before["state"] == "upcoming" and after["state"] == "ended" and after["expired_by"] == "ada"
    assert after["ends_at"] == later  # it never mutes anything: it ended before its start
    assert [m["id"] for m in list_mutes(engine, "demo", later)] == [silence["id"]]
    assert [m["id"] for m in list_mutes(engine, "demo", later, ended_since=timedelta(hours=1))] == [
        silence["id"],
        window["id"],
    ]
    assert list_mutes(engine, "demo", NOW + timedelta(hours=1)) == []  # the silence ended on its own
    with pytest.raises(MuteError, match=f"maintenance {window['id']} ended at .* already"):
        expire_mute(engine, "demo", window["id"], "ada", later)
    with pytest.raises(MuteError, match=f"no silence or maintenance window with id {silence['id']} on site other"):
        expire_mute(engine, "other", silence["id"], "ada", later)
    with pytest.raises(MuteError, match="no silence or maintenance window with id 'x'"):
        expire_mute(engine, "demo", "x", "ada", later)


def test_times_are_bounded():
    assert check_times(NOW - timedelta(hours=1), NOW + timedelta(hours=1), NOW) == NOW  # a past start is now
    bad = [
        (NOW, NOW, "end 2026-07-15T14:00:00\\+00:00 is not after the start"),
        (NOW, NOW - timedelta(hours=1), "is not after the start"),
        (NOW, NOW + timedelta(days=7, seconds=1), "is longer than 7 days"),
        (NOW + timedelta(days=91), NOW + timedelta(days=92), "is more than 90 days ahead"),
        (NOW.replace(tzinfo=None), NOW + timedelta(hours=1), "start .*: expected a timezone-aware time"),
        (NOW - timedelta(days=3), NOW - timedelta(days=2), "is not after the start"),  # wholly past
    ]
    for start, end, message in bad:
        with pytest.raises(MuteError, match=message):
            check_times(start, end, NOW)
    assert check_times(NOW, NOW + timedelta(days=7), NOW) == NOW


def test_comments_and_kinds_are_checked(engine):
    with pytest.raises(MuteError, match="a maintenance window needs a reason"):
        _add(engine, "maintenance", comment="   ")
    with pytest.raises(MuteError, match="a silence needs a comment"):
        _add(engine, comment="")
    with pytest.raises(MuteError, match="comment is longer than 500 characters"):
        _add(engine, comment="x" * 501)
    with pytest.raises(MuteError, match="kind 'mute': expected silence or maintenance"):
        _add(engine, kind="mute")
    assert _add(engine, comment="  two\n lines ")["comment"] == "two lines"  # stored as one line
    assert list_mutes(engine, "demo", NOW)[0]["comment"] == "two lines"


def test_at_most_so_many_not_ended_per_site(engine):
    for i in range(MAX_OPEN_MUTES):
        _add(engine, start=NOW + timedelta(minutes=i))
    with pytest.raises(MuteError, match=f"site demo has {MAX_OPEN_MUTES} silences and windows not ended yet"):
        _add(engine)
    assert _add(engine, site="other")["site"] == "other"  # a count per site
    first = list_mutes(engine, "demo", NOW)[0]
    expire_mute(engine, "demo", first["id"], "otto", NOW)
    assert _add(engine)["state"] == "active"  # an expired one makes room


def test_migration_0009_goes_down_and_up_again(db_url):
    engine = open_database(db_url)
    assert "alert_mute" in inspect(engine).get_table_names()
    _add(engine)
    command.downgrade(alembic_config(engine), "0008")
    inspect_after = inspect(engine)
    assert "alert_mute" not in inspect_after.get_table_names() and "event" in inspect_after.get_table_names()
    migrate(engine)
    assert "alert_mute" in inspect(engine).get_table_names() and list_mutes(engine, "demo", NOW) == []
    assert _add(engine)["id"] >= 1
    engine.dispose()


@pytest.mark.postgres
def test_a_change_notifies_the_sites_other_processes(postgres_url):
    engine = open_database(postgres_url)
    url = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as listener:
        listener.execute(f"LISTEN {ALERTS_CHANNEL}")
        mute = _add(engine, site="notified")
        expire_mute(engine, "notified", mute["id"], "otto", NOW + timedelta(minutes=1))
        payloads = [n.payload for n in listener.notifies(timeout=5, stop_after=2)]
    assert payloads == ["notified", "notified"]
    engine.dispose()
