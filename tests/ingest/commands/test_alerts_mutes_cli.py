"""``clustertwin alerts silence|maintenance|mutes|expire`` on the SQLite file of a demo twin: they store what the
API stores, write the audit entry the API writes, the live twin's alerts show the mute, and bad input is one line
with exit code 2."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from ingest.commands.alerts import parse_duration_s
from ingest.live.runtime import build_hub
from ingest.store.audit import list_entries
from ingest.store.mutes import list_mutes
from twin.cli import main

FAULT = "cdu:H1-R01-K02-CDU"  # the CDU, its rack and GPUs (hall H1) and the stalled job (no hall)


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """A demo live twin with a CDU loss under way (its alerts raised a minute ago), and its database URL."""
    url = f"sqlite:///{tmp_path_factory.mktemp('mutes-cli') / 'site.db'}"
    start = datetime.now(UTC) - timedelta(seconds=60)
    hub = build_hub("demo", url, start=start, faults=(FAULT,))
    for k in range(25):
        hub.step(start + timedelta(seconds=k))
    yield hub, url
    hub.db.dispose()


@pytest.fixture()
def clean(twin):
    hub, url = twin
    for row in hub.alert_actions.mutes():
        hub.alert_actions.expire_mute(row["id"], "test")
    for alert in hub.live_alerts.listing():
        if alert["silenced_until"] is not None:
            hub.alert_actions.unsilence(alert["id"])
    return hub, url


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(["alerts", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _entries(hub, action: str) -> list[dict]:
    return [e for e in list_entries(hub.db) if e["action"] == action]


@pytest.mark.slow
def test_a_hall_silence_from_the_command_line_mutes_the_live_alerts_and_is_audited(clean, capsys):
    hub, url = clean
    code, out, err = _run(capsys, "silence", "--db", url, "--hall", "h1", "--for", "2h", "--comment", "pump swap")
    assert code == 0, err
    (row,) = list_mutes(hub.db, "demo", datetime.now(UTC))
    assert out.startswith(f"silence {row['id']} of H1 on site demo: ")
    assert row["kind"] == "silence" and row["scope_kind"] == "hall" and row["scope_value"] == "H1"
    assert row["comment"] == "pump swap" and row["created_by"].startswith("cli:")
    assert timedelta(hours=2) - timedelta(seconds=5) < row["ends_at"] - row["starts_at"] <= timedelta(hours=2)
    hub.live_alerts.forget()  # another process's change: the twin rereads the table (at least every 5 s)
    alerts = hub.live_alerts.listing()
    in_hall = [a for a in alerts if a["entity_kind"] in ("cdu", "rack", "gpu")]
    assert in_hall and all(a["silence"]["id"] == row["id"] for a in in_hall)
    assert all(a["silence"] is None for a in alerts if a["entity_kind"] == "job")  # a job lies in no hall
    (entry,) = _entries(hub, "silence.add")
    assert entry["target"] == f"silence {row['id']}: H1" and entry["before"] is None
    assert entry["user_name"].startswith("cli:")
    assert entry["after"] == {
        "kind": "silence",
        "scope_kind": "hall",
        "scope_value": "H1",
        "rule_name": "",
        "metric": "",
        "comment": "pump swap",
        "starts_at": row["starts_at"].isoformat(),
        "ends_at": row["ends_at"].isoformat(),
        "state": "active",
    }

    code, out, err = _run(capsys, "expire", "--db", url, str(row["id"]), "--author", "olga")
    assert code == 0, err
    assert out.startswith(f"silence {row['id']} of H1 expired at ")
    assert list_mutes(hub.db, "demo", datetime.now(UTC)) == []
    (ended,) = [e for e in _entries(hub, "silence.expire") if e["target"] == f"silence {row['id']}: H1"]
    assert ended["before"]["state"] == "active" and ended["after"]["state"] == "ended"
    hub.live_alerts.forget()
    assert all(a["silence"] is None for a in hub.live_alerts.listing())


@pytest.mark.slow
def test_the_command_line_and_the_api_write_the_same_audit_entry(clean, capsys):
    from dashboard.app import app_for_hub

    hub, url = clean
    client = app_for_hub(hub, tick_ms=60_000).server.test_client()  # no users yet: no login needed
    body = {"scope": {"kind": "entity", "value": "H1-R01-*", "rule": "pump"}, "duration_s": 600, "comment": "swap"}
    r = client.post("/api/v1/silences", json=body)
    assert r.status_code == 200, r.get_json()
    api_id = r.get_json()["id"]
    code, _, err = _run(
        capsys, "silence", "--db", url, "--entity", "H1-R01-*", "--rule", "pump", "--for", "10m", "--comment", "swap"
    )
    assert code == 0, err
    (cli_id,) = [m["id"] for m in list_mutes(hub.db, "demo", datetime.now(UTC)) if m["id"] != api_id]
    assert client.post(f"/api/v1/silences/{api_id}/expire").status_code == 200
    assert _run(capsys, "expire", "--db", url, str(cli_id))[0] == 0
    times = ("starts_at", "ends_at")
    for action in ("silence.add", "silence.expire"):
        entries = _entries(hub, action)  # newest first
        cli = next(e for e in entries if e["user_name"].startswith("cli:"))
        api = next(e for e in entries if e["user_name"] == "local")  # the API's user on a server without users
        assert cli["target"] == f"silence {cli_id}: H1-R01-* · pump alerts"
        assert api["target"] == f"silence {api_id}: H1-R01-* · pump alerts"
        for side in ("before", "after"):
            if api[side] is None:
                assert cli[side] is None
                continue
            assert {k: v for k, v in cli[side].items() if k not in times} == {
                k: v for k, v in api[side].items() if k not in times
            }
            assert set(cli[side]) == set(api[side])
    code, _, err = _run(capsys, "expire", "--db", url, str(api_id))
    assert code == 2 and err.startswith(f"error: silence {api_id} ended at ") and err.endswith(" already\n")


@pytest.mark.slow
def test_a_maintenance_window_is_scheduled_listed_and_cancelled(clean, capsys):
    hub, url = clean
    start = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    code, out, err = _run(
        capsys,
        "maintenance",
        "--db",
        url,
        "--group",
        "pump:cdu:1",
        "--start",
        start.strftime("%Y-%m-%dT%H:%M:%S"),  # no zone: UTC
        "--for",
        "1h30m",
        "--reason",
        "CDU pump swap",
        "--author",
        "olga",
    )
    assert code == 0, err
    assert out.startswith("maintenance window ") and " of cause pump:cdu:1 on site demo: " in out
    code, out, err = _run(capsys, "silence", "--db", url, "--alert", "1", "--for", "30m")
    assert code == 0, err
    code, out, err = _run(capsys, "mutes", "--db", url, "--json")
    assert code == 0, err
    assert "NaN" not in out and "Infinity" not in out  # strict JSON, which json.loads would not check
    records = json.loads(out)
    window, own = records
    assert window["kind"] == "maintenance" and window["state"] == "upcoming" and window["created_by"] == "olga"
    assert window["scope"] == "cause pump:cdu:1" and window["comment"] == "CDU pump swap"
    assert datetime.fromisoformat(window["starts_at"]) == start
    assert datetime.fromisoformat(window["ends_at"]) == start + timedelta(minutes=90)
    assert own["kind"] == "alert" and own["id"] == 1 and own["starts_at"] is None
    code, table, err = _run(capsys, "mutes", "--db", url)
    assert code == 0 and "upcoming" in table and "cause pump:cdu:1 · CDU pump swap" in table and "alert 1 (" in table

    code, out, err = _run(capsys, "expire", "--db", url, str(window["id"]))
    assert code == 0 and out.startswith(f"maintenance {window['id']} of cause pump:cdu:1 cancelled"), err
    assert _entries(hub, "maintenance.cancel")[0]["after"]["state"] == "ended"
    code, out, err = _run(capsys, "expire", "--db", url, "--alert", "1")
    assert code == 0, err
    (lifted,) = _entries(hub, "alert.unsilence")
    assert lifted["before"]["silenced_until"] is not None and lifted["after"]["silenced_until"] is None
    assert _entries(hub, "alert.silence")[0]["after"]["acknowledged"] is False
    code, out, _ = _run(capsys, "mutes", "--db", url)
    assert code == 0 and out.strip() == "no silence or maintenance window on site demo"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("silence", "--hall", "H9", "--for", "1h", "--comment", "x"), "hall 'H9' is not one of the site's halls (H1)"),
        (("silence", "--hall", "H1", "--for=-5m", "--comment", "x"), "--for '-5m': a duration must be positive"),
        (("silence", "--hall", "H1", "--for", "-5m", "--comment", "x"), "--for '-5m': a duration must be positive"),
        (("maintenance", "--hall", "H1", "--for", "-1.5h", "--reason", "x"), "--for '-1.5h': a duration must be"),
        (("silence", "--hall", "H1", "--for", "0", "--comment", "x"), "--for '0': a duration must be positive"),
        (("silence", "--hall", "H1", "--for", "soon", "--comment", "x"), "--for 'soon': expected a duration"),
        (("silence", "--hall", "H1", "--for", "8d", "--comment", "x"), "at most 604800 s (7 days)"),
        (("silence", "--hall", "H1", "--for", "1h"), "a silence needs a comment"),
        (("silence", "--entity", "*", "--for", "1h", "--comment", "x"), "matches every entity"),
        (("silence", "--alert", "999", "--for", "1h"), "no alert with id 999 on site demo"),
        (("silence", "--alert", "1", "--for", "1h", "--comment", "x"), "keeps no comment"),
        (("maintenance", "--hall", "H1", "--end", "2020-01-01T00:00", "--reason", "x"), "is not after the start"),
        (("maintenance", "--hall", "H1", "--start", "tomorrow", "--for", "1h", "--reason", "x"), "--start 'tomorrow'"),
        (("maintenance", "--hall", "H1", "--for", "1h"), "a maintenance window needs a reason"),
        (("expire", "4242"), "no silence or maintenance window with id 4242 on site demo"),
        (("expire", "--alert", "1"), "alert 1 is not silenced"),
        (("mutes", "--site", "nosuch"), "no such site file"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(clean, capsys, argv, message):
    hub, url = clean
    before = list_entries(hub.db)
    code, out, err = _run(capsys, argv[0], "--db", url, *argv[1:])
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert list_entries(hub.db) == before  # nothing was changed, nothing audited
    assert list_mutes(hub.db, "demo", datetime.now(UTC)) == []


def test_a_database_of_several_sites_needs_site(tmp_path, capsys):
    from ingest.store.db import open_database
    from ingest.store.siteversions import record_site_version

    url = f"sqlite:///{tmp_path / 'two.db'}"
    engine = open_database(url)
    code, _, err = _run(capsys, "mutes", "--db", url)
    assert code == 2 and err == "error: the database holds no site yet: name one with --site\n"
    for name in ("demo", "colossus"):
        record_site_version(engine, name, f"# {name}\n")
    code, _, err = _run(capsys, "mutes", "--db", url)
    assert code == 2 and err == "error: the database holds the sites colossus, demo: name one with --site\n"


def test_durations():
    assert [parse_duration_s(t) for t in ("90", "90s", "30m", "2h", "1h30m", "1d", "1.5h")] == [
        90.0,
        90.0,
        1800.0,
        7200.0,
        5400.0,
        86400.0,
        5400.0,
    ]
