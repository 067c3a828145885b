"""HTML rack views and value colouring: elevation order, grid cells, legends with units."""

from __future__ import annotations

import math

import numpy as np

from dashboard.components.rack_views import elevation_view, gpu_grid_view
from dashboard.present.colour_scale import NO_DATA_COLOUR, text_colour, value_colours


def test_value_colours_clip_and_grey_out_unknown():
    colours = value_colours([0.0, 50.0, 200.0, math.nan, None], "Viridis", 0.0, 100.0)
    assert colours[0] == "rgb(68, 1, 84)" and colours[2] == "rgb(253, 231, 37)"
    assert colours[3] == colours[4] == NO_DATA_COLOUR
    assert text_colour("rgb(253, 231, 37)") == "#000000" and text_colour("rgb(68, 1, 84)") == "#ffffff"
    assert text_colour("#ffffff") == "#000000"


def test_elevation_top_slot_first_cdu_last_and_issues_flagged():
    rows = [
        {
            "name": f"n{s}",
            "slot": s,
            "max_gpu_temp_c": 60.0 + s,
            "gpu_power_kw": 5.0,
            "gpus_throttled": 0,
            "gpus_down": int(s == 1),
        }
        for s in (2, 0, 1)
    ]
    units = elevation_view(rows, "CDU-1", (25.0, 87.0)).children[1].children
    assert [u.children[0].children for u in units] == ["slot 2", "slot 1", "slot 0", "CDU"]
    assert units[1].className == "rack-unit has-issue" and "1 down" in units[1].children[2].children
    assert len(elevation_view(rows, None, (25.0, 87.0)).children[1].children) == 3


def test_gpu_grid_cells_values_notes_and_unit():
    grid = np.array([[50.0, 60.0], [np.nan, 70.0]])
    notes = np.array([["", "XID 79"], ["", ""]])
    view = gpu_grid_view(grid, ["a", "b"], "GPU temperature", "°C", (25, 87), annotations=notes)
    assert view.children[0].children == "GPU temperature [°C]"
    rows = view.children[1].children[1].children
    assert rows[0].children[2].children[0] == "60" and rows[0].children[2].className == "num flagged"
    assert rows[1].children[1].children == [""] and rows[1].children[1].style["background"] == NO_DATA_COLOUR
    assert view.children[3].children[2].children == "87 °C"
