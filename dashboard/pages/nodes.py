"""``/nodes``: nodes out of service (down, in repair, lemon, drained) with reason and age; failures by cause
over a window beside Llama 3's Table 5; MTBF per cause and per node.

Reads the view's fleet (:meth:`ingest.live.view.LiveView.fleet`); MTBF over a window is
node-time in service divided by failures (per cause: all nodes × window / failures of that
cause; per node: the window / its failures).
"""

from __future__ import annotations

import math

import dash
import numpy as np
from dash import Input, Output, State, callback, dcc, html

from dashboard import ids
from dashboard.components.fleet_panel import fleet_of
from dashboard.components.kpi import kpi_card
from dashboard.figures.fleet import failures_figure
from dashboard.present.data_table import Column, data_table
from dashboard.present.formatting import fmt_node_age
from dashboard.views.registry import callback_view, layout_screen, view_layout
from twin.fleet.failures import CAUSE_SHARE, CAUSES

PATH = "/nodes"
dash.register_page(__name__, path=PATH, name="Nodes", title="Nodes · ClusterTwin", order=8)

PAGE = "nodes"
WINDOWS_S = (("last 24 h", 86_400.0), ("last 7 days", 7 * 86_400.0), ("since start", math.inf))
SHOWN_NODES = 200
STATES = ("down", "in repair", "lemon", "drained")
NODE_COLUMNS = (
    Column("node", "node"),
    Column("state", "state"),
    Column("reason", "reason"),
    Column("age", "for"),
    Column("failures_count", "failures so far", "{:,}"),
)
CAUSE_COLUMNS = (
    Column("cause", "cause"),
    Column("failures_count", "failures", "{:,}"),
    Column("share_pct", "share (%)", "{:.1f}"),
    Column("llama3_pct", "Llama 3 share (%)", "{:.1f}"),
    Column("mtbf_node_days", "MTBF per node (days)", "{:,.0f}"),
)
WORST_COLUMNS = (
    Column("node", "node"),
    Column("failures_count", "failures", "{:,}"),
    Column("mtbf_h", "MTBF (h)", "{:,.1f}"),
)


def window_stats(frame, window_s: float) -> dict:
    """Failures by cause in the window, MTBF per cause and per node, the nodes out with their age."""
    span = min(window_s, frame.elapsed_s) if frame.elapsed_s > 0 else window_s
    f = frame.failures
    keep = f["time_s"] > frame.ts_s - span if math.isfinite(span) else np.ones(f["time_s"].size, bool)
    cause_idx = {c: i for i, c in enumerate(CAUSES)}
    counts = np.zeros(len(CAUSES), np.int64)
    for c in f["cause"][keep].tolist():
        counts[cause_idx[c]] += 1
    total = int(counts.sum())
    node_days = frame.n_nodes * span / 86_400.0 if math.isfinite(span) else math.nan
    causes = [
        {
            "cause": c.replace("_", " "),
            "failures_count": int(counts[i]),
            "share_pct": 100.0 * counts[i] / total if total else 0.0,
            "llama3_pct": 100.0 * float(CAUSE_SHARE[i]),
            "mtbf_node_days": node_days / counts[i] if counts[i] else None,
        }
        for i, c in enumerate(CAUSES)
    ]
    per_node = np.bincount(f["node"][keep].astype(np.int64), minlength=frame.n_nodes) if total else np.zeros(0)
    worst = np.argsort(per_node)[::-1][:10] if total else np.zeros(0, np.int64)
    return {"causes": causes, "total": total, "span_s": span, "per_node": per_node, "worst": worst}


def nodes_rows(frame) -> list[dict]:
    rows = [dict(n, age=fmt_node_age(frame.ts_s - n["since_s"])) for n in frame.nodes]
    rows.sort(key=lambda r: (STATES.index(r["state"]) if r["state"] in STATES else 9, -r["failures_count"]))
    return rows[:SHOWN_NODES]


def content(view, window: str) -> list:
    fleet = fleet_of(view)
    if fleet is None:
        return [html.Div("this view has no fleet: the live twin runs one", className="empty")]
    frame = fleet.frame()
    window_s = dict(WINDOWS_S).get(window, 86_400.0)
    stats = window_stats(frame, window_s)
    by_state = {s: sum(1 for n in frame.nodes if n["state"] == s) for s in STATES}
    cards = [
        kpi_card(
            PAGE,
            s.replace(" ", "-"),
            s.capitalize(),
            "nodes",
            f"{by_state[s]:,}",
            status="warning" if by_state[s] else "ok",
        )
        for s in STATES
    ]
    cards.append(kpi_card(PAGE, "failures", "Failures", "", f"{stats['total']:,}", note=window))
    state = view.state
    worst = [
        {
            "node": state.node_name[int(n)],
            "failures_count": int(stats["per_node"][n]),
            "mtbf_h": stats["span_s"] / 3600.0 / stats["per_node"][n],
        }
        for n in stats["worst"].tolist()
        if stats["per_node"][n] > 0
    ]
    causes = [r for r in stats["causes"]]
    fig = failures_figure(
        [r["cause"] for r in causes],
        [r["failures_count"] for r in causes],
        [r["llama3_pct"] / 100 for r in causes],
        window,
    )
    return [
        html.Div(cards, className="kpis"),
        html.Div(
            [
                html.Div(
                    [
                        html.H3(f"Nodes out of service ({len(frame.nodes):,})"),
                        data_table(nodes_rows(frame), NODE_COLUMNS, "every node is in service", table_id="nodes-out"),
                    ],
                    className="panel",
                ),
                html.Div(
                    dcc.Graph(
                        id="nodes-failures", figure=fig, style={"height": "420px"}, config={"displaylogo": False}
                    ),
                    className="panel",
                ),
            ],
            className="grid-2",
        ),
        html.Div(
            [
                html.Div(
                    [
                        html.H3(f"Failures and MTBF by cause, {window}"),
                        data_table(causes, CAUSE_COLUMNS, table_id="nodes-causes"),
                    ],
                    className="panel",
                ),
                html.Div(
                    [
                        html.H3("Nodes failing most (MTBF per node)"),
                        data_table(worst, WORST_COLUMNS, "no failures in the window", table_id="nodes-worst"),
                    ],
                    className="panel",
                ),
            ],
            className="grid-2",
        ),
    ]


@view_layout
def layout(**_kwargs) -> html.Div:
    screen = layout_screen(**_kwargs)
    window = WINDOWS_S[0][0]
    return html.Div(
        [
            html.Div(
                [
                    html.H1("Nodes"),
                    html.Div(
                        [
                            html.Label("Window", htmlFor="nodes-window"),
                            dcc.RadioItems(
                                id="nodes-window",
                                options=[w for w, _ in WINDOWS_S],
                                value=window,
                                inline=True,
                                className="segmented",
                            ),
                        ],
                        className="controls",
                    ),
                ],
                className="page-title",
            ),
            html.Div(content(screen.view, window), id="nodes-content"),
        ]
    )


@callback(
    Output("nodes-content", "children"),
    Input(ids.Shell.TICK, "n_intervals"),
    Input("nodes-window", "value"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def refresh(_n, window, shown):
    return content(callback_view(shown, PATH), window or WINDOWS_S[0][0])
