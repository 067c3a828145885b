"""The what-if answer as tables: the compared figures by section, the loads that changed most, what breaks.

Built from :mod:`dashboard.whatif.outcome` (the numbers of ``clustertwin project``) as
plain ``html`` components, which the page sends as static markup.  Changes are red where
the twin's verdict is worse, green where it is better; fractions print as percent and
times to throttle as durations.
"""

from __future__ import annotations

import math
from urllib.parse import urlencode

from dash import dcc, html

from dashboard.whatif.outcome import SECTIONS, diff_rows, entity_changes, finding_counts, new_findings
from twin.scenario.conditions import WHATIF_FLEET_UTIL_FRAC


def _duration(seconds: float) -> str:
    """A time to throttle to the second, so a change reads in the same units: ``48 s``, ``3 min 17 s``."""
    if seconds >= 3600:
        return "≥ 60 min"
    minutes, rest = divmod(round(seconds), 60)
    return f"{rest} s" if minutes == 0 else f"{minutes} min {rest:02d} s"


def _fmt(value: float, key: str, digits: int) -> str:
    """A compared value: fractions as percent, times to throttle (keys ``ttt.*``) as durations."""
    if not isinstance(value, (int, float)) or math.isnan(value):
        return "–"
    duration = key.startswith("ttt.")
    if math.isinf(value):
        return "never" if duration else "∞"
    if key.endswith("_frac"):
        return f"{value * 100:,.{digits}f}"
    if duration:
        return _duration(value)
    return f"{value:,.{digits}f}"


def _signed(value: float, key: str, digits: int) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "–"
    if math.isinf(value):
        return "+∞" if value > 0 else "−∞"
    scaled = value * 100 if key.endswith("_frac") else value
    if round(scaled, digits) == 0:
        return "±0"
    sign = "+" if scaled > 0 else "−"
    return sign + (_duration(abs(scaled)) if key.startswith("ttt.") else f"{abs(scaled):,.{digits}f}")


def _change_class(verdict: str, shown: str = "") -> str:
    """Red when the twin says worse, green when better; plain otherwise or when the change shows as zero."""
    if shown == "±0" or verdict not in ("worse", "better"):
        return "num"
    return f"num whatif-{verdict}"


def feasibility(result) -> html.Div | None:
    """ "Not feasible" at the top when the scenario runs power elements over their usable rating or
    breaks a design rating: their protection would trip them, so the figures below (which assume
    they hold) are not what would happen.  None when the scenario is feasible."""
    side = result.answer.scenario
    over = sorted(side.overloaded_elements, key=lambda e: -e.load_frac)
    errors = side.n_design_errors
    if not over and not errors:
        return None
    parts = []
    if over:
        worst = ", ".join(f"{e.element} at {e.load_frac * 100:.0f} %" for e in over[:3])
        parts.append(
            f"{len(over):,} power element{'s' if len(over) > 1 else ''} over {'their' if len(over) > 1 else 'its'}"
            f" usable rating ({worst}{', …' if len(over) > 3 else ''}): protection would trip "
            f"{'them' if len(over) > 1 else 'it'}, and the figures below assume {'they hold' if len(over) > 1 else 'it holds'}"
        )
    if errors:
        parts.append(f"{errors:,} design rating{'s' if errors > 1 else ''} exceeded (see what breaks by design)")
    return html.Div(
        [html.Strong("Not feasible as edited: "), "; ".join(parts) + "."],
        className="status-critical whatif-infeasible",
        role="alert",
    )


def baseline_note(result) -> str:
    """What the baseline of an editor's answer is: the site as built, with whose work on its GPUs."""
    return baseline_text(result.base, getattr(result, "load", None))


def baseline_text(base, load) -> str:
    """What a what-if's baseline is on site ``base`` with the fleet's ``load`` (None: the nominal load)."""
    job = base.default_job or "no job"
    if load is not None:
        when = f" of {load.taken_at:%H:%M} UTC" if load.taken_at is not None else ""
        return (
            f"Baseline: the site as built running {job} and the live fleet's occupancy{when} "
            f"({load.allocated_frac:.0%} of GPUs allocated, refreshed every 10 min); both sides run it, "
            f"and new or converted racks run the fleet's mean load ({load.mean_util_frac:.0%})."
        )
    return (
        f"Baseline: the site as built running {job}, every other GPU at the nominal training load "
        f"({WHATIF_FLEET_UTIL_FRAC:.0%}: no live fleet to take the occupancy from)."
    )


def comparison_children(result, scenario: str | None, problem: str | None) -> list:
    children = [
        html.Div(
            [
                html.H2(f"Scenario {scenario or '–'} against the baseline"),
                html.Span(
                    "rows sorted by the size of the change; red worse, green better (as clustertwin project says)",
                    className="muted",
                ),
            ],
            className="page-title",
        ),
        html.P(baseline_note(result), className="muted whatif-baseline"),
    ]
    verdict = feasibility(result)
    if verdict is not None:
        children.append(verdict)
    if scenario:
        query = {"view": f"scenario:{scenario}", "compare": "live"}
        children.append(
            html.Div(
                ["Beside live on every page: "]
                + [
                    item
                    for path, label in (
                        ("/floor", "floor"),
                        ("/power", "power"),
                        ("/cooling", "cooling"),
                        ("/jobs", "jobs"),
                    )
                    for item in (dcc.Link(label, href=f"{path}?{urlencode(query)}", className="whatif-view-link"), " ")
                ],
                className="whatif-view-links",
            )
        )
    if problem:
        children.append(
            html.Div(f"The stored edits no longer apply to this site: {problem}", className="status-critical")
        )
    tables = []
    for section in SECTIONS:
        body = []
        for r in diff_rows(result, section):
            q = r.quantity
            change = _signed(r.change, q.path, q.digits)
            body.append(
                html.Tr(
                    [
                        html.Td(q.label),
                        html.Td("" if q.path.startswith("ttt.") else q.unit, className="muted"),
                        html.Td(_fmt(r.baseline, q.path, q.digits), className="num"),
                        html.Td(_fmt(r.scenario, q.path, q.digits), className="num"),
                        html.Td(change, className=_change_class(r.verdict, change)),
                    ],
                    **{"data-key": q.path},
                )
            )
        head = html.Tr(
            [
                html.Th(section),
                html.Th("unit"),
                html.Th("baseline", className="num"),
                html.Th("scenario", className="num"),
                html.Th("change", className="num"),
            ]
        )
        tables.append(
            html.Div(
                html.Table(
                    [html.Thead(head), html.Tbody(body)], className="data compare-table", id=f"whatif-table-{section}"
                ),
                className="panel",
            )
        )
    children.append(html.Div(tables, className="grid-2 whatif-tables"))
    entity_tables = []
    for kind, title in (
        ("power", "Power elements whose load changed most"),
        ("cdu", "CDUs whose capacity use changed most"),
    ):
        body = []
        for name, a, b in entity_changes(result, kind):
            change = _signed((b - a), "x_frac", 1) if math.isfinite(a) else "new"
            body.append(
                html.Tr(
                    [
                        html.Td(name),
                        html.Td(_fmt(a, "x_frac", 1) if math.isfinite(a) else "–", className="num"),
                        html.Td(_fmt(b, "x_frac", 1), className="num"),
                        html.Td(
                            change,
                            className=_change_class("worse" if b > a else "better" if b < a else "added", change),
                        ),
                    ]
                )
            )
        head = html.Tr(
            [
                html.Th("element" if kind == "power" else "CDU"),
                html.Th("baseline [%]", className="num"),
                html.Th("scenario [%]", className="num"),
                html.Th("change [pp]", className="num"),
            ]
        )
        entity_tables.append(
            html.Div(
                [
                    html.H3(title),
                    html.Table(
                        [
                            html.Thead(head),
                            html.Tbody(body or [html.Tr(html.Td("no change", colSpan=4, className="muted"))]),
                        ],
                        className="data compare-table",
                        id=f"whatif-entities-{kind}",
                    ),
                ],
                className="panel",
            )
        )
    children.append(html.Div(entity_tables, className="grid-2"))
    children.append(findings_panel(result))
    return children


def findings_panel(result) -> html.Div:
    """What breaks by design: exceeded ratings and port budgets of the edited site, by check and the worst ones."""
    head = html.Tr(
        [
            html.Th("design check"),
            html.Th("baseline", className="num"),
            html.Th("scenario", className="num"),
            html.Th("change", className="num"),
        ]
    )
    body = []
    for check, a, b in finding_counts(result):
        change = _signed(float(b - a), "", 0)
        body.append(
            html.Tr(
                [
                    html.Td(check.replace("_", " ")),
                    html.Td(f"{a:,}", className="num"),
                    html.Td(f"{b:,}", className="num"),
                    html.Td(change, className=_change_class("worse" if b > a else "better", change)),
                ]
            )
        )
    items = [
        html.Li([html.Strong(f.element), f" · {f.check.replace('_', ' ')} ({f.severity}): {f.message}"])
        for f in new_findings(result)
    ]
    return html.Div(
        [
            html.H3("What breaks by design (ratings and ports at full power)"),
            html.Table(
                [html.Thead(head), html.Tbody(body or [html.Tr(html.Td("no findings", colSpan=4, className="muted"))])],
                className="data compare-table",
                id="whatif-findings",
            ),
            html.Ul(items, className="whatif-findings") if items else html.Div("nothing new breaks", className="muted"),
        ],
        className="panel",
    )
