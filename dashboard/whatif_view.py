"""An editor scenario as a view: every page can show it, alone or beside live (``?view=scenario:NAME``).

:func:`dashboard.views.scenario_view` asks :func:`editor_scenario_view` for a scenario
name that has no file in ``data/scenarios``: the scenario store's edits are projected by
:func:`dashboard.whatif_outcome.outcome` (cached per edit list) and served through the
read interface every page renders (:class:`twin.engine.view.View`), as
:class:`dashboard.views.ScenarioView` does for scenario files.
"""

from __future__ import annotations

from datetime import timezone

import numpy as np
import pandas as pd

from dashboard.whatif_outcome import Outcome, outcome
from ingest.live.trend import TREND_COLUMNS, trend_row
from ingest.store.layouts import CDU_FIELDS
from twin.engine.projection import project_run
from twin.engine.snapshot import GPU_DOWN
from twin.engine.view import SCENARIO, ViewKey, ViewTick, format_view_key
from twin.training.sitejob import evaluate_site_job

HISTORY_COLUMNS = ("ts", "gpu", "metric", "value")


class EditorScenarioView:
    """The twin settled under an editor scenario's edits: one snapshot and its detail."""

    is_live = False

    def __init__(self, name: str, result: Outcome) -> None:
        self.state, self.site_name = result.state, result.state.name
        self.key = format_view_key(ViewKey(SCENARIO, name))
        self.title = name
        self.description = f"what-if scenario {name} ({len(result.touched_racks)} racks edited)"
        self.label = f"scenario · {name}"
        _report, snap, detail, job = project_run(result.state, result.scenario)
        if job is not None:  # the job evaluated on the settled state, as ScenarioView does
            running_frac = np.where(snap.gpu_state == GPU_DOWN, 0.0, snap.throttle_frac)
            snap.jobs = [evaluate_site_job(result.state, job.spec, job.gpu_ids, running_frac, snap.link_up_flag).status]
        self._jobs = [job] if job is not None else []
        self._tick = ViewTick(snap, detail)
        index = pd.DatetimeIndex([snap.ts], tz=timezone.utc, name="ts") if snap.ts.tzinfo else \
            pd.DatetimeIndex([snap.ts], name="ts").tz_localize(timezone.utc)
        self._trend = pd.DataFrame([trend_row(snap)], index=index, columns=list(TREND_COLUMNS))

    def latest_tick(self) -> ViewTick:
        return self._tick

    def latest(self):
        return self._tick.snapshot

    def trend(self, window_s: float = 900.0) -> pd.DataFrame:
        return self._trend

    def alerts(self, active_only: bool = True) -> list[dict]:
        return []

    def rack_history(self, rack_id: int, window_s: float = 600.0) -> pd.DataFrame:
        if not 0 <= rack_id < self.state.n_racks:
            raise ValueError(f"rack id {rack_id} is not in 0..{self.state.n_racks - 1}")
        return pd.DataFrame({name: [] for name in HISTORY_COLUMNS})

    def placed_jobs(self) -> list:
        return list(self._jobs)

    def job_timeline(self, job_name: str) -> list[dict]:
        return []

    def cdu_history(self, cdu_id: int, window_s: float = 600.0) -> pd.DataFrame:
        if not 0 <= cdu_id < self.state.n_cdus:
            raise ValueError(f"CDU id {cdu_id} is not in 0..{self.state.n_cdus - 1}")
        return pd.DataFrame(columns=list(CDU_FIELDS), index=pd.DatetimeIndex([], tz=timezone.utc, name="ts"),
                            dtype=float)

    def source_ages(self) -> dict[str, float]:
        return {}


def editor_scenario_view(live, name: str) -> EditorScenarioView | None:
    """The view of editor scenario ``name`` on ``live``'s site (None when the store has none of that name)."""
    import flask

    from dashboard.whatif_store import scenario_store

    if not flask.has_app_context():
        return None
    store = scenario_store(live, flask.current_app.config)
    if name not in store.names():
        return None
    edits = store.edits(name)
    key = (id(live.state), name, repr(edits))
    view = _views.get(key)
    if view is None or view.base is not live.state:
        view = EditorScenarioView(name, outcome(live.state, edits))
        view.base = live.state
        if len(_views) > 8:
            _views.clear()
        _views[key] = view
    return view


_views: dict[tuple, EditorScenarioView] = {}  # one projection per (site, scenario, edit list)
