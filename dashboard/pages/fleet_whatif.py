"""``/fleet-whatif``: the fleet what-if in the browser — the live LLM-lab mix on the site as it is and with an edit.

The form sets the edit (:class:`twin.fleet.edit_whatif.FleetEdit`: halls or rows converted to
a rack type, the queue order and backfill, one team's nominal quota, a demand-response cut,
halls down for maintenance), the horizon (1–30 days), the workload and, optionally, a flat
tariff and grid intensity for cost and carbon (the site files carry none).  "Run" hands the
question to this process's worker thread (one question at a time); the page polls it (each poll
waits for the answer a while, so it shows as soon as it is ready) and shows the simulated share of
the horizon and the time taken, then the answer beside the baseline: the headline figures, queue
wait by team, allocated GPUs and facility power hour by hour, and the jobs the scenario capped or
preempted (teams and jobs in tables sorted and paged in the browser).

Answers are cached by (site, workload, horizon, seed, tariff, carbon, edit); the baseline side
and a converted site are cached apart, so a second question on one baseline costs one side.
The baseline side is computed ahead, in a side process, as soon as the workload fields are
known (the page opened by an operator, or one of those fields changed), so that the first
question costs the scenario side only; a question whose baseline is not ready runs it beside
its scenario side.
Each side is a whole fleet simulation (:func:`twin.fleet.edit_whatif.run_side`): its run time
grows with the jobs simulated, which is why the default workload is the live mix at an
interactive rate (at most ``INTERACTIVE_JOBS_PER_DAY`` jobs a day; the page says which).

The question and its worker: :mod:`dashboard.whatif.fleet_runs`.

Starting a run needs the operator role (as editing a site scenario does); anyone who may
see the page sees the process's latest question and its answer when opening the page.
"""

from __future__ import annotations

import math
from typing import Any

import dash
import plotly.graph_objects as go
from dash import Input, Output, State, dcc, html, no_update

from dashboard.auth import callback_requires, has_role, needs_role
from dashboard.present.data_table import Column, grid_table
from dashboard.present.theme import TEMPLATE_NAME
from dashboard.views.context import live_view
from dashboard.whatif.fleet_runs import (
    COLOSSUS_GPUS,
    DEFAULT_CONVERT_TYPE,
    INTERACTIVE_JOBS_PER_DAY,
    NEW_HALL,
    WORKER,
    Run,
    base_policy,
    baseline_question_from_form,
    question_from_form,
    team_names,
)
from ingest.live.fleet import LIVE_MIX
from twin.fleet.policy import BACKFILLS, ORDERINGS
from twin.fleet.whatif import WhatIfError
from twin.site.catalogue import load_catalogue

PATH = "/fleet-whatif"
dash.register_page(__name__, path=PATH, name="Fleet what-if", title="Fleet what-if · ClusterTwin", order=7)

# While a question runs the page asks for it in a chain: each request waits up to LONG_POLL_S for the
# answer (Worker.wait) and allows the poll one more tick (its max_intervals), POLL_MS after the reply.
# So the answer leaves the server as soon as it is ready, the requests never overlap, and the question's
# thread (pure Python: every request takes the interpreter's lock from it) is disturbed about once a
# second, not ten times (the 7-day answer on colossus took 2.85 s with one request a second, against
# 3.0-3.1 s with ten).  A request that finds every waiting place taken (Worker.wait) returns at once and
# allows the next one BUSY_POLL_MS later.
POLL_MS = 50
BUSY_POLL_MS = 1000
LONG_POLL_S = 0.85
RETARGET_KINDS = ("finetune", "eval", "debug")


class F:
    """Component ids of the page."""

    HORIZON = "fwi-horizon"
    RATE = "fwi-rate"
    PRETRAIN = "fwi-pretrain"
    SEED = "fwi-seed"
    CONVERT_BY = "fwi-convert-by"
    CONVERT_NAMES = "fwi-convert-names"
    CONVERT_TYPE = "fwi-convert-type"
    RETARGET = "fwi-retarget"
    GROW_QUOTAS = "fwi-grow-quotas"
    ORDERING = "fwi-ordering"
    BACKFILL = "fwi-backfill"
    QUOTA_TEAM = "fwi-quota-team"
    QUOTA_GPUS = "fwi-quota-gpus"
    DR_CUT = "fwi-dr-cut"
    DR_START = "fwi-dr-start"
    DR_HOURS = "fwi-dr-hours"
    MAINT_HALLS = "fwi-maint-halls"
    MAINT_START = "fwi-maint-start"
    MAINT_HOURS = "fwi-maint-hours"
    TARIFF = "fwi-tariff"
    CARBON = "fwi-carbon"
    RUN = "fwi-run"
    STATUS = "fwi-status"
    ANSWER = "fwi-answer"
    POLL = "fwi-poll"
    TOKEN = "fwi-token"
    WARM = "fwi-warm"


FORM = (
    F.HORIZON,
    F.RATE,
    F.PRETRAIN,
    F.SEED,
    F.CONVERT_BY,
    F.CONVERT_NAMES,
    F.CONVERT_TYPE,
    F.RETARGET,
    F.GROW_QUOTAS,
    F.ORDERING,
    F.BACKFILL,
    F.QUOTA_TEAM,
    F.QUOTA_GPUS,
    F.DR_CUT,
    F.DR_START,
    F.DR_HOURS,
    F.MAINT_HALLS,
    F.MAINT_START,
    F.MAINT_HOURS,
    F.TARIFF,
    F.CARBON,
)
WORKLOAD_FORM = (F.HORIZON, F.RATE, F.PRETRAIN, F.SEED, F.TARIFF, F.CARBON)  # what the baseline side depends on


# ------------------------------------------------------------------ layout
def _field(label: str, control, hint: str | None = None) -> html.Div:
    parts: list = [html.Span(label, className="whatif-label"), control]
    if hint:
        parts.append(html.Span(hint, className="muted"))
    return html.Div(parts, className="whatif-field")


def _num(cid: str, placeholder: str, value=None, step: float = 1, width: str = "130px") -> dcc.Input:
    return dcc.Input(
        id=cid,
        type="number",
        placeholder=placeholder,
        value=value,
        step=step,
        className="whatif-number",
        style={"width": width},
    )


def _switch(cid: str, label: str) -> dcc.Checklist:
    """A one-option checklist, ticked: its value is ``["on"]`` while ticked, ``[]`` when not."""
    return dcc.Checklist(
        id=cid, options=[{"label": label, "value": "on"}], value=["on"], inline=True, className="segmented"
    )


def _box(title: str, children: list, note: str | None = None) -> html.Div:
    body: list = [html.H3(title)]
    if note:
        body.append(html.Div(note, className="muted"))
    body.append(html.Div(children, style={"display": "flex", "flexWrap": "wrap", "gap": "8px 14px"}))
    return html.Div(body, className="panel")


def form(state, teams: list[str], status: str = "") -> html.Div:
    racks = sorted(load_catalogue().racks)
    site_rate = LIVE_MIX.jobs_per_day * state.n_gpus / COLOSSUS_GPUS
    interactive = min(site_rate, INTERACTIVE_JOBS_PER_DAY)
    unchanged = [{"label": "unchanged", "value": ""}]
    boxes = [
        _box(
            "Horizon and workload",
            [
                _field("horizon (days)", _num(F.HORIZON, "1–30", 1, 1, "90px")),
                _field(
                    "workload",
                    dcc.RadioItems(
                        id=F.RATE,
                        value="interactive",
                        options=[
                            {"label": f"interactive ({interactive:,.0f} jobs/day)", "value": "interactive"},
                            {"label": f"live rate ({site_rate:,.0f} jobs/day)", "value": "live"},
                        ],
                        className="segmented",
                    ),
                ),
                _field(
                    "pretraining",
                    _switch(F.PRETRAIN, "with its pretraining runs"),
                ),
                _field("seed", _num(F.SEED, "0", 0, 1, "70px")),
            ],
            note="the live LLM-lab mix over the horizon; both sides run the same jobs, policy and seed",
        ),
        _box(
            "Convert racks, or add a hall",
            [
                _field(
                    "by",
                    dcc.RadioItems(
                        id=F.CONVERT_BY,
                        value="halls",
                        options=["halls", "rows", NEW_HALL],
                        inline=True,
                        className="segmented",
                    ),
                ),
                _field(
                    "names",
                    dcc.Input(
                        id=F.CONVERT_NAMES,
                        type="text",
                        placeholder=state.hall_name[-1],
                        maxLength=200,
                        className="whatif-text",
                        style={"width": "120px"},
                    ),
                ),
                _field(
                    "to rack type",
                    dcc.Dropdown(
                        id=F.CONVERT_TYPE,
                        options=racks,
                        value=DEFAULT_CONVERT_TYPE if DEFAULT_CONVERT_TYPE in racks else racks[0],
                        clearable=False,
                        style={"width": "190px"},
                    ),
                ),
                _field(
                    "jobs sent to the new racks",
                    dcc.Checklist(
                        id=F.RETARGET, options=list(RETARGET_KINDS), value=[], inline=True, className="segmented"
                    ),
                ),
                _field(
                    "quotas",
                    _switch(F.GROW_QUOTAS, "grow with the GPUs added"),
                ),
            ],
        ),
        _box(
            "Scheduling policy",
            [
                _field(
                    "queue order",
                    dcc.Dropdown(
                        id=F.ORDERING,
                        options=unchanged + [{"label": o, "value": o} for o in ORDERINGS],
                        value="",
                        clearable=False,
                        style={"width": "140px"},
                    ),
                ),
                _field(
                    "backfill",
                    dcc.Dropdown(
                        id=F.BACKFILL,
                        options=unchanged + [{"label": b, "value": b} for b in BACKFILLS],
                        value="",
                        clearable=False,
                        style={"width": "150px"},
                    ),
                ),
                _field(
                    "team",
                    dcc.Dropdown(id=F.QUOTA_TEAM, options=teams, placeholder="team", style={"width": "120px"}),
                ),
                _field("nominal quota (GPUs)", _num(F.QUOTA_GPUS, "GPUs", None, 1, "140px")),
            ],
        ),
        _box(
            "Power and maintenance",
            [
                _field("demand-response cut (MW)", _num(F.DR_CUT, "MW", None, 0.1)),
                _field("from hour", _num(F.DR_START, "h", 6, 0.5, "80px")),
                _field("for (h)", _num(F.DR_HOURS, "h", 4, 0.5, "80px")),
                _field(
                    "halls down for maintenance",
                    dcc.Dropdown(
                        id=F.MAINT_HALLS,
                        options=list(state.hall_name),
                        multi=True,
                        placeholder="halls",
                        style={"minWidth": "140px"},
                    ),
                ),
                _field("from hour", _num(F.MAINT_START, "h", 6, 0.5, "80px")),
                _field("for (h)", _num(F.MAINT_HOURS, "h", 12, 0.5, "80px")),
            ],
        ),
        _box(
            "Cost and carbon (optional)",
            [
                _field("tariff (USD/MWh)", _num(F.TARIFF, "USD/MWh", None, 1)),
                _field("grid intensity (kg CO₂/MWh)", _num(F.CARBON, "kg/MWh", None, 1)),
            ],
            note="the site files carry no tariff or grid intensity: give flat ones to count cost and carbon",
        ),
    ]
    guard = needs_role("operator")
    run_bar = html.Div(
        [
            html.Button("Run", id=F.RUN, n_clicks=0, className="whatif-button", **guard),
            html.Span("running needs the operator role", className="muted") if guard else None,
            html.Span(status, id=F.STATUS, className="whatif-msg", role="status"),
        ],
        className="controls",
        style={"gap": "12px"},
    )
    grid = {"display": "grid", "gridTemplateColumns": "repeat(auto-fit, minmax(420px, 1fr))", "gap": "12px"}
    return html.Div([html.Div(boxes, style=grid), html.Div(run_bar, className="panel")])


def layout(**_kwargs) -> html.Div:
    view = live_view()
    state = view.state
    # the process's latest question, shown to whoever opens the page: its answer, or polled while it runs
    latest = WORKER.current if WORKER.current is not None and WORKER.current.question.site == state.name else None
    running = latest is not None and latest.finished_s is None
    answer = answer_children(latest) if latest is not None and latest.answer is not None else []
    return html.Div(
        [
            dcc.Store(id=F.TOKEN, data=latest.question.token() if latest is not None else None),
            dcc.Store(id=F.WARM),
            dcc.Interval(id=F.POLL, interval=POLL_MS, disabled=not running, max_intervals=1 if running else 0),
            html.Div(
                [
                    html.H1("Fleet what-if"),
                    html.Span(
                        "the fleet's jobs on the site as it is (baseline) and with your edit (scenario), side by side; "
                        "each side is a whole fleet simulation, so an answer takes seconds to minutes",
                        className="muted",
                    ),
                    dcc.Link("site what-if (layout, power and cooling) →", href="/whatif"),
                ],
                className="page-title",
            ),
            form(state, team_names(view), status_text(latest) if latest is not None else ""),
            html.Div(answer, id=F.ANSWER),
            _code_loader(),
        ],
        className="page page-whatif page-fleet-whatif",
    )


def _code_loader() -> html.Div:
    """A hidden chart (a bar and a line, as the answer draws) and table: the browser fetches and compiles their
    code (loaded on a component's first use) when the page opens, not when the first answer arrives."""
    drawn = go.Figure([go.Bar(x=["a"], y=[1]), go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(shape="hv"))])
    return html.Div(
        [
            dcc.Graph(id="fwi-load-graph", figure=drawn.update_layout(template=TEMPLATE_NAME)),
            grid_table([{"x": 0}], (Column("x", "x"),), table_id="fwi-load-table"),
        ],
        hidden=True,
    )


# ------------------------------------------------------------------ the answer
ROWS = (  # key, label, unit, scale, decimals
    ("n_gpus", "GPUs", "", 1, 0),
    ("mean_wait_all_s", "queue wait, mean over all jobs (those still waiting: so far)", "min", 1 / 60, 1),
    ("mean_wait_s", "queue wait of the jobs that started, mean", "min", 1 / 60, 1),
    ("median_wait_s", "queue wait of the jobs that started, median", "min", 1 / 60, 1),
    ("jobs_completed_count", "jobs completed", "", 1, 0),
    ("jobs_pending_count", "jobs pending at the horizon", "", 1, 0),
    ("jobs_never_count", "jobs that never fit", "", 1, 0),
    ("allocated_frac", "GPUs allocated", "%", 100, 1),
    ("utilisation_frac", "utilisation (GPU time making progress)", "%", 100, 1),
    ("goodput_frac", "goodput (progress per GPU time allocated)", "%", 100, 1),
    ("tokens_per_day", "tokens per day", "G tokens/day", 1e-9, 2),
    ("energy_mwh", "energy", "MWh", 1, 1),
    ("mean_power_mw", "facility power, mean", "MW", 1, 2),
    ("peak_power_mw", "facility power, peak", "MW", 1, 2),
    ("cost_usd", "energy cost", "k USD", 1e-3, 1),
    ("carbon_kg", "carbon", "t CO₂", 1e-3, 1),
    ("jobs_power_capped_count", "jobs held below full power", "", 1, 0),
    ("jobs_preempted_count", "jobs preempted (requeued)", "", 1, 0),
    ("lost_work_gpu_h", "work lost to requeues and failures", "GPU-h", 1, 0),
    ("design_warnings_count", "design ratings broken", "", 1, 0),
)


def _fmt(value, scale: float, decimals: int, signed: bool = False) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "–"
    v = value * scale
    text = f"{v:+,.{decimals}f}" if signed else f"{v:,.{decimals}f}"
    return "±0" if signed and text.lstrip("+-").strip("0.,") == "" else text


def headline_table(answer: dict) -> html.Table:
    base, scen = answer["baseline"], answer["scenario"]
    body = []
    for key, label, unit, scale, dec in ROWS:
        b, s = base.get(key), scen.get(key)
        change = s - b if isinstance(b, (int, float)) and isinstance(s, (int, float)) else math.nan
        body.append(
            html.Tr(
                [
                    html.Td(f"{label} ({unit})" if unit else label),
                    html.Td(_fmt(b, scale, dec), className="num"),
                    html.Td(_fmt(s, scale, dec), className="num"),
                    html.Td(_fmt(change, scale, dec, signed=True), className="num"),
                ],
                **_data_row(key),
            )
        )
    head = html.Tr(
        [
            html.Th(""),
            html.Th("baseline", className="num"),
            html.Th("scenario", className="num"),
            html.Th("change", className="num"),
        ]
    )
    return html.Table([html.Thead(head), html.Tbody(body)], className="data", id="fwi-headline")


def team_figure(answer: dict) -> go.Figure:
    teams = [t["team"] for t in answer["teams"]]
    fig = go.Figure()
    for side, colour in (("baseline", "#8a94a6"), ("scenario", "#4da3ff")):
        waits = [t[side].get("mean_wait_all_s", math.nan) / 60 for t in answer["teams"]]
        fig.add_bar(name=side, x=teams, y=waits, marker_color=colour)
    fig.update_layout(
        template=TEMPLATE_NAME,
        barmode="group",
        height=300,
        margin=dict(l=50, r=10, t=36, b=40),
        title="Queue wait by team, mean over its jobs (min)",
        legend=dict(orientation="h", y=1.12, x=1, xanchor="right"),
    )
    return fig


def hourly_figure(answer: dict, key: str, title: str) -> go.Figure:
    fig = go.Figure()
    for side, colour in (("baseline", "#8a94a6"), ("scenario", "#4da3ff")):
        ys = answer[side]["hourly"][key]
        fig.add_scatter(name=side, x=list(range(len(ys))), y=ys, mode="lines", line=dict(color=colour, shape="hv"))
    fig.update_layout(
        template=TEMPLATE_NAME,
        height=260,
        margin=dict(l=60, r=10, t=36, b=40),
        title=title,
        xaxis_title="hour of the run",
        legend=dict(orientation="h", y=1.14, x=1, xanchor="right"),
    )
    return fig


TEAM_COLUMNS = (
    Column("team", "team"),
    Column("jobs", "jobs", "{:,}"),
    Column("wait_b", "wait, baseline (min)", "{:,.1f}"),
    Column("wait_s", "wait, scenario (min)", "{:,.1f}"),
    Column("done_b", "completed, baseline", "{:,}"),
    Column("done_s", "completed, scenario", "{:,}"),
    Column("gpu_h_b", "GPU-h, baseline", "{:,.0f}"),
    Column("gpu_h_s", "GPU-h, scenario", "{:,.0f}"),
)
JOB_COLUMNS = (
    Column("job", "job"),
    Column("team", "team"),
    Column("kind", "kind"),
    Column("n_gpus", "GPUs", "{:,}"),
    Column("capped", "capped"),
    Column("preempted_count", "requeued", "{:,}"),
    Column("why", "why requeued"),
)


def _team_rows(answer: dict) -> list[dict]:
    out = []
    for t in answer["teams"]:
        b, s = t["baseline"], t["scenario"]
        out.append(
            {
                "team": t["team"],
                "jobs": s.get("jobs_count", b.get("jobs_count")),
                "wait_b": b.get("mean_wait_all_s", math.nan) / 60,
                "wait_s": s.get("mean_wait_all_s", math.nan) / 60,
                "done_b": b.get("jobs_completed_count"),
                "done_s": s.get("jobs_completed_count"),
                "gpu_h_b": b.get("gpu_h"),
                "gpu_h_s": s.get("gpu_h"),
            }
        )
    return out


def _job_rows(side: dict) -> list[dict]:
    rows = []
    for j in side["jobs"]:
        causes = [
            f"{c} ×{j[f'{c}_requeues_count']}"
            for c in ("power", "maintenance", "preemption")
            if j[f"{c}_requeues_count"]
        ]
        rows.append({**j, "capped": "yes" if j["capped_flag"] else "", "why": ", ".join(causes)})
    return rows


def answer_children(run: Run) -> list:
    answer = run.answer
    assert answer is not None
    base, scen = answer["baseline"], answer["scenario"]
    edit = list(answer["edit"])
    if "quota_before_gpus" in answer and answer["quota_before_gpus"] is not None and run.question.edit.quota:
        q = run.question.edit.quota
        edit = [
            f"{q.team}'s nominal quota {answer['quota_before_gpus']:,} → {q.nominal_gpus:,} GPUs"
            if e.startswith(f"{q.team}'s nominal quota")
            else e
            for e in edit
        ]
    timing = (
        f"answered in {run.elapsed_s():.1f} s: baseline side "
        + (
            "cached"
            if answer["baseline_cached"]
            else "computed ahead"
            if answer.get("baseline_ahead")
            else f"{base['wall_s']:.1f} s beside it"
        )
        + f", scenario side {scen['wall_s']:.1f} s"
    )
    days = answer["horizon_s"] / 86_400.0
    summary = html.Div(
        [
            html.H2("Answer"),
            html.Ul([html.Li(e) for e in edit], className="fwi-edit"),
            html.Div(
                f"{days:g} day{'s' if days != 1 else ''} of {answer['workload']} · seed {run.question.seed} · {timing}",
                className="muted",
                id="fwi-timing",
            ),
        ],
        className="panel",
    )
    graph_config: Any = {"displaylogo": False, "responsive": True}  # dash types it as its Config class
    numbers = html.Div(
        [
            html.Div([html.H3("Headline figures"), headline_table(answer)], className="panel"),
            html.Div(
                dcc.Graph(
                    id="fwi-team-wait", figure=team_figure(answer), config=graph_config, style={"height": "300px"}
                ),
                className="panel",
            ),
        ],
        className="grid-2",
    )
    teams = html.Div(
        [html.H3("Teams"), grid_table(_team_rows(answer), TEAM_COLUMNS, "no teams", table_id="fwi-teams")],
        className="panel",
    )
    hourly = html.Div(
        [
            html.Div(
                dcc.Graph(
                    id="fwi-alloc",
                    figure=hourly_figure(answer, "allocated_gpu_count", "GPUs allocated, hourly mean"),
                    config=graph_config,
                    style={"height": "260px"},
                ),
                className="panel",
            ),
            html.Div(
                dcc.Graph(
                    id="fwi-power",
                    figure=hourly_figure(answer, "facility_power_mw", "Facility power, hourly mean (MW)"),
                    config=graph_config,
                    style={"height": "260px"},
                ),
                className="panel",
            ),
        ],
        className="grid-2",
    )
    listed = f"; the largest {len(scen['jobs']):,} listed" if scen["jobs"] else ""
    hit = html.Div(
        [
            html.H3("Jobs the scenario capped or preempted"),
            html.Div(
                f"scenario: {scen['jobs_power_capped_count']:,} jobs held below full power, {scen['jobs_preempted_count']:,} "
                f"requeued (baseline: {base['jobs_power_capped_count']:,} and {base['jobs_preempted_count']:,}){listed}",
                className="muted",
            ),
            grid_table(_job_rows(scen), JOB_COLUMNS, "no job capped or preempted", table_id="fwi-jobs"),
        ],
        className="panel",
    )
    return [summary, numbers, teams, hourly, hit]


def status_text(run: Run) -> str:
    if run.error is not None:
        return run.error
    if run.answer is not None:
        return f"answered in {run.elapsed_s():.1f} s"
    share = (
        f" {run.frac * 100:.0f} % of {run.question.horizon_days:g} days simulated"
        if run.phase in ("baseline", "scenario")
        else ""
    )
    side = f"{run.phase} side" if run.phase in ("baseline", "scenario") else run.phase
    return f"running: {side}{share} · {run.elapsed_s():.0f} s"


# ------------------------------------------------------------------ callbacks
@dash.callback(
    Output(F.TOKEN, "data"),
    Output(F.POLL, "disabled"),
    Output(F.POLL, "max_intervals"),
    Output(F.POLL, "interval"),
    Output(F.STATUS, "children"),
    Output(F.ANSWER, "children"),
    Input(F.RUN, "n_clicks"),
    State(F.POLL, "n_intervals"),
    *[State(c, "value") for c in FORM],
    prevent_initial_call=True,
)
@callback_requires("operator")
def start(_clicks, ticks, *values):
    """Run: the question from the form, handed to the worker (an answer already known shows at once); the
    poll is allowed its next tick."""
    view = live_view()
    try:
        question = question_from_form(view.state, {c.removeprefix("fwi-"): v for c, v in zip(FORM, values)})
        run = WORKER.submit(question, view.state, base_policy(view))
    except WhatIfError as exc:
        return None, True, no_update, no_update, str(exc), []
    token = question.token()
    if run.answer is not None:
        return token, True, no_update, no_update, status_text(run), answer_children(run)
    return token, False, (ticks or 0) + 1, POLL_MS, status_text(run), []


@dash.callback(Output(F.WARM, "data"), *[Input(c, "value") for c in WORKLOAD_FORM])
def warm(*values):
    """The workload fields known (the page opened, or one changed): their baseline side is computed ahead.

    For operators only (only they can ask); fields that do not make a question yet start nothing.
    Returns the baseline's question token, or no update.
    """
    if not has_role("operator"):
        return no_update
    view = live_view()
    try:
        question = baseline_question_from_form(
            view.state, {c.removeprefix("fwi-"): v for c, v in zip(WORKLOAD_FORM, values)}
        )
    except WhatIfError:
        return no_update
    WORKER.warm(question, view.state, base_policy(view))
    return question.token()


@dash.callback(
    Output(F.STATUS, "children", allow_duplicate=True),
    Output(F.ANSWER, "children", allow_duplicate=True),
    Output(F.POLL, "disabled", allow_duplicate=True),
    Output(F.POLL, "max_intervals", allow_duplicate=True),
    Output(F.POLL, "interval", allow_duplicate=True),
    Input(F.POLL, "n_intervals"),
    State(F.TOKEN, "data"),
    prevent_initial_call=True,
)
def poll(ticks, token):
    """While a question runs: its progress, and the poll's next tick allowed; when answered: the answer (and
    the polling stops).  A request for a question still running waits up to :data:`LONG_POLL_S` for it."""
    run = WORKER.find(token)
    if run is None:
        return "", no_update, True, no_update, no_update
    waited = WORKER.wait(run, LONG_POLL_S)
    if run.finished_s is None:
        return status_text(run), no_update, False, (ticks or 0) + 1, POLL_MS if waited else BUSY_POLL_MS
    return status_text(run), answer_children(run) if run.answer is not None else [], True, no_update, no_update


def _data_row(key: str) -> dict[str, Any]:
    """The ``data-row`` attribute of a headline row (the browser test finds rows by it)."""
    return {"data-row": key}
