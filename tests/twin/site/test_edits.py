"""What-if edits on the demo site: each op applied (hand-checked), each rejection naming index and field.

Demo site: one hall H1 of two rows (R01 at y = 1.0 m, R02 at y = 4.2 m) of 8 racks from
x = 1.0 m at 0.6 m pitch, 64 H100 per rack, an in-rack CDU per rack, busways
H1-BW-R0{1,2}-{A,B}, one loop FW-H1 and plant PLANT-1 (2 chillers), sources GRID, GEN-01,
GEN-02 and BESS; hall bounds by default 0.0–6.2 m × 0.0–5.2 m.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import REPO_DIR
from twin.scenario.conditions import ScenarioError, parse_scenario_doc
from twin.scenario.load import load_scenario, parse_scenario
from twin.scenario.writer import export_scenario_toml
from twin.site.edit_schema import FailEdit
from twin.site.edits import EditError, parse_edit, upgrade_edit
from twin.site.load import load_site

DEMO = load_site("demo")
HEAD = '[scenario]\nname = "t"\n'


def run(edits: str, head: str = HEAD):
    return parse_scenario(head + edits, DEMO, "t.toml")


def edited(edits: str, head: str = HEAD):
    sc = run(edits, head)
    assert sc.state is not None, "a layout edit builds an edited site"
    return sc.state


def rack(state, name: str) -> int:
    return state.rack_name.index(name)


def test_move_rack_to_a_free_spot_changes_only_its_position():
    s = edited('[[edits]]\nop = "move_rack"\nracks = ["H1-R01-K01"]\nx_m = 5.8\ny_m = 1.0\n')
    i = rack(s, "H1-R01-K01")
    assert (s.rack_x_m[i], s.rack_y_m[i]) == (5.8, 1.0)
    assert s.n_racks == DEMO.n_racks and s.node_name == DEMO.node_name
    assert DEMO.rack_x_m[rack(DEMO, "H1-R01-K01")] == 1.0  # the baseline is never modified


def test_move_many_racks_by_a_shift():
    s = edited('[[edits]]\nop = "move_rack"\nrows = ["H1-R02"]\ndy_m = 0.5\n')
    assert np.allclose(s.rack_y_m[s.rack_row == 1], 4.7) and np.allclose(s.rack_y_m[s.rack_row == 0], 1.0)


@pytest.mark.parametrize(
    "x, message",
    [
        (1.6, r"edits\[0\]\.x_m: rack 'H1-R01-K01': position: \(1\.60 m, 1\.00 m\) overlaps rack 'H1-R01-K02'"),
        (20.0, r"edits\[0\]\.x_m: rack 'H1-R01-K01': position: \(20\.00 m, 1\.00 m\) is outside hall H1"),
    ],
)
def test_move_rack_onto_another_or_out_of_the_hall_is_refused(x, message):
    with pytest.raises(EditError, match=message):
        run(f'[[edits]]\nop = "move_rack"\nracks = ["H1-R01-K01"]\nx_m = {x}\ny_m = 1.0\n')


ADD_K09 = (
    '[[edits]]\nop = "add_rack"\nname = "H1-R02-K09"\nhall = "H1"\nrow = "R02"\nx_m = 5.8\ny_m = 4.2\n'
    'type = "demo-dlc-h100"\nfeed_a = "H1-BW-R02-A"\nfeed_b = "H1-BW-R02-B"\n'
)


def test_add_rack_gets_the_next_number_its_cdu_and_hostnames():
    s = edited('[[edits]]\nop = "remove_rack"\nracks = ["H1-R02-K01"]\n' + ADD_K09)
    assert s.n_racks == 16 and s.n_gpus == 16 * 64
    assert s.rack_name[-1] == "H1-R02-K09" and "H1-R02-K09-CDU" in s.cdu_name
    assert "h1-r02-k09-n0" in s.node_name and s.power_name[s.rack_feed_b[-1]] == "H1-BW-R02-B"


def test_a_ninth_rack_in_a_full_array_exceeds_the_leaf_ports():
    # an array of 8 racks × 64 NICs fills the 64 downlinks of each rail's leaf: a 9th rack needs 72
    with pytest.raises(
        EditError,
        match=r"edits\[0\]\.name: fabric leaf 'leaf-p00-a001-r0': needs 72 NIC ports but "
        r"has 64 downlinks",
    ):
        run(ADD_K09)
    s = edited(ADD_K09, HEAD + 'design_limits = "warn"\n')
    assert {f.element for f in s.design_findings if f.check == "fabric_ports"} == {
        f"leaf-p00-a001-r{k}" for k in range(8)
    }


@pytest.mark.parametrize(
    "fields, message",
    [
        ('name = "H1-R01-K01"', r"edits\[0\]\.name: a rack 'H1-R01-K01' exists already"),
        ('name = "X"\nrow = "R09"', r"edits\[0\]\.row: no row 'R09' in hall 'H1'"),
        ('name = "X"\nfeed_a = "H1-BW-R01-B"', r"edits\[0\]\.feed_a: 'H1-BW-R01-B' is on side B, not A"),
        ('name = "X"\nfeed_a = "BW-9"', r"edits\[0\]\.feed_a: 'BW-9' is not a busway/PDU of this site"),
        ('name = "X"\ntype = "dgx-b300"', r"edits\[0\]\.type: unknown rack type 'dgx-b300'"),
    ],
)
def test_add_rack_rejections_name_the_field(fields, message):
    base = {
        "name": '"X"',
        "hall": '"H1"',
        "row": '"R02"',
        "x_m": "5.8",
        "y_m": "4.2",
        "type": '"demo-dlc-h100"',
        "feed_a": '"H1-BW-R02-A"',
        "feed_b": '"H1-BW-R02-B"',
    }
    for line in fields.splitlines():
        key, _, value = line.partition(" = ")
        base[key] = value
    text = '[[edits]]\nop = "add_rack"\n' + "".join(f"{k} = {v}\n" for k, v in base.items())
    with pytest.raises(EditError, match=message):
        run(text)


def test_remove_rack_keeps_the_other_hostnames():
    s = edited('[[edits]]\nop = "remove_rack"\nracks = ["H1-R02-K01"]\n')
    assert s.n_racks == 15 and "H1-R02-K01" not in s.rack_name and "H1-R02-K01-CDU" not in s.cdu_name
    assert s.node_name[s.node_rack.tolist().index(rack(s, "H1-R02-K02"))] == "h1-r02-k02-n0"


def test_set_rack_type_to_an_in_row_type_gets_an_in_row_cdu():
    s = edited('[[edits]]\nop = "set_rack_type"\nracks = ["H1-R01-K0[1-2]"]\ntype = "hgx-a100-inrow"\n')
    assert s.n_gpus == 1024 - 2 * 64 + 2 * 4 * 8
    assert [s.cdu_name[s.rack_cdu[rack(s, n)]] for n in ("H1-R01-K01", "H1-R01-K02")] == ["H1-R01-CDU1"] * 2
    assert s.cdu_name[s.rack_cdu[rack(s, "H1-R01-K03")]] == "H1-R01-K03-CDU"


def test_selection_that_matches_nothing_is_refused():
    with pytest.raises(EditError, match=r"t\.toml: edits\[1\]\.racks: 'H9-\*' matches no rack"):
        run('[[edits]]\nop = "remove_rack"\nhalls = ["H1"]\n[[edits]]\nop = "remove_rack"\nracks = ["H9-*"]\n')


def test_set_rack_feeds_and_side_check():
    s = edited('[[edits]]\nop = "set_rack_feeds"\nracks = ["H1-R01-K01"]\nfeed_a = "H1-BW-R02-A"\n')
    assert s.power_name[s.rack_feed_a[rack(s, "H1-R01-K01")]] == "H1-BW-R02-A"
    with pytest.raises(EditError, match=r"edits\[0\]\.feed_b: 'H1-BW-R02-A' is on side A, not B"):
        run('[[edits]]\nop = "set_rack_feeds"\nracks = ["H1-R01-K01"]\nfeed_b = "H1-BW-R02-A"\n')
    with pytest.raises(
        EditError,
        match=r"edits\[0\]\.feed_b: rack 'H1-R01-K01': feed_b: rack type 'demo-dlc-h100' "
        r"is dual-fed",
    ):
        run('[[edits]]\nop = "set_rack_feeds"\nracks = ["H1-R01-K01"]\nfeed_b = ""\n')


def test_set_rack_cdu_to_another_in_row_cdu():
    s = edited(
        '[[edits]]\nop = "set_rack_type"\nracks = ["H1-R0[12]-K01"]\ntype = "hgx-a100-inrow"\n'
        '[[edits]]\nop = "set_rack_cdu"\nracks = ["H1-R02-K01"]\ncdu = "H1-R01-CDU1"\n'
    )
    assert s.cdu_name[s.rack_cdu[rack(s, "H1-R02-K01")]] == "H1-R01-CDU1"
    with pytest.raises(
        EditError,
        match=r"edits\[0\]\.cdu: rack 'H1-R01-K01': cdu: rack type 'demo-dlc-h100' has "
        r"an in-rack CDU",
    ):
        run('[[edits]]\nop = "set_rack_cdu"\nracks = ["H1-R01-K01"]\ncdu = "H1-R01-K02-CDU"\n')
    with pytest.raises(EditError, match=r"edits\[0\]\.loop: 'FW-H9' is not a facility loop of this site"):
        run('[[edits]]\nop = "set_rack_cdu"\nracks = ["H1-R01-K01"]\nloop = "FW-H9"\n')


def test_set_rack_cdu_moves_an_in_rack_cdu_to_another_loop():
    colossus = load_site("colossus")
    sc = parse_scenario('[[edits]]\nop = "set_rack_cdu"\nracks = ["H1-R01-K01"]\nloop = "FW-H2"\n', colossus)
    s = sc.state
    assert s.loop_name[s.cdu_loop[s.rack_cdu[rack(s, "H1-R01-K01")]]] == "FW-H2"
    assert s.loop_name[s.cdu_loop[s.rack_cdu[rack(s, "H1-R01-K02")]]] == "FW-H1"


def test_fail_and_restore_elements_of_every_kind():
    sc = run(
        '[[edits]]\nop = "fail"\nelements = ["H1-TX1-A", "GEN-*", "leaf-p00-a000-r0/spine-p00-s00", '
        '"h1-r01-k01-n0", "H1-R02-*-CDU"]\n'
        '[[edits]]\nop = "fail"\nelements = ["H1-R01-K01-CDU"]\npumps_count = 1\n'
        '[[edits]]\nop = "fail"\nelements = ["PLANT-1"]\nchillers_count = 1\n'
        '[[edits]]\nop = "restore"\nelements = ["GEN-02"]\n'
    )
    assert sc.state is None  # no layout change: the site as given
    inp = DEMO
    assert [DEMO.power_name[i] for i in sc.inputs.failed_power] == ["H1-TX1-A"]
    assert [DEMO.source_name[i] for i in sc.inputs.failed_sources] == ["GEN-01"]
    assert len(sc.inputs.failed_links) >= 1
    assert sc.inputs.nodes_off.tolist() == [n == "h1-r01-k01-n0" for n in inp.node_name]
    pumps = sc.inputs.pumps_running_count
    assert pumps[DEMO.cdu_name.index("H1-R01-K01-CDU")] == 1 and pumps[DEMO.cdu_name.index("H1-R02-K05-CDU")] == 0
    assert pumps[DEMO.cdu_name.index("H1-R01-K02-CDU")] == 2
    assert sc.inputs.plant_chillers_running.tolist() == [1]


def test_a_failed_loop_stops_the_flow_of_its_cdus():
    sc = run('[[edits]]\nop = "fail"\nelements = ["FW-H1"]\n')
    assert (sc.inputs.pumps_running_count == 0).all()


@pytest.mark.parametrize(
    "edits, message",
    [
        ('[[edits]]\nop = "fail"\nelements = ["TX-9"]\n', r"edits\[0\]\.elements: 'TX-9' is not an element"),
        ('[[edits]]\nop = "restore"\nelements = ["GEN-01"]\n', r"edits\[0\]\.elements: 'GEN-01' is not failed"),
        ('[[edits]]\nop = "fail"\nelements = []\n', r"edits\[0\]\.elements: expected a non-empty list"),
        ('[[edits]]\nop = "explode"\n', r"edits\[0\]\.op: unknown op 'explode'"),
        ('[[edits]]\nop = "fail"\nelements = ["GEN-01"]\nhow = 1\n', r"edits\[0\]\.how: unknown field for fail"),
        ('[[edits]]\nop = "set_rack_type"\ntype = "GB200-NVL72"\n', r"edits\[0\]\.racks: set_rack_type needs one of"),
        (
            '[[edits]]\nop = "move_rack"\nracks = ["H1-R01-*"]\nx_m = 5.0\ny_m = 2.0\n',
            r"edits\[0\]\.racks: a position \(x_m, y_m\) moves one rack, 8 are selected",
        ),
        (
            '[[edits]]\nop = "set_cap"\nsite = true\ngpu_power_limit_w = 150\n',
            r"edits\[0\]\.gpu_power_limit_w: 150 W is below the minimum power limit \(200 W\)",
        ),
        ('[[edits]]\nop = "set_cap"\njob = "other"\ngpu_power_limit_w = 500\n', r"edits\[0\]\.job: 'other' is not"),
        (
            '[[edits]]\nop = "set_weather"\noutdoor_dry_bulb_c = 99\n',
            r"edits\[0\]\.outdoor_dry_bulb_c: expected a number",
        ),
    ],
)
def test_bad_edits_name_index_and_field(edits, message):
    with pytest.raises(ScenarioError, match=message):
        run(edits)


def test_removing_every_rack_is_refused():
    with pytest.raises(EditError, match=r"edits\[0\]\.racks: racks: removed: a site needs at least one rack"):
        run('[[edits]]\nop = "remove_rack"\nhalls = ["H1"]\n')


def test_caps_by_rack_site_and_job_take_the_lowest():
    sc = run(
        '[[edits]]\nop = "set_cap"\nracks = ["H1-R01-*"]\ngpu_power_limit_w = 500\n'
        '[[edits]]\nop = "set_cap"\nsite = true\ngpu_power_limit_w = 600\n'
    )
    limit = sc.inputs.gpu_power_limit_w
    r01 = DEMO.gpu_rack < 8
    assert (limit[r01] == 500).all() and (limit[~r01] == 600).all()
    job = run('[[edits]]\nop = "set_cap"\njob = "demo-70b-1k"\ngpu_power_limit_w = 450\n')
    assert (job.inputs.gpu_power_limit_w == 450).sum() == 1024  # the demo job runs on every GPU


def test_setpoints_weather_and_job():
    sc = run(
        '[[edits]]\nop = "set_setpoint"\nplants = ["PLANT-1"]\nsupply_setpoint_c = 30.0\n'
        '[[edits]]\nop = "set_setpoint"\nloops = ["FW-H1"]\nsupply_temp_c = 31.0\n'
        '[[edits]]\nop = "set_weather"\noutdoor_dry_bulb_c = 38.0\noutdoor_wet_bulb_c = 27.0\n'
        '[[edits]]\nop = "set_job"\njob = ""\ngpu_util_frac = 0.5\nidle_nodes_off = true\n'
    )
    assert sc.state.plant_supply_setpoint_c.tolist() == [30.0] and DEMO.plant_supply_setpoint_c.tolist() == [25.0]
    assert sc.inputs.loop_supply_temp_c.tolist() == [31.0]
    assert (sc.inputs.outdoor_dry_bulb_c, sc.inputs.outdoor_wet_bulb_c) == (38.0, 27.0)
    assert (sc.job, sc.inputs.gpu_util_frac, sc.idle_nodes_off) == ("", 0.5, True)


def test_a_cdu_setpoint_warms_its_racks_only():
    from twin.scenario.projection import run_scenario

    sc = run('[[edits]]\nop = "set_setpoint"\ncdus = ["H1-R01-K01-CDU"]\nsupply_setpoint_c = 40.0\n')
    cdu = DEMO.cdu_name.index("H1-R01-K01-CDU")
    assert sc.inputs.cdu_supply_setpoint_c[cdu] == 40.0 and np.isnan(sc.inputs.cdu_supply_setpoint_c).sum() == 15
    snap, _, _ = run_scenario(DEMO, sc)
    assert snap.coolant_supply_temp_c[cdu] == pytest.approx(40.0)
    assert snap.coolant_supply_temp_c[cdu + 1] < 35.0
    assert snap.rack_max_gpu_temp_c[0] > snap.rack_max_gpu_temp_c[1] + 5.0


@pytest.mark.parametrize(
    "fields, message",
    [
        (
            'loops = ["FW-H1"]\nsupply_setpoint_c = 30.0',
            r"edits\[0\]\.supply_setpoint_c: supply_setpoint_c goes with plants or cdus; loops take supply_temp_c",
        ),
        (
            'plants = ["PLANT-1"]\nsupply_temp_c = 30.0',
            r"edits\[0\]\.supply_temp_c: supply_temp_c goes with loops; plants take supply_setpoint_c",
        ),
        ('cdus = ["H1-R01-K01-CDU"]', r"edits\[0\]\.supply_setpoint_c: cdus need supply_setpoint_c"),
        ('loops = ["FW-H1"]', r"edits\[0\]\.supply_temp_c: loops need supply_temp_c"),
        (
            'plants = ["PLANT-1"]\nloops = ["FW-H1"]\nsupply_setpoint_c = 30.0',
            r"edits\[0\]\.loops: give one of plants, cdus, loops, not plants and loops",
        ),
        ("supply_setpoint_c = 30.0", r"edits\[0\]\.plants: set_setpoint needs one of plants, cdus, loops"),
        (
            'cdus = ["H1-R01-K01-CDU"]\nsupply_setpoint_c = 65.0',
            r"edits\[0\]\.supply_setpoint_c: expected a number in \[2, 60\], got 65\.0",
        ),
    ],
)
def test_each_setpoint_target_takes_its_one_value_field(fields, message):
    with pytest.raises(EditError, match=message):
        run(f'[[edits]]\nop = "set_setpoint"\n{fields}\n')


def test_a_cdu_setpoint_of_the_old_spelling_reads_as_supply_setpoint_c():
    """Files written when a CDU's setpoint was ``supply_temp_c`` keep working; export writes the new spelling."""
    old = HEAD + '[[edits]]\nop = "set_setpoint"\ncdus = ["H1-R01-K01-CDU"]\nsupply_temp_c = 40.0\n'
    doc = parse_scenario_doc(old, "old.toml")
    assert doc.edits[0].as_dict() == {"op": "set_setpoint", "cdus": ["H1-R01-K01-CDU"], "supply_setpoint_c": 40.0}
    assert "supply_setpoint_c = 40.0" in export_scenario_toml(doc) and "supply_temp_c" not in export_scenario_toml(doc)
    assert run(old[len(HEAD) :]).inputs.cdu_supply_setpoint_c[0] == 40.0
    # edits made now (the editor, the API) take the current spelling only, with a message saying which
    raw = {"op": "set_setpoint", "cdus": ["H1-R01-K01-CDU"], "supply_temp_c": 40.0}
    with pytest.raises(EditError, match=r"edits\[0\]\.supply_temp_c: supply_temp_c goes with loops"):
        parse_edit(raw, 0)
    assert upgrade_edit(raw) is not raw and raw["supply_temp_c"] == 40.0  # the caller's table is not changed
    # a loop's supply_temp_c is the current spelling: nothing to upgrade
    loop = {"op": "set_setpoint", "loops": ["FW-H1"], "supply_temp_c": 31.0}
    assert upgrade_edit(loop) == loop
    both = {**raw, "supply_setpoint_c": 41.0}  # old and new at once: refused, not guessed
    with pytest.raises(EditError, match=r"edits\[0\]\.supply_temp_c: supply_temp_c goes with loops"):
        parse_edit(both, 0, upgrade=True)


def test_a_setpoint_that_overloads_the_cdus_is_refused_when_strict_and_reported_when_warn():
    # 45 °C facility + 4 K approach = 49 °C: the in-rack CDU curve ends at 35 kW (45 °C), below the 60 kW racks
    edit = '[[edits]]\nop = "set_setpoint"\nplants = ["PLANT-1"]\nsupply_setpoint_c = 45.0\n'
    with pytest.raises(
        EditError,
        match=r"edits\[0\]\.supply_setpoint_c: cdu 'H1-R01-K01-CDU': overloaded by design: "
        r"60 kW of racks at full power vs 35 kW capacity at 49\.0 °C",
    ):
        run(edit)
    s = edited(edit, HEAD + 'design_limits = "warn"\n')
    cdu = [f for f in s.design_findings if f.check == "cdu_capacity"]
    assert len(cdu) == 16 and {f.severity for f in cdu} == {"warning"}
    assert cdu[0].load_kw == pytest.approx(8 * (8 * 700 + 1900) / 1000) and cdu[0].limit_kw == pytest.approx(35.0)


@pytest.mark.slow
def test_old_scenario_files_still_parse_and_the_shipped_whatifs_too():
    paths = sorted((REPO_DIR / "data" / "scenarios").glob("*.toml"))
    assert len(paths) >= 3
    for path in paths + sorted((REPO_DIR / "data" / "whatif").glob("*.toml")):
        site = parse_scenario_doc(path.read_text(), path.name).site
        site = site or ("colossus" if path.name.startswith("colossus") else "demo")
        sc = load_scenario(path, load_site(site))
        assert sc.name


def test_toml_round_trip_is_stable_and_readable():
    text = (
        HEAD + 'description = "all ops"\ntime = 2024-07-22T20:00:00Z\nsettle_s = 300\ndesign_limits = "warn"\n'
        "[conditions]\ngpu_util_frac = 0.9\nloop_supply_temp_c = { FW-H1 = 30.0 }\n"
        '[[edits]]\nop = "move_rack"\nnote = "make room"\nracks = ["H1-R01-K01"]\nx_m = 5.8\ny_m = 1.0\n'
        '[[edits]]\ntype = "hgx-a100-inrow"\nop = "set_rack_type"\nracks = ["H1-R02-K0*"]\n'
        '[[edits]]\nop = "fail"\nelements = ["H1-TX1-A"]\n'
        '[[edits]]\nop = "set_cap"\nsite = true\ngpu_power_limit_w = 600\n'
    )
    once = export_scenario_toml(parse_scenario_doc(text, "x.toml"))
    assert export_scenario_toml(parse_scenario_doc(once, "x.toml")) == once
    assert '[[edits]]\nop = "set_rack_type"\nracks = ["H1-R02-K0*"]\ntype = "hgx-a100-inrow"\n' in once
    assert parse_scenario(once, DEMO, "x.toml").state.n_racks == 16


def test_edits_never_change_the_baseline_model():
    before = DEMO.site_model.model_dump()
    edited(
        '[[edits]]\nop = "remove_rack"\nhalls = ["H1"]\n[[edits]]\nop = "add_rack"\nname = "N1"\nhall = "H1"\n'
        'row = "R01"\nx_m = 3.0\ny_m = 1.0\ntype = "demo-dlc-h100"\nfeed_a = "H1-BW-R01-A"\nfeed_b = "H1-BW-R01-B"\n'
    )
    assert DEMO.site_model.model_dump() == before and DEMO.n_racks == 16


def test_site_files_take_per_rack_entries(tmp_path: Path):
    text = (REPO_DIR / "data" / "sites" / "demo.toml").read_text()
    text += (
        '\n[[racks]]\nname = "H1-R01-K08"\nremoved = true\n'
        '[[racks]]\nname = "H1-R01-K01"\nrack_type = "hgx-a100-inrow"\n'
    )
    path = tmp_path / "demo-entries.toml"
    path.write_text(text)
    s = load_site(path)
    assert s.n_racks == 15 and s.cdu_name[s.rack_cdu[0]] == "H1-R01-CDU1"


@settings(max_examples=200, deadline=None)
@given(
    name=st.text(min_size=1, max_size=30),
    note=st.text(max_size=30),
    globs=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=3),
)
@pytest.mark.slow
def test_any_text_survives_the_toml_round_trip(name, note, globs):
    doc = parse_scenario_doc(HEAD, "x.toml")
    doc.name = name
    doc.edits = [FailEdit(note=note, elements=globs)]
    text = export_scenario_toml(doc)
    again = parse_scenario_doc(text, "x.toml")
    assert (again.name, again.edits) == (name, doc.edits) and export_scenario_toml(again) == text


def test_a_scenario_written_for_another_site_is_refused_in_one_line():
    text = '[scenario]\nname = "x"\nsite = "colossus"\n'
    with pytest.raises(ScenarioError, match=r"^x.toml: scenario.site: written for site 'colossus', not 'demo'$"):
        parse_scenario(text, load_site("demo"), "x.toml")
    assert 'site = "colossus"' in export_scenario_toml(parse_scenario_doc(text, "x.toml"))
