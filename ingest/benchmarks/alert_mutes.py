"""Benchmark of scoped silences and maintenance windows on the live tick: what matching alerts against
100 of them costs a colossus tick, against the same tick with none (the peer).

Both hubs run the same faults (one of each class of :mod:`ingest.benchmarks.alert_rows`, so the
tick holds dozens of conditions) with a notifier attached (no receivers), which is what makes
the tick match its episodes.  The silences mix what operators set: rack globs, halls narrowed
to a rule, cause groups and maintenance windows, most matching nothing.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ingest.benchmarks.alert_rows import FAULTS
from ingest.live.mute_scope import MuteSet, condition_facts
from ingest.live.notify import Notifier
from ingest.live.runtime import build_hub
from twin.bench import benchmark

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
RULES = ("gpu_hot", "xid", "links_down", "gpu_down", "stale")


def _add_mutes(hub, count: int) -> None:
    """``count`` silences and windows of every scope kind, most of them on parts of the site with no fault."""
    actions, halls = hub.alert_actions, hub.state.hall_name
    now = datetime.now(UTC)
    for i in range(count):
        kind = i % 4
        if kind == 0:
            scope = {"kind": "entity", "value": f"{halls[i % len(halls)]}-R{i % 25 + 1:02d}-K*"}
        elif kind == 1:
            scope = {"kind": "hall", "value": halls[i % len(halls)], "rule": RULES[i % len(RULES)]}
        elif kind == 2:
            scope = {"kind": "group", "value": f"pump:cdu:{i}"}
        else:
            scope = {"kind": "entity", "value": f"leaf-p{i % 32:02d}-a*"}
        if i % 5 == 4:
            actions.add_maintenance(scope, now, now + timedelta(hours=2), f"work {i}", user="bench")
        else:
            actions.add_silence(scope, 3600, f"silence {i}", user="bench")


def _run(site: str, steps: int, mutes: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        hub = build_hub(site, f"sqlite:///{Path(tmp) / 'm.db'}", record=False, start=T0, seed=1, faults=FAULTS)
        hub.live_alerts.notifier = Notifier(site, [])
        _add_mutes(hub, mutes)
        alerts_ms, step_ms, match_ms = [], [], []
        try:
            for i in range(steps):
                ts = T0 + timedelta(seconds=i)
                hub.step(ts)
                alerts_ms.append(hub.timing.alerts_ms)
                step_ms.append(hub.timing.total_ms)
                current = hub.live_alerts.mutes.current(ts)
                t0 = time.perf_counter()
                for c in hub.live_alerts.conditions:
                    current.mute_of(condition_facts(c), ts)
                match_ms.append((time.perf_counter() - t0) * 1e3)
            conditions = hub.live_alerts.conditions
            fresh = MuteSet(current.rules, hub.live_alerts.mutes.halls)
            t0 = time.perf_counter()
            muted = sum(fresh.mute_of(condition_facts(c), ts) is not None for c in conditions)
            cold_ms = (time.perf_counter() - t0) * 1e3
            t0 = time.perf_counter()
            listed = hub.view.alerts(active_only=False)
            listing_ms = (time.perf_counter() - t0) * 1e3
        finally:
            hub.live_alerts.close()
            hub.db.dispose()
    settled = slice(steps // 3, None)  # the first ticks raise the faults' episodes
    return {
        "alerts_ms": statistics.median(alerts_ms[settled]),
        "step_ms": statistics.median(step_ms[settled]),
        "match_ms": statistics.median(match_ms[settled]),
        "cold_match_ms": cold_ms,
        "listing_ms": listing_ms,
        "conditions": len(conditions),
        "muted": muted,
        "listed": len(listed),
    }


@benchmark("alert_mutes")
def alert_mutes_benchmark(site: str = "colossus", steps: int = 30, mutes: int = 100) -> dict:
    """Medians over the settled ticks of ``steps``: the alert part of the tick (``alerts_ms``), the whole
    step (``step_ms``) and the scope match alone (``match_ms``: the tick's conditions against ``mutes``
    silences and windows, matched once and remembered), with ``mutes`` against none.

    ``cold_match_ms`` is the match before anything is remembered (every condition against every
    scope: a tick after a silence is added); ``*_ratio`` is with over without.
    """
    base = _run(site, steps, 0)
    muted = _run(site, steps, mutes)
    return {
        "site": site,
        "mutes_count": mutes,
        "conditions_count": muted["conditions"],
        "muted_conditions_count": muted["muted"],
        "match_ms": muted["match_ms"],
        "cold_match_ms": muted["cold_match_ms"],
        "alerts_ms": muted["alerts_ms"],
        "alerts_no_mutes_ms": base["alerts_ms"],
        "alerts_ratio": muted["alerts_ms"] / base["alerts_ms"],
        "step_ms": muted["step_ms"],
        "step_no_mutes_ms": base["step_ms"],
        "step_ratio": muted["step_ms"] / base["step_ms"],
        "listing_ms": muted["listing_ms"],
        "listing_no_mutes_ms": base["listing_ms"],
        "listed_alerts_count": muted["listed"],
    }
