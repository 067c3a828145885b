"""``/fabric``: switches per tier as pod matrices, one switch's ports, link health and the job's bandwidth.

Deep link: ``/fabric?tier=leaf&switch=<switch name>`` opens a tier's matrix with a switch's
uplinks and NIC ports.  ~200,000 links are reduced to per-switch figures server-side.
"""

from __future__ import annotations

import math

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
from dashboard.figures import fabric as figs
from dashboard.present.data_table import Column, data_table
from dashboard.shell.deep_link import name_index, register_url_writer
from dashboard.views import compare
from dashboard.views.context import selection_of
from dashboard.views.registry import callback_view, layout_screen, view_layout
from twin.engine.snapshot import Snapshot
from twin.site.tables import TIER_CORE, TIER_LEAF, TIER_SPINE, SiteTables

PATH = "/fabric"
dash.register_page(__name__, path=PATH, name="Fabric", title="Fabric · ClusterTwin", order=4)

PAGE = ids.Fabric.PAGE
TIERS = {"leaf": TIER_LEAF, "spine": TIER_SPINE, "core": TIER_CORE}
TIER_COLUMNS = (
    Column("tier", "links"),
    Column("links", "installed", "{:,}"),
    Column("links_down", "down", "{:,}"),
    Column("mean_util_pct", "mean util (%)", "{:.1f}"),
    Column("p99_util_pct", "p99 util (%)", "{:.1f}"),
    Column("live_capacity_tbps", "live capacity (Tbit/s)", "{:,.1f}"),
)


def kpis(state: SiteTables, snap: Snapshot) -> list:
    """Links down, the busiest tier, the bandwidth the first running job gets."""
    up = np.asarray(snap.link_up_flag, dtype=bool)
    down = int((~up).sum())
    live_util = snap.link_util_frac[up & np.isfinite(snap.link_util_frac)]
    cards = [
        kpi_card(
            PAGE,
            "links_down",
            "Links down",
            "links",
            f"{down:,}",
            note=f"of {state.n_links:,}",
            status="warning" if down else "ok",
        ),
        kpi_card(
            PAGE, "mean_util", "Mean link utilisation", "%", f"{live_util.mean() * 100:.0f}" if live_util.size else "–"
        ),
        kpi_card(
            PAGE,
            "p99_util",
            "p99 link utilisation",
            "%",
            f"{np.quantile(live_util, 0.99) * 100:.0f}" if live_util.size else "–",
        ),
    ]
    if snap.jobs:
        job = snap.jobs[0]
        bw = figs.job_bandwidth(state, snap, job)
        factor = bw["factor_frac"]
        status = "ok" if factor >= 0.99 else "warning" if factor >= 0.5 else "critical"
        note = (
            f"limited by {bw['worst'] or bw['limiting_tier']}"
            if bw["limiting_tier"] != "none"
            else f"full NIC rate · {job.name}"
        )
        cards.append(
            kpi_card(
                PAGE,
                "job_bw",
                "Job bandwidth per GPU",
                "Gbit/s",
                f"{bw['per_gpu_gbps']:,.0f}" if math.isfinite(bw["per_gpu_gbps"]) else "–",
                note=note,
                status=status,
            )
        )
    return cards


def fabric_view(state: SiteTables, snap: Snapshot, tier: int, switch: int | None, full: bool = True) -> tuple:
    """Outputs for one snapshot: (matrix, detail, tier table, histogram, KPIs); Patches when not ``full``."""
    matrix = figs.switch_matrix_figure(state, snap, tier, switch)
    detail = figs.switch_detail_figure(state, snap, switch) if switch is not None else {}
    table = data_table(figs.tier_rows(state, snap), TIER_COLUMNS, "no links")
    hist = figs.util_histogram(state, snap)
    cards = kpis(state, snap)
    if not full:
        matrix = figure_patch(matrix, {0: ("z",), 1: ("x", "y", "customdata", "text")}, title=False)
        if switch is not None:
            detail = figure_patch(
                detail, {i: ("y", "marker.color", "customdata") for i in range(len(detail.data))}, title=False
            )
        hist = figure_patch(hist, {i: ("y",) for i in range(len(hist.data))})
    return matrix, detail, table, hist, cards


def _shown(visible: bool) -> dict:
    return {} if visible else {"display": "none"}


def _graph(graph_id: str, figure, height: str) -> dcc.Graph:
    return dcc.Graph(
        id=graph_id, figure=figure, style={"height": height}, config={"displaylogo": False, "responsive": True}
    )


def _fabric_numbers(state: SiteTables, snap: Snapshot) -> dict[str, float]:
    up = np.asarray(snap.link_up_flag, dtype=bool)
    util = snap.link_util_frac[up & np.isfinite(snap.link_util_frac)]
    bw = figs.job_bandwidth(state, snap, snap.jobs[0])["per_gpu_gbps"] if snap.jobs else math.nan
    return {
        "down": float((~up).sum()),
        "mean": util.mean() * 100 if util.size else math.nan,
        "p99": np.quantile(util, 0.99) * 100 if util.size else math.nan,
        "bw": bw,
    }


def comparison(screen) -> list:
    """Compare mode: fabric numbers of A against B."""
    state, a, b = screen.view.state, screen.view.latest(), screen.compare.latest()
    if a is None or b is None:
        return [compare.header(screen), html.Div("no data in one of the views", className="empty")]
    na, nb = _fabric_numbers(state, a), _fabric_numbers(state, b)
    rows = [
        ("links down", "links", 0, na["down"], nb["down"]),
        ("mean link utilisation", "%", 1, na["mean"], nb["mean"]),
        ("p99 link utilisation", "%", 1, na["p99"], nb["p99"]),
        ("job bandwidth per GPU", "Gbit/s", 0, na["bw"], nb["bw"]),
    ]
    return [
        compare.header(screen),
        html.Div([html.H3("Fabric"), compare.numbers_table(rows, screen)], className="panel"),
    ]


compare.register(PAGE, comparison)


@view_layout
@inputs.query_layout(tier=inputs.one_of("tier", TIERS), switch=inputs.site_entity("switch", "switch_name"))
def layout(tier: str | None = None, switch: str | None = None, **_kwargs) -> html.Div:
    """The page; ``tier`` (leaf/spine/core) and ``switch`` (name) from the URL."""
    screen = layout_screen(**_kwargs)
    view = screen.view
    tick = view.latest_tick()
    state, snap = view.state, tick.snapshot
    switch_id = name_index(state.switch_name, switch)
    if tier not in TIERS:  # a link to a switch opens its own tier (a spine found by search opened "leaf")
        own = [name for name, t in TIERS.items() if switch_id is not None and t == state.switch_tier[switch_id]]
        tier = own[0] if own else "leaf"
    selection = {"tier": tier, "switch": state.switch_name[switch_id] if switch_id is not None else None}
    if snap is None:
        matrix, detail, table, hist, cards = {}, {}, html.Div("no data yet", className="empty"), {}, []
        rendered = None
    else:
        matrix, detail, table, hist, cards = fabric_view(state, snap, TIERS[tier], switch_id)
        rendered = rendered_record(snap.ts.isoformat(), selection, screen.selection.params())
    return html.Div(
        [
            dcc.Store(id=ids.Fabric.SELECTION, data=selection),
            dcc.Store(id=ids.Fabric.RENDERED, data=rendered),
            dcc.Store(id=ids.Fabric.URL_SYNC),
            FIGURES_RELAY.store(),
            html.Div(
                [
                    html.H1("Fabric"),
                    html.Div(
                        [
                            html.Label("Tier"),
                            dcc.RadioItems(
                                id=ids.Fabric.TIER,
                                value=tier,
                                inline=True,
                                options=[{"label": f" {name} ", "value": name} for name in TIERS],
                            ),
                        ],
                        className="controls",
                    ),
                ],
                className="page-title",
            ),
            compare.section(PAGE, screen),
            html.Div(cards, id=ids.Fabric.KPIS, className="kpis"),
            html.Div(
                [
                    html.Div(
                        [
                            _graph(ids.Fabric.MATRIX, matrix, "460px"),
                            html.Div(
                                "× marks a switch with links down. Click a switch to see its uplinks and ports.",
                                className="muted",
                            ),
                        ],
                        className="panel",
                    ),
                    html.Div(
                        [
                            html.Div(
                                "no switch selected",
                                id=ids.Fabric.DETAIL_EMPTY,
                                className="empty",
                                style=_shown(switch_id is None),
                            ),
                            html.Div(
                                _graph(ids.Fabric.DETAIL, detail, "480px"),
                                id=ids.Fabric.DETAIL_PANEL,
                                style=_shown(switch_id is not None),
                            ),
                        ],
                        className="panel",
                    ),
                ],
                className="grid-2",
            ),
            html.Div(
                [
                    html.Div([html.H3("Tiers"), html.Div(table, id=ids.Fabric.TIERS)], className="panel"),
                    html.Div(_graph(ids.Fabric.UTIL_HIST, hist, "320px"), className="panel"),
                ],
                className="grid-2",
            ),
        ]
    )


@callback(
    Output(ids.Fabric.SELECTION, "data"),
    Input(ids.Fabric.MATRIX, "clickData"),
    Input(ids.Fabric.TIER, "value"),
    State(ids.Fabric.SELECTION, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def select(click, tier, selection, shown):
    """A click on a matrix cell selects that switch; the tier radio switches matrices."""
    state = callback_view(shown, PATH).state
    selection = dict(selection or {})
    if ctx.triggered_id == ids.Fabric.MATRIX:
        custom = clicked_custom(click)
        if not custom or custom[0] is None or not 0 <= int(custom[0]) < state.n_switches:
            raise PreventUpdate
        selection["switch"] = state.switch_name[int(custom[0])]
    else:
        if tier not in TIERS or tier == selection.get("tier"):
            raise PreventUpdate
        selection["tier"] = tier
    return selection


FIGURES_RELAY = relay(
    ids.Fabric.FIGURES, (ids.Fabric.MATRIX, "figure"), (ids.Fabric.DETAIL, "figure"), (ids.Fabric.UTIL_HIST, "figure")
)


@callback(
    FIGURES_RELAY.output,
    Output(ids.Fabric.DETAIL_PANEL, "style"),
    Output(ids.Fabric.DETAIL_EMPTY, "style"),
    Output(ids.Fabric.TIERS, "children"),
    Output(ids.Fabric.KPIS, "children"),
    Output(ids.Fabric.RENDERED, "data"),
    Input(ids.Shell.TICK, "n_intervals"),
    Input(ids.Fabric.SELECTION, "data"),
    State(ids.Fabric.RENDERED, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def refresh(_n, selection, rendered, shown):
    """New snapshot → patch the data; new selection or view → rebuild."""
    view = callback_view(shown, PATH)
    tick, selection, full, now = live_render(view, rendered, selection, selection_of(shown).params())
    snap = tick.snapshot
    switch = name_index(view.state.switch_name, selection.get("switch"))
    tier = TIERS.get(selection.get("tier"), TIER_LEAF)
    matrix, detail, table, hist, cards = fabric_view(view.state, snap, tier, switch, full=full)
    if switch is None:
        detail = dash.no_update
    return (
        FIGURES_RELAY.send(shown, matrix, detail, hist),
        _shown(switch is not None),
        _shown(switch is None),
        table,
        cards,
        now,
    )


register_url_writer(ids.Fabric.SELECTION, ids.Fabric.URL_SYNC)
