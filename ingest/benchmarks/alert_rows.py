"""Benchmark of alert churn: alert rows a live hub writes per hour, with no fault and with each fault class.

An operator's database (and pager) should see one row per episode: with no fault, no new
rows once the twin settled.  The peer is the same hub recording every tick's raw rule
conditions (no minimum duration, no clear hold, no envelope): the churn the episodes remove.
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlmodel import Session, func, select

from ingest.live.runtime import build_hub
from ingest.store.models import Event, EventChange
from twin.bench import benchmark

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
SETTLE_S = 120  # rows written in the first minutes (the twin settling, jobs warming up) are not counted
# one fault of each class of the operator's fault tests (tests/dashboard/test_browser_faults.py)
FAULTS = (
    "feed:H1-BW-R01-A",
    "source:GEN-A-01",
    "facility_water:FW-H1=10",
    "cdu:H1-R01-K02-CDU",
    "pump:H1-R01-K03-CDU",
    "xid:h1-r01-k01-n0/0",
    "tim:H1-R01-K04=60",
    "link:leaf-p00-a000-r0",
)


class _Raw:
    """The peer: every tick's raw conditions are the open episodes, the snapshot unsmoothed."""

    open_keys = open_critical_keys = frozenset()

    def update(self, _ts, conditions):
        return conditions

    def steady(self, snap):
        return snap


def _rows(engine) -> int:
    with Session(engine) as session:
        return int(session.exec(select(func.count()).select_from(Event)).one()) + int(
            session.exec(select(func.count()).select_from(EventChange)).one()
        )


def _rows_per_h(site: str, fault: str | None, seconds: int, step_s: int, raw: bool) -> tuple[float, float]:
    """Rows per hour after :data:`SETTLE_S` over ``seconds``, and over the last half of them."""
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        hub = build_hub(
            site, f"sqlite:///{Path(tmp) / 'a.db'}", record=False, start=T0, seed=1, faults=(fault,) if fault else ()
        )
        if raw:
            hub.live_alerts.episodes = hub.live_alerts.envelope = _Raw()
        settled = halfway = 0
        half_s = SETTLE_S + seconds // 2
        for t_s in range(0, SETTLE_S + seconds, step_s):
            hub.step(T0 + timedelta(seconds=t_s))
            if t_s < SETTLE_S:
                settled = _rows(hub.db)
            if t_s < half_s:
                halfway = _rows(hub.db)
        rows = _rows(hub.db)
        hub.db.dispose()
    return (rows - settled) * 3600.0 / seconds, (rows - halfway) * 3600.0 / (SETTLE_S + seconds - half_s)


@benchmark("alert_rows")
def alert_rows_benchmark(site: str = "colossus", seconds: int = 480, step_s: int = 2) -> dict:
    """Alert rows (episodes raised plus history rows) per hour after :data:`SETTLE_S`, over ``seconds`` of twin time.

    ``no_fault_rows_per_h`` is the target (0 once settled); ``<fault>_rows_per_h`` per fault
    class (the fault starts with the run, so its episodes count once the twin settled) and
    ``<fault>_late_rows_per_h`` over the last half of ``seconds`` only: a fault whose episodes
    take minutes (an XID's job restart: stalled, then back at full power, where the site's
    standing warnings open once) should write nothing more after them; the peer
    ``raw_no_fault_rows_per_h`` records raw conditions, ``churn_ratio`` is peer over ours.
    """
    out: dict = {"site": site, "seconds": seconds}
    out["no_fault_rows_per_h"], out["no_fault_late_rows_per_h"] = _rows_per_h(site, None, seconds, step_s, raw=False)
    out["raw_no_fault_rows_per_h"], _ = _rows_per_h(site, None, seconds, step_s, raw=True)
    out["churn_ratio"] = out["raw_no_fault_rows_per_h"] / max(out["no_fault_rows_per_h"], 3600.0 / seconds)
    for fault in FAULTS:
        kind = fault.split(":")[0]
        out[f"{kind}_rows_per_h"], out[f"{kind}_late_rows_per_h"] = _rows_per_h(site, fault, seconds, step_s, raw=False)
    return out
