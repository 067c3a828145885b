"""``/cdu``: one CDU — is it working, how close to its limits, what it cools, what is wrong with it.

Deep link: ``/cdu?cdu=<CDU name>`` (a CDU alert lands here).  Shows the CDU's state, its
supply/return temperatures, flow and pumps over the recorded window, heat against
capacity, the racks it cools with their temperatures and time to throttle, and the
open alerts of the CDU and of its racks.
"""

from __future__ import annotations

import math

import dash
import numpy as np
from dash import Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids
from dashboard.callbacks import inputs
from dashboard.components.kpi import kpi_card
from dashboard.figures.trends import TREND_HEIGHT_PX, trend_figure
from dashboard.present.data_table import Column, data_table
from dashboard.present.formatting import fmt
from dashboard.views.registry import callback_view, layout_screen, view_layout
from twin.engine.snapshot import GPU_DOWN, GPU_THROTTLED, Snapshot
from twin.site.tables import SiteTables

PATH = "/cdu"
dash.register_page(__name__, path=PATH, name="CDU", title="CDU · ClusterTwin", order=20)

PAGE = ids.Cdu.PAGE
HISTORY_WINDOW_S = 900.0
RACK_COLUMNS = (
    Column("rack", "rack", href="/floor?rack={}"),
    Column("max_gpu_temp_c", "hottest GPU (°C)", "{:.1f}"),
    Column("rack_power_kw", "rack power (kW)", "{:,.1f}"),
    Column("gpus_throttled", "GPUs throttled", "{:,}"),
    Column("gpus_down", "GPUs down", "{:,}"),
    Column("time_to_throttle_s", "to throttle after a pump loss (s)", "{:,.0f}"),
)
ALERT_COLUMNS = (
    Column("severity", "severity"),
    Column("entity", "entity"),
    Column("message", "alert"),
    Column("runbook", "first action"),
)


def cdu_index(state: SiteTables, name) -> int | None:
    """The CDU id of ``name`` (None when absent or unknown)."""
    if not isinstance(name, str):
        return None
    try:
        return state.cdu_name.index(name.strip())
    except ValueError:
        return None


def cdu_state(state: SiteTables, snap: Snapshot, cdu: int) -> tuple[str, str]:
    """(status class, one-line state) of the CDU from its pumps and heat against capacity."""
    installed = int(state.cdu_spec_array("pumps")[cdu])
    required = int(state.cdu_spec_array("pumps_required")[cdu])
    running = int(snap.pumps_running_count[cdu])
    heat, capacity = float(snap.cdu_heat_kw[cdu]), float(snap.cdu_capacity_kw[cdu])
    if running < required:
        return "critical", f"LOST — {running} of {installed} pumps running, {required} needed"
    if capacity > 0 and heat > capacity:
        return "critical", f"OVER CAPACITY — {heat:,.0f} kW of {capacity:,.0f} kW"
    if running < installed:
        return "warning", f"NO REDUNDANCY — {running} of {installed} pumps running"
    return "ok", f"running — {running} of {installed} pumps"


def kpis(state: SiteTables, snap: Snapshot, cdu: int) -> list:
    spec = state.cdu_specs[state.cdu_spec[cdu]]
    racks = np.flatnonzero(state.rack_cdu == cdu)
    heat, capacity = float(snap.cdu_heat_kw[cdu]), float(snap.cdu_capacity_kw[cdu])
    use = heat / capacity if capacity > 0 else math.nan
    flow = float(snap.coolant_flow_lpm[cdu])
    ttt = float(np.min(snap.rack_time_to_throttle_s[racks])) if racks.size else math.inf
    running = int(snap.pumps_running_count[cdu])
    return [
        kpi_card(
            PAGE,
            "supply",
            "Secondary supply",
            "°C",
            fmt(snap.coolant_supply_temp_c[cdu], 1),
            note=f"return {fmt(snap.coolant_return_temp_c[cdu], 1)} °C",
        ),
        kpi_card(
            PAGE,
            "flow",
            "Flow",
            "L/min",
            fmt(flow, 0),
            note=f"design {spec.design_flow_lpm:,.0f} L/min",
            status="critical" if flow < 0.5 * spec.design_flow_lpm else "",
        ),
        kpi_card(
            PAGE,
            "use",
            "Heat vs capacity",
            "%",
            fmt(use * 100.0, 0) if math.isfinite(use) else "–",
            note=f"{heat:,.0f} of {capacity:,.0f} kW",
            status="critical" if use > 1.0 else "warning" if use > 0.9 else "ok",
        ),
        kpi_card(
            PAGE,
            "pumps",
            "Pumps running",
            "",
            f"{running} of {spec.pumps}",
            note=f"{spec.pumps_required} needed for full flow",
            status="critical" if running < spec.pumps_required else "warning" if running < spec.pumps else "ok",
        ),
        kpi_card(
            PAGE,
            "racks",
            "Racks cooled",
            "racks",
            f"{racks.size}",
            note=f"{int(np.isin(state.gpu_rack, racks).sum()):,} GPUs",
        ),
        kpi_card(
            PAGE,
            "ttt",
            "Soonest throttle after a pump loss",
            "s",
            "never" if not math.isfinite(ttt) else f"{ttt:,.0f}",
            status="critical" if ttt < 60 else "warning" if ttt < 600 else "ok",
        ),
    ]


def rack_rows(state: SiteTables, snap: Snapshot, cdu: int) -> list[dict]:
    """The CDU's racks, hottest first (ties by name)."""
    racks = np.flatnonzero(state.rack_cdu == cdu)
    throttled = np.bincount(state.gpu_rack, weights=snap.gpu_state == GPU_THROTTLED, minlength=state.n_racks)
    down = np.bincount(state.gpu_rack, weights=snap.gpu_state == GPU_DOWN, minlength=state.n_racks)
    rows = [
        {
            "rack": state.rack_name[r],
            "max_gpu_temp_c": float(snap.rack_max_gpu_temp_c[r]),
            "rack_power_kw": float(snap.rack_power_kw[r]),
            "gpus_throttled": int(throttled[r]),
            "gpus_down": int(down[r]),
            "time_to_throttle_s": float(snap.rack_time_to_throttle_s[r])
            if math.isfinite(snap.rack_time_to_throttle_s[r])
            else None,
        }
        for r in racks
    ]
    return sorted(rows, key=lambda r: (-np.nan_to_num(r["max_gpu_temp_c"], nan=-1e9), r["rack"]))


def alert_rows(state: SiteTables, alerts: list[dict], cdu: int) -> list[dict]:
    """Open alerts of the CDU, of its racks, and of anything grouped under the CDU's alerts."""
    racks = {state.rack_name[r] for r in np.flatnonzero(state.rack_cdu == cdu)}
    name = state.cdu_name[cdu]
    own = {a.get("key") for a in alerts if a.get("entity_kind") == "cdu" and a.get("entity_name") == name}
    rank = {"critical": 0, "warning": 1, "info": 2}
    rows = [
        a
        for a in alerts
        if a.get("cleared_at") is None
        and (
            (a.get("entity_kind") == "cdu" and a.get("entity_name") == name)
            or (a.get("entity_kind") == "rack" and a.get("entity_name") in racks)
            or a.get("group") in own
        )
    ]
    rows.sort(key=lambda a: (rank.get(a.get("severity"), 3), a.get("entity_name", "")))
    return [
        {
            "severity": a["severity"],
            "entity": a.get("entity_name", ""),
            "message": a.get("message", ""),
            "runbook": a.get("runbook", ""),
        }
        for a in rows
    ]


def history_figures(history) -> dict:
    """Temperature, flow/pumps and heat/capacity trends of the CDU's recorded window."""
    return {
        ids.Cdu.TEMPS: trend_figure(
            history,
            [("coolant_supply_temp_c", "supply"), ("coolant_return_temp_c", "return")],
            "temperature",
            "°C",
            "Supply and return",
            uirevision="cdu-temps",
        ),
        ids.Cdu.FLOW: trend_figure(
            history, [("coolant_flow_lpm", "flow")], "flow", "L/min", "Flow", uirevision="cdu-flow", from_zero=True
        ),
        ids.Cdu.HEAT: trend_figure(
            history,
            [("cdu_heat_kw", "heat"), ("cdu_capacity_kw", "capacity")],
            "power",
            "kW",
            "Heat vs capacity",
            uirevision="cdu-heat",
            dashed=("cdu_capacity_kw",),
            from_zero=True,
        ),
    }


def _body(view, cdu: int) -> list:
    state, snap = view.state, view.latest()
    if snap is None:
        return [html.Div("no data yet", className="empty")]
    status, text = cdu_state(state, snap, cdu)
    history = view.cdu_history(cdu, HISTORY_WINDOW_S)
    figures = history_figures(history)
    config = {"displaylogo": False, "responsive": True}
    pumps_note = (
        ""
        if history.empty
        else f"pumps running over the window: min {int(np.nanmin(history['pumps_running_count']))}, "
        f"max {int(np.nanmax(history['pumps_running_count']))}"
    )
    return [
        html.Div(text, id=ids.Cdu.STATUS, className=f"cdu-status status-banner-{status}"),
        html.Div(kpis(state, snap, cdu), id=ids.Cdu.KPIS, className="kpis"),
        html.Div(
            [
                html.Div(
                    dcc.Graph(id=gid, figure=fig, config=config, style={"height": f"{TREND_HEIGHT_PX}px"}),
                    className="panel",
                )
                for gid, fig in figures.items()
            ],
            className="grid-3",
        ),
        html.Div(pumps_note, className="muted"),
        html.Div(
            [
                html.Div(
                    [
                        html.H3("Racks it cools"),
                        data_table(rack_rows(state, snap, cdu), RACK_COLUMNS, table_id=ids.Cdu.RACKS),
                    ],
                    className="panel",
                ),
                html.Div(
                    [
                        html.H3("Open alerts"),
                        data_table(
                            alert_rows(state, view.alerts(active_only=True), cdu),
                            ALERT_COLUMNS,
                            "no open alerts",
                            table_id=ids.Cdu.ALERTS,
                        ),
                    ],
                    className="panel",
                ),
            ],
            className="grid-2",
        ),
    ]


@view_layout
@inputs.query_layout(cdu=inputs.site_entity("CDU", "cdu_name"))
def layout(cdu=None, **kwargs) -> html.Div:
    view = layout_screen(**kwargs).view
    index = cdu_index(view.state, cdu)
    loop_links = []
    if index is None:
        message = (
            f"No CDU named {cdu!r} on {view.state.name}." if cdu else "No CDU selected."
        ) + " Pick one from the cooling page."
        return html.Div(
            [html.H1("CDU"), html.P(message, className="view-error"), dcc.Link("cooling →", href="/cooling")],
            className="page page-cdu",
        )
    loop = view.state.loop_name[view.state.cdu_loop[index]]
    loop_links = [dcc.Link(f"loop {loop} →", href=f"/cooling?loop={loop}")]
    return html.Div(
        [
            dcc.Store(id=ids.Cdu.PAGE, data=index),
            html.Div(
                [html.H1(f"CDU {view.state.cdu_name[index]}"), html.Div(loop_links, className="controls")],
                className="page-title",
            ),
            html.Div(_body(view, index), id=f"{PAGE}-body"),
        ],
        className="page page-cdu",
    )


@dash.callback(
    Output(f"{PAGE}-body", "children"),
    Input(ids.Shell.TICK, "n_intervals"),
    State(ids.Cdu.PAGE, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def live_update(_n, index, shown):
    view = callback_view(shown, PATH)
    if not isinstance(index, int) or not 0 <= index < view.state.n_cdus:
        raise PreventUpdate
    return _body(view, index)
