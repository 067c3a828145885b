"""Floor-plan figure: racks drawn at their positions, one value per rack, patches carry only colours."""

from __future__ import annotations

import json

import numpy as np
import plotly
import pytest

from dashboard.analysis.aggregates import metric_range, rack_metrics
from dashboard.figures.floor import _axis_cells, floor_figure, floor_patch, hall_grids, hall_z, selection_patch


def test_axis_cells_touching_footprints_and_a_gap():
    edges, cell_of = _axis_cells(np.array([1.0, 1.6, 2.2, 5.0]), 0.6)
    # three touching racks, a gap cell from 2.5 to 4.7, then the fourth rack
    np.testing.assert_allclose(edges, [0.7, 1.3, 1.9, 2.5, 4.7, 5.3])
    assert cell_of.tolist() == [0, 1, 2, 4]


def test_every_rack_has_exactly_one_cell_at_its_position(demo_state):
    grids = hall_grids(demo_state)
    assert len(grids) == len(demo_state.hall_name)
    drawn = np.concatenate([g.cell_rack[g.cell_rack >= 0] for g in grids])
    assert sorted(drawn.tolist()) == list(range(demo_state.n_racks))
    grid = grids[0]
    for rack in range(demo_state.n_racks):
        ix, iy = grid.rack_cell_ix[rack], grid.rack_cell_iy[rack]
        assert grid.x_edges_m[ix] < demo_state.rack_x_m[rack] < grid.x_edges_m[ix + 1]
        assert grid.y_edges_m[iy] < demo_state.rack_y_m[rack] < grid.y_edges_m[iy + 1]


def test_hall_z_places_values_and_leaves_aisles_empty(demo_state):
    grid = hall_grids(demo_state)[0]
    values = np.arange(demo_state.n_racks, dtype=float) + 0.04
    z = hall_z(grid, values, 1)
    for rack in (0, 7, 15):
        assert z[grid.rack_cell_iy[rack]][grid.rack_cell_ix[rack]] == round(rack + 0.04, 1)
    empty_rows = [row for iy, row in enumerate(z) if iy not in set(grid.rack_cell_iy.tolist())]
    assert empty_rows and all(v is None for row in empty_rows for v in row)


def test_floor_figure_one_trace_per_hall_shared_colour_axis_and_units(demo_state, demo_snapshot):
    metrics = rack_metrics(demo_state, demo_snapshot)
    fig = floor_figure(
        demo_state, hall_grids(demo_state), metrics, "rack_power_kw", metric_range(demo_state, "rack_power_kw"), 3
    )
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == len(demo_state.hall_name)
    assert fig.layout.coloraxis.colorbar.title.text.endswith("[kW]")
    assert fig.layout.xaxis.title.text.startswith("x [m]") and fig.layout.yaxis.title.text.startswith("y [m]")
    assert fig.layout.uirevision == "floor"
    selection = fig.data[len(heatmaps)]
    assert selection.name == "selected rack"
    assert len(selection.x) == 5  # a closed rectangle around rack 3's cell
    assert min(selection.x) < demo_state.rack_x_m[3] < max(selection.x)
    assert min(selection.y) < demo_state.rack_y_m[3] < max(selection.y)
    assert max(selection.x) - min(selection.x) < 0.8


def test_colossus_patch_sends_one_value_per_rack_and_stays_small(colossus_state, colossus_snapshot):
    grids = hall_grids(colossus_state)
    metrics = rack_metrics(colossus_state, colossus_snapshot)
    patch = floor_patch(grids, metrics, "max_gpu_temp_c").to_plotly_json()
    z_values = [
        v
        for op in patch["operations"]
        if op["location"][-1] == "z"
        for row in op["params"]["value"]
        for v in row
        if v is not None
    ]
    assert len(z_values) == colossus_state.n_racks
    assert len(json.dumps(patch, cls=plotly.utils.PlotlyJSONEncoder)) < 300_000


def test_selection_patch_hides_the_outline_without_a_rack(demo_state):
    ops = selection_patch(hall_grids(demo_state), None).to_plotly_json()["operations"]
    assert {tuple(op["location"][-1:]): op["params"]["value"] for op in ops}[("x",)] == []


def _overlay(state, off_racks=(), critical=(), warning=()):
    from dashboard.figures.floor import FloorOverlay

    off = np.zeros(state.n_racks, dtype=bool)
    off[list(off_racks)] = True
    level = np.zeros(state.n_racks, dtype=np.int8)
    level[list(warning)] = 1
    level[list(critical)] = 2
    return FloorOverlay(off, level)


def _named(fig, name):
    return [t for t in fig.data if t.name == name]


def test_off_racks_are_hatched_grey_not_coloured_and_have_a_legend_entry(demo_state, demo_snapshot):
    from dashboard.figures.floor import OFF_LEGEND
    from dashboard.present import theme

    grids = hall_grids(demo_state)
    metrics = rack_metrics(demo_state, demo_snapshot)
    fig = floor_figure(
        demo_state,
        grids,
        metrics,
        "rack_power_kw",
        metric_range(demo_state, "rack_power_kw"),
        overlay=_overlay(demo_state, off_racks=(2, 9)),
    )
    grid = grids[0]
    z = fig.data[0].z
    assert (
        z[grid.rack_cell_iy[2]][grid.rack_cell_ix[2]] is None
        and z[grid.rack_cell_iy[3]][grid.rack_cell_ix[3]] is not None
    )
    hatch, legend = _named(fig, OFF_LEGEND)
    assert hatch.fill == "toself" and hatch.fillpattern.shape == "/" and hatch.fillcolor == theme.EQUIPMENT_OFF
    assert len(hatch.x) == 2 * 6  # two closed rectangles, None-separated
    assert not hatch.showlegend and legend.showlegend and fig.layout.showlegend
    assert "H1-R01-K03 · off" in {name for row in fig.data[0].text for name in row}


def test_alert_outlines_by_severity_inside_the_rack_cells(demo_state, demo_snapshot):
    from dashboard.present import theme

    grids = hall_grids(demo_state)
    fig = floor_figure(
        demo_state,
        grids,
        rack_metrics(demo_state, demo_snapshot),
        "max_gpu_temp_c",
        metric_range(demo_state, "max_gpu_temp_c"),
        overlay=_overlay(demo_state, critical=(0,), warning=(1, 8)),
    )
    critical = _named(fig, "critical alert")[0]
    warning = _named(fig, "warning alert")[0]
    assert critical.line.color == theme.STATUS_CRITICAL and warning.line.color == theme.STATUS_WARNING
    assert len(critical.x) == 6 and len(warning.x) == 12
    grid = grids[0]
    xs = [v for v in critical.x if v is not None]
    assert grid.x_edges_m[grid.rack_cell_ix[0]] < min(xs) < max(xs) < grid.x_edges_m[grid.rack_cell_ix[0] + 1]
    assert {t.name for t in fig.data if t.showlegend} >= {"rack with a critical alert", "rack with a warning alert"}


def test_patch_moves_overlays_with_the_data(demo_state, demo_snapshot):
    grids = hall_grids(demo_state)
    metrics = rack_metrics(demo_state, demo_snapshot)
    fig = floor_figure(demo_state, grids, metrics, "rack_power_kw", (0, 100), overlay=_overlay(demo_state))
    patch = floor_patch(
        grids, metrics, "rack_power_kw", _overlay(demo_state, off_racks=(4,), critical=(5,)), demo_state
    )
    ops = {tuple(op["location"][1:]): op["params"]["value"] for op in patch.to_plotly_json()["operations"]}
    off_index = next(i for i, t in enumerate(fig.data) if t.name == "off (powered down)")
    crit_index = next(i for i, t in enumerate(fig.data) if t.name == "critical alert")
    assert len(ops[(off_index, "x")]) == 6 and len(ops[(crit_index, "x")]) == 6
    assert len(ops[(crit_index + 1, "x")]) == 0  # no warning outline


def test_rows_labelled_racks_labelled_on_small_halls_and_maps_drawn_y_down(
    demo_state, demo_snapshot, colossus_state, colossus_snapshot
):
    from dashboard.figures import jobs
    from dashboard.figures.floor import MAP_Y_AUTORANGE

    fig = floor_figure(
        demo_state, hall_grids(demo_state), rack_metrics(demo_state, demo_snapshot), "rack_power_kw", (0, 100)
    )
    assert sorted(a.text for a in fig.layout.annotations if a.text.startswith("R")) == ["R01", "R02"]
    labels = [a.text for a in fig.layout.annotations if a.name == "rack label"]
    assert len(labels) == demo_state.n_racks and labels.count("K08") == 2  # K08 in both rows
    assert fig.layout.yaxis.autorange == MAP_Y_AUTORANGE == "reversed"
    big = floor_figure(
        colossus_state,
        hall_grids(colossus_state),
        rack_metrics(colossus_state, colossus_snapshot),
        "rack_power_kw",
        (0, 100),
    )
    assert not [a for a in big.layout.annotations if a.name == "rack label"]  # 392 racks a hall: row labels only
    n_rows = len(np.unique(colossus_state.rack_row))
    assert len([a for a in big.layout.annotations if not a.text.startswith("Hall")]) == n_rows
    assert all(getattr(big.layout, f"yaxis{'' if i == 0 else i + 1}").autorange == "reversed" for i in range(4))
    job = colossus_snapshot.jobs[0]  # the jobs page's placement map is drawn the same way up
    assert jobs.placement_figure(colossus_state, colossus_snapshot, job).layout.yaxis.autorange == MAP_Y_AUTORANGE


def test_gpu_temperature_colours_reach_the_shutdown_temperature(demo_state):
    spec = demo_state.gpu_specs[0]
    low, high = metric_range(demo_state, "max_gpu_temp_c")
    assert high == spec.shutdown_temp_c > spec.slowdown_temp_c
    # 89 °C and 92 °C now differ by a visible step of the scale
    assert (92.0 - 89.0) / (high - low) > 0.04


def test_lost_cdu_has_negative_headroom_on_the_floor(demo_state, demo_snapshot):
    from dataclasses import replace

    pumps = demo_snapshot.pumps_running_count.copy()
    cdu = int(demo_state.rack_cdu[6])
    pumps[cdu] = 0
    metrics = rack_metrics(demo_state, replace(demo_snapshot, pumps_running_count=pumps))
    assert metrics["cdu_headroom_kw"][6] == pytest.approx(-demo_snapshot.cdu_heat_kw[cdu])
    assert metrics["cdu_headroom_kw"][7] > 0


def test_off_racks_carry_no_alert_outline(demo_state, demo_snapshot):
    fig = floor_figure(
        demo_state,
        hall_grids(demo_state),
        rack_metrics(demo_state, demo_snapshot),
        "rack_power_kw",
        (0, 100),
        overlay=_overlay(demo_state, off_racks=(0, 1), critical=(0, 1, 2)),
    )
    assert len(_named(fig, "critical alert")[0].x) == 6  # rack 2 only: racks 0 and 1 are off


def test_colossus_patch_with_half_the_racks_off_and_alerts_stays_small(colossus_state, colossus_snapshot):
    from dashboard.figures.floor import FloorOverlay

    off = np.zeros(colossus_state.n_racks, dtype=bool)
    off[::2] = True
    level = np.zeros(colossus_state.n_racks, dtype=np.int8)
    level[1::4] = 2
    level[3::4] = 1
    patch = floor_patch(
        hall_grids(colossus_state),
        rack_metrics(colossus_state, colossus_snapshot),
        "max_gpu_temp_c",
        FloorOverlay(off, level),
        colossus_state,
    ).to_plotly_json()
    outlines = [
        op["params"]["value"] for op in patch["operations"] if op["location"][-1] == "x" and op["location"][1] > 4
    ]
    assert (
        sum(v is None for xs in outlines for v in xs) == colossus_state.n_racks
    )  # one rectangle per off or alerted rack
    assert len(json.dumps(patch, cls=plotly.utils.PlotlyJSONEncoder)) < 300_000
