"""Which equipment is dead, off or without redundancy, as boolean arrays the figures mark.

Pure functions of (:class:`SiteTables`, :class:`Snapshot`, optional ``TickDetail``).  The
twin's tick detail says which power elements and sources are energised; without it
(a stand-in or recorded view) a power element counts as dead when it carries no load
and everything upstream of it is dead too, and sources count as live (a generator
at zero output may simply be on standby).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.engine.snapshot import GPU_OFF, Snapshot
from twin.site.tables import SiteTables


@dataclass(frozen=True)
class PowerStatus:
    """Per power element and per source: energised, and carrying racks alone."""

    power_live: np.ndarray  # bool [n_power]
    source_live: np.ndarray  # bool [n_sources]
    no_redundancy: np.ndarray  # bool [n_power]: the surviving feed of racks whose other feed is dead
    from_twin: bool  # True when taken from the twin's tick detail, False when inferred from loads


def _detail_array(detail, name: str, size: int) -> np.ndarray | None:
    value = getattr(detail, name, None) if detail is not None else None
    if value is None:
        return None
    value = np.asarray(value, dtype=bool)
    return value if value.shape == (size,) else None


def inferred_power_live(state: SiteTables, snap: Snapshot) -> np.ndarray:
    """Energised elements from loads alone: dead = no load and no live supply upstream.

    A switchgear at the top of the tree is dead when it carries no load and its sources
    deliver nothing; an element below is dead when it carries no load and its parent is dead.
    """
    load_kw = np.nan_to_num(np.asarray(snap.feed_power_kw, dtype=np.float64), nan=1.0)
    supplied_mw = np.bincount(state.source_bus, np.nan_to_num(snap.source_power_mw, nan=1.0), minlength=state.n_power)
    live = np.ones(state.n_power, dtype=bool)
    if state.n_power == 0:
        return live
    for depth in range(int(state.power_depth.max()) + 1):
        idx = np.flatnonzero(state.power_depth == depth)
        parent = state.power_parent[idx]
        upstream_dead = np.where(parent >= 0, ~live[np.maximum(parent, 0)], supplied_mw[idx] <= 0.0)
        live[idx] = ~((load_kw[idx] <= 0.0) & upstream_dead)
    return live


def no_redundancy(state: SiteTables, power_live: np.ndarray) -> np.ndarray:
    """Feed elements that now carry a dual-fed rack alone (the rack's other feed is dead)."""
    alone = np.zeros(state.n_power, dtype=bool)
    dual = state.rack_feed_b >= 0
    a_live = power_live[state.rack_feed_a]
    b_live = np.where(dual, power_live[np.maximum(state.rack_feed_b, 0)], False)
    alone[state.rack_feed_a[dual & a_live & ~b_live]] = True
    alone[state.rack_feed_b[dual & b_live & ~a_live]] = True
    return alone


def power_status(state: SiteTables, snap: Snapshot, detail=None) -> PowerStatus:
    """Energised elements and sources (the twin's when ``detail`` has them) and the feeds left alone."""
    power_live = _detail_array(detail, "power_live", state.n_power)
    source_live = _detail_array(detail, "source_live", state.n_sources)
    from_twin = power_live is not None
    if power_live is None:
        power_live = inferred_power_live(state, snap)
    if source_live is None:
        source_live = np.ones(state.n_sources, dtype=bool)
    return PowerStatus(power_live, source_live, no_redundancy(state, power_live), from_twin)


def cdu_lost(state: SiteTables, snap: Snapshot) -> np.ndarray:
    """CDUs with fewer pumps running than they need (bool per CDU): they cool nothing."""
    running = np.asarray(snap.pumps_running_count)
    return running < state.cdu_spec_array("pumps_required")


def rack_off(state: SiteTables, snap: Snapshot) -> np.ndarray:
    """Racks powered off on purpose: every GPU of the rack is ``GPU_OFF`` (bool per rack)."""
    gpus = np.bincount(state.gpu_rack, minlength=state.n_racks)
    off = np.bincount(state.gpu_rack, weights=np.asarray(snap.gpu_state) == GPU_OFF, minlength=state.n_racks)
    return (gpus > 0) & (off == gpus)


def cdu_off(state: SiteTables, snap: Snapshot) -> np.ndarray:
    """CDUs every rack of which is powered off (bool per CDU; CDUs without racks are not off)."""
    racks = np.bincount(state.rack_cdu, minlength=state.n_cdus)
    off = np.bincount(state.rack_cdu, weights=rack_off(state, snap), minlength=state.n_cdus)
    return (racks > 0) & (off == racks)
