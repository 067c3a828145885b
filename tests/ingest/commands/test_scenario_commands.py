"""``clustertwin scenario``: import, apply, show, export, undo/redo, list, on an SQLite file."""

from __future__ import annotations

import json

import pytest

from twin.cli import main

H4_ROW = (
    '[scenario]\nname = "row to GB200"\ndesign_limits = "warn"\n'
    '[[edits]]\nop = "set_rack_type"\nrows = ["H1-R01"]\ntype = "GB200-NVL72"\n'
)
MORE = '[[edits]]\nop = "fail"\nelements = ["H1-TX1-A"]\n[[edits]]\nop = "set_weather"\noutdoor_dry_bulb_c = 38.0\n'


@pytest.mark.slow
def test_scenario_commands_round_trip(tmp_path, capsys):
    db = ["--db", f"sqlite:///{tmp_path / 'twin.db'}"]
    first, more = tmp_path / "row.toml", tmp_path / "more.toml"
    first.write_text(H4_ROW)
    more.write_text(MORE)
    assert main(["scenario", "import", *db, "--site", "demo", str(first), "--json"]) == 0
    created = json.loads(capsys.readouterr().out)
    assert (created["name"], created["position"], created["design_limits"]) == ("row to GB200", 1, "warn")
    assert main(["scenario", "apply", *db, "--site", "demo", str(more), "--to", "row to GB200"]) == 0
    assert "3 of 3 edits applied" in capsys.readouterr().out
    assert main(["scenario", "undo", *db, str(created["id"])]) == 0
    capsys.readouterr()
    assert main(["scenario", "show", *db, "--site", "demo", "row to GB200", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (
        shown["position"] == 2
        and shown["can_redo"]
        and [e["op"] for e in shown["edits"]] == ["set_rack_type", "fail", "set_weather"]
    )
    out = tmp_path / "export.toml"
    assert main(["scenario", "export", *db, str(created["id"]), "-o", str(out)]) == 0
    text = out.read_text()
    assert 'op = "fail"' in text and 'op = "set_weather"' not in text
    assert main(["project", "--site", "demo", "--scenario", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scenario"]["gpus"]["n_gpus"] == 1024 + 8 * 8
    assert main(["scenario", "list", *db, "--json"]) == 0
    assert [s["name"] for s in json.loads(capsys.readouterr().out)] == ["row to GB200"]


def test_apply_of_a_bad_edit_is_one_line_and_stores_nothing(tmp_path, capsys):
    db = ["--db", f"sqlite:///{tmp_path / 'twin.db'}"]
    first, bad = tmp_path / "row.toml", tmp_path / "bad.toml"
    first.write_text(H4_ROW)
    bad.write_text('[[edits]]\nop = "remove_rack"\nracks = ["H9-*"]\n')
    assert main(["scenario", "import", *db, "--site", "demo", str(first)]) == 0
    capsys.readouterr()
    assert main(["scenario", "apply", *db, "--site", "demo", str(bad), "--to", "row to GB200"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "edits[1].racks: 'H9-*' matches no rack" in err
    assert main(["scenario", "show", *db, "--site", "demo", "row to GB200", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["position"] == 1


@pytest.mark.slow
def test_every_change_from_the_command_line_is_audited_as_the_login_name(tmp_path, capsys):
    from ingest.store.audit import cli_user, list_entries
    from ingest.store.db import open_database

    url = f"sqlite:///{tmp_path / 'twin.db'}"
    db = ["--db", url]
    first, more = tmp_path / "row.toml", tmp_path / "more.toml"
    first.write_text(H4_ROW)
    more.write_text(MORE)
    steps = [
        ["import", "--site", "demo", str(first)],
        ["apply", "--site", "demo", str(more), "--to", "row to GB200"],
        ["undo", "--site", "demo", "row to GB200"],
        ["redo", "--site", "demo", "row to GB200"],
        ["rename", "--site", "demo", "row to GB200", "denser row"],
        ["duplicate", "--site", "demo", "denser row", "--name", "copy"],
        ["delete", "--site", "demo", "copy"],
    ]
    for step in steps:
        assert main(["scenario", step[0], *db, *step[1:]]) == 0, step
    assert main(["scenario", "list", *db]) == 0  # reading is not audited
    capsys.readouterr()
    engine = open_database(url)
    try:
        entries = list(reversed(list_entries(engine)))
    finally:
        engine.dispose()
    assert [e["action"] for e in entries] == [f"scenario.{s[0]}" for s in steps]
    assert {e["user_name"] for e in entries} == {cli_user()} and cli_user().startswith("cli:")
    apply, undo, rename = entries[1], entries[2], entries[4]
    assert apply["before"]["edits"] == 1 and apply["after"]["edits"] == 3 and len(apply["after"]["added"]) == 2
    assert (undo["before"]["edits"], undo["after"]["edits"]) == (3, 2)
    assert rename["before"] == {"name": "row to GB200"} and rename["target"] == "scenario denser row"
    assert entries[-1]["target"] == "scenario copy" and entries[-1]["after"] is None


def test_scenario_ops_lists_the_edit_schema(capsys):
    from twin.site.edit_schema import OPS, edit_json_schema

    assert main(["scenario", "ops"]) == 0
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines() if not line.startswith(" ")][:-1] == list(OPS)
    setpoint = out[out.index("set_setpoint:") : out.index("set_weather:")]
    assert "one of: plants | cdus | loops" in setpoint
    assert "supply_setpoint_c  optional  a number in [2, 60]" in setpoint
    assert "supply_temp_c      optional  a number in [2, 70]" in setpoint
    assert main(["scenario", "ops", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == edit_json_schema()


def test_a_file_with_the_old_cdu_setpoint_spelling_is_stored_in_the_new(tmp_path, capsys):
    db = ["--db", f"sqlite:///{tmp_path / 'twin.db'}"]
    old = tmp_path / "old.toml"
    old.write_text(
        '[scenario]\nname = "warm cdu"\n[[edits]]\nop = "set_setpoint"\ncdus = ["H1-R01-K01-CDU"]\nsupply_temp_c = 40.0\n'
    )
    assert main(["scenario", "import", *db, "--site", "demo", str(old), "--json"]) == 0
    edits = json.loads(capsys.readouterr().out)["edits"]
    assert edits == [{"op": "set_setpoint", "cdus": ["H1-R01-K01-CDU"], "supply_setpoint_c": 40.0}]
