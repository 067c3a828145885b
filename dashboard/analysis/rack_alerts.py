"""Open alerts mapped onto the racks they concern, for the floor plan's alert overlay.

A rack alert marks its rack; a GPU alert the GPU's rack; a CDU alert every rack the
CDU cools; a power alert every rack the element feeds directly (its busway racks).
Site, loop, source, switch and job alerts concern no single set of racks and are
left to the alert list.
"""

from __future__ import annotations

import numpy as np

from twin.site.tables import SiteTables

LEVEL = {"warning": 1, "critical": 2}  # info alerts are not drawn


def _racks_of(state: SiteTables, kind: str, entity: int) -> np.ndarray:
    if kind == "rack" and 0 <= entity < state.n_racks:
        return np.array([entity])
    if kind == "gpu" and 0 <= entity < state.n_gpus:
        return np.array([int(state.gpu_rack[entity])])
    if kind == "cdu" and 0 <= entity < state.n_cdus:
        return np.flatnonzero(state.rack_cdu == entity)
    if kind == "power" and 0 <= entity < state.n_power:
        return np.flatnonzero((state.rack_feed_a == entity) | (state.rack_feed_b == entity))
    return np.zeros(0, dtype=np.int64)


def rack_alert_level(state: SiteTables, alerts: list[dict]) -> np.ndarray:
    """Highest open-alert level per rack: 0 none, 1 warning, 2 critical (cleared alerts ignored)."""
    level = np.zeros(state.n_racks, dtype=np.int8)
    for alert in alerts:
        value = LEVEL.get(alert.get("severity", ""), 0)
        if not value or alert.get("cleared_at") is not None:
            continue
        try:
            entity = int(alert.get("entity_id", -1))
        except (TypeError, ValueError):
            continue
        racks = _racks_of(state, str(alert.get("entity_kind", "")), entity)
        level[racks] = np.maximum(level[racks], value)
    return level
