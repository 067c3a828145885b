"""``/cooling``: heat flow from CDUs through facility loops to plants, CDU capacity use, throttle risk.

Deep link: ``/cooling?loop=<loop name>`` opens a loop's drill-down.  The live tick
patches only the figures' data arrays; nothing is sent when the snapshot is unchanged.
"""

from __future__ import annotations

import math
from urllib.parse import urlencode

import dash
import numpy as np
from dash import ALL, Input, Output, State, callback, ctx, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids
from dashboard.analysis.equipment import cdu_lost, rack_off
from dashboard.callbacks import inputs
from dashboard.callbacks.figure_patch import figure_patch, live_render, rendered_record
from dashboard.callbacks.patch_relay import relay
from dashboard.components.kpi import kpi_card
from dashboard.figures import cooling as figs
from dashboard.present.data_table import Column, data_table
from dashboard.shell.deep_link import name_index, register_url_writer
from dashboard.views import compare
from dashboard.views.context import selection_of
from dashboard.views.registry import callback_view, layout_screen, view_layout
from dashboard.whatif.links import trip_href, whatif_link
from twin.engine.snapshot import Snapshot
from twin.site.tables import SiteTables

PATH = "/cooling"
dash.register_page(__name__, path=PATH, name="Cooling", title="Cooling · ClusterTwin", order=2)

PAGE = ids.Cooling.PAGE
SITE = "__site__"  # dropdown value of the site view
WORST_COLUMNS = (
    Column("cdu", "CDU", href="/cdu?cdu={}"),
    Column("state", "state"),
    Column("loop", "loop"),
    Column("heat_kw", "heat (kW)", "{:,.1f}"),
    Column("capacity_kw", "capacity (kW)", "{:,.1f}"),
    Column("use_pct", "use (%)", "{:.1f}"),
    Column("supply_c", "supply (°C)", "{:.1f}"),
    Column("return_c", "return (°C)", "{:.1f}"),
    Column("flow_lpm", "flow (L/min)", "{:,.0f}"),
    Column("pumps", "pumps running"),
)
TTT_COLUMNS = (
    Column("rack", "rack", href="/floor?rack={}"),
    Column("cdu", "CDU", href="/cdu?cdu={}"),
    Column("scenario", "failure"),
    Column("time_to_throttle_s", "time to throttle (s)", "{:,.0f}"),
)


SCENARIOS = (  # TickDetail.projections_s key prefix, label
    ("pump_loss", "loss of one CDU pump"),
    ("cdu_loss", "loss of the rack's CDU"),
    ("facility_loss", "loss of facility water"),
    ("excursion", "supply temperature excursion"),
)


def throttle_scenarios(snap: Snapshot, detail=None) -> dict[str, np.ndarray]:
    """Time to throttle (s, per rack) per failure scenario: the twin's projections when
    ``detail`` (a TickDetail) has them, else the one scenario the Snapshot carries."""
    projections = detail.projections_s if detail is not None else {}
    found = {label: projections[f"{key}_throttle_s"] for key, label in SCENARIOS if f"{key}_throttle_s" in projections}
    if found and all(np.shape(v) == snap.rack_time_to_throttle_s.shape for v in found.values()):
        return found
    return {"loss of one CDU pump": snap.rack_time_to_throttle_s}


def kpis(state: SiteTables, snap: Snapshot, loop: int | None, scenarios: dict[str, np.ndarray]) -> list:
    """KPI cards for the site or one loop."""
    cdus = np.arange(state.n_cdus) if loop is None else np.flatnonzero(state.cdu_loop == loop)
    use = figs.cdu_use_frac(snap)[cdus]
    heat_mw = float(np.nansum(snap.cdu_heat_kw[cdus])) / 1e3
    over_90 = int(np.sum(use > 0.9))
    worst = float(np.nanmax(use)) if np.isfinite(use).any() else math.nan
    pumps_short = int(np.sum(snap.pumps_running_count[cdus] < state.cdu_spec_array("pumps")[cdus]))
    lost = int(cdu_lost(state, snap)[cdus].sum())
    racks = np.flatnonzero(np.isin(state.rack_cdu, cdus) & ~rack_off(state, snap))
    soonest = figs.throttle_risk_rows(state, scenarios, 1, racks)
    fast = {name: int(np.sum(v[racks] < 60.0)) for name, v in scenarios.items()}
    fast_name = max(fast, key=fast.get) if fast else ""
    return [
        kpi_card(PAGE, "heat", "Heat removed", "MW", f"{heat_mw:,.2f}", note=f"{cdus.size:,} CDUs"),
        kpi_card(
            PAGE,
            "worst_use",
            "Worst CDU capacity use",
            "%",
            f"{worst * 100:.0f}" if math.isfinite(worst) else "–",
            note=f"{over_90:,} CDUs above 90 %",
            status="critical" if worst > 1.0 else "warning" if worst > 0.9 else "ok",
        ),
        kpi_card(
            PAGE,
            "pumps",
            "CDUs short of a pump",
            "CDUs",
            f"{pumps_short:,}",
            note=f"{lost:,} lost (too few pumps to cool)" if lost else "",
            status="critical" if lost else "warning" if pumps_short else "ok",
        ),
        kpi_card(
            PAGE,
            "ttt",
            "Soonest throttle after a failure",
            "s",
            f"{soonest[0]['time_to_throttle_s']:,.0f}" if soonest else "never",
            note=soonest[0]["scenario"] if soonest else "in every scenario",
            status="critical" if soonest and soonest[0]["time_to_throttle_s"] < 60 else "warning" if soonest else "ok",
        ),
        kpi_card(
            PAGE,
            "ttt_60",
            "Racks < 60 s from throttling",
            "racks",
            f"{fast.get(fast_name, 0):,}",
            note=f"each, after {fast_name}" if fast_name else "",
            status="critical" if fast.get(fast_name, 0) else "ok",
        ),
        kpi_card(PAGE, "wet_bulb", "Outdoor wet bulb", "°C", f"{snap.outdoor_wet_bulb_c:.1f}"),
    ]


def cooling_view(state: SiteTables, snap: Snapshot, loop: int | None, full: bool = True, detail=None) -> tuple:
    """Outputs of the page for one snapshot: (flow, use histogram, worst CDUs, ttt figure, ttt table, KPIs).

    ``full=False`` returns Patches of the figures' data instead of whole figures;
    ``detail`` (the twin's TickDetail, when the view has one) adds failure scenarios.
    """
    flow = figs.cooling_flow_figure(state, snap, loop)
    hist = figs.cdu_use_histogram(state, snap, loop)
    scenarios = throttle_scenarios(snap, detail)
    in_scope = np.ones(state.n_racks, dtype=bool) if loop is None else state.cdu_loop[state.rack_cdu] == loop
    racks = np.flatnonzero(in_scope & ~rack_off(state, snap))  # powered-off racks cannot throttle
    ttt = figs.throttle_risk_figure({k: v[racks] for k, v in scenarios.items()})
    worst = data_table(figs.worst_cdus(state, snap, 8, loop), WORST_COLUMNS, "no CDUs")
    ttt_rows = data_table(
        figs.throttle_risk_rows(state, scenarios, 8, racks), TTT_COLUMNS, "no rack throttles in any scenario"
    )
    cards = kpis(state, snap, loop, scenarios)
    if not full:
        flow = figure_patch(flow, {0: ("node", "link")})
        hist = figure_patch(hist, {0: ("y", "marker.color")})
        ttt = figure_patch(ttt, {i: ("y",) for i in range(len(scenarios))})
    return flow, hist, worst, ttt, ttt_rows, cards


def _graph(graph_id: str, figure, height: str) -> dcc.Graph:
    return dcc.Graph(
        id=graph_id, figure=figure, style={"height": height}, config={"displaylogo": False, "responsive": True}
    )


def _flow_graph(loop_name: str | None, figure) -> dcc.Graph:
    """The heat-flow graph of one scope (its own id per scope, see ``ids.cooling_flow_graph``)."""
    return _graph(ids.cooling_flow_graph(loop_name or SITE), figure, "440px")


def comparison(screen) -> list:
    """Compare mode: site cooling numbers and the CDUs whose heat differs most, A against B."""
    state, a, b = screen.view.state, screen.view.latest(), screen.compare.latest()
    if a is None or b is None:
        return [compare.header(screen), html.Div("no data in one of the views", className="empty")]
    pumps = state.cdu_spec_array("pumps")
    rows = [
        ("heat removed", "MW", 2, float(np.nansum(a.cdu_heat_kw)) / 1e3, float(np.nansum(b.cdu_heat_kw)) / 1e3),
        ("cooling power", "MW", 2, a.cooling_power_mw, b.cooling_power_mw),
        (
            "worst CDU capacity use",
            "%",
            0,
            np.nanmax(figs.cdu_use_frac(a)) * 100,
            np.nanmax(figs.cdu_use_frac(b)) * 100,
        ),
        (
            "CDUs short of a pump",
            "CDUs",
            0,
            float(np.sum(a.pumps_running_count < pumps)),
            float(np.sum(b.pumps_running_count < pumps)),
        ),
        ("outdoor wet bulb", "°C", 1, a.outdoor_wet_bulb_c, b.outdoor_wet_bulb_c),
    ]
    cdus = compare.largest_changes(a.cdu_heat_kw, b.cdu_heat_kw, 8)
    names = [state.cdu_name[c] for c in cdus]
    columns = [
        ("heat [kW]", 1, a.cdu_heat_kw[cdus], b.cdu_heat_kw[cdus]),
        ("use [%]", 0, figs.cdu_use_frac(a)[cdus] * 100, figs.cdu_use_frac(b)[cdus] * 100),
        ("return [°C]", 1, a.coolant_return_temp_c[cdus], b.coolant_return_temp_c[cdus]),
        ("pumps", 0, a.pumps_running_count[cdus].astype(float), b.pumps_running_count[cdus].astype(float)),
    ]
    return [
        compare.header(screen),
        html.Div(
            [
                html.Div([html.H3("Site cooling"), compare.numbers_table(rows, screen)], className="panel"),
                html.Div(
                    [
                        html.H3("CDUs whose heat differs most"),
                        compare.entities_table(
                            names, ["/cdu?" + urlencode({"cdu": n}) for n in names], columns, screen, entity="CDU"
                        ),
                    ],
                    className="panel",
                ),
            ],
            className="compare-grid",
        ),
    ]


compare.register(PAGE, comparison)


@view_layout
@inputs.query_layout(loop=inputs.site_entity("loop", "loop_name"))
def layout(loop: str | None = None, **_kwargs) -> html.Div:
    """The page; ``loop`` (a loop name from the URL) opens that loop's drill-down."""
    screen = layout_screen(**_kwargs)
    view = screen.view
    tick = view.latest_tick()
    state, snap = view.state, tick.snapshot
    loop_id = name_index(state.loop_name, loop)
    selection = {"loop": state.loop_name[loop_id] if loop_id is not None else None}
    options = [{"label": "whole site", "value": SITE}] + [{"label": name, "value": name} for name in state.loop_name]
    if snap is None:
        views = ({}, {}, html.Div("no data yet", className="empty"), {}, html.Div(), [])
        rendered = None
    else:
        views = cooling_view(state, snap, loop_id, detail=tick.detail)
        rendered = rendered_record(snap.ts.isoformat(), selection, screen.selection.params())
    flow, hist, worst, ttt, ttt_rows, cards = views
    return html.Div(
        [
            dcc.Store(id=ids.Cooling.SELECTION, data=selection),
            dcc.Store(id=ids.Cooling.RENDERED, data=rendered),
            dcc.Store(id=ids.Cooling.URL_SYNC),
            FIGURES_RELAY.store(),
            html.Div(
                [
                    html.H1("Cooling"),
                    html.Div(
                        [
                            html.Label("Scope", htmlFor=ids.Cooling.LOOP),
                            dcc.Dropdown(
                                id=ids.Cooling.LOOP,
                                options=options,
                                value=selection["loop"] or SITE,
                                clearable=False,
                                className="metric-select",
                            ),
                            whatif_link(
                                ids.Cooling.WHATIF,
                                trip_href("loop", selection["loop"]),
                                "what-if: change setpoints, fail a loop, CDU or pump →",
                            ),
                        ],
                        className="controls",
                    ),
                ],
                className="page-title",
            ),
            compare.section(PAGE, screen),
            html.Div(cards, id=ids.Cooling.KPIS, className="kpis"),
            html.Div(
                [
                    html.Div(
                        [
                            html.Div(_flow_graph(selection["loop"], flow), id=ids.Cooling.FLOW),
                            html.Div("Click a loop to drill down to its CDUs.", className="muted"),
                        ],
                        className="panel",
                    ),
                    html.Div(_graph(ids.Cooling.USE_HIST, hist, "460px"), className="panel"),
                ],
                className="grid-2",
            ),
            # the CDU table spans the page: ten columns do not fit half a 1366 px screen
            html.Div(
                [html.H3("CDUs: lost first, then by capacity use"), html.Div(worst, id=ids.Cooling.WORST)],
                className="panel panel-wide",
            ),
            html.Div(
                [
                    html.Div(
                        [
                            html.H3("Racks by time to GPU throttling after each failure"),
                            _graph(ids.Cooling.TTT, ttt, "300px"),
                        ],
                        className="panel",
                    ),
                    html.Div(
                        [html.H3("Racks that throttle soonest"), html.Div(ttt_rows, id=ids.Cooling.TTT_TABLE)],
                        className="panel",
                    ),
                ],
                className="grid-2",
            ),
        ]
    )


def selection_from_click(state: SiteTables, click: dict | None) -> str | None:
    """Loop name of a clicked Sankey node (None when the click was not on a loop)."""
    if not click or not click.get("points"):
        return None
    label = str(click["points"][0].get("label", ""))
    name = label.split(" · ")[0]
    return name if name in state.loop_name else None


@callback(
    Output(ids.Cooling.SELECTION, "data"),
    Output(ids.Cooling.LOOP, "value"),
    Input(ids.Cooling.LOOP, "value"),
    Input(ids.cooling_flow_graph(ALL), "clickData"),
    State(ids.Cooling.SELECTION, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def select_loop(value, clicks, selection, shown):
    """Dropdown or a click on a loop node sets the scope."""
    state = callback_view(shown, PATH).state
    if isinstance(ctx.triggered_id, dict):
        name = selection_from_click(state, next((c for c in clicks if c), None))
        if name is None:
            raise PreventUpdate
    else:
        name = None if value in (None, SITE) else value
    if (selection or {}).get("loop") == name:
        raise PreventUpdate
    return {"loop": name}, name or SITE


FIGURES_RELAY = relay(
    ids.Cooling.FIGURES,
    (ids.cooling_flow_graph(ALL), "figure"),
    (ids.Cooling.USE_HIST, "figure"),
    (ids.Cooling.TTT, "figure"),
)


@callback(
    Output(ids.Cooling.FLOW, "children"),
    FIGURES_RELAY.output,
    Output(ids.Cooling.WORST, "children"),
    Output(ids.Cooling.TTT_TABLE, "children"),
    Output(ids.Cooling.KPIS, "children"),
    Output(ids.Cooling.RENDERED, "data"),
    Input(ids.Shell.TICK, "n_intervals"),
    Input(ids.Cooling.SELECTION, "data"),
    State(ids.Cooling.RENDERED, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def refresh(_n, selection, rendered, shown):
    """New snapshot → patch the data; new selection or view → rebuild the figures (a new flow graph)."""
    view = callback_view(shown, PATH)
    tick, selection, full, now = live_render(view, rendered, selection, selection_of(shown).params())
    snap = tick.snapshot
    loop = name_index(view.state.loop_name, selection.get("loop"))
    flow, hist, worst, ttt, ttt_rows, cards = cooling_view(view.state, snap, loop, full=full, detail=tick.detail)
    if full:  # the flow graph is replaced whole (another loop's graph has another id)
        return (
            _flow_graph(selection.get("loop"), flow),
            FIGURES_RELAY.send(shown, dash.no_update, hist, ttt),
            worst,
            ttt_rows,
            cards,
            now,
        )
    return dash.no_update, FIGURES_RELAY.send(shown, flow, hist, ttt), worst, ttt_rows, cards, now


register_url_writer(ids.Cooling.SELECTION, ids.Cooling.URL_SYNC)


@dash.callback(
    Output(ids.Cooling.WHATIF, "href"),
    Input(ids.Cooling.SELECTION, "data"),
    prevent_initial_call=True,
)
def whatif_href(selection):
    """The what-if editor with the chosen loop in its blast-radius panel."""
    return trip_href("loop", (selection or {}).get("loop"))
