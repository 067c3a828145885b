"""Floor-plan figure: racks drawn at their positions, one value per rack, patches carry only colours."""

from __future__ import annotations

import json

import numpy as np
import plotly

from dashboard.figures.floor import _axis_cells, floor_figure, floor_patch, hall_grids, hall_z, selection_patch
from dashboard.aggregates import metric_range, rack_metrics


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
    fig = floor_figure(demo_state, hall_grids(demo_state), metrics, "rack_power_kw", metric_range(demo_state, "rack_power_kw"), 3)
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == len(demo_state.hall_name)
    assert fig.layout.coloraxis.colorbar.title.text.endswith("[kW]")
    assert fig.layout.xaxis.title.text == "x [m]" and fig.layout.yaxis.title.text == "y [m]"
    assert fig.layout.uirevision == "floor"
    selection = fig.data[-1]
    assert len(selection.x) == 1 and abs(selection.x[0] - demo_state.rack_x_m[3]) < 0.31


def test_colossus_patch_sends_one_value_per_rack_and_stays_small(colossus_state, colossus_snapshot):
    grids = hall_grids(colossus_state)
    metrics = rack_metrics(colossus_state, colossus_snapshot)
    patch = floor_patch(grids, metrics, "max_gpu_temp_c").to_plotly_json()
    z_values = [v for op in patch["operations"] if op["location"][-1] == "z" for row in op["params"]["value"] for v in row if v is not None]
    assert len(z_values) == colossus_state.n_racks
    assert len(json.dumps(patch, cls=plotly.utils.PlotlyJSONEncoder)) < 300_000


def test_selection_patch_hides_the_outline_without_a_rack(demo_state):
    ops = selection_patch(hall_grids(demo_state), None).to_plotly_json()["operations"]
    assert {tuple(op["location"][-1:]): op["params"]["value"] for op in ops}[("x",)] == []
