"""Benchmark of scoped silences and maintenance windows on the live tick: what matching alerts against
100 of them costs a colossus tick, against the same tick with none (the peer).

Both hubs run the same faults (one of each class of :mod:`ingest.benchmarks.alert_rows`, and an
XID on one GPU of every :data:`XID_EVERY_NODES`-th node, so the tick holds a few hundred
conditions) with a notifier attached (no receivers), which is what makes the tick match its
episodes.  Their ticks interleave, so both see the same load of the machine.  The silences mix
what operators set: rack globs, halls narrowed to a rule, cause groups, leaf-switch globs and
maintenance windows; some match (the rack globs cover XIDs on their hosts), most do not.
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
from twin.site.load import load_site

RULES = ("gpu_hot", "xid", "links_down", "gpu_down", "stale")
XID_EVERY_NODES = 50  # colossus: 12,544 nodes, so about 250 GPUs with an XID


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


def _hub(site: str, folder: Path, faults: tuple[str, ...], mutes: int, start: datetime):
    hub = build_hub(site, f"sqlite:///{folder / 'm.db'}", record=False, start=start, seed=1, faults=faults)
    hub.live_alerts.notifier = Notifier(site, [])
    _add_mutes(hub, mutes)
    return hub


def _tick(hub, ts: datetime, out: dict) -> None:
    """One step of ``hub``; its alert and step times, and the scope match of its conditions alone."""
    hub.step(ts)
    out["alerts_ms"].append(hub.timing.alerts_ms)
    out["step_ms"].append(hub.timing.total_ms)
    current = hub.live_alerts.mutes.current(ts)
    t0 = time.perf_counter()
    for c in hub.live_alerts.conditions:
        current.condition_mute(c, ts)
    out["match_ms"].append((time.perf_counter() - t0) * 1e3)


def _after(hub, ts: datetime, out: dict) -> dict:
    """The settled medians of ``out``, the match before anything is remembered, and one listing."""
    conditions = hub.live_alerts.conditions
    fresh = MuteSet(hub.live_alerts.mutes.current(ts).rules, hub.live_alerts.mutes.halls)
    t0 = time.perf_counter()
    muted = sum(fresh.mute_of(condition_facts(c), ts) is not None for c in conditions)
    cold_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    listed = hub.view.alerts(active_only=False)
    listing_ms = (time.perf_counter() - t0) * 1e3
    settled = {k: statistics.median(v[len(v) // 3 :]) for k, v in out.items()}  # the first ticks raise the faults
    return dict(settled, cold_match_ms=cold_ms, listing_ms=listing_ms, conditions=len(conditions), muted=muted,
                listed=len(listed))  # fmt: skip


def _run(site: str, steps: int, mutes: int) -> tuple[dict, dict]:
    """The peer (no silences) and ours (``mutes`` of them), their ticks interleaved."""
    nodes = load_site(site).node_name
    faults = FAULTS + tuple(f"xid:{n}/0" for n in nodes[::XID_EVERY_NODES])
    # the silences start when added: the ticks follow them (twin time runs a minute ahead of the clock)
    t0 = datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=1)
    runs = []
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        hubs = []
        try:
            for i, count in enumerate((0, mutes)):
                (Path(tmp) / str(i)).mkdir()
                hubs.append(_hub(site, Path(tmp) / str(i), faults, count, t0))
            times = [{"alerts_ms": [], "step_ms": [], "match_ms": []} for _ in hubs]
            for i in range(steps):
                for hub, out in zip(hubs, times):
                    _tick(hub, t0 + timedelta(seconds=i), out)
            runs = [_after(hub, t0 + timedelta(seconds=steps - 1), out) for hub, out in zip(hubs, times)]
        finally:
            for hub in hubs:
                hub.live_alerts.close()
                hub.db.dispose()
    return runs[0], runs[1]


@benchmark("alert_mutes")
def alert_mutes_benchmark(site: str = "colossus", steps: int = 30, mutes: int = 100) -> dict:
    """Medians over the settled ticks of ``steps``: the alert part of the tick (``alerts_ms``), the whole
    step (``step_ms``) and the scope match alone (``match_ms``: the tick's conditions against ``mutes``
    silences and windows, matched once and remembered), with ``mutes`` against none.

    ``cold_match_ms`` is the match before anything is remembered (every condition against every
    scope: a tick after a silence is added); ``*_ratio`` is with over without; ``match_frac`` the
    match's share of our alert time.
    """
    base, muted = _run(site, steps, mutes)
    return {
        "site": site,
        "mutes_count": mutes,
        "conditions_count": muted["conditions"],
        "muted_conditions_count": muted["muted"],
        "match_ms": muted["match_ms"],
        "match_frac": muted["match_ms"] / muted["alerts_ms"],
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
