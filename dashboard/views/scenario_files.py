"""Scenario files as views: the twin settled under ``data/scenarios/<name>.toml`` (``scenario:<name>``).

:func:`scenario_view` computes a :class:`ScenarioView` once per (site, file, file
modification time) and caches it; a file that cannot be shown raises
:class:`dashboard.views.registry.ViewUnavailable` with a message meant for the page.
"""

from __future__ import annotations

import logging
from datetime import UTC
from pathlib import Path

import pandas as pd

from dashboard.views.settled import SettledView, evaluate_settled_job
from dashboard.views.unavailable import ViewUnavailable
from ingest.live.alert_rules import SiteFacts, evaluate
from ingest.live.alerts import condition_alert
from ingest.live.trend import TREND_COLUMNS, trend_row
from twin.cache import BoundedCache
from twin.engine.snapshot import Snapshot
from twin.engine.view import SCENARIO, ViewKey, ViewTick, format_view_key
from twin.scenario.conditions import ScenarioError
from twin.scenario.load import load_scenario
from twin.scenario.projection import run_scenario
from twin.site.catalogue import DATA_DIR
from twin.site.tables import SiteTables

log = logging.getLogger(__name__)
SCENARIO_DIR = DATA_DIR / "scenarios"


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


# (site name, scenario file, its modification time) → the view, computed one at a time (a projection is costly)
_views: BoundedCache[ScenarioView] = BoundedCache(16, single_flight=True)


def scenario_view(state: SiteTables, name: str, folder: Path = SCENARIO_DIR) -> ScenarioView:
    """The cached :class:`ScenarioView` of ``folder/<name>.toml`` on ``state``'s site."""
    path = folder / f"{name}.toml"
    try:
        mtime_ns = path.stat().st_mtime_ns
    except OSError:
        known = sorted(p.stem for p in folder.glob("*.toml"))
        raise ViewUnavailable(f"no scenario {name!r} (scenarios: {', '.join(known) or 'none'})") from None

    def make() -> ScenarioView:
        view = ScenarioView(state, path)
        log.info("scenario view %s computed for site %s", name, state.name)
        return view

    try:
        return _views.get_or_make((state.name, str(path), mtime_ns), make)
    except ScenarioError as exc:
        raise ViewUnavailable(f"scenario {name!r} cannot run on site {state.name!r}: {exc}") from None


def available_scenarios(folder: Path = SCENARIO_DIR) -> list[str]:
    """Names of the scenario files (any site)."""
    return sorted(p.stem for p in folder.glob("*.toml"))
