"""``/jobs``: the fleet (its jobs, teams, fragmentation, allocations), then where each training job runs,
its step-time breakdown, MFU and goodput, bottleneck racks.

The fleet section is :mod:`dashboard.components.fleet_panel`.

Deep link: ``/jobs?job=<job name>&rack=<rack name>`` selects a job and marks a rack.
"""

from __future__ import annotations

import math

import dash
import numpy as np
from dash import Input, Output, State, callback, ctx, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids
from dashboard.analysis.job_actions import JobDiagnosis, diagnose, expected_after_drain
from dashboard.callbacks import inputs
from dashboard.callbacks.click_data import clicked_custom
from dashboard.callbacks.figure_patch import figure_patch, live_render, rendered_record
from dashboard.callbacks.patch_relay import relay
from dashboard.components import fleet_panel
from dashboard.components.kpi import kpi_card
from dashboard.figures import jobs as figs
from dashboard.figures.trends import trend_figure
from dashboard.present.data_table import Column, data_table
from dashboard.present.formatting import NOT_RECORDED, fmt, fmt_duration
from dashboard.shell.deep_link import name_index, register_url_writer
from dashboard.shell.entity_links import entity_href
from dashboard.views import compare
from dashboard.views.context import selection_of
from dashboard.views.registry import callback_view, layout_screen, view_layout
from twin.cache import BoundedCache
from twin.engine.snapshot import JobStatus, Snapshot
from twin.site.tables import SiteTables

PATH = "/jobs"
dash.register_page(__name__, path=PATH, name="Jobs", title="Jobs · ClusterTwin", order=5)

PAGE = ids.Jobs.PAGE
BOTTLENECK_COLUMNS = (
    Column("rack", "rack", href="/floor?rack={}"),
    Column("job_gpus", "job GPUs", "{:,}"),
    Column("slowest_pct", "slowest GPU speed (%)", "{:.0f}"),
    Column("max_gpu_temp_c", "hottest GPU (°C)", "{:.1f}"),
    Column("rack_power_kw", "rack power (kW)", "{:,.1f}"),
    Column("why", "why it is slow"),
)
CAUSE_COLUMNS = (
    Column("entity", "cause"),
    Column("reason", "what"),
    Column("gpus", "job GPUs", "{:,}"),
    Column("speed_pct", "speed (%)", "{:.0f}"),
)
THROUGHPUT_WINDOW_S = 3600.0
_expected_rates: BoundedCache[float] = BoundedCache(64)  # (site, job, snapshot ts, hosts) → tokens/s after draining


def _si(value: float, unit: str) -> str:
    """``2.78 M tokens/s`` style: a number with a k/M/G prefix."""
    if not math.isfinite(value):
        return "–"
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:,.2f} {prefix}{unit}"
    return f"{value:,.0f} {unit}"


PHASE_TEXT = {
    "running": "running",
    "checkpointing": "writing a checkpoint",
    "detecting": "failure detected",
    "draining": "draining, swapping spares",
    "restoring": "restoring the checkpoint",
    "warming_up": "warming up",
}


def kpis(job: JobStatus) -> list:
    """Phase and step time, MFU, throughput and goodput, checkpoint age, lost work, drain gain."""
    s = figs.job_summary(job)
    running = math.isfinite(s["step_time_s"])
    phase = job.restart_phase
    drain = s["drain_gain_pct"]
    drain_text = f"{drain:.1f}" if math.isfinite(drain) else "restart"
    drain_note = (
        f"draining {np.asarray(job.bottleneck_racks).size} bottleneck racks"
        if math.isfinite(drain)
        else "the job is stopped: draining restores it"
    )
    age = job.checkpoint_age_s
    return [
        kpi_card(
            PAGE,
            "step",
            "Step time",
            "s" if running else "",
            f"{s['step_time_s']:.2f}" if running else "stalled",
            note=PHASE_TEXT.get(phase, phase) if phase != "running" or not running else f"{s['gpus']:,} GPUs",
            status="ok" if running and phase == "running" else "warning" if running else "critical",
        ),
        kpi_card(PAGE, "mfu", "MFU", "%", f"{s['mfu_pct']:.1f}", note=f"{s['gpu_model_tflops']:,.0f} TFLOP/s per GPU"),
        kpi_card(
            PAGE,
            "tokens",
            "Throughput",
            "tokens/s",
            _si(s["tokens_per_s"], "").strip(),
            note=PHASE_TEXT.get(phase, phase),
            status="critical" if s["tokens_per_s"] <= 0 else "",
        ),
        kpi_card(
            PAGE,
            "goodput",
            "Goodput",
            "tokens/s",
            _si(s["goodput_tokens_per_s"], "").strip(),
            note=f"ETTR {s['ettr_pct']:.0f} %",
        ),
        kpi_card(
            PAGE,
            "checkpoint",
            "Checkpoint age",
            "min",
            f"{age / 60:.0f}" if math.isfinite(age) else "–",
            note=f"every {s['checkpoint_interval_min']:.0f} min",
        ),
        kpi_card(
            PAGE,
            "lost",
            "Work lost to failures",
            "min",
            fmt(job.lost_work_s / 60, 1),
            note=f"{job.interruptions_total} interruption(s) · {_si(job.lost_tokens_count, 'tokens')}"
            if math.isfinite(job.lost_work_s)
            else NOT_RECORDED,  # a replayed moment does not know it
            status="warning" if job.interruptions_total else "ok",
        ),
        kpi_card(
            PAGE,
            "drain",
            "Drain gain",
            "%" if math.isfinite(drain) else "",
            drain_text,
            note=drain_note,
            status="warning" if not math.isfinite(drain) or drain >= 1 else "ok",
        ),
    ]


def timeline_table(view, job: JobStatus) -> html.Div:
    """The job's failures, restarts and checkpoints, newest first."""
    events = view.job_timeline(job.name)[::-1][:20]
    if not events:
        return html.Div("no failures, restarts or checkpoints recorded yet", className="empty")
    rows = [
        html.Tr(
            [
                html.Td(f"{e['ts']:%H:%M:%S}", className="num"),
                html.Td(PHASE_TEXT.get(e["phase"], e["phase"])),
                html.Td(f"{e['lost_work_s'] / 60:.1f}", className="num"),
            ]
        )
        for e in events
    ]
    head = html.Tr(
        [html.Th("UTC", className="num"), html.Th("phase from then"), html.Th("lost so far (min)", className="num")]
    )
    return html.Table([html.Thead(head), html.Tbody(rows)], className="data")


def replay_record(view, job: JobStatus) -> html.Div | None:
    """In a replayed moment: the recorded step time and throughput against the twin's (None in other views)."""
    rows = view.job_record(job.name) if hasattr(view, "job_record") else []
    if not rows:
        return None

    def number(value: float, unit: str) -> str:
        if not math.isfinite(value):
            return "stalled" if value == math.inf else "–"
        return f"{value:.2f}" if unit == "s" else _si(value, "").strip()

    body = [
        html.Tr(
            [
                html.Td(f"{r['quantity']} ({r['unit']})"),
                html.Td(number(r["recorded"], r["unit"]), className="num"),
                html.Td(number(r["twin"], r["unit"]), className="num"),
            ]
        )
        for r in rows
    ]
    head = html.Tr([html.Th(""), html.Th("recorded", className="num"), html.Th("twin", className="num")])
    return html.Div(
        [
            html.Table([html.Thead(head), html.Tbody(body)], className="data"),
            html.Div("The twin evaluates the job on the recorded throttling and failed links.", className="muted"),
        ],
        className="replay-job",
        **{"data-replay-job": job.name},
    )


def diagnosis_children(view, snap: Snapshot | None, job: JobStatus | None) -> html.Div:
    """The diagnosis panel, preceded in a replayed moment by the recorded-against-twin figures."""
    if job is None or snap is None:
        return html.Div("no training job running", className="empty")
    record = replay_record(view, job)
    panel = diagnosis_panel(view, snap, job)
    return panel if record is None else html.Div([record, panel])


def find_job(snap: Snapshot, name: str | None) -> JobStatus | None:
    """The job called ``name``, else the largest job, else None."""
    for job in snap.jobs:
        if job.name == name:
            return job
    return max(snap.jobs, key=lambda j: np.asarray(j.gpu_ids).size) if snap.jobs else None


def _job_alert(alerts: list[dict], job: JobStatus) -> dict | None:
    """The open stalled/slowed alert of ``job`` (its start time and the throughput it lost)."""
    for alert in alerts:
        if (
            alert.get("entity_kind") == "job"
            and alert.get("entity_name") == job.name
            and alert.get("cleared_at") is None
        ):
            return alert
    return None


def _expected(view, snap: Snapshot, job: JobStatus, diag: JobDiagnosis) -> float:
    """Tokens/s after draining and restarting on spares (cached per snapshot; NaN without the job's spec)."""
    placed = next((p for p in view.placed_jobs() if p.spec.name == job.name), None)
    if placed is None or not diag.drain_hosts:
        return math.nan
    key = (view.state.name, job.name, snap.ts, tuple(diag.drain_hosts))
    return _expected_rates.get_or_make(
        key, lambda: expected_after_drain(view.state, snap, placed.spec, placed.gpu_ids, diag)
    )


def diagnosis_panel(view, snap: Snapshot, job: JobStatus) -> html.Div:
    """For a stalled or slowed job: since when, what it lost, the causes, the hosts to drain, the gain."""
    state = view.state
    diag = diagnose(state, snap, job)
    if diag.condition == "running":
        return html.Div(f"{job.name} is running at full pace: nothing to drain.", className="empty")
    alert = _job_alert(view.alerts(active_only=True), job)
    since = alert.get("raised_at") or alert.get("ts") if alert else None
    lost_rate = float((alert.get("impact") or {}).get("tokens_per_s", 0.0)) if alert else 0.0
    age_s = (snap.ts - since).total_seconds() if since is not None else math.nan
    head = f"{job.name} {diag.condition}"
    if since is not None:
        head += f" since {since:%H:%M:%S} UTC ({fmt_duration(age_s)})"
    head += f", {_si(job.tokens_per_s, 'tokens/s')}"
    if job.interruptions_total:  # the restart cycle counts what failures cost (the same figure as the KPI)
        lost = [f"work lost to failures {job.lost_work_s / 60:.1f} min, {_si(job.lost_tokens_count, 'tokens')}"]
    else:
        lost = (
            [f"throughput lost so far ≈ {_si(lost_rate * age_s, 'tokens')}"]
            if since is not None and lost_rate > 0
            else []
        )
    rows = [
        {"entity": c.entity_name, "reason": c.reason, "gpus": c.gpus, "speed_pct": c.speed_frac * 100.0}
        for c in diag.causes
    ]
    for row, cause in zip(rows, diag.causes):
        row["href"] = entity_href(state, cause.entity_kind, None, cause.entity_name)
    causes = html.Table(
        [
            html.Thead(html.Tr([html.Th(c.header, className="num" if c.fmt else None) for c in CAUSE_COLUMNS])),
            html.Tbody(
                [
                    html.Tr(
                        [
                            html.Td(dcc.Link(r["entity"], href=r["href"]) if r["href"] else r["entity"]),
                            html.Td(r["reason"]),
                            html.Td(f"{r['gpus']:,}", className="num"),
                            html.Td(f"{r['speed_pct']:.0f}", className="num"),
                        ]
                    )
                    for r in rows
                ]
            ),
        ],
        className="data",
    )
    expected = _expected(view, snap, job, diag)
    after = (
        f"expected after draining and restarting on spares: {_si(expected, 'tokens/s')}"
        if math.isfinite(expected)
        else "expected throughput after draining: needs the job's placement"
    )
    checkpoint = f"checkpoints every {job.checkpoint_interval_s / 60:.0f} min (restart loses up to that much work)"
    return html.Div(
        [
            html.Div(
                head, className=f"job-condition status-{'critical' if diag.condition == 'stalled' else 'warning'}"
            ),
            html.Div(" · ".join(lost + [checkpoint]), className="muted"),
            causes,
            html.H3(f"Drain {len(diag.drain_hosts)} host{'s' if len(diag.drain_hosts) != 1 else ''}"),
            html.Pre(diag.drain_command, className="drain-command"),
            html.Div(after, className="expected"),
        ],
        className="diagnosis",
    )


def jobs_view(
    state: SiteTables,
    snap: Snapshot,
    job_name: str | None,
    rack: int | None,
    full: bool = True,
    shown_placement: str | None = None,
) -> tuple:
    """Outputs: (placement, breakdown, bottleneck table, KPIs, placement key); Patches when not ``full``.

    When the job still runs where ``shown_placement`` says, the placement patch carries
    only the bottleneck racks; otherwise every trace is replaced.
    """
    job = find_job(snap, job_name)
    if job is None:
        empty = html.Div("no training job running", className="empty")
        return {}, {}, empty, [empty], None
    placement = figs.placement_figure(state, snap, job, rack)
    breakdown = figs.breakdown_figure(snap.jobs)
    reasons = {c.entity_name: c.reason for c in diagnose(state, snap, job).causes if c.entity_kind == "rack"}
    rows = [
        dict(r, why=reasons.get(r["rack"], "not slower than the job's pace"))
        for r in figs.bottleneck_rows(state, snap, job)
    ]
    table = data_table(rows, BOTTLENECK_COLUMNS, "no bottleneck racks")
    cards = kpis(job)
    key = figs.placement_key(state, job)
    if not full:
        moved = key != shown_placement
        placement = figure_patch(placement, None if moved else {2: ("x", "y", "customdata", "text")})
        breakdown = figure_patch(breakdown, None, title=False)
    return placement, breakdown, table, cards, key


def throughput_figure(view):
    """The view's training throughput over the last hour."""
    return trend_figure(
        view.trend(THROUGHPUT_WINDOW_S),
        [("tokens_per_s", "tokens/s")],
        "throughput",
        "tokens/s",
        "Throughput, last hour",
        uirevision="jobs-throughput",
        from_zero=True,
    )


def _graph(graph_id: str, figure, height: str) -> dcc.Graph:
    return dcc.Graph(
        id=graph_id, figure=figure, style={"height": height}, config={"displaylogo": False, "responsive": True}
    )


def comparison(screen) -> list:
    """Compare mode: every job's headline numbers in A against B (jobs matched by name)."""
    a, b = screen.view.latest(), screen.compare.latest()
    if a is None or b is None:
        return [compare.header(screen), html.Div("no data in one of the views", className="empty")]
    panels = []
    for job in a.jobs:
        other = next((j for j in b.jobs if j.name == job.name), None)
        sa = figs.job_summary(job)
        sb = figs.job_summary(other) if other is not None else {k: math.nan for k in sa}
        rows = [
            ("step time", "s", 2, sa["step_time_s"], sb["step_time_s"]),
            ("MFU", "%", 1, sa["mfu_pct"], sb["mfu_pct"]),
            ("throughput", "tokens/s", 0, sa["tokens_per_s"], sb["tokens_per_s"]),
            ("goodput", "tokens/s", 0, sa["goodput_tokens_per_s"], sb["goodput_tokens_per_s"]),
            ("ETTR", "%", 1, sa["ettr_pct"], sb["ettr_pct"]),
            ("drain gain", "%", 1, sa["drain_gain_pct"], sb["drain_gain_pct"]),
        ]
        panels.append(
            html.Div(
                [
                    html.H3(f"Job {job.name}" + ("" if other is not None else " (not running in B)")),
                    compare.numbers_table(rows, screen),
                ],
                className="panel",
            )
        )
    return [compare.header(screen)] + (panels or [html.Div("no running jobs in A", className="empty")])


compare.register(PAGE, comparison)


@view_layout
@inputs.query_layout(rack=inputs.site_entity("rack", "rack_name"))
def layout(job: str | None = None, rack: str | None = None, **_kwargs) -> html.Div:
    """The page; ``job`` (name) and ``rack`` (name) from the URL."""
    screen = layout_screen(**_kwargs)
    view = screen.view
    tick = view.latest_tick()
    state, snap = view.state, tick.snapshot
    rack_id = name_index(state.rack_name, rack)
    names = [j.name for j in snap.jobs] if snap is not None else []
    chosen = find_job(snap, job) if snap is not None else None
    selection = {
        "job": chosen.name if chosen else job,
        "rack": state.rack_name[rack_id] if rack_id is not None else None,
    }
    if snap is None:
        placement, breakdown, table, cards = {}, {}, html.Div("no data yet", className="empty"), []
        rendered = None
    else:
        placement, breakdown, table, cards, key = jobs_view(state, snap, selection["job"], rack_id)
        rendered = rendered_record(snap.ts.isoformat(), selection, screen.selection.params(), placement=key)
    return html.Div(
        [
            dcc.Store(id=ids.Jobs.SELECTION, data=selection),
            dcc.Store(id=ids.Jobs.RENDERED, data=rendered),
            dcc.Store(id=ids.Jobs.URL_SYNC),
            FIGURES_RELAY.store(),
            html.Div(
                [
                    html.H1("Jobs"),
                    html.Div(
                        [
                            html.Label("Job", htmlFor=ids.Jobs.JOB),
                            dcc.Dropdown(
                                id=ids.Jobs.JOB,
                                options=names,
                                value=selection["job"],
                                clearable=False,
                                className="metric-select",
                            ),
                        ],
                        className="controls",
                    ),
                ],
                className="page-title",
            ),
            compare.section(PAGE, screen),
            fleet_panel.section(view),
            html.H2("Training job"),
            html.Div(cards, id=ids.Jobs.KPIS, className="kpis"),
            html.Div(
                [
                    html.Div(
                        [
                            html.H3("Diagnosis and action"),
                            html.Div(diagnosis_children(view, snap, chosen), id=ids.Jobs.DIAGNOSIS),
                            html.H3("Timeline: failures, restarts, checkpoints"),
                            html.Div(
                                timeline_table(view, chosen) if chosen is not None else None, id=ids.Jobs.TIMELINE
                            ),
                        ],
                        className="panel",
                    ),
                    html.Div(_graph(ids.Jobs.THROUGHPUT, throughput_figure(view), "260px"), className="panel"),
                ],
                className="grid-2",
            ),
            html.Div(
                [
                    html.Div(
                        [
                            _graph(ids.Jobs.PLACEMENT, placement, "440px"),
                            html.Div("Click a rack to mark it; rack names link to the floor view.", className="muted"),
                        ],
                        className="panel",
                    ),
                    html.Div(
                        [
                            html.H3("Step time by component (s)"),
                            _graph(ids.Jobs.BREAKDOWN, breakdown, "260px"),
                            html.H3("Bottleneck racks (slowest GPUs set the pace)"),
                            html.Div(table, id=ids.Jobs.BOTTLENECKS),
                        ],
                        className="panel",
                    ),
                ],
                className="grid-2",
            ),
        ]
    )


@callback(
    Output(ids.Jobs.SELECTION, "data"),
    Input(ids.Jobs.JOB, "value"),
    Input(ids.Jobs.PLACEMENT, "clickData"),
    State(ids.Jobs.SELECTION, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def select(job_name, click, selection, shown):
    """The dropdown picks the job; a click on a job rack marks it."""
    state = callback_view(shown, PATH).state
    selection = dict(selection or {})
    if ctx.triggered_id == ids.Jobs.PLACEMENT:
        custom = clicked_custom(click)
        if not custom or not 0 <= int(custom[0]) < state.n_racks:
            raise PreventUpdate
        selection["rack"] = state.rack_name[int(custom[0])]
    else:
        if job_name == selection.get("job"):
            raise PreventUpdate
        selection["job"] = job_name
    return selection


FIGURES_RELAY = relay(ids.Jobs.FIGURES, (ids.Jobs.PLACEMENT, "figure"), (ids.Jobs.BREAKDOWN, "figure"))


@callback(
    FIGURES_RELAY.output,
    Output(ids.Jobs.BOTTLENECKS, "children"),
    Output(ids.Jobs.KPIS, "children"),
    Output(ids.Jobs.JOB, "options"),
    Output(ids.Jobs.RENDERED, "data"),
    Output(ids.Jobs.DIAGNOSIS, "children"),
    Output(ids.Jobs.THROUGHPUT, "figure"),
    Output(ids.Jobs.TIMELINE, "children"),
    Input(ids.Shell.TICK, "n_intervals"),
    Input(ids.Jobs.SELECTION, "data"),
    State(ids.Jobs.RENDERED, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def refresh(_n, selection, rendered, shown):
    """New snapshot → patch the data; new selection or view → rebuild."""
    view = callback_view(shown, PATH)
    tick, selection, full, record = live_render(view, rendered, selection, selection_of(shown).params())
    snap = tick.snapshot
    rack = name_index(view.state.rack_name, selection.get("rack"))
    placement, breakdown, *views, key = jobs_view(
        view.state, snap, selection.get("job"), rack, full=full, shown_placement=(rendered or {}).get("placement")
    )
    now = {**record, "placement": key}
    job = find_job(snap, selection.get("job"))
    diagnosis = diagnosis_children(view, snap, job)
    timeline = timeline_table(view, job) if job is not None else None
    return (
        FIGURES_RELAY.send(shown, placement, breakdown),
        *views,
        [j.name for j in snap.jobs],
        now,
        diagnosis,
        throughput_figure(view),
        timeline,
    )


register_url_writer(ids.Jobs.SELECTION, ids.Jobs.URL_SYNC)


@callback(
    Output(ids.Jobs.FLEET_TABLE, "data"),
    Output(ids.Jobs.FLEET_TABLE, "page_count"),
    Output(ids.Jobs.FLEET_COUNT, "children"),
    Input(ids.Shell.TICK, "n_intervals"),
    Input(ids.Jobs.FLEET_TABLE, "page_current"),
    Input(ids.Jobs.FLEET_TABLE, "sort_by"),
    Input(ids.Jobs.FLEET_STATE, "value"),
    Input(ids.Jobs.FLEET_SEARCH, "value"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def fleet_table(_n, page, sort_by, state, search, shown):
    """One page of the fleet's jobs, sorted and searched on the server."""
    out = fleet_panel.table_page(callback_view(shown, PATH), page, sort_by, state, search)
    if out is None:
        raise PreventUpdate
    return out


@callback(
    Output(ids.Jobs.FLEET_KPIS, "children"),
    Output(ids.Jobs.FLEET_TEAMS, "children"),
    Output(ids.Jobs.FLEET_USAGE, "figure"),
    Output(ids.Jobs.FLEET_FRAG, "figure"),
    Output(ids.Jobs.FLEET_GANTT, "figure"),
    Output(ids.Jobs.FLEET_TOPOLOGY, "figure"),
    Output(ids.Jobs.FLEET_FIGURES_KEY, "data"),
    Input(ids.Shell.TICK, "n_intervals"),
    Input(ids.Jobs.FLEET_LANE, "value"),
    State(ids.Jobs.FLEET_FIGURES_KEY, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def fleet_live(_n, lane, shown_key, shown):
    """KPIs and teams of the fleet now; fragmentation and the timelines when they moved."""
    out = fleet_panel.live_parts(callback_view(shown, PATH), lane, shown_key)
    if out is None:
        raise PreventUpdate
    return out
