"""The live view: what the pages and the API read of a live hub, and nothing they could change.

:class:`LiveView` is the ``live`` view of :mod:`twin.engine.view`: the latest tick (snapshot
and detail together), the trend, the stored alerts, the recorded history of a rack or a
CDU, the placed jobs and their timelines, the sources' ages.  Reads never block on a
tick for long.  Operator changes of alerts go through
:class:`ingest.live.alert_actions.AlertActions`, beside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pandas as pd

from ingest.live.fleet import LiveFleet
from ingest.live.latest import LatestTick
from ingest.live.live_alerts import LiveAlerts
from ingest.live.recording import FrameRecorder
from ingest.live.tick_loop import TickLoop
from ingest.store.models import utcnow
from twin.engine.snapshot import Snapshot
from twin.engine.tick import PlacedJob, TickDetail
from twin.engine.view import ViewTick


class LiveView:
    """The read side of one live hub (see module docstring).

    ``following()`` says whether the hub shows a leader's ticks instead of making its own
    (then the sources' ages are the leader's, aged since its tick).
    """

    key = "live"
    label = "live"
    is_live = True

    def __init__(
        self,
        latest: LatestTick,
        ticker: TickLoop,
        recorder: FrameRecorder,
        alerts: LiveAlerts,
        following: Callable[[], bool] = lambda: False,
    ) -> None:
        self.state, self.site_name = ticker.state, ticker.state.name
        self._latest, self._ticker, self._recorder, self._alerts = latest, ticker, recorder, alerts
        self._following = following

    def latest_tick(self) -> ViewTick:
        """The last published snapshot with the detail of the same tick, read together."""
        return self._latest.get()

    def latest(self) -> Snapshot | None:
        return self._latest.get().snapshot

    def detail(self) -> TickDetail | None:
        """The twin's results beyond the Snapshot contract of the published tick (site balance, N-1 causes)."""
        return self._latest.get().detail

    def trend(self, window_s: float = 900.0) -> pd.DataFrame:
        return self._latest.trend.frame(window_s)

    def source_ages(self, now_s: float | None = None) -> dict[str, float]:
        """Seconds since each source's last good reading (inf when never); a follower ages the leader's."""
        now_s = time.time() if now_s is None else now_s
        snap = self._latest.get().snapshot
        if self._following() and snap is not None:
            since_s = now_s - snap.ts.timestamp()
            return {name: age + since_s for name, age in snap.source_age_s.items()}
        return self._ticker.source_ages(now_s)

    def rack_history(self, rack_id: int, window_s: float = 600.0) -> pd.DataFrame:
        """Recorded GPU values of one rack over the last ``window_s`` s, long format (ts, gpu, metric, value)."""
        return self._recorder.rack_history(rack_id, self._ticker.last_ts or utcnow(), window_s)

    def cdu_history(self, cdu_id: int, window_s: float = 600.0) -> pd.DataFrame:
        """Recorded values of one CDU over the last ``window_s`` s, one column per CDU field, indexed by UTC time."""
        return self._recorder.cdu_history(cdu_id, self._ticker.last_ts or utcnow(), window_s)

    def placed_jobs(self) -> list[PlacedJob]:
        """The training jobs the live twin evaluates, as placed on the site."""
        return list(self._ticker.jobs.placed)

    def fleet(self) -> LiveFleet | None:
        """The fleet beside the tick (read with its ``frame``, ``team_series``, ``gantt_rows``); None without one."""
        return self._ticker.fleet

    def job_timeline(self, job_name: str) -> list[dict]:
        """Phase changes of a job (failures, restarts, checkpoints), oldest first."""
        return self._ticker.jobs.timeline(job_name)

    def alerts(self, active_only: bool = True, limit: int = 500) -> list[dict]:
        """Alerts newest first; ``active_only`` keeps the ones not cleared yet (fields: :func:`alert_dict`).

        With the database down, the lists last read are returned, never an error.
        """
        return self._alerts.listing(active_only, limit)

    def database_reachable(self) -> bool:
        """False while the hub's writes fail or its last alert read failed."""
        return self._alerts.database_reachable()
