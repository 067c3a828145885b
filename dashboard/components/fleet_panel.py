"""The fleet section of ``/jobs``: running and pending jobs (paged on the server), teams against quota,
fragmentation, allocations by pod or hall, and the link to the fleet what-if (``/fleet-whatif``).

Shown when the view on screen has a fleet (the live hub's :meth:`ingest.live.view.LiveView.fleet`);
other views say they have none.  The jobs table asks for one page at a time
(:func:`dashboard.analysis.fleet_query.query_jobs`), sorted and searched on the server.
The callbacks are the page's (``dashboard/pages/jobs.py``: page modules are executed
afresh for every app, and register their callbacks then); they call :func:`table_page`
and :func:`live_parts`.
"""

from __future__ import annotations

import math

import numpy as np
from dash import dash_table, dcc, html, no_update

from dashboard import ids
from dashboard.analysis.fleet_query import PAGE_SIZE, query_jobs
from dashboard.analysis.fleet_topology import domain_occupancy, nodes_out_ids
from dashboard.components.kpi import kpi_card
from dashboard.figures import fleet as figs
from dashboard.present import theme
from dashboard.present.data_table import GRID_STYLE, Column, data_table
from dashboard.present.formatting import fmt

PATH = "/jobs"
PAGE = ids.Jobs.PAGE
TEAM_WINDOW_S = 86_400.0
GANTT_WINDOW_S = 6 * 3600.0
JOB_COLUMNS = (
    ("job_id", "job"),
    ("state", "state"),
    ("team", "team"),
    ("user", "user"),
    ("kind", "kind"),
    ("n_gpus", "GPUs"),
    ("wait_s", "waited"),
    ("age_s", "running for"),
    ("expected_end_s", "ends (wall time)"),
    ("reason", "pending reason"),
    ("expected_start_s", "predicted start"),
    ("place", "hall · pod"),
)
TEAM_COLUMNS = (
    Column("team", "team"),
    Column("gpus_now_count", "GPUs now", "{:,}"),
    Column("quota_gpus_count", "quota (GPUs)", "{:,}"),
    Column("use_pct", "of quota (%)", "{:.0f}"),
    Column("borrowed_gpus_count", "borrowed (GPUs)", "{:,}"),
    Column("gpu_hours_24h", "GPU-h 24 h", "{:,.0f}"),
    Column("gpu_hours_7d", "GPU-h 7 d", "{:,.0f}"),
    Column("preempted_7d_count", "preempted 7 d", "{:,}"),
    Column("pending_count", "pending jobs", "{:,}"),
)
TABLE_STYLE = dict(
    **GRID_STYLE,
    style_cell_conditional=[{"if": {"column_id": "n_gpus"}, "textAlign": "right"}],
    style_data_conditional=[{"if": {"filter_query": '{state} = "pending"'}, "color": theme.STATUS_WARNING}],
)


def fleet_of(view):
    """The view's fleet (None when it has none: scenarios, replays)."""
    get = getattr(view, "fleet", None)
    return get() if callable(get) else None


def kpis(frame) -> list:
    """Running and pending jobs, GPUs allocated, free and stranded GPUs, nodes out of service."""
    running, pending = frame.count("running"), frame.count("pending")
    alloc = int((frame.gpu_job >= 0).sum())
    frag = frame.fragmentation
    return [
        kpi_card(PAGE, "fleet-running", "Running jobs", "", f"{running:,}", note=f"source: {frame.source}"),
        kpi_card(PAGE, "fleet-pending", "Pending jobs", "", f"{pending:,}", status="warning" if pending else "ok"),
        kpi_card(
            PAGE,
            "fleet-allocated",
            "GPUs allocated",
            "%",
            fmt(100.0 * alloc / max(frame.n_gpus, 1), 1),
            note=f"{alloc:,} of {frame.n_gpus:,}",
        ),
        kpi_card(
            PAGE,
            "fleet-free",
            "Free GPUs",
            "",
            f"{frag['free_gpus_count']:,}",
            note=f"{frag['whole_free_nodes_count']:,} whole nodes · {frag['stranded_gpus_count']:,} stranded",
        ),
        kpi_card(
            PAGE,
            "fleet-nodes-out",
            "Nodes out",
            "",
            f"{len(frame.nodes):,}",
            note="down, in repair, lemon, drained",
            status="warning" if frame.nodes else "ok",
        ),
    ]


def team_table(frame) -> html.Div:
    rows = []
    for t in frame.teams:
        quota = t["quota_gpus_count"]
        use = 100.0 * t["gpus_now_count"] / quota if quota else math.nan
        rows.append(dict(t, use_pct=use, row_class="row-warning" if t["borrowed_gpus_count"] else None))
    return data_table(rows, TEAM_COLUMNS, "no teams", table_id=ids.Jobs.FLEET_TEAMS_TABLE)


def side_figures(fleet, frame, lane: str) -> tuple:
    """Team usage over 24 h, fragmentation, the allocation timeline, the fabric's domains by occupancy."""
    t, g, teams = fleet.team_series(TEAM_WINDOW_S) if frame.source == "fleet model" else ([], [], [])
    usage = figs.team_usage_figure(np.asarray(t), np.asarray(g), teams, "GPUs by team, last 24 h")
    frag = figs.fragmentation_figure(frame.fragmentation["nodes_by_free_gpus"])
    rows = fleet.gantt_rows(GANTT_WINDOW_S) if frame.source == "fleet model" else []
    gantt = figs.gantt_figure(rows, lane, frame.ts_s, teams or [r["team"] for r in frame.teams])
    return usage, frag, gantt, topology_figure(fleet, frame)


def topology_figure(fleet, frame):
    """Leaf groups by pod, or the NVLink blocks when the site has them, coloured by allocated share."""
    topo = fleet.sim.run.topo
    level = "block" if topo.block_nvlink.any() else "leaf"
    occ = domain_occupancy(topo, frame.gpu_job, nodes_out_ids(topo.site, frame.nodes), level)
    what = "NVLink blocks (NVL72 racks)" if level == "block" else "Leaf groups"
    return figs.topology_figure(occ, f"{what} by pod: share of GPUs allocated, free GPUs in each")


def topology_height_px(fleet) -> int:
    """The topology grid's height: a row of cells per pod, within 220–560 px."""
    return int(min(max(90 + 22 * fleet.sim.run.topo.n_pods, 220), 560))


def _graph(graph_id: str, figure, height: str) -> dcc.Graph:
    return dcc.Graph(
        id=graph_id, figure=figure, style={"height": height}, config={"displaylogo": False, "responsive": True}
    )


def section(view) -> html.Div:
    """The fleet section for ``view`` (a note when it has no fleet)."""
    fleet = fleet_of(view)
    if fleet is None:
        return html.Div(
            [html.H2("Fleet"), html.Div("this view has no fleet: the live twin runs one", className="empty")],
            id=ids.Jobs.FLEET,
            className="panel",
        )
    frame = fleet.frame()
    first = query_jobs(frame, "all", "", [{"column_id": "n_gpus", "direction": "desc"}], 0)
    usage, frag, gantt, topology = side_figures(fleet, frame, "pod")
    table = dash_table.DataTable(
        id=ids.Jobs.FLEET_TABLE,
        columns=[{"name": h, "id": k} for k, h in JOB_COLUMNS],
        data=first.rows,
        page_action="custom",
        page_current=0,
        page_size=PAGE_SIZE,
        page_count=first.page_count,
        sort_action="custom",
        sort_mode="single",
        sort_by=[{"column_id": "n_gpus", "direction": "desc"}],
        **TABLE_STYLE,
    )
    controls = html.Div(
        [
            dcc.RadioItems(
                id=ids.Jobs.FLEET_STATE,
                options=[{"label": s, "value": s} for s in ("all", "running", "pending")],
                value="all",
                inline=True,
                className="segmented",
            ),
            dcc.Input(
                id=ids.Jobs.FLEET_SEARCH,
                type="search",
                placeholder="search job, team, user, reason, hall…",
                debounce=True,
                maxLength=100,
                style={"minWidth": "18rem"},
            ),
            html.Span(f"{first.total_count:,} jobs", id=ids.Jobs.FLEET_COUNT, className="muted"),
        ],
        className="controls",
    )
    return html.Div(
        [
            dcc.Store(id=ids.Jobs.FLEET_FIGURES_KEY, data=figures_key(fleet, frame, "pod")),
            html.H2("Fleet"),
            html.Div(kpis(frame), id=ids.Jobs.FLEET_KPIS, className="kpis"),
            html.Div(
                [
                    dcc.Link("Nodes out of service and failures by cause →", href="/nodes"),
                    html.Span(" · "),
                    dcc.Link("The floor by team →", href="/floor?metric=team"),
                ],
                className="muted",
            ),
            html.Div([html.H3("Running and pending jobs"), controls, table], className="panel"),
            html.Div(
                [html.H3("Teams against quota"), html.Div(team_table(frame), id=ids.Jobs.FLEET_TEAMS)],
                className="panel",
            ),
            html.Div(
                [
                    html.Div(_graph(ids.Jobs.FLEET_USAGE, usage, "300px"), className="panel"),
                    html.Div(_graph(ids.Jobs.FLEET_FRAG, frag, "300px"), className="panel"),
                ],
                className="grid-2",
            ),
            html.Div(
                _graph(ids.Jobs.FLEET_TOPOLOGY, topology, f"{topology_height_px(fleet)}px"),
                className="panel",
            ),
            html.Div(
                [
                    dcc.RadioItems(
                        id=ids.Jobs.FLEET_LANE,
                        options=[{"label": f"by {x}", "value": x} for x in ("pod", "hall")],
                        value="pod",
                        inline=True,
                        className="segmented",
                    ),
                    _graph(ids.Jobs.FLEET_GANTT, gantt, "340px"),
                ],
                className="panel",
            ),
            html.Div(
                [
                    html.H3("Fleet what-if"),
                    html.Div(
                        [
                            "Policy, quota, hall conversion, demand response and maintenance against the baseline "
                            "over 1–30 days: ",
                            dcc.Link("open the fleet what-if", href="/fleet-whatif"),
                        ],
                        className="muted",
                    ),
                ],
                id=ids.Jobs.FLEET_WHATIF,
                className="panel",
            ),
        ],
        id=ids.Jobs.FLEET,
    )


def table_page(view, page, sort_by, state, search) -> tuple:
    """Outputs of the table's callback: one page of rows, the page count, the count text (None: no fleet)."""
    fleet = fleet_of(view)
    if fleet is None:
        return None
    res = query_jobs(fleet.frame(), state or "all", search or "", sort_by, page or 0)
    return res.rows, res.page_count, f"{res.total_count:,} jobs"


def figures_key(fleet, frame, lane: str) -> str:
    """What the figures show changes with: the fleet's minute samples (Slurm: its read time), the lanes."""
    sampled = fleet.history.count if frame.source == "fleet model" else frame.ts_s
    return f"{id(fleet)}:{frame.source}:{sampled}:{lane}"


def live_parts(view, lane: str, shown_key: str | None) -> tuple | None:
    """Outputs of the live callback: KPIs, team table, usage, fragmentation, timeline, topology, figures key (None:
    no fleet).

    The figures (the costly part) are rebuilt when :func:`figures_key` moved since the
    browser's last ones (once a simulated minute), else left as they are (``no_update``).
    """
    fleet = fleet_of(view)
    if fleet is None:
        return None
    frame = fleet.frame()
    lane = lane or "pod"
    key = figures_key(fleet, frame, lane)
    figures = side_figures(fleet, frame, lane) if key != shown_key else (no_update,) * 4
    return (kpis(frame), team_table(frame), *figures, key)
