"""``grid_table``: rows as a DataTable sorted and paged in the browser, numbers formatted as the columns say."""

from __future__ import annotations

import json
import math

import plotly
import pytest

from dashboard.present.data_table import Column, grid_table

COLUMNS = (Column("team", "team"), Column("n_gpus", "GPUs", "{:,}"), Column("wait_min", "wait (min)", "{:,.1f}"))


def test_rows_become_one_datatable_with_number_formats_and_no_nan():
    rows = [
        {"team": f"team{i}", "n_gpus": 1024 * i, "wait_min": math.nan if i == 2 else i / 3, "extra": 1}
        for i in range(40)
    ]
    table = grid_table(rows, COLUMNS, table_id="t")
    props = table.to_plotly_json()["props"]
    assert props["id"] == "t" and props["page_action"] == "native" and props["sort_action"] == "native"
    assert [c["id"] for c in props["columns"]] == ["team", "n_gpus", "wait_min"]
    assert props["columns"][0].get("type") is None and props["columns"][1]["type"] == "numeric"
    gpus, wait = (props["columns"][i]["format"] for i in (1, 2))
    assert gpus.to_plotly_json()["specifier"] == ",.0f" and wait.to_plotly_json()["specifier"] == ",.1f"
    assert props["data"][2] == {"team": "team2", "n_gpus": 2048, "wait_min": None}  # only the columns; NaN empty
    assert "NaN" not in json.dumps(table, cls=plotly.utils.PlotlyJSONEncoder)
    assert {"if": {"column_id": "n_gpus"}, "textAlign": "right"} in props["style_cell_conditional"]


def test_a_short_table_is_not_paged_and_an_empty_one_says_so():
    short = grid_table([{"team": "a", "n_gpus": 8, "wait_min": 0.5}], COLUMNS)
    assert short.to_plotly_json()["props"]["page_action"] == "none"
    empty = grid_table([], COLUMNS, "no teams", table_id="t")
    assert empty.children == "no teams" and empty.id == "t"


def test_a_column_format_without_a_datatable_equivalent_is_refused():
    with pytest.raises(ValueError, match=r"no DataTable format for '\{:.3e\}' \(column 'x'\)"):
        grid_table([{"x": 1.0}], (Column("x", "x", "{:.3e}"),))
