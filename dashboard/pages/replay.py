"""``/replay``: the incident library, one incident's timeline, and the twin against the recording.

Picking an incident opens ``/replay?view=replay:<incident>@<start>``.  The timeline's
slider runs over the recorded frames (frames where alerts opened marked); play advances it in the browser at
the chosen speed from the wall clock, so a slow server never slows the replayed time;
"next event" jumps to the next frame where an alert opened.  Every move writes the
instant into the URL (``?view=replay:<incident>@<time>``, replacing the history entry) and
into the navigation links, so every other page opens on that moment.  "Twin vs recorded"
re-runs the twin over the whole recording once per incident file (a few seconds on a
100k-GPU site, cached) and lays its projection over the recorded readings with CV(RMSE)
and NMBE per signal.
"""

from __future__ import annotations

import warnings
from datetime import UTC

import dash
import numpy as np
import plotly.graph_objects as go
from dash import ALL, Input, Output, State, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids
from dashboard.auth import audit, callback_requires, needs_role
from dashboard.components.view_banner import banner, unavailable_banner
from dashboard.present.data_table import Column, data_table
from dashboard.present.formatting import fmt
from dashboard.present.theme import TEMPLATE_NAME
from dashboard.shell.frame import SCREEN_OF_URL_JS
from dashboard.views.context import ViewSelection, live_view, site_db
from dashboard.views.registry import ViewUnavailable, screen_for
from dashboard.views.replay import IncidentRecording, ReplayError, incident_recording
from ingest.replay.hits import teams_hit
from ingest.replay.library import library_entries as shared_library_entries
from ingest.replay.replay import ReplayResult, replay
from twin.cache import BoundedCache
from twin.engine.snapshot import GPU_DOWN, GPU_THROTTLED
from twin.engine.view import REPLAY, parse_view_key

dash.register_page(__name__, path="/replay", name="Replay", title="Replay · ClusterTwin", order=80)

SPEEDS_X = (1, 5, 20, 50, 100)
DEFAULT_SPEED_X = 20
PLAY_EVERY_MS = 250
# component kinds (named here: a literal type="…" reads as a plotly trace type to the bundle check)
SEARCH_INPUT, SPINNER = "search", "dot"
# signal → (title, unit, reduction over entities per frame)
TWIN_SIGNALS = (
    ("gpu_temp_c", "Hottest detail GPU", "°C", np.nanmax),
    ("coolant_return_temp_c", "Hottest CDU return", "°C", np.nanmax),
    ("coolant_supply_temp_c", "Mean CDU supply", "°C", np.nanmean),
    ("it_power_mw", "IT power", "MW", np.nanmean),
    ("job_tokens_per_s", "Job throughput", "tokens/s", np.nanmean),
)
METRIC_COLUMNS = (
    Column("signal", "signal"),
    Column("cv_rmse", "CV(RMSE) (%)", "{:.2f}"),
    Column("nmbe", "NMBE (%)", "{:+.2f}"),
    Column("n", "pairs", "{:,}"),
)


# ------------------------------------------------------------------ library


def database_incidents() -> list:
    """The Incident rows of the app's database ([] without a database or when it cannot be read)."""
    engine = site_db()
    if engine is None:
        return []
    from sqlalchemy.exc import SQLAlchemyError

    from ingest.store.incidents import stored_incidents

    try:
        return stored_incidents(engine)
    except SQLAlchemyError:
        return []


def library_entries() -> list[dict]:
    """Every incident: bundle files and the app database's rows (:func:`ingest.replay.library.library_entries`)."""
    return shared_library_entries(rows=database_incidents())


def matches(entry: dict, query: str | None) -> bool:
    """Whether every word of ``query`` is in the incident's name, title or one of its tags (case-insensitive)."""
    words = (query or "").lower().split()
    text = " ".join([entry["name"], entry["title"], *entry["tags"]]).lower()
    return all(w in text for w in words)


def _window(entry: dict) -> str:
    start, end = entry["start"].replace("T", " ")[:16], entry["end"].replace("T", " ")[11:16]
    return f"{start}–{end} UTC"


def library_cards(entries: list[dict], query: str | None, selected: str | None) -> list:
    shown = [e for e in entries if matches(e, query)]
    if not shown:
        return [html.Div(f"no incident matches {query!r}", className="empty")]
    start = lambda e: e["start"].replace("+00:00", "Z")  # noqa: E731
    return [
        html.Div(
            [
                dcc.Link(
                    e["title"],
                    href=f"/replay?view=replay:{e['name']}@{start(e)}",
                    className="replay-title",
                    id={"type": "replay-incident", "name": e["name"]},
                )
                if e["file"]
                else html.Span(
                    e["title"], className="replay-title muted", id={"type": "replay-incident", "name": e["name"]}
                ),
                html.Div(
                    [
                        html.Code(e["name"]),
                        " · ",
                        e["site_name"],
                        " · ",
                        _window(e),
                        " · ",
                        html.Span(e["kept"], className="replay-kept"),
                    ],
                    className="replay-meta",
                ),
                html.Div([html.Span(t, className="replay-tag") for t in e["tags"]], className="replay-tags"),
                html.P(e["notes"], className="replay-notes"),
            ],
            className="replay-card selected" if e["name"] == selected else "replay-card",
        )
        for e in shown
    ]


# ------------------------------------------------------------------ timeline
def _iso(ts) -> str:
    return f"{ts.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


def event_frames(rec: IncidentRecording) -> list[int]:
    """Frame indices where at least one alert opened (clearings are not marked)."""
    return sorted({rec.frame_index(t) for t in rec.event_times()})


def timeline(rec: IncidentRecording, index: int) -> html.Div:
    times = [_iso(t) for t in rec.rec.ts]
    events = event_frames(rec)
    t0 = rec.rec.ts[0]
    marks = {i: {"label": "▲", "style": {"color": "#e69f00"}} for i in events}
    return html.Div(
        [
            html.H2(rec.bundle.metadata["title"]),
            html.Div(
                [
                    html.Button("Play", id=ids.Replay.PLAY, n_clicks=0, className="button replay-play"),
                    html.Button("Next event ▸", id=ids.Replay.NEXT_EVENT, n_clicks=0, className="button"),
                    html.Span("speed", className="replay-label"),
                    dcc.RadioItems(
                        [{"label": f"{s}×", "value": s} for s in SPEEDS_X],
                        DEFAULT_SPEED_X,
                        id=ids.Replay.SPEED,
                        inline=True,
                        className="segmented replay-speed",
                    ),
                    html.Span(
                        _iso(rec.rec.ts[index]).replace("T", " ").replace("Z", " UTC"),
                        id=ids.Replay.INSTANT,
                        className="replay-instant",
                    ),
                ],
                className="replay-controls",
            ),
            dcc.Slider(
                0,
                len(times) - 1,
                1,
                value=index,
                marks=marks,
                id=ids.Replay.SLIDER,
                updatemode="drag",
                included=True,
                allow_direct_input=False,
            ),
            html.Div(
                [
                    html.Span(f"{t0:%H:%M:%S}"),
                    html.Span(
                        f"{len(events)} frames where alerts opened (▲), frames every {rec.bundle.metadata['frame_every_s']:g} s"
                    ),
                    html.Span(f"{rec.rec.ts[-1]:%H:%M:%S} UTC"),
                ],
                className="replay-help replay-ends",
            ),
            dcc.Interval(id=ids.Replay.INTERVAL, interval=PLAY_EVERY_MS, disabled=True, n_intervals=0),
            dcc.Store(
                id=ids.Replay.FRAMES,
                data={
                    "name": rec.name,
                    "times": times,
                    "events": events,
                    "secs": [float(s - rec.times_s[0]) for s in rec.times_s],
                },
            ),
            dcc.Store(id=ids.Replay.CLOCK, data=None),
            dcc.Store(id=ids.Replay.URL_SYNC, data=f"{REPLAY}:{rec.name}@{times[index]}"),
        ],
        id=ids.Replay.TIMELINE,
        className="panel replay-timeline",
    )


def moment_rows(view) -> list:
    """What was recorded at the instant: a few site figures and the alerts open then."""
    snap, s = view.latest(), view.state
    short = [s.cdu_name[c] for c in np.flatnonzero(snap.pumps_running_count < s.cdu_spec_array("pumps"))]
    alerts = view.alerts()
    figures = [
        ("IT power", f"{fmt(snap.it_power_mw, 2)} MW"),
        ("facility power", f"{fmt(snap.facility_power_mw, 2)} MW"),
        ("hottest GPU", f"{fmt(float(np.nanmax(snap.rack_max_gpu_temp_c)), 1)} °C"),
        ("GPUs throttled", f"{int((snap.gpu_state == GPU_THROTTLED).sum()):,}"),
        ("GPUs down", f"{int((snap.gpu_state == GPU_DOWN).sum()):,}"),
        ("CDUs short of pumps", ", ".join(short) or "none"),
        ("alerts open", f"{len(alerts)}"),
    ]
    return [
        html.Div(
            [
                html.Div(
                    [html.Div(k, className="replay-figure-label"), html.Div(v, className="replay-figure-value")],
                    className="replay-figure",
                )
                for k, v in figures
            ],
            className="replay-figures",
        ),
        html.Ul(
            [
                html.Li(
                    f"{a['ts']:%H:%M:%S} {a['severity']}: {a['entity_name']} — {a['message']}",
                    className=f"replay-sev-{a['severity']}",
                )
                for a in alerts[:8]
            ],
            className="replay-alerts",
        ),
    ]


# ------------------------------------------------------------------ twin versus recorded
# (incident file, its modification time) → the headless replay; made one at a time (a replay is costly)
_replays: BoundedCache[ReplayResult] = BoundedCache(8, single_flight=True)


def twin_result(rec: IncidentRecording) -> ReplayResult:
    """The headless replay of ``rec``, computed once per incident file version."""
    key = (str(rec.path), rec.path.stat().st_mtime_ns)
    return _replays.get_or_make(key, lambda: replay(rec.bundle, rec.state, rec=rec.rec))


def twin_figure(rec: IncidentRecording, result: ReplayResult, signal: str, title: str, unit: str, reduce) -> go.Figure:
    recorded, projected = result.series[signal]
    x = rec.rec.ts
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a frame where every entity is NaN
        y, yhat = reduce(recorded, axis=1), reduce(projected, axis=1)
    m = result.signals[signal]
    fig = go.Figure(
        [
            go.Scatter(x=x, y=y, name="recorded", mode="lines", line={"width": 2}),
            go.Scatter(x=x, y=yhat, name="twin", mode="lines", connectgaps=True, line={"dash": "dash"}),
        ]
    )
    fig.update_layout(
        template=TEMPLATE_NAME,
        height=280,
        yaxis_title=unit,
        title={
            "text": f"{title}<br><sup>CV(RMSE) {fmt(m['cv_rmse'], 2)} %, NMBE {fmt(m['nmbe'], 2)} %</sup>",
            "font": {"size": 14},
        },
        margin={"l": 60, "r": 10, "t": 56, "b": 30},
        legend={"orientation": "h", "y": 1.0, "x": 1, "xanchor": "right", "yanchor": "bottom"},
    )
    return fig


def twin_panel(rec: IncidentRecording) -> list:
    result = twin_result(rec)
    rows = [{"signal": name, **result.signals[name]} for name in result.signals]
    graphs = [
        dcc.Graph(
            figure=twin_figure(rec, result, *sig),
            config={"displayModeBar": False},
            id={"type": "replay-twin-graph", "signal": sig[0]},
        )
        for sig in TWIN_SIGNALS
        if sig[0] in result.series
    ]
    return [
        html.P(
            f"{result.frames} frames ({result.duration_s:,.0f} s recorded) replayed in {result.wall_s:.1f} s "
            f"({result.speed_x:,.0f}× real time).  Positive NMBE: the twin under-predicts.",
            className="replay-help",
        ),
        html.Div(graphs, className="replay-twin-graphs"),
        data_table(rows, METRIC_COLUMNS, table_id="replay-metrics"),
    ]


HIT_TEAM_COLUMNS = (
    Column("team", "team"),
    Column("jobs_count", "jobs hit", "{:,}"),
    Column("gpus_count", "their GPUs", "{:,}"),
    Column("first_hit", "first hit (UTC)"),
)
HIT_JOB_COLUMNS = (
    Column("job_id", "job"),
    Column("team", "team"),
    Column("n_gpus", "GPUs", "{:,}"),
    Column("racks", "racks hit"),
    Column("first_hit", "first hit (UTC)"),
    Column("causes", "hit by"),
)
MAX_HIT_ROWS = 25


def hits_panel(rec: IncidentRecording) -> html.Div:
    """The jobs and teams the incident hit (:mod:`ingest.replay.hits`): a summary, per team, per job."""
    hits = rec.hits
    when = lambda t: t.strftime("%H:%M:%S")  # noqa: E731
    if not hits:
        return html.Div(
            [
                html.H2("Jobs and teams hit"),
                html.P("No job ran on the equipment this incident touched.", className="muted"),
            ],
            id=ids.Replay.HITS,
            className="panel replay-hits",
        )
    teams = teams_hit(hits)
    named = [t for t in teams if t["team"]]
    summary = (
        f"{len(hits):,} job{'s' if len(hits) != 1 else ''} hit, {sum(h.n_gpus for h in hits):,} GPUs"
        + (f", of {len(named)} team{'s' if len(named) != 1 else ''}" if named else "")
        + f"; the first at {when(hits[0].first_hit)} UTC."
    )
    team_rows = [dict(t, team=t["team"] or "(not recorded)", first_hit=when(t["first_hit"])) for t in teams]
    job_rows = [
        {
            "job_id": h.job_id,
            "team": h.team or "(not recorded)",
            "n_gpus": h.n_gpus,
            "racks": f"{h.racks_hit_count:,} of {h.racks_count:,}",
            "first_hit": when(h.first_hit),
            "causes": "; ".join(h.causes),
        }
        for h in hits[:MAX_HIT_ROWS]
    ]
    more = (
        [html.P(f"… and {len(hits) - MAX_HIT_ROWS:,} more jobs", className="muted")] if len(hits) > MAX_HIT_ROWS else []
    )
    return html.Div(
        [
            html.H2("Jobs and teams hit"),
            html.P(summary, className="replay-help", id=ids.Replay.HITS_SUMMARY),
            data_table(team_rows, HIT_TEAM_COLUMNS, table_id="replay-hit-teams") if named else html.Div(),
            data_table(job_rows, HIT_JOB_COLUMNS, table_id="replay-hit-jobs"),
            *more,
        ],
        id=ids.Replay.HITS,
        className="panel replay-hits",
    )


CALIBRATION_FRACTION = 0.5  # the button fits on the first half and scores the second
CALIBRATION_COLUMNS = (
    Column("signal", "signal"),
    Column("before", "held-out CV(RMSE) before (%)", "{:.2f}"),
    Column("after", "after (%)", "{:.2f}"),
)


def _psu_text(psu: dict) -> str:
    """The PSU curve of a calibration report, e.g. "PSU efficiency 90.0/94.0/96.0/91.0 % at 10/20/50/100 % load"."""
    eff = "/".join(f"{100 * e:.1f}" for e in psu["efficiency_points_frac"])
    load = "/".join(f"{100 * x:.0f}" for x in psu["load_points_frac"])
    how = f"fitted on {psu['n_samples']} rack-frames" if psu["fitted_flag"] else "not fitted: too few rack-frames"
    return f"PSU efficiency {eff} % at {load} % load ({how})"


def calibration_panel(rec: IncidentRecording, engine) -> list:
    """Fit the site on the first half of ``rec``, score the second, store the calibrated site in ``engine``."""
    from ingest.replay.calibrate import calibrate_incident, save_calibration

    report, fitted, base = calibrate_incident(rec.bundle, rec.rec, CALIBRATION_FRACTION)
    before, after = report["heldout_before"], report["heldout_after"]
    rows = [{"signal": name, "before": before[name]["cv_rmse"], "after": after[name]["cv_rmse"]} for name in after]
    p = report["parameters"]
    summary = (
        f"Fitted on {report['fit_frames']} frames, scored on {report['heldout_frames']}: CDU approach "
        f"{fmt(p['cdu_approach_delta_k']['min'], 2)} … {fmt(p['cdu_approach_delta_k']['max'], 2)} K, GPU "
        f"resistance ×{fmt(p['gpu_r_th_factor']['min'], 2)} … ×{fmt(p['gpu_r_th_factor']['max'], 2)} "
        f"({p['gpu_r_th_factor']['n_gpus']} GPUs), heat capacity ×{fmt(p['heat_capacity_factor'], 2)}, "
        + _psu_text(p["psu"])
        + "."
    )
    if engine is None:
        saved = html.P("No database: the calibration is not saved.", className="view-error")
    else:
        version = save_calibration(engine, rec.bundle.site_toml, base, fitted)
        audit("site.calibration", f"site {base.name}", None, {"site_version": version, "incident": rec.name})
        saved = html.P(
            [
                f"Saved as version {version} of site {base.name}: replay with ",
                html.Code(f"clustertwin replay {rec.name} --site-version {version} --heldout {CALIBRATION_FRACTION}"),
            ],
            id="replay-calibration-saved",
        )
    return [
        html.P(summary, className="replay-help"),
        saved,
        data_table(rows, CALIBRATION_COLUMNS, table_id="replay-calibration-metrics"),
    ]


# ------------------------------------------------------------------ page
def layout(view: str | None = None, **_query) -> html.Div:
    entries = library_entries()
    selected, body = None, [html.P("Pick an incident to replay it.", className="replay-help")]
    try:
        key = parse_view_key(view)
    except ValueError as exc:
        key, body = None, [html.P(str(exc), className="view-error")]
    if key is not None and key.kind == REPLAY:
        try:
            rec = incident_recording(key.name)
        except ReplayError as exc:
            body = [html.P(str(exc), className="view-error")]
        else:
            selected = rec.name
            index = rec.frame_index(key.at)
            body = [
                timeline(rec, index),
                html.Div(id=ids.Replay.MOMENT, className="panel replay-moment"),
                hits_panel(rec),
                html.Div(
                    [
                        html.H2("Twin vs recorded"),
                        html.Button(
                            "Run the twin over this incident", id=ids.Replay.RUN_TWIN, n_clicks=0, className="button"
                        ),
                        dcc.Loading(html.Div(id=ids.Replay.TWIN), type=SPINNER),
                        html.H2("Calibration"),
                        html.Button(
                            "Calibrate on the first half and save as a site version",
                            id=ids.Replay.CALIBRATE,
                            n_clicks=0,
                            className="button",
                            **needs_role("operator"),
                        ),
                        dcc.Loading(html.Div(id=ids.Replay.CALIBRATION), type=SPINNER),
                    ],
                    className="panel replay-twin",
                ),
            ]
    return html.Div(
        [
            html.H1("Incident replay"),
            dcc.Store(id=ids.Replay.SELECTED, data=selected),
            html.Div(
                [
                    html.Div(
                        [
                            dcc.Input(
                                id=ids.Replay.SEARCH,
                                type=SEARCH_INPUT,
                                placeholder="search name, title or tag",
                                debounce=False,
                                className="replay-search",
                            ),
                            html.Div(library_cards(entries, None, selected), id=ids.Replay.LIBRARY),
                            import_panel(),
                        ],
                        className="panel replay-library",
                    ),
                    html.Div(body, className="replay-body"),
                ],
                className="replay-grid",
            ),
        ],
        className="page page-replay",
    )


IMPORT_FORMATS = (
    ("bundle", "incident bundle (.ctincident)"),
    ("nvidia-smi-csv", "nvidia-smi --query-gpu CSV"),
    ("nvidia-smi-xml", "nvidia-smi -q -x XML"),
    ("dcgmi-dmon", "dcgmi dmon output"),
    ("mlperf-power", "MLPerf power log"),
)


def import_panel() -> html.Details:
    """Import an incident from a file (operators): the browser posts it to ``POST /api/v1/incidents/import``."""
    guard = needs_role("operator")
    return html.Details(
        [
            html.Summary("Import an incident"),
            html.Div(
                [
                    html.Select(
                        [html.Option(label, value=value) for value, label in IMPORT_FORMATS],
                        id=ids.Replay.IMPORT_FORMAT,
                        className="replay-import-format",
                    ),
                    html.Div(
                        [
                            html.Button("choose a file…", id=ids.Replay.IMPORT_CHOOSE, className="button", **guard),
                            html.Span("no file chosen", id=ids.Replay.IMPORT_FILE, className="muted"),
                        ],
                        className="replay-import-choose",
                    ),
                    dcc.Input(
                        id=ids.Replay.IMPORT_NAME, type="text", placeholder="name (default: the file's)", maxLength=120
                    ),
                    html.Button("import", id=ids.Replay.IMPORT_BUTTON, className="button", **guard),
                    html.Span(id=ids.Replay.IMPORT_RESULT, className="replay-import-result", role="status"),
                    html.P(
                        "A recording of another system is sized to a reference site automatically "
                        "(the command line imports Prometheus history and sets the site).",
                        className="muted",
                    ),
                ],
                className="replay-import",
            ),
        ],
        className="replay-import-panel",
    )


@dash.callback(
    Output(ids.Replay.LIBRARY, "children"),
    Input(ids.Replay.SEARCH, "value"),
    State(ids.Replay.SELECTED, "data"),
    prevent_initial_call=True,
)
def filter_library(query, selected):
    return library_cards(library_entries(), query, selected)


dash.clientside_callback(
    """
    function(n, index, frames, clock) {
        var play = (n || 0) % 2 === 1;
        var pos = clock && clock.index === index ? clock.pos : frames.secs[index];
        return [!play, play ? 'Pause' : 'Play', {index: index, pos: pos, wall: performance.now()}];
    }
    """,
    Output(ids.Replay.INTERVAL, "disabled"),
    Output(ids.Replay.PLAY, "children"),
    Output(ids.Replay.CLOCK, "data", allow_duplicate=True),
    Input(ids.Replay.PLAY, "n_clicks"),
    State(ids.Replay.SLIDER, "value"),
    State(ids.Replay.FRAMES, "data"),
    State(ids.Replay.CLOCK, "data"),
    prevent_initial_call=True,
)

# Play advances the replayed time by speed × wall time elapsed (not × ticks: a late tick
# catches up).  The clock starts when play is pressed and keeps the fractional position
# between frames; "next event" jumps to the next frame where an alert opened; a drag on
# the slider moves the clock.
dash.clientside_callback(
    """
    function(nTicks, nNext, index, speed, frames, clock) {
        var ctx = window.dash_clientside.callback_context;
        var trig = ctx.triggered.length ? ctx.triggered[0].prop_id : '';
        var secs = frames.secs, last = secs.length - 1;
        var now = performance.now();
        if (trig.indexOf('next-event') >= 0) {
            var next = frames.events.find(function(i) { return i > index; });
            if (next === undefined) { return window.dash_clientside.no_update; }
            return [next, {index: next, pos: secs[next], wall: now}];
        }
        if (!clock || clock.index !== index) { clock = {index: index, pos: secs[index], wall: now}; return [index, clock]; }
        var pos = Math.min(clock.pos + (now - clock.wall) / 1000 * speed, secs[last]);
        var i = index;
        while (i < last && secs[i + 1] <= pos + 1e-6) { i++; }
        return [i, {index: i, pos: pos, wall: now}];
    }
    """,
    Output(ids.Replay.SLIDER, "value"),
    Output(ids.Replay.CLOCK, "data"),
    Input(ids.Replay.INTERVAL, "n_intervals"),
    Input(ids.Replay.NEXT_EVENT, "n_clicks"),
    State(ids.Replay.SLIDER, "value"),
    State(ids.Replay.SPEED, "value"),
    State(ids.Replay.FRAMES, "data"),
    State(ids.Replay.CLOCK, "data"),
    prevent_initial_call=True,
)

# The instant goes into the URL (replacing the history entry: the pages router must not
# re-render this page on every frame), into the navigation links and into the shell's
# screen store (the shell's dcc.Location does not see a replaced entry).
dash.clientside_callback(
    """
    function(index, frames, navIds) {
        var key = 'replay:' + frames.name + '@' + frames.times[index];
        var params = new URLSearchParams(window.location.search);
        params.set('view', key);
        var search = '?' + params.toString();
        window.history.replaceState(window.history.state, '', window.location.pathname + search);
        var hrefs = navIds.map(function(id) { return id.path + '?view=' + encodeURIComponent(key); });
        return [key, hrefs, (%s)(window.location.pathname, search)];
    }
    """
    % SCREEN_OF_URL_JS,
    Output(ids.Replay.URL_SYNC, "data"),
    Output(ids.nav_link(ALL), "href", allow_duplicate=True),
    Output(ids.Shell.SCREEN, "data", allow_duplicate=True),
    Input(ids.Replay.SLIDER, "value"),
    State(ids.Replay.FRAMES, "data"),
    State(ids.nav_link(ALL), "id"),
    prevent_initial_call=True,
)


@dash.callback(
    Output(ids.Replay.INSTANT, "children"),
    Output(ids.Replay.MOMENT, "children"),
    Output(ids.Shell.VIEW_BANNER, "children", allow_duplicate=True),
    Output(ids.Shell.VIEW_BANNER, "className", allow_duplicate=True),
    Output(ids.Shell.VIEW_BANNER, "hidden", allow_duplicate=True),
    Input(ids.Replay.URL_SYNC, "data"),
    prevent_initial_call="initial_duplicate",
)
def show_instant(key: str | None):
    if not key:
        raise PreventUpdate
    try:
        screen = screen_for(ViewSelection(view=key), live_view())
    except ViewUnavailable as exc:
        return dash.no_update, [html.P(str(exc), className="view-error")], *unavailable_banner(str(exc))
    view = screen.view
    return (f"{view.latest().ts:%Y-%m-%d %H:%M:%S} UTC", moment_rows(view), *banner(screen))


@dash.callback(
    Output(ids.Replay.TWIN, "children"),
    Input(ids.Replay.RUN_TWIN, "n_clicks"),
    State(ids.Replay.FRAMES, "data"),
    prevent_initial_call=True,
)
def run_twin(_n, frames):
    if not frames:
        raise PreventUpdate
    try:
        return twin_panel(incident_recording(frames["name"]))
    except ReplayError as exc:
        return html.P(str(exc), className="view-error")


@dash.callback(
    Output(ids.Replay.CALIBRATION, "children"),
    Input(ids.Replay.CALIBRATE, "n_clicks"),
    State(ids.Replay.FRAMES, "data"),
    prevent_initial_call=True,
)
@callback_requires("operator", on=(ids.Replay.CALIBRATE,))
def run_calibration(_n, frames):
    if not frames:
        raise PreventUpdate
    try:
        return calibration_panel(incident_recording(frames["name"]), site_db())
    except (ReplayError, ValueError) as exc:
        return html.P(str(exc), className="view-error")
