"""Converting Colossus hall H4 to GB200 NVL72, the comparison, blast radius and the CLI JSON.

Hand figures.  A GB200-NVL72 rack at full power: 18 trays × (4 × 1,200 W + 2,300 W) =
127.8 kW (an H100 rack: 8 × (8 × 700 + 1,900) W = 60 kW).  H4 has 24 rows of 16 racks and
one of 8 (392 racks); rows R01–R05 hang off H4-UPS1 and H4-TX1 per side.

* busway of a 16-rack row, per side: 16 × 127.8 / 2 = 1,022.4 kW ≤ 1,092.6 kW usable
  (√3 × 415 V × 2,000 A × 0.95 × 0.8): no finding;
* UPS: 5 busways × 1,022.4 / 0.995 = 5,137.7 kW > 5,000 kW (H4-UPS1…4, both sides);
* transformer: 5,137.7 / 0.97 = 5,296.6 kW > 5,700 × 0.9 = 5,130 kW (H4-TX1…4);
  H4-TX5 carries 72 racks: 4,768 kW, inside;
* in-row CDU: 8 racks × 127.8 = 1,022.4 kW ≤ 1,342.9 kW at 29 °C (25 °C + 4 K);
* loop FW-H4: 392 × 127.8 = 50,097.6 kW > 30,000 kW; plant: 3 × 392 × 60 + 50,097.6 =
  120,657.6 kW > 32 × 3,500 = 112,000 kW;
* fabric: an array of 8 racks × 72 NICs over 8 rails = 72 NICs per leaf > 64 downlinks.
"""

from __future__ import annotations

import json
import math

import pytest

from twin.cli import main
from twin.scenario.compare import blast_radius, compare
from twin.scenario.load import parse_scenario
from twin.site.edits import EditError
from twin.site.load import load_site

H4 = '[[edits]]\nop = "set_rack_type"\nracks = ["H4-*"]\ntype = "GB200-NVL72"\n'
WARN = '[scenario]\nname = "H4 to GB200"\ndesign_limits = "warn"\n'


@pytest.fixture(scope="module")
def colossus():
    return load_site("colossus")


@pytest.fixture(scope="module")
def converted(colossus):
    return parse_scenario(WARN + H4, colossus, "h4.toml")


def findings(state, check):
    return {f.element: f for f in state.design_findings if f.check == check}


def test_gb200_rack_is_72_gpus_at_127_8_kw(converted):
    s = converted.state
    h4 = s.rack_hall == s.hall_name.index("H4")
    assert s.n_gpus == 1176 * 64 + 392 * 72
    assert s.rack_full_kw[h4] == pytest.approx(127.8) and s.rack_full_kw[~h4] == pytest.approx(60.0)
    assert len(s.cdu_name) == 1176 + 24 * 2 + 1  # in-rack CDUs of H1–H3, in-row CDUs of 8 racks in H4


def test_h4_conversion_reports_the_broken_ratings(converted):
    s = converted.state
    ups, tx = findings(s, "ups_rating"), findings(s, "transformer_rating")
    assert set(ups) == {f"H4-UPS{k}-{side}" for k in range(1, 5) for side in "AB"}
    assert ups["H4-UPS1-A"].load_kw == pytest.approx(5 * 16 * 127.8 / 2 / 0.995) and ups["H4-UPS1-A"].limit_kw == 5000
    assert set(tx) == {f"H4-TX{k}-{side}" for k in range(1, 5) for side in "AB"}
    assert tx["H4-TX1-B"].load_kw == pytest.approx(5 * 16 * 127.8 / 2 / 0.995 / 0.97)
    assert tx["H4-TX1-B"].limit_kw == pytest.approx(5130.0)
    assert findings(s, "busway_rating") == {} and findings(s, "cdu_capacity") == {}
    loop, plant = findings(s, "loop_capacity"), findings(s, "plant_capacity")
    assert loop["FW-H4"].load_kw == pytest.approx(392 * 127.8) and loop["FW-H4"].limit_kw == 30000
    assert plant["PLANT-1"].load_kw == pytest.approx(3 * 392 * 60 + 392 * 127.8)
    ports = findings(s, "fabric_ports")
    assert len(ports) == 49 * 8 and {(f.ports_needed_count, f.ports_available_count) for f in ports.values()} == {
        (72, 64)
    }
    gen = findings(s, "generation")["colossus"]
    assert gen.load_kw == pytest.approx(1176 * 60 + 392 * 127.8 + 1500) and gen.limit_kw == 43000
    assert {f.severity for f in s.design_findings} == {"warning"}


def test_h4_conversion_is_refused_when_strict(colossus):
    with pytest.raises(
        EditError,
        match=r"h4\.toml: edits\[0\]\.type: transformer 'H4-TX1-A': overloaded by design: "
        r"5297 kW of racks at full power vs 5130 kW usable",
    ):
        parse_scenario(H4, colossus, "h4.toml")


@pytest.mark.slow
def test_comparison_shows_what_got_worse():
    """On the May 2025 supply (150 MW grid + Megapacks) the GB200 racks run at full power.

    Without a placed job every GPU works (with the site's job the racks outside it would
    have no work).  On the summer-2024 supply of ``colossus`` the shortfall policy limits
    the site, so the conversion moves the same generation-limited heat around instead.
    """
    site = load_site("colossus-2025")
    out = compare(site, parse_scenario(WARN + '[conditions]\njob = ""\n' + H4, site, "h4.toml"))
    assert set(out.as_dict()) == {"baseline", "scenario", "diff"}
    head = out.diff.headline
    assert head["gpus.n_gpus"].delta == 392 * 8
    assert head["cooling.loop_max_load_frac"].change == "worse"
    assert head["fabric.leaf_ports_over_count"].as_dict() == {
        "baseline": 0,
        "scenario": 392 * 8,
        "delta": 3136.0,
        "change": "worse",
    }
    new = out.diff.design_findings.new
    assert {"ups_rating", "transformer_rating", "loop_capacity", "plant_capacity", "fabric_ports", "n1_rating"} <= {
        f.check for f in new
    }
    retyped = [r for r in out.diff.racks if "type" in r.layout]
    assert len(retyped) == 392 and all(r.rack.startswith("H4-") for r in retyped)
    assert [r for r in out.diff.loops if r.name == "FW-H4"][0].change == "worse"


@pytest.mark.slow
def test_the_fleet_fills_the_gpus_outside_the_job_so_a_converted_row_runs_work():
    """With the site's 24k-GPU job, H4-R01 lies outside it: idle, its GB200 racks lose no N-1.  With
    the fleet's other work on the rest of the site (``fleet_util_frac``, the browser what-if's
    default) the row runs at ~92 % of its busways' rating per side, so the loss of one side
    overloads the row's busways, H4-TX1 and H4-UPS1 (both sides): six N-1 losses, on the scenario side only."""
    site = load_site("colossus-2025")
    row = WARN + '[[edits]]\nop = "set_rack_type"\nracks = ["H4-R01-*"]\ntype = "GB200-NVL72"\n'
    idle = compare(site, parse_scenario(row, site, "row.toml"))
    assert idle.baseline.n_n1_violations == idle.scenario.n_n1_violations == 0
    busy = compare(site, parse_scenario(row + "[conditions]\nfleet_util_frac = 0.9\n", site, "row.toml"))
    assert busy.baseline.n_n1_violations == 0
    assert busy.scenario.it_power_mw > idle.scenario.it_power_mw + 40  # ~76k GPUs more at work
    violated = {v.element for v in busy.scenario.n1_violations}
    assert len(violated) == 6 and all(e.startswith("H4-") for e in violated), violated


def test_blast_radius_of_a_transformer_is_the_racks_it_feeds(colossus):
    out = blast_radius(colossus, "H1-TX1-A")
    expected = sorted(
        n for n in colossus.rack_name if n.startswith(("H1-R01-", "H1-R02-", "H1-R03-", "H1-R04-", "H1-R05-"))
    )
    assert sorted(out.racks_fed) == expected and out.n_racks_fed == 80 and out.n_gpus_fed == 80 * 64
    assert out.kind == "transformer" and out.n_racks_dark == 0  # the B side carries every rack
    assert 0.0 <= out.it_power_lost_mw < 0.01  # nothing stops (it read −0.03 MW: the B feeds' extra losses)


def test_blast_radius_of_a_single_fed_path_goes_dark(colossus):
    out = blast_radius(colossus, "H1-R01-K01")
    assert out.racks_dark == ["H1-R01-K01"] and out.n_gpus_down + out.n_gpus_off == 64
    assert out.it_power_lost_mw > 0.0  # the dark rack's draw


def test_blast_radius_of_an_unknown_element_is_one_line(capsys):
    assert main(["blast-radius", "--site", "demo", "TX-9"]) == 2
    assert "'TX-9' is not an element of site 'demo'" in capsys.readouterr().err


def _strict(text: str):
    return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


def test_project_cli_prints_baseline_scenario_and_diff(tmp_path, capsys):
    path = tmp_path / "gb200.toml"
    path.write_text(
        '[scenario]\nname = "row to GB200"\ndesign_limits = "warn"\n'
        '[[edits]]\nop = "set_rack_type"\nrows = ["H1-R01"]\ntype = "GB200-NVL72"\n'
        '[[edits]]\nop = "fail"\nelements = ["H1-TX1-A"]\n'
    )
    assert main(["project", "--site", "demo", "--scenario", str(path), "--json"]) == 0
    out = _strict(capsys.readouterr().out)
    assert set(out) == {"baseline", "scenario", "diff"}
    assert out["baseline"]["gpus"]["n_gpus"] == 1024 and out["scenario"]["gpus"]["n_gpus"] == 1024 - 8 * 64 + 8 * 72
    assert {"headline", "time_to_throttle_s", "racks", "power_elements", "cdus", "loops", "design_findings"} <= set(
        out["diff"]
    )
    for side in ("baseline", "scenario"):
        for key in (
            "it_power_mw",
            "n1_violations",
            "hottest_gpus",
            "time_to_throttle_s",
            "swing",
            "fabric",
            "job",
            "cooling",
            "design_findings",
        ):
            assert key in out[side], (side, key)


def test_blast_radius_cli_json_is_strict(capsys):
    assert main(["blast-radius", "--site", "demo", "H1-BW-R01-A", "--json"]) == 0
    out = _strict(capsys.readouterr().out)
    assert out["n_racks_fed"] == 8 and out["racks_fed"][0] == "H1-R01-K01"
    assert all(math.isfinite(j["lost_tokens_per_s"]) for j in out["jobs"])


def test_text_outputs_show_the_comparison_and_the_blast_radius(tmp_path, capsys):
    path = tmp_path / "trip.toml"
    path.write_text('[[edits]]\nop = "fail"\nelements = ["H1-R01-K0[1-2]-CDU"]\n')
    assert main(["project", "--site", "demo", "--scenario", str(path)]) == 0
    text = capsys.readouterr().out
    assert "gpus.n_gpus_down" in text and "worse" in text and "time_to_throttle_s.cdu_loss_throttle_s" in text
    assert main(["blast-radius", "--site", "demo", "H1-R01-K01"]) == 0
    assert "H1-R01-K01 (rack) on demo: feeds or cools 1 racks (64 GPUs)" in capsys.readouterr().out
