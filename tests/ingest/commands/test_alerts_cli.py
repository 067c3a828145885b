"""``clustertwin alerts list`` reads the alerts a live twin stored, with group, impact and text."""

import json
from datetime import UTC, datetime, timedelta

from ingest.live.runtime import build_hub
from twin.cli import main

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


def test_alerts_list_json_from_the_database_of_a_stopped_site(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'live.db'}"
    hub = build_hub("demo", db, start=T0, faults=("xid:h1-r01-k02-n0/5@1=79",))
    for i in range(8):  # past the stalled-job rule's minimum duration (5 s): the stall is an episode
        hub.step(T0 + timedelta(seconds=i))
    del hub  # the site stopped; its database remains
    assert main(["alerts", "list", "--db", db, "--active", "--json"]) == 0
    alerts = json.loads(capsys.readouterr().out)
    by_rule = {a["entity"]["kind"] + ":" + a["entity"]["name"]: a for a in alerts}
    stall = alerts[0]
    assert stall["entity"]["kind"] == "job" and stall["severity"] == "critical"  # the most urgent first
    assert "stalled" in stall["text"] and stall["impact"]["gpus"] == 1024 and stall["impact"]["tokens_per_s"] > 0
    xid = by_rule["gpu:h1-r01-k02-n0/gpu5"]
    assert stall["group"] == xid["group"]  # the job stalled because of that XID
    for a in alerts:
        assert set(a) >= {"severity", "entity", "group", "impact", "text", "raised_at", "updated_at"}
        datetime.fromisoformat(a["raised_at"])


def test_alerts_list_rejects_an_out_of_range_limit(tmp_path, capsys):
    assert main(["alerts", "list", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--limit", "0"]) == 2
    assert "--limit" in capsys.readouterr().err
