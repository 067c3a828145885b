"""The twin settled under a scenario, as a view: one snapshot and its detail, no recorded history.

Both scenario views serve the read interface every page renders
(:class:`twin.engine.view.View`) through :class:`SettledView`: a scenario file
(:class:`dashboard.views.scenario_files.ScenarioView`) and a scenario of the what-if editor
(:class:`dashboard.whatif.view.EditorScenarioView`).  They differ only in how they settle
the twin; what they serve from the settled result is the same.
"""

from __future__ import annotations

from datetime import UTC

import numpy as np
import pandas as pd

from ingest.store.layouts import CDU_FIELDS
from twin.engine.snapshot import GPU_DOWN, Snapshot
from twin.engine.view import ViewTick
from twin.site.tables import SiteTables
from twin.training.sitejob import evaluate_site_job

HISTORY_COLUMNS = ("ts", "gpu", "metric", "value")  # of a rack's GPU history (a settled view has none)


def evaluate_settled_job(state: SiteTables, snap: Snapshot, job) -> None:
    """Set ``snap.jobs`` to the placed ``job`` evaluated on the settled state (down GPUs do not run), as the live hub does."""
    running_frac = np.where(snap.gpu_state == GPU_DOWN, 0.0, snap.throttle_frac)
    snap.jobs = [evaluate_site_job(state, job.spec, job.gpu_ids, running_frac, snap.link_up_flag).status]


class SettledView:
    """A settled scenario's snapshot and detail (``tick``), its trend rows, alerts and placed jobs, read-only.

    ``key`` is the view key (``scenario:<name>``), ``title`` the scenario's name, ``trend`` the
    trend rows up to the settled tick (indexed by UTC time).
    """

    is_live = False

    def __init__(
        self,
        state: SiteTables,
        key: str,
        title: str,
        description: str,
        tick: ViewTick,
        trend: pd.DataFrame,
        jobs: list,
        alerts: list[dict] | None = None,
    ) -> None:
        self.state, self.site_name = state, state.name
        self.key, self.title, self.description = key, title, description
        self.label = f"scenario · {title}"
        self._tick, self._trend, self._jobs, self._alerts = tick, trend, list(jobs), list(alerts or [])

    def latest_tick(self) -> ViewTick:
        return self._tick

    def latest(self) -> Snapshot | None:
        return self._tick.snapshot

    def trend(self, window_s: float = 900.0) -> pd.DataFrame:
        """The trend rows of the last ``window_s`` seconds up to the settled tick."""
        if self._trend.empty:
            return self._trend
        return self._trend[self._trend.index >= self._trend.index[-1] - pd.Timedelta(seconds=window_s)]

    def alerts(self, active_only: bool = True) -> list[dict]:
        return [dict(a) for a in self._alerts]

    def rack_history(self, rack_id: int, window_s: float = 600.0) -> pd.DataFrame:
        if not 0 <= rack_id < self.state.n_racks:
            raise ValueError(f"rack id {rack_id} is not in 0..{self.state.n_racks - 1}")
        return pd.DataFrame({name: [] for name in HISTORY_COLUMNS})

    def placed_jobs(self) -> list:
        return list(self._jobs)

    def job_timeline(self, job_name: str) -> list[dict]:
        return []  # a settled scenario has no history

    def cdu_history(self, cdu_id: int, window_s: float = 600.0) -> pd.DataFrame:
        if not 0 <= cdu_id < self.state.n_cdus:
            raise ValueError(f"CDU id {cdu_id} is not in 0..{self.state.n_cdus - 1}")
        return pd.DataFrame(columns=list(CDU_FIELDS), index=pd.DatetimeIndex([], tz=UTC, name="ts"), dtype=float)

    def source_ages(self) -> dict[str, float]:
        return {}
