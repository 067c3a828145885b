"""The view registry: a view key from the URL → the view a page renders.

``live`` is the app's live hub.  ``scenario:<name>`` is a :class:`ScenarioView`: the twin
settled under ``data/scenarios/<name>.toml`` on the live hub's site, computed once per
(site, file, file modification time) and cached; without such a file, the what-if
editor's scenario of that name (:mod:`dashboard.whatif.view`).  ``replay:<incident>@<time>`` is a
:class:`dashboard.views.replay.ReplayView`: the recorded incident at the frame nearest that time.  Whatever cannot be
shown raises :class:`ViewUnavailable` with a message meant for the page, never a traceback.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import pandas as pd

from dashboard.views.context import ViewSelection, current_hub, selection
from dashboard.views.settled import SettledView, evaluate_settled_job
from ingest.live.alert_rules import SiteFacts, evaluate
from ingest.live.alerts import condition_alert
from ingest.live.trend import TREND_COLUMNS, trend_row
from twin.engine.snapshot import Snapshot
from twin.engine.view import LIVE, REPLAY, SCENARIO, View, ViewKey, ViewTick, format_view_key, parse_view_key
from twin.scenario.conditions import ScenarioError
from twin.scenario.load import load_scenario
from twin.scenario.projection import run_scenario
from twin.site.catalogue import DATA_DIR
from twin.site.tables import SiteTables

log = logging.getLogger(__name__)
SCENARIO_DIR = DATA_DIR / "scenarios"


class ViewUnavailable(ValueError):
    """A view key that cannot be shown; the message says why, for the page."""


class ScenarioView(SettledView):
    """The twin settled under a scenario file: one snapshot, its detail, the settling ticks as trend."""

    def __init__(self, state: SiteTables, path: Path) -> None:
        scenario = load_scenario(path, state)
        times: list = []
        rows: list[tuple] = []
        snap, detail, job = run_scenario(
            state, scenario, each_tick=lambda s: (times.append(s.ts), rows.append(trend_row(s)))
        )
        if job is not None:
            evaluate_settled_job(state, snap, job)
            rows[-1] = trend_row(snap)  # the job is evaluated on the settled state only
        trend = pd.DataFrame(rows, index=pd.DatetimeIndex(times, tz=UTC, name="ts"), columns=list(TREND_COLUMNS))
        super().__init__(
            state,
            format_view_key(ViewKey(SCENARIO, path.stem)),
            scenario.name,
            scenario.description,
            ViewTick(snap, detail),
            trend,
            [job] if job is not None else [],
            _alerts_of(state, snap, detail),
        )
        self.path = path


def _alerts_of(state: SiteTables, snap: Snapshot, detail) -> list[dict]:
    """The live alert rules evaluated on the scenario's snapshot, as read-only alert dicts."""
    facts = (
        SiteFacts()
        if detail is None
        else SiteFacts(detail.power_live, detail.source_live, generation=detail.generation)
    )
    return [condition_alert(c, snap.ts, state.name) for c in evaluate(state, snap, facts)]


_cache: dict[tuple, ScenarioView] = {}
_cache_lock = threading.Lock()


def scenario_view(state: SiteTables, name: str, folder: Path = SCENARIO_DIR) -> ScenarioView:
    """The cached :class:`ScenarioView` of ``folder/<name>.toml`` on ``state``'s site."""
    path = folder / f"{name}.toml"
    try:
        mtime_ns = path.stat().st_mtime_ns
    except OSError:
        known = sorted(p.stem for p in folder.glob("*.toml"))
        raise ViewUnavailable(f"no scenario {name!r} (scenarios: {', '.join(known) or 'none'})") from None
    cache_key = (state.name, str(path), mtime_ns)
    with _cache_lock:  # one computation per scenario, however many callbacks ask at once
        view = _cache.get(cache_key)
        if view is None:
            try:
                view = ScenarioView(state, path)
            except ScenarioError as exc:
                raise ViewUnavailable(f"scenario {name!r} cannot run on site {state.name!r}: {exc}") from None
            for stale in [k for k in _cache if k[:2] == cache_key[:2]]:
                del _cache[stale]
            _cache[cache_key] = view
            log.info("scenario view %s computed for site %s", name, state.name)
    return view


def available_scenarios(folder: Path = SCENARIO_DIR) -> list[str]:
    """Names of the scenario files (any site)."""
    return sorted(p.stem for p in folder.glob("*.toml"))


def resolve(key_text: str | None, live: View, folder: Path = SCENARIO_DIR) -> View:
    """The view of ``key_text`` (empty: live); :class:`ViewUnavailable` when it cannot be shown."""
    try:
        key = parse_view_key(key_text)
    except ValueError as exc:
        raise ViewUnavailable(str(exc)) from None
    if key.kind == LIVE:
        return live
    if key.kind == SCENARIO:
        if not (folder / f"{key.name}.toml").exists():  # a scenario of the what-if editor
            from dashboard.whatif.edits import EditRejected
            from dashboard.whatif.view import editor_scenario_view

            try:
                edited = editor_scenario_view(live, key.name)
            except EditRejected as exc:
                raise ViewUnavailable(f"scenario {key.name!r} cannot run on site {live.state.name!r}: {exc}") from None
            if edited is not None:
                return edited
        return scenario_view(live.state, key.name, folder)
    if key.kind == REPLAY:
        from dashboard.views.replay import ReplayError, replay_view

        try:
            return replay_view(key.name, key.at)
        except ReplayError as exc:
            raise ViewUnavailable(str(exc)) from None
    raise ViewUnavailable(f"view key {key_text!r}: unknown kind")


# --------------------------------------------------------------- what is on screen
@dataclass(frozen=True)
class Screen:
    """The views a page renders: ``view``, and ``compare`` (another view or None) shown against it."""

    view: View
    compare: View | None
    diff: bool
    selection: ViewSelection


def screen_for(selected: ViewSelection, live: View, folder: Path = SCENARIO_DIR) -> Screen:
    """Resolve both keys of ``selected``; :class:`ViewUnavailable` names the key that failed."""
    view = resolve(selected.view, live, folder)
    other = resolve(selected.compare, live, folder) if selected.compare else None
    return Screen(view, other, selected.diff and other is not None, selected)


def current_screen(**layout_kwargs) -> Screen:
    """The screen of this request (layout kwargs, else the page URL); raises :class:`ViewUnavailable`."""
    return screen_for(selection(**layout_kwargs), current_hub())


def callback_screen() -> Screen:
    """For callbacks: the screen of the page; a view that cannot be shown stops the update (its page says why)."""
    from dash.exceptions import PreventUpdate

    try:
        return current_screen()
    except ViewUnavailable:
        raise PreventUpdate from None


def current_view() -> View:
    """For callbacks: the view on screen (see :func:`callback_screen`)."""
    return callback_screen().view


def view_layout(layout: Callable) -> Callable:
    """Decorate a page's ``layout(**kwargs)``: a view that cannot be shown gives a message, not a traceback."""

    @functools.wraps(layout)
    def wrapped(*args, **kwargs):
        try:
            return layout(*args, **kwargs)
        except ViewUnavailable as exc:
            return unavailable_page(str(exc))

    return wrapped


def unavailable_page(message: str):
    """The page body shown instead of a page when its view cannot be shown."""
    from dash import dcc, html

    from dashboard import ids

    return html.Div(
        [
            html.H1("View not available"),
            html.P(message, id=ids.Shell.VIEW_ERROR, className="view-error"),
            html.P(
                ["Scenarios: "]
                + [
                    item
                    for name in available_scenarios()
                    for item in (dcc.Link(name, href=f"?view=scenario:{name}"), " ")
                ]
                + [" · ", dcc.Link("back to live", href="?")]
            ),
        ],
        className="page page-view-unavailable",
    )
