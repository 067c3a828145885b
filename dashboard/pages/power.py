"""``/power``: one-line diagram, element load and N-1 headroom, generation, training power swing.

Deep link: ``/power?element=<element name>&metric=load_frac`` focuses the diagram
on an element's path and subtree and colours by load instead of N-1 load.
"""

from __future__ import annotations

import math
from urllib.parse import urlencode

import dash
import numpy as np
from dash import Input, Output, State, callback, ctx, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids
from dashboard.callbacks import inputs
from dashboard.callbacks.click_data import clicked_custom
from dashboard.callbacks.figure_patch import figure_patch, live_render, rendered_record
from dashboard.callbacks.patch_relay import relay
from dashboard.components.kpi import kpi_card
from dashboard.components.source_table import source_table
from dashboard.figures import power as figs
from dashboard.present.data_table import Column, data_table
from dashboard.present.formatting import fmt
from dashboard.shell.deep_link import name_index, register_url_writer
from dashboard.views import compare
from dashboard.views.context import selection_of
from dashboard.views.registry import callback_view, layout_screen, view_layout
from dashboard.whatif.links import trip_href, whatif_link
from twin.engine.snapshot import Snapshot
from twin.site.tables import POWER_KINDS, SOURCE_KINDS, SiteTables

PATH = "/power"
dash.register_page(__name__, path=PATH, name="Power", title="Power · ClusterTwin", order=3)

PAGE = ids.Power.PAGE
DEFAULT_METRIC = "power_n1_load_frac"
WORST_COLUMNS = (
    Column("element", "element", href="/power?element={}"),
    Column("state", "state"),
    Column("kind", "kind"),
    Column("load_kw", "load (kW)", "{:,.0f}"),
    Column("load_pct", "load (%)", "{:.1f}"),
    Column("n1_pct", "N-1 load (%)", "{:.1f}"),
    Column("n1_headroom_kw", "N-1 headroom (kW)", "{:,.0f}"),
)


def kpis(state: SiteTables, snap: Snapshot, detail=None) -> list:
    """IT load vs generation, runnable GPUs at full power, the common GPU cap."""
    lim = figs.generation_limits(state, snap, detail)
    short = lim["facility_power_mw"] > lim["generation_capacity_mw"]
    runnable, live = lim["gpus_runnable_full_power"], lim["gpus_live"]
    runnable_frac = runnable / live if live else math.nan
    cap = lim["gpu_cap_w"]
    if not live:
        runnable_note = ""
    elif runnable >= live:  # the generation carries more GPUs than are live: say so, not "118 %"
        runnable_note = f"all {live:,} live fit" + (f" · room for {runnable - live:,} more" if runnable > live else "")
    else:
        runnable_note = f"of {live:,} live ({runnable_frac:.0%})"
    return [
        kpi_card(
            PAGE,
            "it",
            "IT load",
            "MW",
            fmt(lim["it_power_mw"], 1),
            note=f"facility {fmt(lim['facility_power_mw'], 1)} MW",
        ),
        kpi_card(
            PAGE,
            "generation",
            "Available generation",
            "MW",
            fmt(lim["generation_capacity_mw"], 1),
            note=f"IT budget {lim['it_budget_mw']:,.1f} MW",
            status="critical" if short else "ok",
        ),
        kpi_card(
            PAGE,
            "runnable",
            "GPUs runnable at full power",
            "GPUs",
            f"{runnable:,}",
            note=runnable_note,
            status="ok" if runnable_frac >= 1 else "warning",
        ),
        kpi_card(
            PAGE,
            "cap",
            "Power cap for all GPUs",
            "W",
            f"{cap:,.0f}" if math.isfinite(cap) else "–",
            note="fits generation" if lim["cap_feasible"] else "below min limit: shed GPUs",
            status="ok"
            if lim["cap_feasible"] and runnable_frac >= 1
            else "warning"
            if lim["cap_feasible"]
            else "critical",
        ),
        kpi_card(
            PAGE,
            "swing",
            "Training swing",
            "MW",
            fmt(snap.swing_amplitude_mw, 1),
            note=f"ramp {fmt(snap.swing_ramp_mw_per_s, 1)} MW/s",
        ),
        policy_card(state, snap, detail),
        *policy_strip(state, snap, detail),
    ]


def policy_chain(state: SiteTables, snap: Snapshot, detail=None) -> list[str]:
    """The shortfall chain as short steps: sources lost → gap carried → policy action → step time."""
    steps = []
    if detail is not None and not detail.source_live.all():
        lost = [state.source_name[i] for i in np.flatnonzero(~detail.source_live)]
        steps.append(f"{', '.join(lost[:2])}{f' +{len(lost) - 2}' if len(lost) > 2 else ''} lost")
    supply = getattr(detail, "supply", None)
    if supply is not None:
        battery_mw = float(
            np.clip(
                supply.dispatch.source_power_mw[state.source_kind == SOURCE_KINDS.index("battery")], 0.0, None
            ).sum()
        )
        gap = [
            f"{label} {fmt(mw, 1)} MW"
            for label, mw in (("battery", battery_mw), ("UPS", supply.ups_power_mw), ("unserved", supply.unserved_mw))
            if mw > 0.05
        ]
        if gap:
            steps.append(" + ".join(gap))
    action = []
    if math.isfinite(snap.policy_gpu_cap_w):
        action.append(f"cap {snap.policy_gpu_cap_w:,.0f} W")
    if detail is not None and getattr(detail, "policy_in_force", None) is not None and detail.policy_in_force.brake:
        action.append("power brake")
    if snap.n_gpus_shed:
        action.append(f"{snap.n_gpus_shed:,} GPUs shed")
    steps.append(", ".join(action) if action else "no action")
    if snap.jobs and math.isfinite(snap.jobs[0].step_time_s):
        steps.append(f"step {fmt(snap.jobs[0].step_time_s, 1)} s")
    return steps


def policy_card(state: SiteTables, snap: Snapshot, detail=None) -> html.Div:
    """KPI of the shortfall policy: the per-GPU cap in force, GPUs shed or the job's step time underneath."""
    capped = math.isfinite(snap.policy_gpu_cap_w)
    acting = capped or snap.n_gpus_shed > 0
    status = "critical" if snap.unserved_mw > 0 else "warning" if acting else "ok"
    step = f"step {fmt(snap.jobs[0].step_time_s, 1)} s" if snap.jobs and math.isfinite(snap.jobs[0].step_time_s) else ""
    note = f"{snap.n_gpus_shed:,} GPUs shed" if snap.n_gpus_shed else step
    return kpi_card(
        PAGE,
        "policy",
        f"Shortfall policy ({state.shortfall_policy})",
        "W" if capped else "",
        f"{snap.policy_gpu_cap_w:,.0f}" if capped else ("shed" if acting else "none"),
        note=note,
        status=status,
    )


def policy_strip(state: SiteTables, snap: Snapshot, detail=None) -> list:
    """One line under the KPIs with the whole chain, while sources are lost or the policy acts (else nothing)."""
    lost = detail is not None and not detail.source_live.all()
    if not (lost or math.isfinite(snap.policy_gpu_cap_w) or snap.n_gpus_shed or snap.unserved_mw > 0):
        return []
    return [
        html.Div(
            [html.Span("Shortfall chain: ", className="muted"), " → ".join(policy_chain(state, snap, detail))],
            style={"gridColumn": "1 / -1", "fontSize": "13px"},
            **{"data-chain": "shortfall"},
        )
    ]


TREND_WINDOW_S = 900.0


def power_view(
    state: SiteTables, snap: Snapshot, element: int | None, metric: str, full: bool = True, detail=None, trend=None
) -> tuple:
    """Outputs: (tree, headroom, worst table, generation, swing, supply trend, KPIs); Patches when not ``full``.

    ``detail`` is the twin's TickDetail when the view has one (site balance, swing report);
    ``trend`` the view's trend frame (load and generation over time).
    """
    tree = figs.power_tree_figure(state, snap, element, metric, detail)
    headroom = figs.headroom_figure(state, snap)
    worst = data_table(figs.worst_elements(state, snap, 10, metric, detail), WORST_COLUMNS, "no power elements")
    generation = figs.generation_figure(state, snap, detail)
    swing = figs.swing_figure(state, snap, detail)
    supply = figs.supply_trend_figure(trend)
    cards = kpis(state, snap, detail)
    if not full:
        tree = figure_patch(tree, figs.tree_patch_fields(tree))
        headroom = figure_patch(headroom, {i: ("x", "y") for i in range(len(headroom.data))}, title=False)
        generation = figure_patch(generation, {0: ("x", "y", "text", "customdata"), 1: ("x", "y", "text")}, title=False)
        swing = figure_patch(swing, {i: ("x", "text", "marker.color") for i in range(len(swing.data))}, title=False)
        supply = figure_patch(supply, {i: ("x", "y") for i in range(len(supply.data))}, title=False)
    return tree, headroom, worst, generation, swing, supply, cards


def _trend(view):
    """The view's recent site trend (a frame, possibly empty)."""
    return view.trend(TREND_WINDOW_S)


def _graph(graph_id: str, figure, height: str | None = None) -> dcc.Graph:
    style = {"height": height} if height else {}
    return dcc.Graph(id=graph_id, figure=figure, style=style, config={"displaylogo": False, "responsive": True})


def _scope_text(state: SiteTables, element: int | None) -> str:
    return "whole site" if element is None else f"focused on {state.power_name[element]}"


def comparison(screen) -> list:
    """Compare mode: site power numbers and the elements whose load differs most, A against B."""
    state, a, b = screen.view.state, screen.view.latest(), screen.compare.latest()
    if a is None or b is None:
        return [compare.header(screen), html.Div("no data in one of the views", className="empty")]
    la, lb = (
        figs.generation_limits(state, a, screen.view.latest_tick().detail),
        figs.generation_limits(state, b, screen.compare.latest_tick().detail),
    )
    rows = [
        ("IT load", "MW", 1, a.it_power_mw, b.it_power_mw),
        ("facility load", "MW", 1, a.facility_power_mw, b.facility_power_mw),
        ("available generation", "MW", 1, la["generation_capacity_mw"], lb["generation_capacity_mw"]),
        ("GPUs runnable at full power", "GPUs", 0, la["gpus_runnable_full_power"], lb["gpus_runnable_full_power"]),
        ("power cap for all GPUs", "W", 0, la["gpu_cap_w"], lb["gpu_cap_w"]),
        ("training swing", "MW", 1, a.swing_amplitude_mw, b.swing_amplitude_mw),
        ("PUE", "", 2, a.pue_ratio, b.pue_ratio),
    ]
    elements = compare.largest_changes(a.load_frac, b.load_frac, 8)
    names = [state.power_name[e] for e in elements]
    columns = [
        ("load [%]", 0, a.load_frac[elements] * 100, b.load_frac[elements] * 100),
        ("N-1 load [%]", 0, a.power_n1_load_frac[elements] * 100, b.power_n1_load_frac[elements] * 100),
    ]
    hrefs = ["?" + urlencode({"element": n}) for n in names]
    return [
        compare.header(screen),
        html.Div(
            [
                html.Div([html.H3("Site power"), compare.numbers_table(rows, screen)], className="panel"),
                html.Div(
                    [
                        html.H3("Elements whose load differs most"),
                        compare.entities_table(names, hrefs, columns, screen, entity="element"),
                    ],
                    className="panel",
                ),
            ],
            className="compare-grid",
        ),
    ]


compare.register(PAGE, comparison)


@view_layout
@inputs.query_layout(
    element=inputs.site_entity("power element", "power_name"),
    metric=inputs.one_of("metric", figs.METRICS),
    source=inputs.site_entity("source", "source_name"),
)
def layout(element: str | None = None, metric: str | None = None, source: str | None = None, **_kwargs) -> html.Div:
    """The page; ``element`` (name) focuses the diagram, ``metric`` picks load or N-1 load, ``source``
    (name) marks a generation source in the sources table."""
    screen = layout_screen(**_kwargs)
    view = screen.view
    tick = view.latest_tick()
    state, snap = view.state, tick.snapshot
    element_id = name_index(state.power_name, element)
    metric = metric if metric in figs.METRICS else DEFAULT_METRIC
    selection = {
        "element": state.power_name[element_id] if element_id is not None else None,
        "metric": metric,
        "source": source if source in state.source_name else None,
    }
    if snap is None:
        tree, headroom, worst, generation, swing, supply, cards = (
            {},
            {},
            html.Div("no data yet", className="empty"),
            {},
            {},
            {},
            [],
        )
        sources = html.Div("no data yet", className="empty")
        rendered = None
    else:
        sources = source_table(state, snap, tick.detail, selection["source"])
        tree, headroom, worst, generation, swing, supply, cards = power_view(
            state, snap, element_id, metric, detail=tick.detail, trend=_trend(view)
        )
        rendered = rendered_record(snap.ts.isoformat(), selection, screen.selection.params())
    return html.Div(
        [
            dcc.Store(id=ids.Power.SELECTION, data=selection),
            dcc.Store(id=ids.Power.RENDERED, data=rendered),
            dcc.Store(id=ids.Power.URL_SYNC),
            FIGURES_RELAY.store(),
            html.Div(
                [
                    html.H1("Power"),
                    html.Div(
                        [
                            html.Label("Colour by"),
                            dcc.RadioItems(
                                id=ids.Power.METRIC,
                                value=metric,
                                inline=True,
                                options=[{"label": f" {label} ", "value": key} for key, label in figs.METRICS.items()],
                            ),
                            html.Span(_scope_text(state, element_id), id=ids.Power.SCOPE, className="muted"),
                            html.Button("Whole site", id=ids.Power.RESET, n_clicks=0, disabled=element_id is None),
                            whatif_link(
                                ids.Power.WHATIF, element_whatif_href(state, element_id), "what if it trips? →"
                            ),
                        ],
                        className="controls",
                    ),
                ],
                className="page-title",
            ),
            compare.section(PAGE, screen),
            html.Div(cards, id=ids.Power.KPIS, className="kpis"),
            html.Div(
                [
                    _graph(ids.Power.TREE, tree),
                    html.Div("Click a switchgear, transformer, UPS or busway group to focus on it.", className="muted"),
                ],
                className="panel",
                style={"marginBottom": "12px"},
            ),
            html.Div(
                [
                    html.Div(_graph(ids.Power.HEADROOM, headroom, "380px"), className="panel"),
                    html.Div([html.H3("Least N-1 headroom"), html.Div(worst, id=ids.Power.WORST)], className="panel"),
                ],
                className="grid-2",
            ),
            html.Div(
                [
                    html.Div(
                        [
                            html.H3("Load and available generation (MW)"),
                            _graph(ids.Power.SUPPLY_TREND, supply, "270px"),
                        ],
                        className="panel",
                    ),
                    html.Div(
                        [
                            html.H3("Generation mix: output and spare capacity"),
                            _graph(ids.Power.GENERATION, generation, "270px"),
                        ],
                        className="panel",
                    ),
                    html.Div(
                        [html.H3("Training power swing vs generation"), _graph(ids.Power.SWING, swing, "270px")],
                        className="panel",
                    ),
                ],
                className="grid-3",
            ),
            html.Div(
                [html.H3("Generation sources"), html.Div(sources, id=ids.Power.SOURCES, className="power-sources")],
                className="panel",
                id="power-sources-panel",
            ),
        ]
    )


@callback(
    Output(ids.Power.SELECTION, "data"),
    Input(ids.Power.TREE, "clickData"),
    Input(ids.Power.METRIC, "value"),
    Input(ids.Power.RESET, "n_clicks"),
    State(ids.Power.SELECTION, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def select(click, metric, _reset, selection, shown):
    """Click focuses an element, the radio picks the metric, the button returns to the site."""
    state = callback_view(shown, PATH).state
    selection = dict(selection or {})
    if ctx.triggered_id == ids.Power.TREE:
        custom = clicked_custom(click)
        element = figs.element_from_key(str(custom[0]) if custom else None)
        if element is None:
            raise PreventUpdate
        selection["element"] = state.power_name[element]
    elif ctx.triggered_id == ids.Power.RESET:
        selection["element"] = None
    else:
        selection["metric"] = metric if metric in figs.METRICS else DEFAULT_METRIC
    return selection


FIGURES_RELAY = relay(
    ids.Power.FIGURES,
    (ids.Power.TREE, "figure"),
    (ids.Power.HEADROOM, "figure"),
    (ids.Power.GENERATION, "figure"),
    (ids.Power.SWING, "figure"),
    (ids.Power.SUPPLY_TREND, "figure"),
)


@callback(
    FIGURES_RELAY.output,
    Output(ids.Power.WORST, "children"),
    Output(ids.Power.KPIS, "children"),
    Output(ids.Power.SCOPE, "children"),
    Output(ids.Power.RESET, "disabled"),
    Output(ids.Power.RENDERED, "data"),
    Output(ids.Power.SOURCES, "children"),
    Input(ids.Shell.TICK, "n_intervals"),
    Input(ids.Power.SELECTION, "data"),
    State(ids.Power.RENDERED, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def refresh(_n, selection, rendered, shown):
    """New snapshot → patch the data; new selection or view → rebuild the figures."""
    view = callback_view(shown, PATH)
    tick, selection, full, now = live_render(view, rendered, selection, selection_of(shown).params())
    snap = tick.snapshot
    element = name_index(view.state.power_name, selection.get("element"))
    metric = selection.get("metric") if selection.get("metric") in figs.METRICS else DEFAULT_METRIC
    tree, headroom, worst, generation, swing, supply, cards = power_view(
        view.state, snap, element, metric, full=full, detail=tick.detail, trend=_trend(view)
    )
    figures = FIGURES_RELAY.send(shown, tree, headroom, generation, swing, supply)
    sources = source_table(view.state, snap, tick.detail, selection.get("source"))
    return figures, worst, cards, _scope_text(view.state, element), element is None, now, sources


register_url_writer(ids.Power.SELECTION, ids.Power.URL_SYNC)


def element_whatif_href(state: SiteTables, element: int | None) -> str:
    """The what-if editor with the focused element (or none) in its blast-radius panel."""
    if element is None:
        return trip_href(None, None)
    return trip_href(POWER_KINDS[state.power_kind[element]], state.power_name[element])


@callback(
    Output(ids.Power.WHATIF, "href"),
    Input(ids.Power.SELECTION, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def whatif_href(selection, shown):
    state = callback_view(shown, PATH).state
    return element_whatif_href(state, name_index(state.power_name, (selection or {}).get("element")))
