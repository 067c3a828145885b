"""The what-if editor without a browser: edits, the stores, the answer, the state-changing registry, links."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard import ids
from dashboard.auth.callbacks import build_registry, required_role
from dashboard.callbacks.inputs import InputError
from dashboard.whatif.edits import EditRejected, canonical, describe, kind_names, match_names, resolve_edits
from dashboard.whatif.links import rack_href, trip_href
from dashboard.whatif.outcome import diff_rows, entity_changes, outcome, rack_changes
from dashboard.whatif.store import DatabaseScenarioStore, MemoryScenarioStore, export_toml, import_toml

FEEDS = {"op": "set_rack_feeds", "racks": ["H1-R01-K01"], "feed_a": "H1-BW-R02-A", "feed_b": "H1-BW-R02-B"}


def test_bad_edits_are_refused_naming_index_and_field(demo_state):
    with pytest.raises(EditRejected) as err:
        resolve_edits(
            demo_state,
            [{"op": "fail", "elements": ["GEN-01"]}, {"op": "set_rack_type", "racks": ["H9-*"], "type": "GB200-NVL72"}],
        )
    assert (err.value.index, err.value.field) == (1, "racks")
    with pytest.raises(EditRejected) as err:
        resolve_edits(demo_state, [{**FEEDS, "feed_a": "H1-BW-R99-A"}])
    assert (err.value.index, err.value.field) == (0, "feed_a") and "H1-BW-R99-A" in err.value.message
    with pytest.raises(EditRejected) as err:
        resolve_edits(demo_state, [{"op": "move_rack", "racks": ["H1-R01-K01"], "x_m": 500.0, "y_m": 1.0}])
    assert err.value.field == "x_m" and "outside" in err.value.message


def test_an_edit_that_leaves_too_few_gpus_for_the_job_is_refused_naming_the_job(demo_state):
    """The demo job takes all 1,024 GPUs: removing a rack leaves it no room, said beside the button (no crash)."""
    with pytest.raises(EditRejected) as err:
        outcome(demo_state, [{"op": "remove_rack", "racks": ["H1-R02-K08"]}])
    assert (err.value.index, err.value.field) == (0, "job")
    assert "cannot place 1024 GPUs" in err.value.message and "change the job first" in err.value.message
    result = outcome(demo_state, [{"op": "set_job", "job": ""}, {"op": "remove_rack", "racks": ["H1-R02-K08"]}])
    assert result.answer.scenario.gpus.n_gpus == 1024 - 64


def test_editor_edits_take_the_current_spelling_and_come_back_canonical(demo_state):
    old = {"op": "set_setpoint", "cdus": ["H1-R01-K01-CDU"], "supply_temp_c": 40}
    with pytest.raises(EditRejected) as err:
        resolve_edits(demo_state, [old])
    assert (err.value.index, err.value.field) == (0, "supply_temp_c")
    assert err.value.message == "supply_temp_c goes with loops; cdus take supply_setpoint_c"
    with pytest.raises(EditRejected, match="at most 10,000 edits"):
        resolve_edits(demo_state, [{"op": "fail", "elements": ["GEN-01"]}] * 10_001)
    new = {"op": "set_setpoint", "supply_setpoint_c": 40, "cdus": ["H1-R01-K01-CDU"]}
    assert canonical(new) == {"op": "set_setpoint", "cdus": ["H1-R01-K01-CDU"], "supply_setpoint_c": 40.0}
    assert list(canonical(new)) == ["op", "cdus", "supply_setpoint_c"]


def test_a_feed_change_moves_load_between_busways_and_outlines_the_rack(demo_state):
    result = outcome(demo_state, [FEEDS])
    changed = {name: (a, b) for name, a, b in entity_changes(result, "power")}
    assert changed["H1-BW-R02-A"][1] > changed["H1-BW-R02-A"][0]  # the new busway carries the rack
    assert changed["H1-BW-R01-A"][1] < changed["H1-BW-R01-A"][0]
    racks = rack_changes(result)
    assert [result.state.rack_name[r] for r in racks.edited] == ["H1-R01-K01"]
    assert outcome(demo_state, [FEEDS]) is result  # cached per edit list


def test_compared_figures_come_largest_change_first(demo_state):
    rows = diff_rows(outcome(demo_state, [{"op": "fail", "elements": ["GEN-01"]}]), "power")
    shown = [r for r in rows if r.shows_change]
    assert shown and rows[: len(shown)] == shown  # a change that prints as ±0 never comes above one that shows
    for group in (shown, rows[len(shown) :]):
        sizes = [r.size for r in group]
        assert sizes == sorted(sizes, reverse=True)
    capacity = next(r for r in rows if r.quantity.path == "generation_capacity_mw")
    assert capacity.change < 0 and capacity.verdict == "worse"


def test_memory_store_keeps_order_undo_redo_and_names():
    store = MemoryScenarioStore("demo")
    store.create("a")
    store.push("a", {"op": "fail", "elements": ["GEN-01"]})
    store.push("a", FEEDS)
    assert store.undo("a") and store.edits("a") == [{"op": "fail", "elements": ["GEN-01"]}]
    assert store.can_undo_redo("a") == (True, True)
    assert store.redo("a") and store.edits("a")[-1] == FEEDS
    assert store.duplicate("a", "b") == "b" and store.edits("b") == store.edits("a")
    assert store.rename_scenario("b", "c") == "c" and store.names() == ["a", "c"]
    with pytest.raises(InputError, match="exists already"):
        store.create("a")
    with pytest.raises(InputError, match="scenario name"):
        store.create("../etc")
    store.delete("c")
    assert store.names() == ["a"]


def test_database_store_validates_and_keeps_a_refused_edit_out(demo_state, tmp_path):
    from ingest.store.db import open_database

    engine = open_database(f"sqlite:///{tmp_path / 'scenarios.db'}")
    try:
        store = DatabaseScenarioStore(engine, "demo", demo_state)
        store.create("s")
        store.push("s", FEEDS)
        with pytest.raises(InputError, match="H1-BW-R99-A"):
            store.push("s", {**FEEDS, "feed_a": "H1-BW-R99-A"})
        assert store.edits("s") == [FEEDS]
        assert store.undo("s") and store.edits("s") == [] and not store.undo("s")
        assert store.redo("s") and store.edits("s") == [FEEDS]
        assert DatabaseScenarioStore(engine, "demo", demo_state).names() == ["s"]  # it is in the database
    finally:
        engine.dispose()


def test_toml_export_and_import_round_trip():
    edits = [
        FEEDS,
        {"op": "set_rack_type", "racks": ["H1-R02-*"], "type": "GB200-NVL72"},
        {"op": "fail", "elements": ["H1-R01-K01-CDU"], "pumps_count": 1},
    ]
    text = export_toml("plan", edits)
    assert "[[edits]]" in text and 'op = "set_rack_type"' in text
    assert import_toml(text) == ("plan", edits)
    with pytest.raises(InputError):
        import_toml("[[edits]]\nop = 3\n")


def test_rack_selection_by_glob_and_the_edit_descriptions(demo_state):
    assert len(match_names(["H1-R01-*"], demo_state.rack_name, 0, "racks")) == 8
    with pytest.raises(EditRejected, match="names nothing"):
        match_names(["H7-*"], demo_state.rack_name, 0, "racks")
    assert describe({"op": "set_rack_type", "racks": ["H4-*"], "type": "GB200-NVL72"}) == "H4-* → GB200-NVL72"
    cdu = {"op": "set_setpoint", "cdus": ["H1-R01-K01-CDU"], "supply_setpoint_c": 40.0}
    assert describe(cdu) == "secondary supply setpoint of H1-R01-K01-CDU at 40 °C" == describe(canonical(cdu))
    assert (
        describe({"op": "set_setpoint", "loops": ["FW-H1"], "supply_temp_c": 31}) == "facility supply of FW-H1 at 31 °C"
    )
    assert describe({"op": "set_setpoint", "plants": ["PLANT-1"], "supply_setpoint_c": 30}) == (
        "facility-water setpoint of PLANT-1 at 30 °C"
    )
    assert "H1-BW-R01-A" in kind_names(demo_state, "busway")


def test_state_changing_callbacks_need_the_operator_role(page_module, dash_app):
    page_module("whatif")
    registry = build_registry(dash_app.callback_map)
    W = ids.WhatIf
    manage = next(key for key in registry if f"{W.REVISION}.data" in key and f"{W.SCENARIO}.options" in key)
    edit = next(key for key in registry if f"{ids.whatif_msg(W.APPLY_FAIL)}.children" in key)
    assert required_role(registry, {"output": edit, "changedPropIds": [f"{W.APPLY_FAIL}.n_clicks"]}) == "operator"
    assert required_role(registry, {"output": manage, "changedPropIds": [f"{W.UNDO}.n_clicks"]}) == "operator"
    # choosing a scenario stores nothing: any logged-in user may
    assert required_role(registry, {"output": manage, "changedPropIds": [f"{W.SCENARIO}.value"]}) is None


def test_build_edit_from_the_forms(page_module, dash_app):
    page = page_module("whatif")
    W = ids.WhatIf
    with dash_app.server.test_request_context("/whatif"):
        assert page.build_edit(W.APPLY_FAIL, [], {"fail_kind": "pump", "fail_element": "H1-R01-K01-CDU"}) == {
            "op": "fail",
            "elements": ["H1-R01-K01-CDU"],
            "pumps_count": 1,
        }
        assert page.build_edit(W.APPLY_TYPE, [f"H1-R01-K0{i}" for i in range(1, 9)], {"type": "GB200-NVL72"}) == {
            "op": "set_rack_type",
            "racks": ["H1-R01-*"],
            "type": "GB200-NVL72",
        }
        with pytest.raises(EditRejected, match="select racks"):
            page.build_edit(W.APPLY_FEEDS, [], {"feed_a": "H1-BW-R02-A"})


def test_links_into_the_editor():
    assert rack_href("H1-R01-K01") == "/whatif?racks=H1-R01-K01&trip=rack%3AH1-R01-K01"
    assert trip_href("transformer", "H1-TX1-A") == "/whatif?trip=transformer%3AH1-TX1-A"
    assert trip_href(None, None) == "/whatif"


def test_an_editor_scenario_is_a_view_every_page_can_show(page_module, dash_app):
    from flask import current_app

    from dashboard.views.context import live_view, site_db
    from dashboard.views.registry import ViewUnavailable, resolve
    from dashboard.whatif.store import scenario_store

    page_module("whatif")
    with dash_app.server.test_request_context("/floor"):
        live = live_view()
        store = scenario_store(live, site_db(), current_app.config)
        if "as-view" not in store.names():
            store.create("as-view")
            store.push("as-view", {"op": "fail", "elements": ["GEN-01"]})
        view = resolve("scenario:as-view", live)
        assert view.key == "scenario:as-view" and not view.is_live
        assert view.latest() is not None and view.latest_tick().detail is not None
        with pytest.raises(ViewUnavailable, match="no scenario"):
            resolve("scenario:nowhere", live)


def test_times_to_throttle_and_their_change_read_in_the_same_units():
    """A row read "3 min → 2 min, change −67" (seconds beside rounded minutes): all three now say minutes and seconds."""
    from dashboard.whatif.tables import _fmt, _signed

    assert (_fmt(197.0, "ttt.cdu_loss_throttle_s", 0), _fmt(130.0, "ttt.cdu_loss_throttle_s", 0)) == (
        "3 min 17 s",
        "2 min 10 s",
    )
    assert _signed(-67.0, "ttt.cdu_loss_throttle_s", 0) == "−1 min 07 s"
    assert _fmt(48.0, "ttt.pump_loss_throttle_s", 0) == "48 s" and _fmt(4000.0, "ttt.x", 0) == "≥ 60 min"
    assert _fmt(float("inf"), "ttt.x", 0) == "never" and _signed(0.2, "ttt.x", 0) == "±0"
    assert _signed(-67.0, "it_power_mw", 2) == "−67.00"  # other figures keep their number


@pytest.mark.slow
def test_an_overloaded_element_makes_the_answer_not_feasible():
    """A GB200 row on H4-TX1 with its A transformer tripped: the B side carries the whole row (its busway at
    190 % of its rating), so the answer says "not feasible" above every figure; the row alone (N-1 lost,
    nothing over) is feasible."""
    from dashboard.whatif.tables import comparison_children, feasibility
    from twin.site.load import load_site

    site = load_site("colossus-2025")
    row = {"op": "set_rack_type", "racks": ["H4-R01-*"], "type": "GB200-NVL72"}
    assert feasibility(outcome(site, [row])) is None
    tripped = outcome(site, [row, {"op": "fail", "elements": ["H4-TX1-A"]}])
    verdict = feasibility(tripped)
    assert verdict is not None and "whatif-infeasible" in verdict.className
    text = str(verdict.children[1])
    assert text.startswith("3 power elements over their usable rating (H4-BW-R01-B at 190 %"), text
    assert "protection would trip them" in text
    children = comparison_children(tripped, "s", None)
    assert children[1].children.startswith("Baseline: the site as built running colossus-405b-24k")
    assert "whatif-infeasible" in children[2].className  # under the title and the baseline, above every figure


@pytest.mark.slow
def test_the_baseline_is_the_live_fleets_occupancy():
    """With a live fleet both sides run its occupancy (taken once per period, so answers agree), the
    page says so, and the answer differs from the nominal load's (colossus-2025: a 24k job on 100k GPUs)."""
    from types import SimpleNamespace

    from dashboard.whatif.outcome import live_load
    from dashboard.whatif.tables import baseline_note
    from twin.site.load import load_site

    demo_state = load_site("colossus-2025")
    util = np.where(np.arange(demo_state.n_gpus) % 4 == 0, 0.95, 0.0)  # a quarter of the GPUs busy
    fleet = SimpleNamespace(occupancy=SimpleNamespace(gpu_util_frac=util))
    view = SimpleNamespace(state=demo_state, fleet=lambda: fleet)
    load = live_load(view, now_s=1_000.0)
    assert load is live_load(view, now_s=1_100.0)  # the same period: the same occupancy object
    assert load is not live_load(view, now_s=1_000.0 + 600.0)
    np.testing.assert_array_equal(load.on(demo_state), util)
    assert live_load(SimpleNamespace(state=demo_state)) is None  # no fleet
    edits = [{"op": "fail", "elements": ["H1-TX1-A"]}]
    live = outcome(demo_state, edits, load=load)
    nominal = outcome(demo_state, edits)
    assert live.answer.baseline.it_power_mw < nominal.answer.baseline.it_power_mw  # a quarter busy, not all
    assert "live fleet's occupancy" in baseline_note(live) and "25% of GPUs allocated" in baseline_note(live)
    assert "nominal training load (90%" in baseline_note(nominal)
