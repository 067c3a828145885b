"""``/``: site overview — load vs supply, PUE, N-1, GPU health, throughput, hottest racks, alerts, trends.

Deep link: ``/?window=3600&at=2026-07-15T14:02:10Z`` sets the trend window in seconds
and pins an instant (a dashed line on every trend; click a trend to pin, "clear pin" to drop).
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

import dash
from dash import ALL, Input, Output, State, ctx, dcc, html, no_update

from dashboard import ids
from dashboard.analysis.aggregates import gpu_counts, gpus_running, hottest_racks, jobs_summary, n1_status
from dashboard.analysis.tiles import TILES, overview_tiles, power_breakdown
from dashboard.callbacks import inputs
from dashboard.callbacks.patch_relay import relay
from dashboard.components.fleet_panel import fleet_of
from dashboard.components.kpi import kpi_card
from dashboard.figures.trends import TIME_FORMAT, TREND_HEIGHT_PX, pin_patch, trend_figure, trend_patch
from dashboard.present.formatting import fmt, fmt_duration, fmt_pct, fmt_si
from dashboard.shell.deep_link import register_url_writer
from dashboard.shell.entity_links import entity_href
from dashboard.shell.status import Banner, alert_counts, group_alerts, muted_causes, status_banner, view_now
from dashboard.views import compare
from dashboard.views.registry import callback_view, layout_screen, on_page, view_layout

PATH = "/"
dash.register_page(__name__, path=PATH, name="Overview", title="Overview · ClusterTwin", order=0)

PAGE = ids.Overview.PAGE
WINDOWS_S = (900, 3600, 6 * 3600)
DEFAULT_WINDOW_S = 900

# (id, trend title, series, y title, unit, dashed, from zero)
TRENDS = (
    (
        ids.Overview.POWER_TREND,
        "Load vs supply",
        [("it_power_mw", "IT"), ("facility_power_mw", "facility"), ("generation_capacity_mw", "supply")],
        "power",
        "MW",
        ("generation_capacity_mw",),
        True,
    ),
    (ids.Overview.PUE_TREND, "PUE", [("pue_ratio", "PUE")], "PUE", "ratio", (), False),
    (
        ids.Overview.TEMP_TREND,
        "Hottest GPU",
        [("max_gpu_temp_c", "max GPU temperature")],
        "temperature",
        "°C",
        (),
        False,
    ),
    (
        ids.Overview.GPU_TREND,
        "Unhealthy GPUs",
        [("gpus_throttled", "throttled"), ("gpus_down", "down")],
        "count",
        "GPUs",
        (),
        True,
    ),
    (
        ids.Overview.THROUGHPUT_TREND,
        "Training throughput",
        [("tokens_per_s", "tokens/s")],
        "throughput",
        "tokens/s",
        (),
        True,
    ),
    (ids.Overview.MFU_TREND, "Model FLOP utilisation", [("mfu_pct", "MFU")], "MFU", "%", (), True),
)

KPIS = TILES  # (name, label, unit) of the KPI tiles, in display order
LIVE_RELAY = relay(ids.Overview.TRENDS_LIVE, *[(tid, "figure") for tid, *_ in TRENDS])
PIN_RELAY = relay(ids.Overview.TRENDS_PIN, *[(tid, "figure") for tid, *_ in TRENDS])


def parse_window(value) -> int:
    """Trend window from the URL (seconds), falling back to the default."""
    try:
        return inputs.window_s(value)
    except inputs.InputError:
        return DEFAULT_WINDOW_S


def parse_at(value) -> str | None:
    """A pinned instant from the URL or a click (ISO 8601, naive = UTC) as a trend time string."""
    if not value or not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        return None
    ts = ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
    return ts.strftime(TIME_FORMAT)


def trend_frame(view, window_s: int):
    """The view's trend over ``window_s`` with MFU converted to percent for display."""
    frame = view.trend(window_s)
    frame = frame.copy()
    frame["mfu_pct"] = frame["mfu_frac"] * 100.0 if "mfu_frac" in frame else float("nan")
    return frame


# (KPI name, digits) of the numbers behind the tiles, for compare mode.
def kpi_numbers(state, snapshot, alerts: list[dict]) -> dict[str, tuple[float, int]]:
    """KPI name -> (number, display digits) of one snapshot (NaN without one)."""
    if snapshot is None:
        return {name: (float("nan"), 0) for name, _, _ in KPIS}
    gpus = gpu_counts(snapshot)
    jobs = jobs_summary(snapshot)
    counts = alert_counts(alerts)
    return {
        "it_power": (snapshot.it_power_mw, 1),
        "facility_power": (snapshot.facility_power_mw, 1),
        "supply_headroom": (snapshot.generation_capacity_mw - snapshot.facility_power_mw, 1),
        "pue": (snapshot.pue_ratio, 2),
        "n1": (float(len(n1_status(state, snapshot)["elements_over"])), 0),
        "gpus_ok": (float(gpus_running(snapshot)[0]), 0),
        "gpus_throttled": (float(gpus["throttled"]), 0),
        "gpus_down": (float(gpus["down"]), 0),
        "tokens": (jobs["tokens_per_s"], 0),
        "goodput": (jobs["goodput_tokens_per_s"], 0),
        "mfu": (jobs["mfu_frac"] * 100.0, 1),
        "alerts": (float(counts["open"]), 0),
    }


def comparison(screen) -> list:
    """Compare mode: KPI tiles of A against B, and the hottest racks of A with their B values."""
    state = screen.view.state
    a_snap, b_snap = screen.view.latest(), screen.compare.latest()
    a = kpi_numbers(state, a_snap, screen.view.alerts(active_only=True))
    b = kpi_numbers(state, b_snap, screen.compare.alerts(active_only=True))
    tiles = []
    for name, label, unit in KPIS:
        label = label + (" (N-1 elements over)" if name == "n1" else "")
        value, note = compare.tile_texts(a[name][0], b[name][0], a[name][1], screen.diff, "B")
        tiles.append(kpi_card(PAGE + "-compare", name, ("Δ " if screen.diff else "") + label, unit, value, note))
    children = [compare.header(screen), html.Div(tiles, className="kpis")]
    if a_snap is not None and b_snap is not None:
        racks = [r["rack"] for r in hottest_racks(state, a_snap)]
        names = [state.rack_name[r] for r in racks]
        hrefs = ["/floor?" + urlencode({"rack": n, "metric": "max_gpu_temp_c"}) for n in names]
        columns = [
            ("max GPU [°C]", 1, a_snap.rack_max_gpu_temp_c[racks], b_snap.rack_max_gpu_temp_c[racks]),
            ("power [kW]", 1, a_snap.rack_power_kw[racks], b_snap.rack_power_kw[racks]),
        ]
        children.append(
            html.Div(
                [html.H3("Hottest racks in A, against B"), compare.entities_table(names, hrefs, columns, screen)],
                className="panel",
            )
        )
    return children


compare.register(PAGE, comparison)


def hot_racks_table(rows: list[dict]) -> html.Table | html.Div:
    """The hottest racks, each linking to its floor drill-down."""
    if not rows:
        return html.Div("no rack data", className="empty")
    head = html.Tr(
        [
            html.Th("rack"),
            html.Th("hall"),
            html.Th("max GPU [°C]", className="num"),
            html.Th("power [kW]", className="num"),
            html.Th("to throttle", className="num"),
        ]
    )
    body = [
        html.Tr(
            [
                html.Td(
                    dcc.Link(r["name"], href="/floor?" + urlencode({"rack": r["name"], "metric": "max_gpu_temp_c"}))
                ),
                html.Td(r["hall"]),
                html.Td(fmt(r["max_gpu_temp_c"], 1), className="num"),
                html.Td(fmt(r["rack_power_kw"], 1), className="num"),
                html.Td(fmt_duration(r["time_to_throttle_s"]), className="num"),
            ]
        )
        for r in rows
    ]
    return html.Table([html.Thead(head), html.Tbody(body)], className="data")


def open_alerts_list(state, alerts: list[dict], count: int = 5, now: datetime | None = None) -> html.Div:
    """Open alerts by cause, most urgent first and the muted ones (:func:`muted_causes`) last, marked
    "· muted"; each cause links to its equipment, with its impact."""
    groups = group_alerts(alerts)
    muted = {c.key: c for c in muted_causes(alerts, now)}
    rows = []
    for group in sorted(groups, key=lambda g: g.key in muted)[:count]:  # stable: urgency kept within each
        root = group.root
        href = entity_href(state, root.get("entity_kind", ""), root.get("entity_id"), root.get("entity_name"))
        name = root.get("entity_name", "")
        impact = [f"{group.gpus:,} GPUs"] if group.gpus else []
        impact += [f"{len(group.jobs)} job{'s' if len(group.jobs) != 1 else ''}"] if group.jobs else []
        more = f" +{len(group.children)}" if group.children else ""
        rows.append(
            html.Tr(
                [
                    html.Td(html.Span(group.severity, className=f"sev sev-{group.severity}")),
                    html.Td(
                        [
                            dcc.Link(name, href=href) if href else name,
                            html.Span(f" {root.get('message', '')}"),
                            *(
                                [html.Span(" · muted", className="muted", title=muted[group.key].reason)]
                                if group.key in muted
                                else []
                            ),
                        ],
                        className="alert-text",
                    ),
                    html.Td(" · ".join(impact) + more, className="num muted"),
                ],
                className="cause-muted" if group.key in muted else None,
            )
        )
    body = (
        html.Table(html.Tbody(rows), className="data alerts-compact")
        if rows
        else html.Div("no open alerts", className="empty")
    )
    counts = alert_counts(alerts)
    return html.Div(
        [
            body,
            dcc.Link(
                f"all alerts ({counts['open']} open, {len(groups)} causes, "
                f"{counts['need_attention']} need attention) →",
                href="/alerts",
            ),
        ]
    )


def banner_block(state, banner: Banner) -> list:
    """The status banner's children: severity, headline linked to the cause, scope and job impact."""
    href = entity_href(state, banner.entity_kind, None, banner.entity_name) if banner.entity_kind else None
    headline = dcc.Link(banner.headline, href=href) if href else html.Span(banner.headline)
    more = (
        [" · ", dcc.Link(f"{banner.more} more cause{'s' if banner.more != 1 else ''} →", href="/alerts")]
        if banner.more
        else []
    )
    if banner.muted and banner.severity != "ok":  # the quiet banner's scope already counts them
        n = len(banner.muted)
        more += [
            " · ",
            html.Span(f"{n} muted", className="status-muted", title="; ".join(c.reason for c in banner.muted)),
        ]
    return [
        html.Span(banner.severity.upper() if banner.severity != "ok" else "OK", className=f"sev sev-{banner.severity}"),
        html.Span(headline, className="status-headline"),
        html.Span(banner.scope, className="status-scope"),
        html.Span([banner.job_impact, *more], className="status-jobs"),
    ]


def jobs_table(snapshot) -> html.Table | html.Div:
    """Running jobs with throughput, MFU, goodput and ETTR."""
    if snapshot is None or not snapshot.jobs:
        return html.Div("no running jobs", className="empty")
    head = html.Tr(
        [
            html.Th("job"),
            html.Th("GPUs", className="num"),
            html.Th("tokens/s", className="num"),
            html.Th("MFU [%]", className="num"),
            html.Th("goodput [tokens/s]", className="num"),
            html.Th("ETTR [%]", className="num"),
        ]
    )
    body = [
        html.Tr(
            [
                html.Td(dcc.Link(j.name, href="/jobs?" + urlencode({"job": j.name}))),
                html.Td(f"{len(j.gpu_ids):,}", className="num"),
                html.Td(fmt_si(j.tokens_per_s), className="num"),
                html.Td(fmt_pct(j.mfu_frac, 1), className="num"),
                html.Td(fmt_si(j.goodput_tokens_per_s), className="num"),
                html.Td(fmt_pct(j.ettr_frac, 1), className="num"),
            ]
        )
        for j in snapshot.jobs
    ]
    return html.Table([html.Thead(head), html.Tbody(body)], className="data")


def trend_figures(frame, window_s: int, pinned: str | None = None) -> dict:
    """Trend id -> full figure for the window (uirevision tied to the window), pin drawn."""
    return {
        tid: trend_figure(
            frame,
            series,
            y_title,
            unit,
            title,
            uirevision=f"{tid}-{window_s}",
            dashed=dashed,
            from_zero=zero,
            pinned=pinned,
        )
        for tid, title, series, y_title, unit, dashed, zero in TRENDS
    }


def tiles_of(view) -> dict:
    """The tiles of a view's latest tick, over its trend's last seconds ("GPUs running": the fleet's
    allocation when a fleet runs beside the tick)."""
    tick = view.latest_tick()
    fleet = fleet_of(view)
    gpu_job = fleet.gpu_job_now() if fleet is not None else None
    alerts = view.alerts(active_only=True)
    return overview_tiles(view.state, tick.snapshot, tick.detail, view.trend(120.0), alerts, gpu_job)


@view_layout
@inputs.query_layout(window=inputs.window_s, at=inputs.instant)
def layout(window=None, at=None, **_kwargs) -> html.Div:
    screen = layout_screen(**_kwargs)
    view = screen.view
    window_s = parse_window(window)
    pinned = parse_at(at)
    tick = view.latest_tick()
    snapshot = tick.snapshot
    alerts = view.alerts(active_only=True)
    tiles = tiles_of(view)
    figures = trend_figures(trend_frame(view, window_s), window_s, pinned)
    # compare mode: the comparison's tiles replace the cards (the live callback then has none to update)
    cards = (
        [
            kpi_card(PAGE, name, label, unit, t.value, t.note, t.status, t.spark, t.basis)
            for (name, label, unit), t in ((k, tiles[k[0]]) for k in KPIS)
        ]
        if screen.compare is None
        else []
    )
    now = view_now(view)
    banner = status_banner(alerts, snapshot.jobs if snapshot is not None else [], now, tiles["tokens"].value)
    graph_config = {"displaylogo": False, "responsive": True, "displayModeBar": "hover"}
    return html.Div(
        [
            dcc.Store(id=ids.Overview.SELECTION, data=None),
            dcc.Store(id=ids.Overview.URL_SYNC),
            dcc.Store(id=ids.Overview.PINNED, data=pinned),
            LIVE_RELAY.store(),
            PIN_RELAY.store(),
            html.H1("Overview", className="visually-compact"),
            html.Div(
                banner_block(view.state, banner),
                id=ids.Overview.STATUS,
                className=f"status-banner status-banner-{banner.severity}",
                role="status",
            ),
            compare.section(PAGE, screen),
            html.Div(cards, id=ids.Overview.KPIS, className="kpis" if cards else ""),
            html.Div(power_breakdown(snapshot, tick.detail), id=ids.Overview.BREAKDOWN, className="breakdown muted"),
            html.Div(
                [
                    html.Div(
                        [
                            html.H3("Open alerts by cause"),
                            html.Div(open_alerts_list(view.state, alerts, now=now), id=ids.Overview.OPEN_ALERTS),
                        ],
                        className="panel",
                    ),
                    html.Div(
                        [html.H3("Jobs"), html.Div(jobs_table(snapshot), id=ids.Overview.JOBS)], className="panel"
                    ),
                    html.Div(
                        [
                            html.H3("Hottest racks"),
                            html.Div(
                                hot_racks_table(hottest_racks(view.state, snapshot)) if snapshot else None,
                                id=ids.Overview.HOT_RACKS,
                            ),
                        ],
                        className="panel",
                    ),
                ],
                className="grid-3",
            ),
            html.Div(
                [
                    html.H2("Trends", className="section-title"),
                    html.Div(
                        [
                            html.Label("trend window", htmlFor=ids.Overview.WINDOW),
                            dcc.RadioItems(
                                id=ids.Overview.WINDOW,
                                value=window_s,
                                inline=True,
                                className="segmented",
                                options=[
                                    {"label": f"{w // 60} min" if w < 3600 else f"{w // 3600} h", "value": w}
                                    for w in WINDOWS_S
                                ],
                            ),
                            html.Span(pin_label(pinned), id=ids.Overview.PIN_LABEL, className="muted"),
                            html.Button("clear pin", id=ids.Overview.PIN_CLEAR, n_clicks=0),
                        ],
                        className="controls",
                    ),
                ],
                className="page-title",
            ),
            html.Div(
                [
                    html.Div(
                        dcc.Graph(
                            id=tid, figure=figures[tid], config=graph_config, style={"height": f"{TREND_HEIGHT_PX}px"}
                        ),
                        className="panel",
                    )
                    for tid, *_ in TRENDS
                ],
                className="grid-3",
            ),
        ],
        className="page page-overview",
    )


@dash.callback(
    Output(ids.kpi_value(PAGE, ALL), "children"),
    Output(ids.kpi_value(PAGE, ALL), "className"),
    Output(ids.kpi_note(PAGE, ALL), "children"),
    Output(ids.kpi_spark(PAGE, ALL), "children"),
    Output(ids.Overview.STATUS, "children"),
    Output(ids.Overview.STATUS, "className"),
    Output(ids.Overview.BREAKDOWN, "children"),
    Output(ids.Overview.HOT_RACKS, "children"),
    Output(ids.Overview.OPEN_ALERTS, "children"),
    Output(ids.Overview.JOBS, "children"),
    LIVE_RELAY.output,
    Input(ids.Shell.TICK, "n_intervals"),
    State(ids.Overview.WINDOW, "value"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def live_update(_n, window_s, shown):
    view = callback_view(shown, PATH)
    names = [o["id"]["name"] for o in ctx.outputs_list[0]] if ctx.outputs_list else [k for k, _, _ in KPIS]
    outputs = overview_update(view, parse_window(window_s), names)
    return (*outputs[: -len(TRENDS)], LIVE_RELAY.send(shown, *outputs[-len(TRENDS) :]))


def overview_update(view, window_s: int, kpi_names: list[str]) -> tuple:
    """Everything the live callback sends: tiles, the banner, the breakdown, three tables, trend patches."""
    tick = view.latest_tick()
    snapshot = tick.snapshot
    alerts = view.alerts(active_only=True)
    tiles = tiles_of(view)
    values = [tiles[name].value for name in kpi_names]
    classes = [f"kpi-value {tiles[name].status}".strip() for name in kpi_names]
    notes = [tiles[name].note for name in kpi_names]
    sparks = [tiles[name].spark for name in kpi_names]
    now = view_now(view)
    banner = status_banner(alerts, snapshot.jobs if snapshot is not None else [], now, tiles["tokens"].value)
    frame = trend_frame(view, window_s)
    patches = [trend_patch(frame, [column for column, _ in series]) for _, _, series, *_ in TRENDS]
    hot = hot_racks_table(hottest_racks(view.state, snapshot)) if snapshot else None
    return (
        values,
        classes,
        notes,
        sparks,
        banner_block(view.state, banner),
        f"status-banner status-banner-{banner.severity}",
        power_breakdown(snapshot, tick.detail),
        hot,
        open_alerts_list(view.state, alerts, now=now),
        jobs_table(snapshot),
        *patches,
    )


def pin_label(pinned: str | None) -> str:
    return f"pinned {pinned} UTC" if pinned else "click a trend to pin a time"


@dash.callback(
    *[Output(tid, "figure", allow_duplicate=True) for tid, *_ in TRENDS],
    Input(ids.Overview.WINDOW, "value"),
    State(ids.Overview.PINNED, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def change_window(window_s, pinned, shown):
    window_s = parse_window(window_s)
    figures = trend_figures(trend_frame(callback_view(shown, PATH), window_s), window_s, pinned)
    return tuple(figures[tid] for tid, *_ in TRENDS)


@dash.callback(
    Output(ids.Overview.PINNED, "data"),
    *[Input(tid, "clickData") for tid, *_ in TRENDS],
    Input(ids.Overview.PIN_CLEAR, "n_clicks"),
    prevent_initial_call=True,
)
def pin_time(*inputs):
    if ctx.triggered_id == ids.Overview.PIN_CLEAR:
        return None
    return clicked_time(ctx.triggered[0]["value"] if ctx.triggered else None)


def clicked_time(click_data) -> str | None:
    """The time of a clicked trend point as a pin (no_update when the click has none)."""
    try:
        pinned = parse_at(str(click_data["points"][0]["x"]))
    except (TypeError, KeyError, IndexError):
        return no_update
    return pinned or no_update


@dash.callback(
    Output(ids.Overview.SELECTION, "data"),
    Output(ids.Overview.PIN_LABEL, "children"),
    PIN_RELAY.output,
    Input(ids.Overview.WINDOW, "value"),
    Input(ids.Overview.PINNED, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def sync_url_and_pin(window_s, pinned, shown):
    if ctx.triggered_id is None:  # Dash's initial call when the page mounts: the URL already says this
        return no_update, no_update, no_update
    on_page(shown, PATH)
    pins = (
        PIN_RELAY.send(shown, *[pin_patch(pinned) for _ in TRENDS])
        if ctx.triggered_id == ids.Overview.PINNED
        else no_update
    )
    selection = {"window": str(parse_window(window_s)), "at": pinned.replace(" ", "T") + "Z" if pinned else None}
    return selection, pin_label(pinned), pins


# the address bar follows the selection in the browser (a late server reply cannot rewrite another page's URL)
register_url_writer(ids.Overview.SELECTION, ids.Overview.URL_SYNC)
