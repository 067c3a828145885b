"""Alert rules over a twin snapshot, raised and cleared once per episode.

Rules are vectorised over the snapshot's arrays and aggregated to the entity an
operator acts on (a rack, not its 64 GPUs).  :class:`AlertTracker` remembers which
conditions are open so the database sees only transitions: one row when a condition
starts, one update when it clears.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from ingest.store.models import Event
from twin.engine.snapshot import GPU_DOWN, Snapshot
from twin.site.tables import SiteTables

XID_SEVERITY = {79: "critical", 48: "critical", 95: "critical", 64: "critical", 94: "warning", 63: "warning",
                74: "warning", 92: "info", 119: "critical", 120: "critical"}  # [NVIDIA-XID-Catalog]
STALE_AFTER_S = 10.0


@dataclass(frozen=True)
class Condition:
    """A condition that holds now for one entity."""

    key: str
    severity: str
    source: str
    entity_kind: str
    entity_id: int
    entity_name: str
    metric: str
    value: float
    message: str


def _rack_conditions(state: SiteTables, snap: Snapshot) -> list[Condition]:
    out = []
    max_op = state.gpu_spec_array("max_operating_temp_c")
    slowdown = state.gpu_spec_array("slowdown_temp_c")
    hot = np.bincount(state.gpu_rack, weights=snap.gpu_temp_c >= max_op, minlength=state.n_racks)
    very_hot = np.bincount(state.gpu_rack, weights=snap.gpu_temp_c >= slowdown, minlength=state.n_racks)
    down = np.bincount(state.gpu_rack, weights=snap.gpu_state == GPU_DOWN, minlength=state.n_racks)
    for r in np.flatnonzero(hot > 0):
        sev = "critical" if very_hot[r] else "warning"
        limit = "slowdown" if very_hot[r] else "max operating"
        out.append(Condition(f"gpu_hot:rack:{r}", sev, "twin", "rack", int(r), state.rack_name[r], "gpu_temp_c",
                             float(snap.rack_max_gpu_temp_c[r]),
                             f"{int(hot[r])} GPU(s) at or above {limit} temperature "
                             f"(max {snap.rack_max_gpu_temp_c[r]:.1f} °C)"))
    for r in np.flatnonzero(down > 0):
        out.append(Condition(f"gpu_down:rack:{r}", "critical", "twin", "rack", int(r), state.rack_name[r],
                             "gpu_state", float(down[r]), f"{int(down[r])} GPU(s) down"))
    return out


def _xid_conditions(state: SiteTables, snap: Snapshot) -> list[Condition]:
    out = []
    for g in np.flatnonzero(snap.last_xid_code > 0):
        code = int(snap.last_xid_code[g])
        node = state.gpu_node[g]
        name = f"{state.node_name[node]}/gpu{int(state.gpu_index[g])}"
        out.append(Condition(f"xid:{code}:gpu:{g}", XID_SEVERITY.get(code, "warning"), "twin", "gpu", int(g), name,
                             "last_xid_code", float(code), f"XID {code} on {name}"))
    return out


def _cooling_conditions(state: SiteTables, snap: Snapshot) -> list[Condition]:
    out = []
    required = state.cdu_spec_array("pumps_required")
    installed = state.cdu_spec_array("pumps")
    over = snap.cdu_heat_kw > snap.cdu_capacity_kw
    for c in np.flatnonzero(over):
        out.append(Condition(f"cdu_over:cdu:{c}", "critical", "twin", "cdu", int(c), state.cdu_name[c], "cdu_heat_kw",
                             float(snap.cdu_heat_kw[c]), f"heat {snap.cdu_heat_kw[c]:.0f} kW exceeds capacity "
                             f"{snap.cdu_capacity_kw[c]:.0f} kW"))
    for c in np.flatnonzero(snap.pumps_running_count < installed):
        sev = "critical" if snap.pumps_running_count[c] < required[c] else "warning"
        out.append(Condition(f"pump:cdu:{c}", sev, "twin", "cdu", int(c), state.cdu_name[c], "pumps_running_count",
                             float(snap.pumps_running_count[c]),
                             f"{int(snap.pumps_running_count[c])} of {int(installed[c])} pumps running"
                             + ("" if sev == "critical" else " (no redundancy left)")))
    return out


def _power_conditions(state: SiteTables, snap: Snapshot) -> list[Condition]:
    out = []
    for e in np.flatnonzero(snap.power_load_frac > 1.0):
        out.append(Condition(f"overload:power:{e}", "critical", "twin", "power", int(e), state.power_name[e],
                             "load_frac", float(snap.power_load_frac[e]),
                             f"loaded to {snap.power_load_frac[e]:.0%} of its usable rating"))
    n1 = (snap.power_n1_load_frac > 1.0) & ~(snap.power_load_frac > 1.0)
    for e in np.flatnonzero(n1):
        out.append(Condition(f"n1:power:{e}", "warning", "twin", "power", int(e), state.power_name[e], "load_frac",
                             float(snap.power_n1_load_frac[e]),
                             f"N-1: would reach {snap.power_n1_load_frac[e]:.0%} after a single failure"))
    load_mw = snap.facility_power_mw
    if load_mw > snap.generation_capacity_mw:
        out.append(Condition("supply:site:0", "critical", "twin", "site", 0, state.name, "facility_power_mw",
                             float(load_mw), f"facility load {load_mw:.1f} MW exceeds generation "
                             f"{snap.generation_capacity_mw:.1f} MW"))
    return out


def _link_conditions(state: SiteTables, snap: Snapshot) -> list[Condition]:
    down = np.flatnonzero(~snap.link_up_flag)
    if not down.size:
        return []
    per_switch = np.bincount(state.link_a[down], minlength=state.n_switches)
    return [Condition(f"links_down:switch:{s}", "warning", "twin", "switch", int(s), state.switch_name[s],
                      "link_up_flag", float(per_switch[s]), f"{int(per_switch[s])} uplink(s) down")
            for s in np.flatnonzero(per_switch)]


def _stale_conditions(snap: Snapshot) -> list[Condition]:
    return [Condition(f"stale:source:{name}", "warning", name, "source", 0, name, "source_age_s", float(age),
                      "no reading yet" if not np.isfinite(age) else f"no good reading for {age:.0f} s")
            for name, age in snap.source_age_s.items() if not age <= STALE_AFTER_S]


def evaluate(state: SiteTables, snap: Snapshot) -> list[Condition]:
    """Every condition that holds in ``snap``."""
    return (_rack_conditions(state, snap) + _xid_conditions(state, snap) + _cooling_conditions(state, snap)
            + _power_conditions(state, snap) + _link_conditions(state, snap) + _stale_conditions(snap))


class AlertTracker:
    """Turns the conditions of successive snapshots into Event rows (open once, clear once)."""

    def __init__(self, engine: Engine, site_name: str) -> None:
        self.engine, self.site_name = engine, site_name
        with Session(engine) as session:
            rows = session.exec(select(Event).where(Event.site_name == site_name, Event.cleared_at.is_(None))).all()
        self.open: dict[str, int] = {row.key: row.id for row in rows}

    def update(self, ts: datetime, conditions: list[Condition]) -> tuple[int, int]:
        """Record transitions at ``ts``; returns (raised, cleared) counts."""
        now = {c.key: c for c in conditions}
        new = [c for key, c in now.items() if key not in self.open]
        gone = [key for key in self.open if key not in now]
        if not new and not gone:
            return 0, 0
        with Session(self.engine) as session:
            rows = [Event(site_name=self.site_name, key=c.key, raised_at=ts, severity=c.severity, source=c.source,
                          entity_kind=c.entity_kind, entity_id=c.entity_id, entity_name=c.entity_name,
                          metric=c.metric, value=c.value, message=c.message) for c in new]
            session.add_all(rows)
            for key in gone:
                event = session.get(Event, self.open[key])
                if event is not None:
                    event.cleared_at = ts
                    session.add(event)
            session.commit()
            for row in rows:
                self.open[row.key] = row.id
        for key in gone:
            del self.open[key]
        return len(new), len(gone)
