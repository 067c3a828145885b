"""Stored what-if scenarios on SQLite and a real PostgreSQL: edits, undo/redo, rejections, TOML."""

from __future__ import annotations

import pytest

from ingest.store import scenarios as store
from ingest.store.db import open_database
from ingest.store.siteversions import record_site_version
from tests.conftest import REPO_DIR
from twin.site.edits import EditError
from twin.site.load import load_site

DEMO = load_site("demo")
FAIL_TX = {"op": "fail", "elements": ["H1-TX1-A"]}
MOVE = {"op": "move_rack", "racks": ["H1-R01-K01"], "x_m": 5.8, "y_m": 1.0}


@pytest.fixture
def engine(db_url):
    engine = open_database(db_url)
    yield engine
    engine.dispose()


def snapshot(engine, scenario_id):
    s = store.get_scenario(engine, scenario_id)
    return s.name, s.edits, s.position, s.updated_at, store.export_toml(engine, scenario_id)


def test_append_undo_redo_and_a_new_edit_drops_the_redo_tail(engine):
    sc = store.create_scenario(engine, "demo", "maintenance", description="TX1-A out")
    sc = store.append_edit(engine, sc.id, FAIL_TX, DEMO)
    sc = store.append_edit(engine, sc.id, MOVE, DEMO)
    assert [e.op for e in sc.applied] == ["fail", "move_rack"] and sc.can_undo and not sc.can_redo
    sc = store.undo(engine, sc.id)
    assert sc.position == 1 and [e.op for e in sc.applied] == ["fail"] and sc.can_redo
    assert 'op = "move_rack"' not in store.export_toml(engine, sc.id)
    sc = store.redo(engine, sc.id)
    assert sc.position == 2
    sc = store.undo(engine, store.undo(engine, sc.id).id)
    with pytest.raises(store.ScenarioStoreError, match="nothing to undo"):
        store.undo(engine, sc.id)
    sc = store.append_edit(engine, sc.id, {"op": "set_weather", "outdoor_dry_bulb_c": 38.0}, DEMO)
    assert [e.op for e in sc.edits] == ["set_weather"] and sc.position == 1 and not sc.can_redo


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"op": "remove_rack", "racks": ["H9-*"]}, r"edits\[1\]\.racks: 'H9-\*' matches no rack"),
        (
            {"op": "move_rack", "racks": ["H1-R01-K02"], "x_m": 1.0, "y_m": 1.0},
            r"edits\[1\]\.x_m: rack 'H1-R01-K02': position: \(1\.00 m, 1\.00 m\) overlaps rack 'H1-R01-K01'",
        ),
        (
            {"op": "set_rack_feeds", "racks": ["H1-R01-K01"], "feed_a": "BW-9"},
            r"edits\[1\]\.feed_a: 'BW-9' is not a busway/PDU of this site",
        ),
        (
            {"op": "set_setpoint", "plants": ["PLANT-1"], "supply_setpoint_c": 45.0},
            r"edits\[1\]\.supply_setpoint_c: cdu 'H1-R01-K01-CDU': overloaded by design",
        ),
        ({"op": "teleport"}, r"edits\[1\]\.op: unknown op 'teleport'"),
    ],
)
def test_a_rejected_edit_changes_nothing_stored(engine, edit, message):
    sc = store.create_scenario(engine, "demo", "reject")
    sc = store.append_edit(engine, sc.id, FAIL_TX, DEMO)
    before = snapshot(engine, sc.id)
    with pytest.raises(EditError, match=message):
        store.append_edit(engine, sc.id, edit, DEMO)
    assert snapshot(engine, sc.id) == before


def test_several_edits_are_stored_all_or_none(engine):
    sc = store.create_scenario(engine, "demo", "batch")
    with pytest.raises(EditError, match=r"edits\[1\]\.elements: 'TX-9' is not an element"):
        store.append_edits(engine, sc.id, [FAIL_TX, {"op": "fail", "elements": ["TX-9"]}], DEMO)
    assert store.get_scenario(engine, sc.id).edits == ()


def test_rename_duplicate_delete_and_names_are_unique_per_site(engine):
    a = store.create_scenario(engine, "demo", "a")
    a = store.append_edit(engine, a.id, FAIL_TX, DEMO)
    a = store.append_edit(engine, a.id, MOVE, DEMO)
    a = store.undo(engine, a.id)
    with pytest.raises(store.ScenarioStoreError, match="has a scenario of that name"):
        store.create_scenario(engine, "demo", "a")
    store.create_scenario(engine, "colossus", "a")  # another site may use the name
    b = store.duplicate_scenario(engine, a.id)
    assert b.name == "a (copy)" and [e.op for e in b.edits] == ["fail"] and b.position == 1
    renamed = store.rename_scenario(engine, b.id, "b")
    assert renamed.name == "b" and 'name = "b"' in store.export_toml(engine, b.id)
    with pytest.raises(store.ScenarioStoreError, match="has a scenario of that name"):
        store.rename_scenario(engine, b.id, "a")
    store.delete_scenario(engine, a.id)
    assert [s.name for s in store.list_scenarios(engine, "demo")] == ["b"]
    with pytest.raises(store.ScenarioStoreError, match="no such scenario"):
        store.get_scenario(engine, a.id)


def test_export_import_round_trip(engine):
    sc = store.create_scenario(engine, "demo", "trip", design_limits="warn")
    sc = store.append_edits(engine, sc.id, [FAIL_TX, MOVE], DEMO)
    text = store.export_toml(engine, sc.id)
    copy = store.import_toml(engine, "demo", text, name="trip 2", baseline=DEMO)
    assert copy.edits == sc.edits and copy.design_limits == "warn"
    assert store.export_toml(engine, copy.id) == text.replace('name = "trip"', 'name = "trip 2"')


def test_old_scenario_files_import(engine):
    text = (REPO_DIR / "data" / "scenarios" / "demo-cdu-loss.toml").read_text()
    sc = store.import_toml(engine, "demo", text, baseline=DEMO)
    assert sc.name == "CDU loss in rack R01-K01" and "cdus_failed" in store.export_toml(engine, sc.id)


def test_baseline_from_a_stored_site_version(engine):
    content = (REPO_DIR / "data" / "sites" / "demo.toml").read_text()
    version = record_site_version(engine, "demo", content).version
    state = store.baseline_state(engine, "demo", version)
    assert state.n_gpus == 1024
    with pytest.raises(store.ScenarioStoreError, match="no stored version 99"):
        store.baseline_state(engine, "demo", 99)


def test_answer_of_a_stored_scenario(engine):
    sc = store.create_scenario(engine, "demo", "answer")
    sc = store.append_edits(engine, sc.id, [MOVE, {"op": "fail", "elements": ["H1-R02-K01"]}], DEMO)
    out = store.answer(engine, sc.id, DEMO)
    moved = [r for r in out.diff.racks if r.rack == "H1-R01-K01"][0]
    assert moved.layout == ["moved"]
    dark = [r for r in out.diff.racks if r.rack == "H1-R02-K01"][0]
    assert dark.change == "worse" and dark.dark_flag


def test_a_row_with_the_old_cdu_setpoint_spelling_reads_in_the_new_and_is_rewritten_by_its_next_change(engine):
    """Rows stored when a CDU's setpoint was ``supply_temp_c`` (now ``supply_setpoint_c``; a loop's stays ``supply_temp_c``)."""
    import json

    from sqlmodel import Session

    from ingest.store.models import Scenario as ScenarioRow

    old_cdu = {"op": "set_setpoint", "cdus": ["H1-R01-K01-CDU"], "supply_temp_c": 40.0}
    loop = {"op": "set_setpoint", "loops": ["FW-H1"], "supply_temp_c": 31.0}
    sc = store.create_scenario(engine, "demo", "old spelling", design_limits="warn")
    with Session(engine) as session:  # the row as the earlier version wrote it
        row = session.get(ScenarioRow, sc.id)
        row.edits_json, row.position = json.dumps([old_cdu, loop]), 2
        session.add(row)
        session.commit()
    sc = store.get_scenario(engine, sc.id)
    new_cdu = {"op": "set_setpoint", "cdus": ["H1-R01-K01-CDU"], "supply_setpoint_c": 40.0}
    assert [e.as_dict() for e in sc.applied] == [new_cdu, loop]
    text = store.export_toml(engine, sc.id)
    assert "supply_setpoint_c = 40.0" in text and text.count("supply_temp_c") == 1  # the loop's
    warmer = {r.rack: r.rack_max_gpu_temp_delta_k for r in store.answer(engine, sc.id, DEMO).diff.racks}
    assert warmer["H1-R01-K01"] > warmer["H1-R01-K02"] + 5.0  # the CDU setpoint warms its rack beyond the loop's
    sc = store.undo(engine, sc.id)  # any change writes the row in the current spelling
    with Session(engine) as session:
        assert json.loads(session.get(ScenarioRow, sc.id).edits_json) == [new_cdu, loop]
    # edits appended now take the current spelling only
    with pytest.raises(EditError, match=r"edits\[1\]\.supply_temp_c: supply_temp_c goes with loops"):
        store.append_edit(engine, sc.id, old_cdu, DEMO)
