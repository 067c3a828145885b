"""The ``/alerts`` panel of scoped silences and maintenance windows: add one, list those active or upcoming,
expire or cancel them.

A scope is an entity-name glob, a cause group or a hall, optionally one rule's alerts
(:mod:`ingest.live.mute_scope`).  A silence starts now and lasts the chosen duration; a
maintenance window starts at the given UTC time (blank: now) and lasts the duration.
Viewers see the form and the buttons disabled, with a tooltip naming the operator role
(:func:`dashboard.auth.needs_role`); the server refuses their callbacks either way.  The
callbacks are the page's (``dashboard/pages/alerts.py``); they call :func:`apply_add` and
:func:`apply_end`, which audit each change like the other alert actions.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from dash import dcc, html

from dashboard import ids
from dashboard.auth import audit, needs_role
from dashboard.callbacks import inputs
from dashboard.components.data_age import format_age
from ingest.live.alert_actions import RULES
from ingest.store.mutes import audit_entry

ROLE = "operator"
DURATIONS_S = (900, 3600, 4 * 3600, 8 * 3600, 24 * 3600, 3 * 24 * 3600, 7 * 24 * 3600)
SCOPE_KINDS = (("hall", "hall"), ("entity", "entity name (glob)"), ("group", "cause group"))
SCOPE_PLACEHOLDER = "H1 · H4-R0*-K* · H1-R01-K02-CDU · pump:cdu:1"
MAX_TEXT_CHARS = 500


def supports_mutes(actions) -> bool:
    """Whether the app's alert actions store scoped silences and windows (a live hub's do)."""
    return callable(getattr(actions, "add_silence", None))


def _when(ts: datetime, now: datetime) -> str:
    ts = ts.astimezone(UTC)
    return f"{ts:%H:%M} UTC" if abs((ts - now).total_seconds()) < 20 * 3600 else f"{ts:%b %d %H:%M} UTC"


def mute_status(mark: dict, now: datetime) -> str:
    """An alert row's status under a window (``in maintenance: <reason> (until …)``) or a scoped silence."""
    if mark["kind"] == "maintenance":
        return f"in maintenance: {mark['comment']} (until {_when(mark['ends_at'], now)})"
    return f"silenced by {mark['scope']} until {_when(mark['ends_at'], now)}"


def _field(label: str, control, guard: dict) -> html.Label:
    """A labelled control; the label carries the guard's tooltip (``dcc`` inputs take no ``title``)."""
    title = {"title": guard["title"]} if guard else {}
    return html.Label([html.Span(label, className="mute-label"), control], className="mute-field", **title)


def mute_form(can_change: bool) -> html.Div:
    """The form adding a silence or a window (disabled without the operator role or a live view)."""
    guard = needs_role(ROLE) if can_change else {"disabled": True, "title": "silences apply to the live alerts"}
    off = bool(guard)
    rules = [{"label": "any rule", "value": ""}] + [{"label": r, "value": r} for r in sorted(RULES)]
    durations = [{"label": format_age(v).replace(".0", ""), "value": v} for v in DURATIONS_S]
    return html.Div(
        [
            dcc.RadioItems(
                id=ids.AlertMutes.KIND,
                value="silence",
                inline=True,
                className="segmented",
                options=[
                    {"label": "silence", "value": "silence", "disabled": off},
                    {"label": "maintenance window", "value": "maintenance", "disabled": off},
                ],
            ),
            _field(
                "scope",
                dcc.Dropdown(
                    id=ids.AlertMutes.SCOPE_KIND,
                    value="hall",
                    clearable=False,
                    searchable=False,
                    disabled=off,
                    className="mute-scope-kind",
                    options=[{"label": label, "value": v} for v, label in SCOPE_KINDS],
                ),
                guard,
            ),
            _field(
                "name or pattern",
                dcc.Input(
                    id=ids.AlertMutes.SCOPE_VALUE,
                    placeholder=SCOPE_PLACEHOLDER,
                    maxLength=200,
                    debounce=False,
                    className="mute-text mute-scope",
                    disabled=off,
                ),
                guard,
            ),
            _field(
                "alerts",
                dcc.Dropdown(
                    id=ids.AlertMutes.RULE,
                    value="",
                    clearable=False,
                    disabled=off,
                    className="mute-rule",
                    options=rules,
                ),
                guard,
            ),
            _field(
                "window start (UTC, blank: now)",
                dcc.Input(
                    id=ids.AlertMutes.START,
                    placeholder="YYYY-MM-DD HH:MM",
                    maxLength=40,
                    className="mute-text mute-start",
                    disabled=True,  # a silence starts now: enabled when "maintenance window" is chosen
                ),
                guard,
            ),
            _field(
                "for",
                dcc.Dropdown(
                    id=ids.AlertMutes.DURATION,
                    value=3600,
                    clearable=False,
                    searchable=False,
                    disabled=off,
                    className="mute-duration",
                    options=durations,
                ),
                guard,
            ),
            _field(
                "comment / reason",
                dcc.Input(
                    id=ids.AlertMutes.COMMENT,
                    placeholder="why (required)",
                    maxLength=MAX_TEXT_CHARS,
                    debounce=False,
                    className="mute-text mute-comment",
                    disabled=off,
                ),
                guard,
            ),
            html.Button("add", id=ids.AlertMutes.ADD, n_clicks=0, className="mute-add", **guard),
        ],
        className="mute-form",
    )


def mute_table(mutes: list[dict], now: datetime, can_change: bool) -> html.Table | html.Div:
    """The silences and windows active or upcoming, soonest start first, with expire / cancel buttons."""
    if not mutes:
        return html.Div("no scoped silence or maintenance window is active or upcoming", className="empty")
    guard = needs_role(ROLE) if can_change else {"disabled": True, "title": "silences apply to the live alerts"}
    head = html.Tr(
        [html.Th(t) for t in ("kind", "scope", "state")]
        + [html.Th(t, className="num") for t in ("from", "until")]
        + [html.Th(t) for t in ("set by", "comment / reason", "")]
    )
    rows = []
    for m in mutes:
        label = "cancel" if m["kind"] == "maintenance" else "expire"
        rows.append(
            html.Tr(
                [
                    html.Td("maintenance" if m["kind"] == "maintenance" else "silence"),
                    html.Td(m["scope"], className="mute-scope-cell"),
                    html.Td(m["state"]),
                    html.Td(_when(m["starts_at"], now), className="num"),
                    html.Td(_when(m["ends_at"], now), className="num"),
                    html.Td(m["created_by"]),
                    html.Td(m["comment"], className="alert-text"),
                    html.Td(html.Button(label, id=ids.mute_end(m["id"]), n_clicks=0, **guard)),
                ],
                className=f"mute-row mute-{m['kind']} mute-{m['state']}",
                **{"data-mute": str(m["id"])},
            )
        )
    return html.Table([html.Thead(head), html.Tbody(rows)], className="data mutes")


NO_STORE = "scoped silences and maintenance windows need the live twin's database"


def mute_list(actions, mutes: list[dict], now: datetime, can_change: bool) -> html.Table | html.Div:
    """What the list shows: :func:`mute_table`, or a note when the app's actions store no silences."""
    if not supports_mutes(actions):
        return html.Div(NO_STORE, className="empty")
    return mute_table(mutes, now, can_change)


def mute_panel(actions, now: datetime, can_change: bool) -> html.Div:
    """The whole panel: the form, its message, the list (always there: the page's callbacks update them)."""
    supported = supports_mutes(actions)
    note = (
        html.Div("read-only: adding or ending silences and windows needs the operator role", className="muted")
        if supported and can_change and needs_role(ROLE)
        else None
    )
    mutes = actions.mutes() if supported else []
    body = [
        mute_form(can_change) if supported else None,
        note,
        html.Div(id=ids.AlertMutes.RESULT, className="action-result", role="status"),
        html.Div(mute_list(actions, mutes, now, can_change), id=ids.AlertMutes.LIST),
    ]
    return html.Div(
        [html.H3("Silences and maintenance windows"), *body], id=ids.AlertMutes.PANEL, className="panel mute-panel"
    )


def mutes_signature(mutes: list[dict]) -> list:
    """What the list shows, compactly: re-render only when a silence or window is added, starts or ends."""
    return [[m["id"], m["state"]] for m in mutes]


def parse_start(value, now: datetime) -> datetime:
    """A window's start from the form (``YYYY-MM-DD HH:MM`` or ISO 8601, UTC unless a zone is given; blank: ``now``)."""
    if value in (None, ""):
        return now
    if not isinstance(value, str) or len(value) > 40:
        raise inputs.InputError("window start: expected a date and time such as 2026-07-15 14:00 (UTC)")
    try:
        start = datetime.fromisoformat(value.strip())
    except ValueError:
        raise inputs.InputError(
            f"window start {value[:40]!r}: expected a date and time such as 2026-07-15 14:00 (UTC)"
        ) from None
    return start.replace(tzinfo=UTC) if start.tzinfo is None else start


def _text(value) -> str:
    return value.strip()[:MAX_TEXT_CHARS] if isinstance(value, str) else ""


def apply_add(actions, form: dict, user: str, now: datetime | None = None) -> str:
    """Add the silence or window the form describes; the message shown under it (``not done: …`` when refused).

    ``form``: ``kind``, ``scope_kind``, ``value``, ``rule``, ``start``, ``duration_s``, ``comment``.
    """
    now = now or datetime.now(UTC)
    kind = form.get("kind") if form.get("kind") in ("silence", "maintenance") else "silence"
    scope = {"kind": form.get("scope_kind"), "value": _text(form.get("value")), "rule": _text(form.get("rule"))}
    try:
        duration_s = inputs.silence_duration_s(form.get("duration_s"))
        if kind == "silence":
            row = actions.add_silence(scope, duration_s, _text(form.get("comment")), user=user)
        else:
            start = parse_start(form.get("start"), now)
            end = max(start, now) + timedelta(seconds=duration_s)
            row = actions.add_maintenance(scope, start, end, _text(form.get("comment")), user=user)
    except ValueError as exc:  # the form's values (InputError), the scope, the times, the count
        return f"not done: {exc.args[0] if exc.args else exc}"
    audit(*audit_entry("add", None, row))
    if kind == "silence":
        return f"silenced {row['scope']} until {_when(row['ends_at'], now)}"
    return f"maintenance window for {row['scope']} from {_when(row['starts_at'], now)} to {_when(row['ends_at'], now)}"


def apply_end(actions, mute_id, user: str) -> str:
    """Expire silence or cancel window ``mute_id``; the message (``not done: …`` when refused)."""
    if isinstance(mute_id, bool) or not isinstance(mute_id, int):
        return f"not done: no silence or window {mute_id!r}"
    try:
        before, after = actions.expire_mute(mute_id, user=user)
    except ValueError as exc:
        return f"not done: {exc.args[0] if exc.args else exc}"
    audit(*audit_entry("end", before, after))
    if after["kind"] == "maintenance":
        return f"maintenance window for {after['scope']} cancelled"
    return f"silence of {after['scope']} expired"
