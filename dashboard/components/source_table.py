"""The power page's sources: one row per generation source (grid, turbines, engines, batteries) with its state.

A link to a source (an alert about a generator, ``/power?source=GEN-A-01``) lands on its row,
marked and at the top of the table after the lost sources; then by kind and name.
"""

from __future__ import annotations

import numpy as np
from dash import html

from dashboard.analysis.equipment import power_status
from dashboard.present.data_table import Column, data_table
from twin.engine.snapshot import Snapshot
from twin.site.tables import SOURCE_KINDS, SiteTables

SOURCE_COLUMNS = (
    Column("source", "source", href="/power?source={}"),
    Column("kind", "kind"),
    Column("state", "state"),
    Column("output_mw", "output (MW)", "{:,.2f}"),
    Column("capacity_mw", "capacity (MW)", "{:,.2f}"),
    Column("load_pct", "load (%)", "{:.0f}"),
    Column("soc_pct", "charge (%)", "{:.0f}"),
)
FOCUS_CLASS = "row-focus"


def source_rows(state: SiteTables, snap: Snapshot, detail=None, focus: str | None = None) -> list[dict]:
    """Per source: kind, live or lost, output and capacity [MW], load [%], a battery's charge [%]."""
    live = power_status(state, snap, detail).source_live
    output = np.asarray(snap.source_power_mw, dtype=np.float64)
    soc = np.asarray(snap.battery_soc_frac, dtype=np.float64)
    rows = []
    for i, name in enumerate(state.source_name):
        kind = SOURCE_KINDS[int(state.source_kind[i])]
        cap = float(state.source_capacity_mw[i])
        out = float(output[i]) if np.isfinite(output[i]) else None
        row = {
            "source": name,
            "kind": kind,
            "state": "live" if live[i] else "lost",
            "output_mw": out,
            "capacity_mw": cap,
            "load_pct": 100.0 * out / cap if out is not None and cap > 0 else None,
            "soc_pct": 100.0 * float(soc[i]) if kind == "battery" and np.isfinite(soc[i]) else None,
        }
        classes = ([] if live[i] else ["row-critical"]) + ([FOCUS_CLASS] if name == focus else [])
        row["row_class"] = " ".join(classes) or None
        rows.append(row)
    rows.sort(key=lambda r: (r["state"] == "live", r["source"] != focus, r["kind"], r["source"]))
    return rows


def source_table(state: SiteTables, snap: Snapshot, detail=None, focus: str | None = None) -> html.Div:
    """The sources as a table: lost ones first, then the focused one (marked), then by kind and name."""
    return data_table(source_rows(state, snap, detail, focus), SOURCE_COLUMNS, "no generation sources")
