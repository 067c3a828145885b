"""``/whatif``: edit a scenario on the floor plan and the power/cooling forms, and see the twin's answer.

The page holds a scenario (a named, ordered list of edits in the scenario store), a floor
plan to select racks on (click toggles a rack; box or lasso select; by hall, row or
name pattern), forms for every edit, the comparison of the scenario with the baseline
(worst changes first, the floor coloured red where worse and green where better) and the
blast radius of any element.  Every edit is checked by the twin's what-if pipeline (:func:`dashboard.whatif.edits.resolve_edits`)
on the whole list before it is stored: a refused edit shows its message beside the
button that made it, and the stored scenario stays as it was.

Deep link: ``/whatif?scenario=NAME&racks=H4-*&trip=transformer:H1-TX1-A``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time

import dash
import numpy as np
from dash import Input, Output, State, dcc, html, no_update

from dashboard import ids
from dashboard.analysis.aggregates import FLOOR_METRIC_BY_KEY
from dashboard.auth import audit, callback_requires, needs_role
from dashboard.callbacks import inputs
from dashboard.callbacks.dash_internals import PUSH_STATE_JS
from dashboard.figures.floor import hall_grids
from dashboard.figures.whatif_floor import layout_signature, outline_patch, whatif_floor, whatif_floor_patch
from dashboard.present.static_html import to_html
from dashboard.views.context import live_view, site_db
from dashboard.views.registry import on_page
from dashboard.whatif.edits import (
    CAP_SCOPES,
    FAIL_KINDS,
    SETPOINT_LABELS,
    SETPOINT_TARGETS,
    EditRejected,
    describe,
    job_names,
    kind_names,
    match_names,
    resolve_edits,
    setpoint_names,
)
from dashboard.whatif.outcome import BLAST_KINDS, blast_names, blast_radius, live_load, outcome, rack_changes
from dashboard.whatif.store import export_toml, import_toml, scenario_store
from dashboard.whatif.tables import comparison_children
from twin.site.catalogue import load_catalogue
from twin.site.edits import SETPOINT_FIELD
from twin.site.tables import POWER_KINDS

PATH = "/whatif"
dash.register_page(__name__, path=PATH, name="What-if", title="What-if · ClusterTwin", order=7)

W = ids.WhatIf
GRAPH_CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["autoScale2d"]}
MAX_OPTIONS = 60  # element choices sent per search (a site has 100k links)
APPLY_BUTTONS = (
    W.APPLY_TYPE,
    W.APPLY_MOVE,
    W.APPLY_REMOVE,
    W.APPLY_FEEDS,
    W.APPLY_CDU,
    W.APPLY_CAP,
    W.APPLY_FAIL,
    W.APPLY_RESTORE,
    W.APPLY_SETPOINT,
    W.APPLY_WEATHER,
    W.APPLY_JOB,
)
MANAGE_TRIGGERS = (W.NEW, W.RENAME, W.DUPLICATE, W.DELETE, W.UNDO, W.REDO, W.IMPORT)
OPERATOR_CONTROLS = frozenset(MANAGE_TRIGGERS + APPLY_BUTTONS)  # disabled for viewers (the callbacks refuse them)
# the forms' values build_edit reads: its key in the form, and the control that holds it
FORM_FIELDS = (
    ("type", W.TYPE),
    ("x", W.MOVE_X),
    ("y", W.MOVE_Y),
    ("feed_a", W.FEED_A),
    ("feed_b", W.FEED_B),
    ("cdu", W.CDU),
    ("loop", W.LOOP),
    ("cap_scope", W.CAP_SCOPE),
    ("cap_w", W.CAP_W),
    ("fail_kind", W.FAIL_KIND),
    ("fail_element", W.FAIL_ELEMENT),
    ("setpoint_target", W.SETPOINT_TARGET),
    ("setpoint_element", W.SETPOINT_ELEMENT),
    ("setpoint_c", W.SETPOINT_C),
    ("dry", W.DRY_BULB),
    ("wet", W.WET_BULB),
    ("job", W.JOB),
    ("design_limits", W.DESIGN_LIMITS),
)
# what an answer to an edit updates: the edit list, the comparison, the floor, undo/redo, the time taken
ANSWER_OUTPUTS = (
    (W.EDIT_LIST, "children"),
    (W.COMPARISON_HTML, "data"),
    (W.FLOOR, "figure"),
    (W.UNDO, "disabled"),
    (W.REDO, "disabled"),
    (W.ELAPSED, "children"),
    (W.FLOOR_SIGNATURE, "data"),
)
_GRIDS: dict[int, tuple[object, list]] = {}
FLOOR_COLOURS = ("max_gpu_temp_c", "rack_power_kw")  # the rack figures the twin's comparison gives per rack
DEFAULT_COLOUR = "max_gpu_temp_c"


def grids_for(state) -> list:
    """Hall grids of ``state`` (a scenario's own tables when racks moved), computed once per tables."""
    cached = _GRIDS.get(id(state))
    if cached is None or cached[0] is not state:
        if len(_GRIDS) > 32:
            _GRIDS.clear()
        cached = (state, hall_grids(state))
        _GRIDS[id(state)] = cached
    return cached[1]


def _store():
    from flask import current_app

    return scenario_store(live_view(), site_db(), current_app.config)


def _state():
    return live_view().state


def _load():
    """The live fleet's occupancy both sides of the answer run (None without a fleet: the nominal load)."""
    return live_load(live_view())


def rack_types() -> list[str]:
    """Rack types of the catalogue (GB200-NVL72 once the catalogue has it)."""
    return sorted(load_catalogue().racks)


def busway_names(state, side: int) -> list[str]:
    return [
        n
        for n, k, s in zip(state.power_name, state.power_kind, state.power_side)
        if POWER_KINDS[k] == "busway" and s == side
    ]


# ------------------------------------------------------------------ layout
def _msg(control: str) -> html.Span:
    return html.Span(id=ids.whatif_msg(control), className="whatif-msg", role="status")


def _field(label: str, control, width: str | None = None) -> html.Label:
    return html.Label(
        [html.Span(label, className="whatif-label"), control],
        className="whatif-field",
        style={"minWidth": width} if width else None,
    )


def _button(control: str, text: str, kind: str = "") -> html.Button:
    guard = needs_role("operator") if control in OPERATOR_CONTROLS else {}
    return html.Button(text, id=control, n_clicks=0, className=f"whatif-button {kind}".strip(), **guard)


def _number(control: str, placeholder: str, step: float = 0.1) -> dcc.Input:
    return dcc.Input(
        id=control, type="number", placeholder=placeholder, step=step, debounce=False, className="whatif-number"
    )


def scenario_bar(names: list[str], current: str | None, persistent: bool) -> html.Div:
    return html.Div(
        [
            html.Div(
                [
                    _field(
                        "scenario",
                        dcc.Dropdown(
                            id=W.SCENARIO, options=names, value=current, clearable=False, placeholder="create one →"
                        ),
                        "220px",
                    ),
                    _field(
                        "name",
                        dcc.Input(
                            id=W.NAME, type="text", placeholder="new name", maxLength=64, className="whatif-text"
                        ),
                    ),
                    _button(W.NEW, "new"),
                    _button(W.RENAME, "rename"),
                    _button(W.DUPLICATE, "duplicate"),
                    _button(W.DELETE, "delete", "danger"),
                    html.Span("·", className="muted"),
                    _button(W.UNDO, "↶ undo"),
                    _button(W.REDO, "↷ redo"),
                    html.Span("·", className="muted"),
                    _button(W.EXPORT, "export TOML"),
                    dcc.Download(id=W.DOWNLOAD),
                    dcc.Upload(
                        html.Button("import TOML", className="whatif-button", **needs_role("operator")),
                        id=W.IMPORT,
                        disabled=bool(needs_role("operator")),
                        accept=".toml,text/plain",
                        max_size=256 * 1024,
                    ),
                    html.Span(id=W.SCENARIO_MSG, className="whatif-msg", role="status"),
                    html.Span("read-only: editing needs the operator role", className="muted whatif-readonly")
                    if needs_role("operator")
                    else None,
                ],
                className="controls",
            ),
            html.Div(
                "Scenarios are kept in memory until the database store is installed: they are lost on restart."
                if not persistent
                else "",
                id=W.STORE_NOTE,
                className="muted",
            ),
        ],
        className="panel whatif-bar",
    )


def selection_panel(state) -> html.Div:
    return html.Div(
        [
            html.Div(
                [
                    html.Strong("select racks by"),
                    _field("hall", dcc.Dropdown(id=W.HALL, options=state.hall_name, placeholder="hall"), "90px"),
                    _field("row", dcc.Dropdown(id=W.ROW, options=[], placeholder="row"), "120px"),
                    _field(
                        "name pattern",
                        dcc.Input(
                            id=W.PATTERN, type="text", placeholder="H4-R0*-K1?", maxLength=64, className="whatif-text"
                        ),
                    ),
                    _button(W.SELECT, "select"),
                    _button(W.CLEAR, "clear"),
                ],
                className="controls",
            ),
            html.Div(id=W.SELECTION_TEXT, className="whatif-selection"),
            _msg(W.SELECT),
        ],
        className="whatif-select",
    )


def rack_forms(state) -> html.Div:
    feeds_a, feeds_b = busway_names(state, 0), busway_names(state, 1)
    return html.Div(
        [
            html.H3("Edit the selected racks"),
            html.Div(
                [
                    _field(
                        "exceeded design ratings",
                        dcc.RadioItems(
                            id=W.DESIGN_LIMITS,
                            value="warn",
                            inline=True,
                            className="segmented",
                            options=[
                                {"label": "show what breaks", "value": "warn"},
                                {"label": "refuse the edit", "value": "strict"},
                            ],
                        ),
                    )
                ],
                className="controls whatif-row",
            ),
            html.Div(
                [
                    _field("type", dcc.Dropdown(id=W.TYPE, options=rack_types(), placeholder="rack type"), "220px"),
                    _button(W.APPLY_TYPE, "change type"),
                    _msg(W.APPLY_TYPE),
                ],
                className="controls whatif-row",
            ),
            html.Div(
                [
                    _field("x [m]", _number(W.MOVE_X, "x")),
                    _field("y [m]", _number(W.MOVE_Y, "y")),
                    _button(W.APPLY_MOVE, "move"),
                    _button(W.APPLY_REMOVE, "remove", "danger"),
                    _msg(W.APPLY_MOVE),
                    _msg(W.APPLY_REMOVE),
                ],
                className="controls whatif-row",
            ),
            html.Div(
                [
                    _field("A feed", dcc.Dropdown(id=W.FEED_A, options=feeds_a, placeholder="busway A"), "170px"),
                    _field("B feed", dcc.Dropdown(id=W.FEED_B, options=feeds_b, placeholder="busway B"), "170px"),
                    _button(W.APPLY_FEEDS, "reassign feeds"),
                    _msg(W.APPLY_FEEDS),
                ],
                className="controls whatif-row",
            ),
            html.Div(
                [
                    _field("in-row CDU", dcc.Dropdown(id=W.CDU, options=[], placeholder="type to search"), "170px"),
                    _field("or loop", dcc.Dropdown(id=W.LOOP, options=state.loop_name, placeholder="loop"), "110px"),
                    _button(W.APPLY_CDU, "reassign cooling"),
                    _msg(W.APPLY_CDU),
                ],
                className="controls whatif-row",
            ),
            html.Div(
                [
                    _field(
                        "cap for",
                        dcc.RadioItems(
                            id=W.CAP_SCOPE, options=list(CAP_SCOPES), value="racks", inline=True, className="segmented"
                        ),
                    ),
                    _field("GPU cap [W]", _number(W.CAP_W, "W", 10)),
                    _button(W.APPLY_CAP, "set cap"),
                    _msg(W.APPLY_CAP),
                ],
                className="controls whatif-row",
            ),
        ],
        className="panel",
    )


def element_forms(state) -> html.Div:
    return html.Div(
        [
            html.H3("Equipment and conditions"),
            html.Div(
                [
                    _field(
                        "kind",
                        dcc.Dropdown(id=W.FAIL_KIND, options=list(FAIL_KINDS), value="transformer", clearable=False),
                        "130px",
                    ),
                    _field(
                        "element", dcc.Dropdown(id=W.FAIL_ELEMENT, options=[], placeholder="type to search"), "220px"
                    ),
                    _button(W.APPLY_FAIL, "fail", "danger"),
                    _button(W.APPLY_RESTORE, "restore"),
                    _msg(W.APPLY_FAIL),
                    _msg(W.APPLY_RESTORE),
                ],
                className="controls whatif-row",
            ),
            html.Div(
                [
                    _field(
                        "supply temperature of",
                        dcc.RadioItems(
                            id=W.SETPOINT_TARGET,
                            options=[{"label": SETPOINT_LABELS[t], "value": t} for t in SETPOINT_TARGETS],
                            value="loops",
                            inline=True,
                            className="segmented",
                        ),
                    ),
                    _field(
                        "element",
                        dcc.Dropdown(id=W.SETPOINT_ELEMENT, options=state.loop_name, placeholder="loop"),
                        "190px",
                    ),
                    _field("°C", _number(W.SETPOINT_C, "°C")),
                    _button(W.APPLY_SETPOINT, "set"),
                    _msg(W.APPLY_SETPOINT),
                ],
                className="controls whatif-row",
            ),
            html.Div(
                [
                    _field("dry bulb [°C]", _number(W.DRY_BULB, "°C")),
                    _field("wet bulb [°C]", _number(W.WET_BULB, "°C")),
                    _button(W.APPLY_WEATHER, "set weather"),
                    _msg(W.APPLY_WEATHER),
                ],
                className="controls whatif-row",
            ),
            html.Div(
                [
                    _field(
                        "job",
                        dcc.Dropdown(
                            id=W.JOB,
                            options=[{"label": "none", "value": ""}] + job_names(),
                            placeholder=state.default_job or "job",
                        ),
                        "220px",
                    ),
                    _button(W.APPLY_JOB, "run this job"),
                    _msg(W.APPLY_JOB),
                ],
                className="controls whatif-row",
            ),
        ],
        className="panel",
    )


def blast_panel(trip_kind: str, trip_name: str | None) -> html.Div:
    return html.Div(
        [
            html.H3("Blast radius: what trips with one element"),
            html.Div(
                [
                    _field(
                        "kind",
                        dcc.Dropdown(id=W.BLAST_KIND, options=list(BLAST_KINDS), value=trip_kind, clearable=False),
                        "130px",
                    ),
                    _field(
                        "element",
                        dcc.Dropdown(
                            id=W.BLAST_ELEMENT,
                            options=[trip_name] if trip_name else [],
                            value=trip_name,
                            placeholder="type to search",
                        ),
                        "220px",
                    ),
                    _button(W.BLAST_RUN, "what if it trips?"),
                    _button(W.BLAST_SHOW, "show on the floor"),
                ],
                className="controls",
            ),
            html.Div(id=W.BLAST_RESULT),
        ],
        className="panel",
    )


@inputs.query_layout(scenario=lambda v: v, racks=lambda v: v, trip=lambda v: v)
def layout(scenario=None, racks=None, trip=None, **_kwargs) -> html.Div:
    state = _state()
    store = _store()
    names = store.names()
    current = scenario if scenario in names else (names[0] if names else None)
    selected: list[str] = []
    if racks:
        try:
            selected = [
                state.rack_name[r] for r in match_names([p for p in racks.split(",") if p], state.rack_name, 0, "racks")
            ]
        except EditRejected:
            selected = []
    trip_kind, trip_name = "transformer", None
    if trip and ":" in trip:
        kind, name = trip.split(":", 1)
        if kind in BLAST_KINDS and name in blast_names(state, kind):
            trip_kind, trip_name = kind, name
    return html.Div(
        [
            dcc.Location(id=W.URL, refresh=False),
            dcc.Store(id=W.REVISION, data={"scenario": current, "n": 0}),
            dcc.Store(id=W.SELECTED, data=selected),
            dcc.Store(id=W.BLAST_RACKS, data=[]),
            dcc.Store(id=W.FLOOR_SIGNATURE),
            dcc.Store(id=W.COMPARISON_HTML),
            html.Div(
                [
                    html.H1("What-if"),
                    html.Span(
                        "edit a scenario: the twin projects it against the baseline (the site as built, no edits)",
                        className="muted",
                    ),
                ],
                className="page-title",
            ),
            scenario_bar(names, current, getattr(store, "persistent", True)),
            html.Div(
                [
                    html.Div(
                        [
                            html.Label("colour by", htmlFor=W.FLOOR_METRIC),
                            dcc.RadioItems(
                                id=W.FLOOR_METRIC,
                                value=DEFAULT_COLOUR,
                                inline=True,
                                className="segmented",
                                options=[
                                    {"label": f"Δ {FLOOR_METRIC_BY_KEY[k].label}", "value": k} for k in FLOOR_COLOURS
                                ],
                            ),
                            html.Span(id=W.ELAPSED, className="muted whatif-elapsed"),
                        ],
                        className="controls",
                    ),
                    html.Div(
                        "scenario − baseline per rack: red hotter or more power, green cooler or less, grey unchanged "
                        "(hover: by how much); hatched: dark in the scenario; click racks to select them, or drag a "
                        "box or lasso",
                        className="muted whatif-caption",
                    ),
                    dcc.Graph(
                        id=W.FLOOR,
                        config=GRAPH_CONFIG,
                        figure={"layout": {"template": "clustertwin_dark", "height": 600}},
                    ),
                    selection_panel(state),
                ],
                className="panel whatif-floor-panel",
            ),
            html.Div(
                [
                    html.Div(
                        [
                            html.Div(
                                [html.H3("Edits, in order"), html.Ol(id=W.EDIT_LIST, className="whatif-edits")],
                                className="panel",
                            ),
                            rack_forms(state),
                            element_forms(state),
                        ],
                        className="whatif-side",
                    ),
                    html.Div(
                        [
                            blast_panel(trip_kind, trip_name),
                            html.Div(id=W.COMPARISON, className="whatif-comparison"),
                        ],
                        className="whatif-main",
                    ),
                ],
                className="whatif-grid",
            ),
        ],
        className="page page-whatif",
    )


# ------------------------------------------------------------------ scenario management
@dash.callback(
    Output(W.SCENARIO, "options"),
    Output(W.SCENARIO, "value"),
    Output(W.SCENARIO_MSG, "children"),
    Output(W.REVISION, "data", allow_duplicate=True),
    Input(W.NEW, "n_clicks"),
    Input(W.RENAME, "n_clicks"),
    Input(W.DUPLICATE, "n_clicks"),
    Input(W.DELETE, "n_clicks"),
    Input(W.UNDO, "n_clicks"),
    Input(W.REDO, "n_clicks"),
    Input(W.IMPORT, "contents"),
    Input(W.SCENARIO, "value"),
    State(W.NAME, "value"),
    State(W.REVISION, "data"),
    prevent_initial_call=True,
)
@callback_requires("operator", on=MANAGE_TRIGGERS)
def manage(_new, _rename, _dup, _delete, _undo, _redo, upload, current, name, revision):
    store = _store()
    trigger = dash.ctx.triggered_id
    n = (revision or {}).get("n", 0) + 1
    before = _audit_state(store, current) if trigger not in (W.NEW, W.IMPORT, W.SCENARIO) else None
    deleted = None
    try:
        message = ""
        if trigger == W.NEW:
            current = store.create(name or "")
            message = f"created {current}"
        elif trigger == W.RENAME:
            _need(current)
            current = store.rename_scenario(current, name or "")
            message = f"renamed to {current}"
        elif trigger == W.DUPLICATE:
            _need(current)
            current = store.duplicate(current, name or f"{current} copy")
            message = f"duplicated as {current}"
        elif trigger == W.DELETE:
            _need(current)
            deleted = current
            store.delete(current)
            message = f"deleted {current}"
            remaining = store.names()
            current = remaining[0] if remaining else None
        elif trigger in (W.UNDO, W.REDO):
            _need(current)
            done = store.undo(current) if trigger == W.UNDO else store.redo(current)
            message = "" if done else f"nothing to {'undo' if trigger == W.UNDO else 'redo'}"
        elif trigger == W.IMPORT:
            current = _import(store, upload)
            message = f"imported {current} ({len(store.edits(current))} edits)"
    except (inputs.InputError, EditRejected) as exc:
        return no_update, no_update, html.Span(str(exc), className="status-critical"), no_update
    if trigger != W.SCENARIO:  # choosing a scenario changes nothing stored
        subject = deleted if trigger == W.DELETE else current
        after = {} if trigger == W.DELETE else (_audit_state(store, current) or {})
        audit(
            f"scenario.{str(trigger).removeprefix('whatif-')}",
            f"scenario {subject}",
            before,
            {"message": message, "edits": 0, **after},
        )
    return store.names(), current, message, {"scenario": current, "n": n}


def _audit_state(store, name) -> dict | None:
    """A stored scenario as the audit log keeps it (name, number of edits, the edits); None if there is none."""
    if not name or name not in store.names():
        return None
    edits = store.edits(name)
    return {"scenario": name, "edits": len(edits), "edit_list": edits}


def _need(current) -> None:
    if not current:
        raise inputs.InputError("choose or create a scenario first")


def _import(store, upload) -> str:
    if not isinstance(upload, str) or "," not in upload:
        raise inputs.InputError("the upload is not a file")
    try:
        text = base64.b64decode(upload.split(",", 1)[1], validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise inputs.InputError("the scenario file is not UTF-8 text") from None
    name, edits = import_toml(text)
    outcome(_state(), edits, load=_load())  # every edit must apply to this site before anything is stored
    if name in store.names():
        name = f"{name} (imported)"
    return store.create(name, edits)


@dash.callback(
    Output(W.DOWNLOAD, "data"),
    Input(W.EXPORT, "n_clicks"),
    State(W.SCENARIO, "value"),
    prevent_initial_call=True,
)
def export(_n, current):
    if not current:
        return no_update
    return {
        "content": export_toml(current, _store().edits(current)),
        "filename": f"{current}.toml",
        "type": "text/plain",
    }


# ------------------------------------------------------------------ edits
def build_edit(trigger: str, selected: list[str], form: dict) -> dict:
    """The edit an apply button makes from the form values (keys of :data:`FORM_FIELDS`).

    Raises :class:`EditRejected` for missing input.  Every button's edit, with every choice of
    its form, goes through this and the twin in ``tests/dashboard/test_whatif_forms.py``.
    """

    def need_racks() -> list[str]:
        if not selected:
            raise EditRejected(None, "racks", "select racks on the floor first")
        return list(selected)

    def need(key: str, label: str):
        value = form.get(key)
        if value in (None, ""):
            raise EditRejected(None, label, "required")
        return value

    if trigger == W.APPLY_TYPE:
        return {"op": "set_rack_type", "racks": _compact(need_racks()), "type": need("type", "type")}
    if trigger == W.APPLY_MOVE:
        return {"op": "move_rack", "racks": need_racks(), "x_m": need("x", "x_m"), "y_m": need("y", "y_m")}
    if trigger == W.APPLY_REMOVE:
        return {"op": "remove_rack", "racks": _compact(need_racks())}
    if trigger == W.APPLY_FEEDS:
        return {
            "op": "set_rack_feeds",
            "racks": _compact(need_racks()),
            "feed_a": need("feed_a", "feed_a"),
            "feed_b": form.get("feed_b") or "",
        }
    if trigger == W.APPLY_CDU:
        edit = {"op": "set_rack_cdu", "racks": _compact(need_racks())}
        if form.get("cdu"):
            edit["cdu"] = form["cdu"]
        elif form.get("loop"):
            edit["loop"] = form["loop"]
        else:
            raise EditRejected(None, "cdu", "choose an in-row CDU or a facility loop")
        return edit
    if trigger == W.APPLY_CAP:
        edit = {"op": "set_cap", "gpu_power_limit_w": need("cap_w", "gpu_power_limit_w")}
        scope = form.get("cap_scope") or "racks"
        if scope == "site":
            edit["site"] = True
        elif scope == "job":
            edit["job"] = form.get("job") or _state().default_job
        else:
            edit["racks"] = _compact(need_racks())
        return edit
    if trigger in (W.APPLY_FAIL, W.APPLY_RESTORE):
        edit = {"op": "fail" if trigger == W.APPLY_FAIL else "restore", "elements": [need("fail_element", "elements")]}
        if trigger == W.APPLY_FAIL and form.get("fail_kind") == "pump":
            edit["pumps_count"] = 1  # one pump of the CDU; "cdu" loses the whole CDU
        if trigger == W.APPLY_FAIL and form.get("fail_kind") == "chiller":
            edit["chillers_count"] = 1
        return edit
    if trigger == W.APPLY_SETPOINT:
        target = form.get("setpoint_target") or "loops"
        if target not in SETPOINT_FIELD:
            raise EditRejected(None, "setpoint", f"unknown target {target!r}")
        value_key = SETPOINT_FIELD[target]  # the schema's field for this target: one name per meaning
        return {
            "op": "set_setpoint",
            target: [need("setpoint_element", target)],
            value_key: need("setpoint_c", value_key),
        }
    if trigger == W.APPLY_WEATHER:
        return {
            "op": "set_weather",
            "outdoor_dry_bulb_c": need("dry", "outdoor_dry_bulb_c"),
            "outdoor_wet_bulb_c": need("wet", "outdoor_wet_bulb_c"),
        }
    if trigger == W.APPLY_JOB:
        job = form.get("job")
        if job is None:
            raise EditRejected(None, "job", "required")
        return {"op": "set_job", "job": job}
    raise EditRejected(None, "op", "unknown control")


def _compact(racks: list[str]) -> list[str]:
    """Whole rows or halls as globs (``H4-*``), the rest by name, so a file stays readable."""
    state = _state()
    chosen = set(racks)
    out: list[str] = []
    for hall in state.hall_name:
        members = [n for n in state.rack_name if n.startswith(hall + "-")]
        if members and chosen.issuperset(members):
            out.append(f"{hall}-*")
            chosen.difference_update(members)
    for row in state.row_name:
        members = [n for n in state.rack_name if n.startswith(row + "-")]
        if members and chosen.issuperset(members):
            out.append(f"{row}-*")
            chosen.difference_update(members)
    return out + [n for n in racks if n in chosen]


@dash.callback(
    *[Output(ids.whatif_msg(b), "children") for b in APPLY_BUTTONS],
    *[Output(i, p, allow_duplicate=True) for i, p in ANSWER_OUTPUTS],
    *[Input(b, "n_clicks") for b in APPLY_BUTTONS],
    State(W.SCENARIO, "value"),
    State(W.SELECTED, "data"),
    State(W.FLOOR_METRIC, "value"),
    State(W.BLAST_RACKS, "data"),
    State(W.FLOOR_SIGNATURE, "data"),
    *[State(control, "value") for _key, control in FORM_FIELDS],
    prevent_initial_call=True,
)
@callback_requires("operator")
def apply_edit(*args):
    """Check the edit a button makes against the whole list; store it and answer in the same update."""
    n_buttons = len(APPLY_BUTTONS)
    scenario, selected, metric, blast, drawn = args[n_buttons : n_buttons + 5]
    form = dict(zip((key for key, _control in FORM_FIELDS), args[n_buttons + 5 :]))
    unchanged = (no_update,) * len(ANSWER_OUTPUTS)
    trigger = dash.ctx.triggered_id
    messages = [""] * n_buttons
    slot = APPLY_BUTTONS.index(trigger) if trigger in APPLY_BUTTONS else 0
    store = _store()
    try:
        if not scenario:
            raise EditRejected(None, "scenario", "create or choose a scenario first")
        edit = build_edit(trigger, selected or [], form)
        edits = store.edits(scenario)
        if form.get("design_limits") == "strict":  # exceeded design ratings refuse the edit
            resolve_edits(_state(), edits + [edit], "strict")
        outcome(
            _state(), edits + [edit], load=_load()
        )  # validates the whole list on the site, then projects it (cached)
        store.push(scenario, edit)
        audit("scenario.edit", f"scenario {scenario}", {"edits": len(edits)}, {"edits": len(edits) + 1, "edit": edit})
    except EditRejected as exc:  # the stored edits were accepted before: the new edit is the one refused
        messages[slot] = html.Span(f"refused: {exc.field}: {exc.message}", className="status-critical")
        return *messages, *unchanged
    except inputs.InputError as exc:
        messages[slot] = html.Span(f"refused: {exc}", className="status-critical")
        return *messages, *unchanged
    messages[slot] = html.Span(f"applied: {describe(edit)}", className="status-ok")
    return *messages, *answer(scenario, metric, selected, blast, drawn)


# ------------------------------------------------------------------ the answer
@dash.callback(
    *[Output(i, p) for i, p in ANSWER_OUTPUTS],
    Input(W.REVISION, "data"),
    Input(W.FLOOR_METRIC, "value"),
    State(W.SELECTED, "data"),
    State(W.BLAST_RACKS, "data"),
    State(W.FLOOR_SIGNATURE, "data"),
    State(ids.Shell.SCREEN, "data"),
)
def render(revision, metric, selected, blast, drawn, shown):
    """The answer for the scenario on screen (a scenario chosen, undo, redo, another colour metric)."""
    on_page(shown, PATH)  # its floor patch would land on a page navigation has removed
    return answer((revision or {}).get("scenario"), metric, selected, blast, drawn)


def answer(scenario: str | None, metric, selected, blast, drawn) -> tuple:
    """Edit list, comparison, floor (a patch when ``drawn`` is the same layout), undo/redo state, time taken."""
    started = time.perf_counter()
    state, store = _state(), _store()
    edits = store.edits(scenario) if scenario in store.names() else []
    metric = metric if metric in FLOOR_COLOURS else DEFAULT_COLOUR
    try:
        result = outcome(state, edits, load=_load())
        problem = None
    except EditRejected as exc:  # a stored list the site no longer accepts (the site changed since)
        result, problem = outcome(state, [], load=_load()), str(exc)
    can_undo, can_redo = store.can_undo_redo(scenario) if scenario in store.names() else (False, False)
    if needs_role("operator"):  # a viewer's undo and redo stay disabled (their callback refuses a viewer)
        can_undo = can_redo = False
    racks = rack_changes(result)
    layout_key = layout_signature(result.state, metric)
    signature = f"{layout_key}|{floor_content_key(racks, selected, blast)}"
    if signature == drawn:  # the floor shows this already (an edit that changes no rack's figures)
        figure = no_update
    else:
        figure = floor_of(
            result,
            metric,
            selected or [],
            blast or [],
            patch=isinstance(drawn, str) and drawn.split("|")[0] == layout_key,
            racks=racks,
        )
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    items = [html.Li(describe(e), className="whatif-edit") for e in edits] or [
        html.Li("no edits yet: the scenario is the baseline", className="muted")
    ]
    # static markup: as Dash components the tables cost the browser about half a second per answer
    comparison = to_html(html.Div(comparison_children(result, scenario, problem), **{"data-edits": str(len(edits))}))
    return items, comparison, figure, not can_undo, not can_redo, f"answered in {elapsed_ms:,.0f} ms", signature


def floor_content_key(racks, selected, blast) -> str:
    """What the floor shows besides its layout: the racks' changes, dark and edited racks, the outlines."""
    digest = hashlib.sha1()
    for array in (np.round(racks.temp_delta_k, 1), np.round(racks.power_delta_kw, 1), racks.dark, racks.edited):
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update(json.dumps([sorted(selected or []), sorted(blast or [])]).encode())
    return digest.hexdigest()[:16]


def floor_of(result, metric: str, selected: list[str], blast: list[str], patch: bool = False, racks=None):
    """The what-if floor (``patch``: only what changes on a floor of the same layout and metric)."""
    state = result.state
    racks = racks if racks is not None else rack_changes(result)
    changes = {key: np.zeros(state.n_racks) for key in FLOOR_METRIC_BY_KEY}
    changes["max_gpu_temp_c"], changes["rack_power_kw"] = racks.temp_delta_k, racks.power_delta_kw
    shown = changes[metric]
    build = whatif_floor_patch if patch else whatif_floor
    return build(
        state,
        grids_for(state),
        changes,
        metric,
        shown,
        _rack_ids(state, selected),
        _rack_ids(state, blast),
        racks.dark,
        racks.edited,
    )


# ------------------------------------------------------------------ selection
@dash.callback(
    Output(W.SELECTED, "data"),
    Output(W.SELECTION_TEXT, "children"),
    Output(ids.whatif_msg(W.SELECT), "children"),
    Input(W.FLOOR, "clickData"),
    Input(W.FLOOR, "selectedData"),
    Input(W.SELECT, "n_clicks"),
    Input(W.CLEAR, "n_clicks"),
    State(W.HALL, "value"),
    State(W.ROW, "value"),
    State(W.PATTERN, "value"),
    State(W.SELECTED, "data"),
    State(W.REVISION, "data"),
    prevent_initial_call=True,
)
def select(click, box, _select, _clear, hall, row, pattern, selected, revision):
    trigger = dash.ctx.triggered_id
    state = _scenario_state(revision)
    selected = [n for n in (selected or []) if n in set(state.rack_name)]
    message = ""
    if trigger == W.CLEAR:
        selected = []
    elif trigger == W.SELECT:
        chosen = pattern or (f"{row}-*" if row else f"{hall}-*" if hall else None)
        if not chosen:
            message = html.Span("choose a hall or row, or type a name pattern", className="status-critical")
        else:
            try:
                picked = match_names(
                    [p.strip() for p in str(chosen).split(",") if p.strip()], state.rack_name, 0, "pattern"
                )
                selected = [state.rack_name[r] for r in picked]
            except EditRejected as exc:
                message = html.Span(exc.message, className="status-critical")
    elif (
        trigger == W.FLOOR
        and dash.ctx.triggered_prop_ids
        and any(p.endswith("selectedData") for p in dash.ctx.triggered_prop_ids)
    ):
        points = (box or {}).get("points", []) if isinstance(box, dict) else []
        names = [p.get("text") for p in points if isinstance(p, dict) and p.get("text") in set(state.rack_name)]
        if names:
            selected = sorted(set(names), key=state.rack_name.index)
    elif trigger == W.FLOOR and isinstance(click, dict):
        try:
            name = click["points"][0].get("text", "")
        except (KeyError, IndexError, TypeError, AttributeError):
            name = ""
        name = str(name).split(" · ")[0]
        if name in set(state.rack_name):
            selected = [n for n in selected if n != name] if name in selected else selected + [name]
    return selected, selection_text(selected), message


def selection_text(selected: list[str]) -> str:
    if not selected:
        return "no racks selected: click racks, drag a box or lasso on the floor, or select by hall, row or pattern"
    shown = ", ".join(_compact(selected)[:6])
    return f"{len(selected)} rack{'s' if len(selected) != 1 else ''} selected: {shown}" + (
        " …" if len(_compact(selected)) > 6 else ""
    )


def _scenario_state(revision):
    state, store = _state(), _store()
    scenario = (revision or {}).get("scenario")
    try:
        return outcome(state, store.edits(scenario), load=_load()).state if scenario in store.names() else state
    except EditRejected:
        return state


@dash.callback(
    Output(W.FLOOR, "figure", allow_duplicate=True),
    Input(W.SELECTED, "data"),
    Input(W.BLAST_RACKS, "data"),
    State(W.REVISION, "data"),
    State(W.FLOOR_SIGNATURE, "data"),
    State(ids.Shell.SCREEN, "data"),
    prevent_initial_call=True,
)
def outline(selected, blast, revision, drawn, shown):
    """Move the selection and blast-radius outlines (the floor's colours stay)."""
    if not drawn:  # the floor is not drawn yet: its first drawing outlines them
        return no_update
    on_page(shown, PATH)
    state = _scenario_state(revision)
    return outline_patch(grids_for(state), _rack_ids(state, selected), _rack_ids(state, blast))


def _rack_ids(state, names) -> np.ndarray:
    index = {n: i for i, n in enumerate(state.rack_name)}
    return np.array([index[n] for n in names or [] if n in index], dtype=np.int64)


@dash.callback(
    Output(W.ROW, "options"),
    Input(W.HALL, "value"),
)
def rows_of_hall(hall):
    state = _state()
    return [r for r, h in zip(state.row_name, state.row_hall) if hall is None or state.hall_name[h] == hall]


def _search(names: list[str], text: str | None, value: str | None) -> list[str]:
    text = (text or "").strip().lower()
    hits = [n for n in names if text in n.lower()][:MAX_OPTIONS] if text else names[:MAX_OPTIONS]
    if value and value not in hits and value in names:
        hits = [value] + hits
    return hits


@dash.callback(
    Output(W.FAIL_ELEMENT, "options"),
    Input(W.FAIL_KIND, "value"),
    Input(W.FAIL_ELEMENT, "search_value"),
    State(W.FAIL_ELEMENT, "value"),
)
def fail_options(kind, text, value):
    if kind not in FAIL_KINDS:
        return []
    return _search(kind_names(_state(), kind), text, value)


@dash.callback(
    Output(W.CDU, "options"),
    Input(W.CDU, "search_value"),
    Input(W.SELECTED, "data"),
    State(W.CDU, "value"),
)
def cdu_options(text, selected, value):
    state = _state()
    if not text and selected:  # the CDUs of the selected racks' rows first
        rows = {n.rsplit("-", 1)[0] for n in selected}
        near = [n for n in state.cdu_name if n.rsplit("-", 2)[0] in rows]
        return _search(near or state.cdu_name, None, value)
    return _search(state.cdu_name, text, value)


@dash.callback(
    Output(W.SETPOINT_ELEMENT, "options"),
    Output(W.SETPOINT_ELEMENT, "value"),
    Output(W.SETPOINT_ELEMENT, "placeholder"),
    Input(W.SETPOINT_TARGET, "value"),
    Input(W.SETPOINT_ELEMENT, "search_value"),
    State(W.SETPOINT_ELEMENT, "value"),
)
def setpoint_options(target, text, value):
    """The loops, plants or CDUs of the chosen target, searched on the server (a site has thousands of CDUs).

    Choosing another target clears an element that is not one of its names.
    """
    names = setpoint_names(_state(), target)
    if dash.ctx.triggered_id != W.SETPOINT_TARGET:
        return _search(names, text, value), no_update, no_update
    placeholder = {"loops": "loop", "plants": "plant"}.get(target, "type to search")
    return _search(names, None, value), value if value in names else None, placeholder


@dash.callback(
    Output(W.BLAST_ELEMENT, "options"),
    Input(W.BLAST_KIND, "value"),
    Input(W.BLAST_ELEMENT, "search_value"),
    State(W.BLAST_ELEMENT, "value"),
)
def blast_options(kind, text, value):
    if kind not in BLAST_KINDS:
        return []
    return _search(blast_names(_state(), kind), text, value)


# ------------------------------------------------------------------ blast radius
@dash.callback(
    Output(W.BLAST_RESULT, "children"),
    Output(W.BLAST_RACKS, "data"),
    Input(W.BLAST_RUN, "n_clicks"),
    Input(W.BLAST_SHOW, "n_clicks"),
    State(W.BLAST_KIND, "value"),
    State(W.BLAST_ELEMENT, "value"),
    State(W.REVISION, "data"),
)
def run_blast(_run, _show, kind, element, revision):
    """What tripping the chosen element takes out (on opening, for an element named in the address)."""
    if kind not in BLAST_KINDS or not element:
        if dash.ctx.triggered_id is None:
            return no_update, no_update
        return html.Span("choose an element", className="status-critical"), no_update
    store = _store()
    scenario = (revision or {}).get("scenario")
    edits = store.edits(scenario) if scenario in store.names() else []
    try:
        blast = blast_radius(_state(), edits, element, _load())
    except (EditRejected, inputs.InputError, ValueError) as exc:
        return html.Span(getattr(exc, "message", str(exc)), className="status-critical"), no_update
    racks = blast["racks_dark"] + blast["racks_throttled"]
    return blast_children(blast), (racks if dash.ctx.triggered_id == W.BLAST_SHOW else no_update)


def blast_children(blast: dict) -> html.Div:
    def names(racks):
        return ", ".join(_compact(racks)[:12]) + (" …" if len(_compact(racks)) > 12 else "") if racks else "none"

    jobs = ", ".join(f"{j['name']} ({j['lost_tokens_per_s']:,.0f} tokens/s)" for j in blast["jobs"]) or "none"
    return html.Div(
        [
            html.Dl(
                [
                    html.Dt("trips"),
                    html.Dd(f"{blast['kind']} {blast['element']}"),
                    html.Dt("racks it feeds or cools"),
                    html.Dd(f"{blast['n_racks_fed']:,}"),
                    html.Dt("racks dark"),
                    html.Dd(f"{blast['n_racks_dark']:,}: {names(blast['racks_dark'])}", id="whatif-blast-dark"),
                    html.Dt("racks throttled"),
                    html.Dd(f"{len(blast['racks_throttled']):,}: {names(blast['racks_throttled'])}"),
                    html.Dt("GPUs down or off"),
                    html.Dd(f"{blast['n_gpus_down'] + blast['n_gpus_off']:,}", id="whatif-blast-gpus"),
                    html.Dt("GPUs throttled"),
                    html.Dd(f"{blast['n_gpus_throttled']:,}"),
                    html.Dt("jobs hit"),
                    html.Dd(jobs),
                    html.Dt("tokens/s lost"),
                    html.Dd(f"{blast['lost_tokens_per_s']:,.0f}", id="whatif-blast-tokens"),
                    html.Dt("IT power lost"),
                    html.Dd(f"{blast['it_power_lost_mw']:,.2f} MW"),
                ],
                className="kv",
            ),
            html.Div("press “show on the floor” to outline the racks dark or throttled (magenta)", className="muted"),
        ]
    )


# Sets the comparison's markup into its container and makes its links navigate inside the app.
dash.clientside_callback(
    """
    function(markup) {
        var el = document.getElementById('%s');
        if (!el || markup === null || markup === undefined) { return; }
        if (el.staticHtml !== markup) { el.innerHTML = markup; el.staticHtml = markup; }
        if (!el.dashLinks) {
            el.dashLinks = true;
            el.addEventListener('click', function(event) {
                var link = event.target.closest && event.target.closest('a[data-dash-link]');
                if (!link || event.button !== 0 || event.metaKey || event.shiftKey || event.altKey || event.ctrlKey) { return; }
                event.preventDefault();
                (%s)(link.getAttribute('href'));
                window.scrollTo(0, 0);
            });
        }
    }
    """
    % (W.COMPARISON, PUSH_STATE_JS),
    Input(W.COMPARISON_HTML, "data"),
)
