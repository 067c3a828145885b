"""An editor scenario as a view: every page can show it, alone or beside live (``?view=scenario:NAME``).

The view registry (:mod:`dashboard.views.registry`) asks :func:`editor_scenario_view` for a scenario
name that has no file in ``data/scenarios``: the scenario store's edits are projected by
:func:`dashboard.whatif.outcome.outcome` (cached per edit list) and served through the
read interface every page renders (:class:`twin.engine.view.View`), as
:class:`dashboard.views.scenario_files.ScenarioView` does for scenario files.
"""

from __future__ import annotations

from datetime import UTC

import pandas as pd

from dashboard.views.settled import SettledView, evaluate_settled_job
from dashboard.whatif.outcome import Outcome, live_load, outcome
from ingest.live.trend import TREND_COLUMNS, trend_row
from twin.engine.view import SCENARIO, ViewKey, ViewTick, format_view_key
from twin.scenario.projection import project_run


class EditorScenarioView(SettledView):
    """The twin settled under an editor scenario's edits: one snapshot and its detail (no alerts)."""

    def __init__(self, name: str, result: Outcome) -> None:
        _report, snap, detail, job = project_run(result.state, result.scenario)
        if job is not None:  # the job evaluated on the settled state, as ScenarioView does
            evaluate_settled_job(result.state, snap, job)
        index = (
            pd.DatetimeIndex([snap.ts], tz=UTC, name="ts")
            if snap.ts.tzinfo
            else pd.DatetimeIndex([snap.ts], name="ts").tz_localize(UTC)
        )
        trend = pd.DataFrame([trend_row(snap)], index=index, columns=list(TREND_COLUMNS))
        super().__init__(
            result.state,
            format_view_key(ViewKey(SCENARIO, name)),
            name,
            f"what-if scenario {name} ({len(result.touched_racks)} racks edited)",
            ViewTick(snap, detail),
            trend,
            [job] if job is not None else [],
        )


def editor_scenario_view(live, name: str) -> EditorScenarioView | None:
    """The view of editor scenario ``name`` on ``live``'s site (None when the store has none of that name)."""
    import flask

    from dashboard.views.context import site_db
    from dashboard.whatif.store import scenario_store

    if not flask.has_app_context():
        return None
    store = scenario_store(live, site_db(), flask.current_app.config)
    if name not in store.names():
        return None
    edits = store.edits(name)
    key = (id(live.state), name, repr(edits))
    view = _views.get(key)
    if view is None or view.base is not live.state:
        view = EditorScenarioView(name, outcome(live.state, edits, load=live_load(live)))
        view.base = live.state
        if len(_views) > 8:
            _views.clear()
        _views[key] = view
    return view


_views: dict[tuple, EditorScenarioView] = {}  # one projection per (site, scenario, edit list)
