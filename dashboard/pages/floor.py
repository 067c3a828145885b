"""``/floor``: hall floor plans coloured by a rack metric, and the rack drill-down.

Deep link: ``/floor?metric=rack_power_kw&rack=H1-R01-K03`` restores the colour metric
and opens that rack's drill-down.  The plan sends one value per rack per update.

With a fleet (the live hub's fleet model or Slurm) the racks can be coloured by the team
holding most of their GPUs (``metric=team``), racks with nodes out of service (drained,
down, in repair) are marked, and ``?job=<job id>`` outlines the racks of that job.
"""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

import dash
import numpy as np
from dash import Input, Output, State, dcc, html, no_update

from dashboard import ids
from dashboard.analysis.aggregates import (
    DEFAULT_FLOOR_METRIC,
    FLOOR_METRIC_BY_KEY,
    FLOOR_METRICS,
    metric_range,
    rack_metrics,
)
from dashboard.analysis.equipment import rack_off
from dashboard.analysis.fleet_floor import FleetFloor, fleet_floor
from dashboard.analysis.rack_alerts import rack_alert_level
from dashboard.analysis.rack_detail import (
    RACK_POWER_NOTE,
    cdu_info,
    fabric_links,
    feed_chains,
    gpu_events,
    gpu_grid,
    node_rows,
    rack_gpus,
    rack_index,
)
from dashboard.callbacks import inputs
from dashboard.callbacks.dash_internals import PUSH_STATE_JS
from dashboard.callbacks.patch_relay import relay
from dashboard.components.fleet_panel import fleet_of
from dashboard.components.rack_views import elevation_view, gpu_grid_view
from dashboard.figures.fleet import team_colour
from dashboard.figures.floor import Categories, FloorOverlay, floor_figure, floor_patch, hall_grids, selection_patch
from dashboard.figures.rack import rack_history_figure
from dashboard.present import theme
from dashboard.present.formatting import fmt, fmt_duration, fmt_pct
from dashboard.present.static_html import to_html
from dashboard.shell.deep_link import keep_view
from dashboard.views import compare
from dashboard.views.registry import callback_screen, callback_view, layout_screen, on_page, view_layout
from dashboard.whatif.links import rack_href, whatif_link
from twin.cache import BoundedCache
from twin.engine.snapshot import GPU_DOWN, GPU_OFF

PATH = "/floor"
dash.register_page(__name__, path=PATH, name="Floor", title="Floor · ClusterTwin", order=1)

HISTORY_WINDOW_S = 600
LIVE_RELAY = relay(ids.Floor.HALLS_LIVE, (ids.Floor.HALLS, "figure"))
SELECTION_RELAY = relay(ids.Floor.HALLS_SELECTION, (ids.Floor.HALLS, "figure"))
_grids: BoundedCache[tuple[object, list]] = BoundedCache(8)  # id of a site → (the site, its hall grids)
GRAPH_CONFIG = {"displaylogo": False, "responsive": True}


def grids_for(state) -> list:
    """Hall grids of ``state``, computed once per loaded site."""
    return _grids.get_or_make(id(state), lambda: (state, hall_grids(state)), valid=lambda hit: hit[0] is state)[1]


TEAM_KEY = "team"  # colour by team: only with a fleet
JOB_KEY = "job"  # colour by job: only with a fleet
FLEET_KEYS = (TEAM_KEY, JOB_KEY)
METRIC_KEYS = (*FLOOR_METRIC_BY_KEY, *FLEET_KEYS)


def parse_metric(value, layer: FleetFloor | None = None) -> str:
    if value in FLEET_KEYS and layer is not None:
        return value
    return value if value in FLOOR_METRIC_BY_KEY else DEFAULT_FLOOR_METRIC


def physical_metric(metric: str) -> str:
    """The per-rack metric behind the floor's hover numbers (a fleet colouring shows the default's)."""
    return DEFAULT_FLOOR_METRIC if metric in FLEET_KEYS else metric


def url_search(metric: str, rack_name: str | None, job: str | None = None) -> str:
    """The query string that restores this view."""
    params = {"metric": metric}
    if rack_name:
        params["rack"] = rack_name
    if job:
        params["job"] = job
    return "?" + urlencode(params)


def fleet_layer(view, job: str | None = None) -> FleetFloor | None:
    """The fleet's layer of the floor (team per rack, nodes out, ``job``'s racks); None without a fleet."""
    fleet = fleet_of(view)
    return fleet_floor(view.state, fleet.frame(), job) if fleet is not None else None


def team_categories(layer: FleetFloor) -> Categories:
    """Teams in the jobs page's colours, then the free racks in the panel's dark grey."""
    colours = [team_colour(i) for i in range(len(layer.teams) - 1)] + [theme.FREE]
    return Categories(TEAM_KEY, "Team", [escape(t) for t in layer.teams], colours, layer.team)


def job_categories(layer: FleetFloor) -> Categories:
    """The jobs holding the most racks in the category colours, the other jobs light grey, free dark grey."""
    colours = [theme.CATEGORY[i] for i in range(len(layer.jobs) - 2)] + [theme.OTHER, theme.FREE]
    return Categories(JOB_KEY, "Job", [escape(j) for j in layer.jobs], colours, layer.job_category)


def fleet_categories(metric: str, layer: FleetFloor | None, against=None) -> Categories | None:
    """The categorical colouring ``metric`` asks for (by team or job), None for a physical metric,
    without a fleet or in difference mode."""
    if layer is None or against is not None or metric not in FLEET_KEYS:
        return None
    return team_categories(layer) if metric == TEAM_KEY else job_categories(layer)


def job_note(layer: FleetFloor | None) -> str:
    """What the job outline shows (or why it shows nothing)."""
    if layer is None or not layer.job:
        return ""
    if layer.job_gpus_count == 0:
        return f"job {layer.job}: not running now (no GPU of it to outline)"
    racks = int(layer.job_racks.sum()) if layer.job_racks is not None else 0
    return f"job {layer.job}: {layer.job_gpus_count:,} GPUs on {racks:,} racks, outlined in white"


def floor_metrics(state, snapshot, against=None) -> dict[str, np.ndarray]:
    """Per-rack floor metrics of ``snapshot`` (NaN without one); minus ``against``'s when given (A − B)."""
    if snapshot is None:
        return {m.key: np.full(state.n_racks, np.nan) for m in FLOOR_METRICS}
    metrics = rack_metrics(state, snapshot)
    if against is None:
        return metrics
    other = floor_metrics(state, against)
    return {key: metrics[key] - other[key] for key in metrics}


def floor_overlay(state, snapshot, alerts: list[dict] | None, layer: FleetFloor | None = None) -> FloorOverlay:
    """Off racks of ``snapshot``, the open-alert level of every rack (nothing without data) and the
    fleet's marks (``layer``: nodes out of service, the job's racks, a hover line per rack)."""
    overlay = FloorOverlay.empty(state.n_racks)
    off = rack_off(state, snapshot) if snapshot is not None else overlay.off
    level = rack_alert_level(state, alerts) if alerts else overlay.alert_level
    if layer is None:
        return FloorOverlay(off, level)
    label = f"job {layer.job}" if layer.job else ""
    notes = [layer.rack_note(r) for r in range(state.n_racks)]
    return FloorOverlay(off, level, layer.nodes_out > 0, layer.job_racks, label, notes)


def floor_view(
    state,
    snapshot,
    metric: str,
    rack: int | None,
    against=None,
    alerts: list[dict] | None = None,
    layer: FleetFloor | None = None,
):
    """The full floor figure for ``metric`` (no data yet: an empty figure); ``against``: coloured by A − B.

    ``alerts`` (the view's open alerts) outline their racks; off racks are hatched; ``layer``
    (the fleet's) marks racks with nodes out of service and a job's racks, and colours by team or job.
    """
    metric_key = physical_metric(metric)
    return floor_figure(
        state,
        grids_for(state),
        floor_metrics(state, snapshot, against),
        metric_key,
        metric_range(state, metric_key),
        rack,
        diff=against is not None,
        overlay=floor_overlay(state, snapshot, alerts, layer),
        categories=fleet_categories(metric, layer, against),
    )


def titled(figure, screen):
    """In compare mode, say on the main floor which view it shows (A, or A − B)."""
    if screen.compare is not None:
        what = f"A − B: {screen.view.label} − {screen.compare.label}" if screen.diff else f"A: {screen.view.label}"
        figure.update_layout(title=dict(text=what, font=dict(size=13)))
    return figure


def diff_against(screen):
    """The snapshot the floor is coloured against (difference mode), else None."""
    return screen.compare.latest() if screen.diff and screen.compare is not None else None


def comparison(screen) -> list:
    """Compare mode: B's floor beside A's (side by side) and the racks that differ most."""
    state = screen.view.state
    a_snap, b_snap = screen.view.latest(), screen.compare.latest()
    children = [compare.header(screen)]
    if a_snap is None or b_snap is None:
        return children + [html.Div("no data in one of the views", className="empty")]
    a, b = rack_metrics(state, a_snap), rack_metrics(state, b_snap)
    racks = compare.largest_changes(a["max_gpu_temp_c"], b["max_gpu_temp_c"], 10)
    names = [state.rack_name[r] for r in racks]
    columns = [
        (f"{m.label} [{m.unit}]", m.decimals, a[m.key][racks], b[m.key][racks])
        for m in FLOOR_METRICS
        if m.key in ("max_gpu_temp_c", "rack_power_kw", "cdu_headroom_kw")
    ]
    table = html.Div(
        [
            html.H3("Racks whose max GPU temperature differs most"),
            compare.entities_table(names, ["?" + urlencode({"rack": n}) for n in names], columns, screen),
        ],
        className="panel",
    )
    if screen.diff:
        return children + [html.P("The floor below is coloured by A − B.", className="compare-note"), table]
    figure = floor_view(state, b_snap, DEFAULT_FLOOR_METRIC, None, alerts=screen.compare.alerts())
    figure.update_layout(title=dict(text=f"B: {screen.compare.label} · max GPU temperature", font=dict(size=13)))
    return children + [
        html.Div(dcc.Graph(id=ids.Floor.COMPARE_HALLS, figure=figure, config=GRAPH_CONFIG), className="panel"),
        table,
    ]


compare.register("floor", comparison)


def metric_options(layer: FleetFloor | None) -> list[dict]:
    options = [{"label": f"{m.label} [{m.unit}]", "value": m.key} for m in FLOOR_METRICS]
    fleet = [{"label": "Team", "value": TEAM_KEY}, {"label": "Job", "value": JOB_KEY}]
    return options + (fleet if layer is not None else [])


@view_layout
@inputs.query_layout(metric=inputs.one_of("metric", METRIC_KEYS), rack=inputs.site_entity("rack", "rack_name"))
def layout(metric=None, rack=None, job=None, **_kwargs) -> html.Div:
    screen = layout_screen(**_kwargs)
    view = screen.view
    state = view.state
    layer = fleet_layer(view, job)
    metric = parse_metric(metric, layer)
    rack_id = rack_index(state, rack)
    rack_name = state.rack_name[rack_id] if rack_id is not None else None
    figure = titled(
        floor_view(state, view.latest(), metric, rack_id, diff_against(screen), view.alerts(), layer), screen
    )
    return html.Div(
        [
            dcc.Location(id=ids.Floor.URL, refresh=False),
            dcc.Store(id=ids.Floor.SELECTED_RACK, data=rack_name),
            dcc.Store(id=ids.Floor.JOB, data=job or None),
            html.Div(
                [
                    html.H1("Floor"),
                    html.Div(
                        [
                            html.Label("colour racks by", htmlFor=ids.Floor.METRIC),
                            dcc.RadioItems(
                                id=ids.Floor.METRIC,
                                value=metric,
                                inline=True,
                                className="segmented",
                                options=metric_options(layer),
                            ),
                        ],
                        className="controls",
                    ),
                    html.Span(
                        f"{state.n_racks:,} racks in {len(state.hall_name)} hall(s) · click a rack for details",
                        className="muted",
                    ),
                    html.Span(job_note(layer), id=ids.Floor.JOB_NOTE, className="floor-job-note"),
                ],
                className="page-title",
            ),
            compare.section(ids.Floor.PAGE, screen),
            html.Div(dcc.Graph(id=ids.Floor.HALLS, figure=figure, config=GRAPH_CONFIG), className="panel"),
            LIVE_RELAY.store(),
            SELECTION_RELAY.store(),
            dcc.Store(id=ids.Floor.RACK_HTML),
            dcc.Store(id=ids.Floor.RACK_SCROLLED),
            html.Div(
                rack_panel_children(),
                id=ids.Floor.RACK_PANEL,
                className="rack-panel hidden" if rack_id is None else "rack-panel",
            ),
        ],
        className="page page-floor",
    )


def rack_panel_children() -> list:
    """The drill-down skeleton; callbacks fill the figures and tables (the parts in STATIC_PARTS as HTML)."""

    def graph(graph_id):
        return dcc.Graph(
            id=graph_id, config=GRAPH_CONFIG, figure={"layout": {"height": 220, "template": "clustertwin_dark"}}
        )

    return [
        html.Div(
            [
                html.H2(id=ids.Floor.RACK_TITLE),
                whatif_link(ids.Floor.RACK_WHATIF, rack_href(None), "what-if: edit this rack or trip it →"),
                html.Button("close ✕", id=ids.Floor.RACK_CLOSE, n_clicks=0),
            ],
            className="rack-head",
        ),
        html.Div(id=ids.Floor.RACK_SUMMARY, className="muted", title=RACK_POWER_NOTE),
        html.Div(
            [
                html.Div(html.Div(id=ids.Floor.RACK_ELEVATION), className="panel"),
                html.Div([html.H3("CDU"), html.Div(id=ids.Floor.RACK_CDU)], className="panel"),
                html.Div([html.H3("GPU health and XID"), html.Div(id=ids.Floor.RACK_XIDS)], className="panel"),
            ],
            className="grid-3",
        ),
        html.Div(
            [
                html.Div(html.Div(id=ids.Floor.RACK_GPU_TEMP), className="panel"),
                html.Div(html.Div(id=ids.Floor.RACK_GPU_POWER), className="panel"),
                html.Div(html.Div(id=ids.Floor.RACK_GPU_CLOCK), className="panel"),
            ],
            className="grid-3",
        ),
        html.Div(
            [
                html.Div([html.H3("Power feeds"), html.Div(id=ids.Floor.RACK_FEEDS)], className="panel"),
                html.Div([html.H3("Fabric"), html.Div(id=ids.Floor.RACK_FABRIC)], className="panel"),
                html.Div(graph(ids.Floor.RACK_HISTORY), className="panel"),
            ],
            className="grid-3",
        ),
    ]


def _kv(pairs: list[tuple[str, str]]) -> html.Dl:
    children = []
    for key, value in pairs:
        children += [html.Dt(key), html.Dd(value)]
    return html.Dl(children, className="kv")


def cdu_block(info: dict) -> html.Div:
    pumps_ok = info["pumps_running_count"] >= info["pumps_required"]
    pump_class = (
        "status-ok"
        if info["pumps_running_count"] >= info["pumps"]
        else "status-warning"
        if pumps_ok
        else "status-critical"
    )
    return html.Div(
        [
            _kv(
                [
                    ("CDU", info["name"]),
                    ("model", f"{info['model']} ({info['placement']})"),
                    ("loop", dcc.Link(info["loop"], href="/cooling?" + urlencode({"loop": info["loop"]}))),
                    (
                        "pumps running",
                        html.Span(
                            f"{info['pumps_running_count']} of {info['pumps']} (need {info['pumps_required']})",
                            className=pump_class,
                        ),
                    ),
                    ("flow", f"{fmt(info['flow_lpm'], 0)} L/min (design {fmt(info['design_flow_lpm'], 0)} L/min)"),
                    ("supply / return", f"{fmt(info['supply_temp_c'], 1)} / {fmt(info['return_temp_c'], 1)} °C"),
                    ("ΔT", f"{fmt(info['delta_t_k'], 1)} K"),
                    ("heat / capacity", f"{fmt(info['heat_kw'], 1)} / {fmt(info['capacity_kw'], 1)} kW"),
                    (
                        "headroom",
                        html.Span("none: CDU lost (too few pumps)", className="status-critical")
                        if info.get("lost")
                        else html.Span(
                            f"{fmt(info['headroom_kw'], 1)} kW",
                            className="status-critical" if info["headroom_kw"] < 0 else "",
                        ),
                    ),
                    ("racks served", str(info["racks_served"])),
                ]
            )
        ]
    )


def feeds_block(feeds: list[dict]) -> html.Div:
    if not feeds:
        return html.Div("no feeds", className="empty")
    head = html.Tr(
        [
            html.Th("feed"),
            html.Th("element"),
            html.Th("load [kW]", className="num"),
            html.Th("load [%]", className="num"),
            html.Th("N-1 [%]", className="num"),
        ]
    )
    rows = []
    for feed in feeds:
        for i, el in enumerate(feed["chain"]):
            n1_class = "num status-critical" if el["n1_load_frac"] > 1.0 else "num"
            rows.append(
                html.Tr(
                    [
                        html.Td(feed["side"] if i == 0 else ""),
                        html.Td(
                            [
                                dcc.Link(el["name"], href="/power?" + urlencode({"element": el["name"]})),
                                html.Span(f" {el['kind']}", className="muted"),
                            ]
                        ),
                        html.Td(fmt(el["load_kw"], 0), className="num"),
                        html.Td(fmt_pct(el["load_frac"], 0), className="num"),
                        html.Td(fmt_pct(el["n1_load_frac"], 0), className=n1_class),
                    ]
                )
            )
    return html.Table([html.Thead(head), html.Tbody(rows)], className="data")


def fabric_block(links: list[dict]) -> html.Div:
    if not links:
        return html.Div("no fabric links", className="empty")
    head = html.Tr(
        [
            html.Th("leaf switch"),
            html.Th("GPUs", className="num"),
            html.Th("uplinks", className="num"),
            html.Th("down", className="num"),
            html.Th("util mean/max [%]", className="num"),
        ]
    )
    rows = [
        html.Tr(
            [
                html.Td(dcc.Link(link["name"], href="/fabric?" + urlencode({"switch": link["name"], "tier": "leaf"}))),
                html.Td(str(link["gpus"]), className="num"),
                html.Td(
                    f"{link['uplinks']} × {fmt(link['uplink_gbps'] / max(link['uplinks'], 1), 0)} Gb/s", className="num"
                ),
                html.Td(str(link["uplinks_down"]), className="num status-critical" if link["uplinks_down"] else "num"),
                html.Td(f"{fmt_pct(link['mean_util_frac'])} / {fmt_pct(link['max_util_frac'])}", className="num"),
            ]
        )
        for link in links
    ]
    return html.Table([html.Thead(head), html.Tbody(rows)], className="data")


def events_block(events: list[dict]) -> html.Div:
    if not events:
        return html.Div("all GPUs healthy, no XID errors", className="empty")
    head = html.Tr(
        [
            html.Th("node"),
            html.Th("GPU", className="num"),
            html.Th("state"),
            html.Th("XID", className="num"),
            html.Th("temp [°C]", className="num"),
            html.Th("speed [%]", className="num"),
        ]
    )
    rows = [
        html.Tr(
            [
                html.Td(e["node"]),
                html.Td(str(e["index"]), className="num"),
                html.Td(
                    e["state"], className={"down": "status-critical", "throttled": "status-warning"}.get(e["state"], "")
                ),
                html.Td(str(e["xid"]) if e["xid"] else "–", className="num"),
                html.Td(fmt(e["gpu_temp_c"], 1), className="num"),
                html.Td(fmt_pct(e["throttle_frac"]), className="num"),
            ]
        )
        for e in events[:20]
    ]
    more = [html.Div(f"… and {len(events) - 20} more", className="muted")] if len(events) > 20 else []
    return html.Div([html.Table([html.Thead(head), html.Tbody(rows)], className="data"), *more])


def rack_drilldown(view, rack: int) -> dict:
    """Every drill-down output for one rack, keyed by component id."""
    state, snapshot = view.state, view.latest()
    nodes, gpus = rack_gpus(state, rack)
    nrows = node_rows(state, snapshot, nodes, gpus)
    labels = [r["name"] for r in nrows]
    cdu = cdu_info(state, snapshot, rack)
    spec = state.gpu_specs[int(state.gpu_spec[gpus[0]])] if gpus.size else None
    temp_range = (25.0, spec.shutdown_temp_c if spec else 95.0)  # as on the floor plan: up to shutdown
    xid_grid = gpu_grid(state, nodes, gpus, snapshot.last_xid_code.astype(np.float64))
    notes = np.where(xid_grid > 0, np.char.add("XID ", np.nan_to_num(xid_grid).astype(int).astype(str)), "")
    down_grid = gpu_grid(state, nodes, gpus, snapshot.gpu_state.astype(np.float64))
    notes = np.where(down_grid == GPU_DOWN, np.char.add(notes, " down"), notes)
    notes = np.where(down_grid == GPU_OFF, np.char.add(notes, " off"), notes)
    history = view.rack_history(rack, HISTORY_WINDOW_S)
    hall = state.hall_name[state.rack_hall[rack]]
    row = state.row_name[state.rack_row[rack]]
    power_kw = float(snapshot.rack_power_kw[rack])
    return {
        ids.Floor.RACK_TITLE: f"Rack {state.rack_name[rack]}",
        ids.Floor.RACK_SUMMARY: (
            f"hall {hall} · row {row} · {state.rack_type[rack]} · {nodes.size} nodes · {gpus.size} GPUs · "
            f"{fmt(power_kw, 1)} kW rack input power of {fmt(float(state.rack_rated_kw[rack]), 0)} kW rated · "
            f"time to throttle after a pump loss {fmt_duration(float(snapshot.rack_time_to_throttle_s[rack]))}"
        ),
        ids.Floor.RACK_ELEVATION: elevation_view(
            nrows, cdu["name"] if cdu["placement"] == "in-rack" else None, temp_range
        ),
        ids.Floor.RACK_GPU_TEMP: gpu_grid_view(
            gpu_grid(state, nodes, gpus, snapshot.gpu_temp_c),
            labels,
            "GPU temperature",
            "°C",
            temp_range,
            0,
            annotations=notes,
        ),
        ids.Floor.RACK_GPU_POWER: gpu_grid_view(
            gpu_grid(state, nodes, gpus, snapshot.gpu_power_w),
            labels,
            "GPU power",
            "W",
            (0.0, spec.tdp_w if spec else 1000.0),
            0,
        ),
        ids.Floor.RACK_GPU_CLOCK: gpu_grid_view(
            gpu_grid(state, nodes, gpus, snapshot.sm_clock_mhz),
            labels,
            "SM clock",
            "MHz",
            (0.0, spec.max_sm_clock_mhz if spec else 2000.0),
            0,
            higher_is_better=True,
        ),
        ids.Floor.RACK_XIDS: events_block(gpu_events(state, snapshot, gpus)),
        ids.Floor.RACK_CDU: cdu_block(cdu),
        ids.Floor.RACK_FEEDS: feeds_block(feed_chains(state, snapshot, rack)),
        ids.Floor.RACK_FABRIC: fabric_block(fabric_links(state, snapshot, gpus)),
        ids.Floor.RACK_HISTORY: rack_history_figure(history, "gpu_temp_c", "GPU temperature", "°C"),
    }


DRILLDOWN_IDS = (
    ids.Floor.RACK_TITLE,
    ids.Floor.RACK_SUMMARY,
    ids.Floor.RACK_ELEVATION,
    ids.Floor.RACK_GPU_TEMP,
    ids.Floor.RACK_GPU_POWER,
    ids.Floor.RACK_GPU_CLOCK,
    ids.Floor.RACK_XIDS,
    ids.Floor.RACK_CDU,
    ids.Floor.RACK_FEEDS,
    ids.Floor.RACK_FABRIC,
    ids.Floor.RACK_HISTORY,
)
# Drill-down parts sent as HTML (several hundred cells and rows: as Dash components they cost
# the browser ~0.5 s per update); a clientside callback sets them into their empty containers.
STATIC_PARTS = (
    ids.Floor.RACK_ELEVATION,
    ids.Floor.RACK_GPU_TEMP,
    ids.Floor.RACK_GPU_POWER,
    ids.Floor.RACK_GPU_CLOCK,
    ids.Floor.RACK_XIDS,
    ids.Floor.RACK_CDU,
    ids.Floor.RACK_FEEDS,
    ids.Floor.RACK_FABRIC,
)


def drilldown_outputs(view, rack: int) -> tuple:
    """What :func:`update_drilldown` sends for ``rack``: title, summary, the static parts' HTML, history figure."""
    parts = rack_drilldown(view, rack)
    return (
        parts[ids.Floor.RACK_TITLE],
        parts[ids.Floor.RACK_SUMMARY],
        {part: to_html(parts[part]) for part in STATIC_PARTS},
        parts[ids.Floor.RACK_HISTORY],
    )


@dash.callback(
    LIVE_RELAY.output,
    Input(ids.Shell.TICK, "n_intervals"),
    State(ids.Floor.METRIC, "value"),
    State(ids.Floor.JOB, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def live_floor(_n, metric, job, shown):
    screen = callback_screen(shown, PATH)
    return LIVE_RELAY.send(shown, floor_update(screen.view, metric, diff_against(screen), job))


def floor_update(view, metric: str, against=None, job: str | None = None):
    """Live patch: colours and hover numbers of every rack (A − B when ``against`` is given), the
    fleet's marks and, coloured by team or job, the racks' teams or jobs."""
    snapshot = view.latest()
    if snapshot is None:
        return no_update
    layer = fleet_layer(view, job)
    metric = parse_metric(metric, layer)
    return floor_patch(
        grids_for(view.state),
        floor_metrics(view.state, snapshot, against),
        physical_metric(metric),
        floor_overlay(view.state, snapshot, view.alerts(), layer),
        view.state,
        categories=fleet_categories(metric, layer, against),
    )


@dash.callback(
    Output(ids.Floor.HALLS, "figure", allow_duplicate=True),
    Input(ids.Floor.METRIC, "value"),
    State(ids.Floor.SELECTED_RACK, "data"),
    State(ids.Floor.JOB, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def change_metric(metric, rack_name, job, shown):
    screen = callback_screen(shown, PATH)
    view = screen.view
    layer = fleet_layer(view, job)
    return titled(
        floor_view(
            view.state,
            view.latest(),
            parse_metric(metric, layer),
            rack_index(view.state, rack_name),
            diff_against(screen),
            view.alerts(),
            layer,
        ),
        screen,
    )


@dash.callback(
    Output(ids.Floor.SELECTED_RACK, "data"),
    Input(ids.Floor.HALLS, "clickData"),
    Input(ids.Floor.RACK_CLOSE, "n_clicks"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def select_rack(click_data, _close, shown):
    if dash.ctx.triggered_id == ids.Floor.RACK_CLOSE:
        return None
    return clicked_rack_name(callback_view(shown, PATH).state, click_data)


def clicked_rack_name(state, click_data) -> str | None:
    """Rack name from a floor-plan click (the cell text starts with the rack name); no_update for aisles."""
    try:
        point = click_data["points"][0]
    except (TypeError, KeyError, IndexError):
        return no_update
    text = point.get("text")
    name = text.split("<br>")[0].split(" · ")[0] if isinstance(text, str) else None
    if rack_index(state, name) is not None:
        return name
    try:  # figures that keep customdata in click events carry the rack id at index 5
        rack = int(point["customdata"][5])
    except (TypeError, KeyError, IndexError, ValueError):
        return no_update
    return state.rack_name[rack] if 0 <= rack < state.n_racks else no_update


@dash.callback(
    Output(ids.Floor.URL, "search"),
    Input(ids.Floor.METRIC, "value"),
    Input(ids.Floor.SELECTED_RACK, "data"),
    State(ids.Floor.JOB, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def sync_url(metric, rack_name, job, shown):
    if dash.ctx.triggered_id is None:  # Dash's initial call when the page mounts: the URL already says this
        return no_update
    on_page(shown, PATH)
    metric = metric if metric in METRIC_KEYS else DEFAULT_FLOOR_METRIC
    return keep_view(url_search(metric, rack_name, job), shown)


@dash.callback(
    Output(ids.Floor.RACK_PANEL, "className"),
    SELECTION_RELAY.output,
    Output(ids.Floor.RACK_WHATIF, "href"),
    Input(ids.Floor.SELECTED_RACK, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def show_selection(rack_name, shown):
    state = callback_view(shown, PATH).state
    rack = rack_index(state, rack_name)
    return (
        ("rack-panel hidden" if rack is None else "rack-panel"),
        SELECTION_RELAY.send(shown, selection_patch(grids_for(state), rack)),
        rack_href(state.rack_name[rack] if rack is not None else None),
    )


@dash.callback(
    Output(ids.Floor.RACK_TITLE, "children"),
    Output(ids.Floor.RACK_SUMMARY, "children"),
    Output(ids.Floor.RACK_HTML, "data"),
    Output(ids.Floor.RACK_HISTORY, "figure"),
    Input(ids.Floor.SELECTED_RACK, "data"),
    Input(ids.Shell.TICK, "n_intervals"),
    State(ids.Shell.SCREEN, "data"),
)
def update_drilldown(rack_name, _n, shown):
    view = callback_view(shown, PATH)
    rack = rack_index(view.state, rack_name)
    if rack is None or view.latest() is None:
        return no_update, no_update, no_update, no_update
    return drilldown_outputs(view, rack)


# Sets the static parts' HTML into their containers (unchanged parts are left alone) and makes
# their dcc.Link-style anchors navigate inside the app, as dcc.Link does.
dash.clientside_callback(
    """
    function(parts) {
        if (!parts) { return; }
        Object.keys(parts).forEach(function(id) {
            var el = document.getElementById(id);
            if (el && el.staticHtml !== parts[id]) { el.innerHTML = parts[id]; el.staticHtml = parts[id]; }
        });
        var panel = document.getElementById('%s');
        if (panel && !panel.dashLinks) {
            panel.dashLinks = true;
            panel.addEventListener('click', function(event) {
                var link = event.target.closest && event.target.closest('a[data-dash-link]');
                if (!link || event.button !== 0 || event.metaKey || event.shiftKey || event.altKey || event.ctrlKey) { return; }
                event.preventDefault();
                (%s)(link.getAttribute('href'));
                window.scrollTo(0, 0);
            });
        }
    }
    """
    % (ids.Floor.RACK_PANEL, PUSH_STATE_JS),
    Input(ids.Floor.RACK_HTML, "data"),
)


# Opening a rack (a click, a search hit or a deep link) scrolls its panel into view once the
# panel shows; closing it or a live update of the same rack does not scroll.
dash.clientside_callback(
    """
    function(rack, scrolled) {
        if (!rack || rack === scrolled) { return rack || null; }
        var tries = 0;
        (function scroll() {
            var panel = document.getElementById('%s');
            if (panel && !panel.classList.contains('hidden')) {
                panel.scrollIntoView({block: 'start', behavior: 'auto'});
            } else if (tries++ < 40) {
                setTimeout(scroll, 50);
            }
        })();
        return rack;
    }
    """
    % ids.Floor.RACK_PANEL,
    Output(ids.Floor.RACK_SCROLLED, "data"),
    Input(ids.Floor.SELECTED_RACK, "data"),
    State(ids.Floor.RACK_SCROLLED, "data"),
)
