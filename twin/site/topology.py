"""Which racks depend on an element: power tree, cooling topology and fabric, by element name.

Pure functions of :class:`twin.site.tables.SiteTables`.  An element is named as the site
names it: a power element, a source, a facility loop, a plant, a CDU, a switch, a node or
a rack.  :func:`racks_exposed` gives the racks that lose something when the element trips
(one feed, their cooling, their NICs' leaf); :func:`racks_dark` the racks that lose all
their power at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.site.tables import POWER_KINDS, TIER_LEAF, SiteTables

KINDS = ("power", "source", "plant", "loop", "cdu", "switch", "node", "rack")


@dataclass(frozen=True)
class ElementRef:
    """An element of a site: its kind (:data:`KINDS`), dense id, and display kind."""

    kind: str
    id: int
    label: str  # e.g. "transformer", "generator", "leaf switch"


def find_element(state: SiteTables, name: str) -> ElementRef | None:
    """The element called ``name``, or None."""
    for kind, names in (
        ("power", state.power_name),
        ("source", state.source_name),
        ("plant", state.plant_name),
        ("loop", state.loop_name),
        ("cdu", state.cdu_name),
        ("switch", state.switch_name),
        ("rack", state.rack_name),
    ):
        index = _index(state, kind, names)
        if name in index:
            i = index[name]
            return ElementRef(kind, i, _label(state, kind, i))
    index = _index(state, "node", state.node_name)
    if name in index:
        return ElementRef("node", index[name], "node")
    return None


def _index(state: SiteTables, kind: str, names: list[str]) -> dict[str, int]:
    cache: dict[str, dict[str, int]] = state.__dict__.setdefault("_name_index", {})
    if kind not in cache:
        cache[kind] = {n: i for i, n in enumerate(names)}
    return cache[kind]


def _label(state: SiteTables, kind: str, i: int) -> str:
    if kind == "power":
        return POWER_KINDS[state.power_kind[i]]
    if kind == "source":
        return ("grid", "generator", "battery")[state.source_kind[i]]
    if kind == "switch":
        return ("leaf", "spine", "core")[state.switch_tier[i]] + " switch"
    return kind


def power_subtree(state: SiteTables, element: int) -> np.ndarray:
    """Bool per power element: ``element`` and everything downstream of it."""
    mask = np.zeros(state.n_power, dtype=bool)
    mask[element] = True
    for d in range(int(state.power_depth[element]) + 1, int(state.power_depth.max()) + 1):
        kids = np.flatnonzero(state.power_depth == d)
        mask[kids] |= mask[state.power_parent[kids]]
    return mask


def _fed(state: SiteTables, lost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(racks with a feed in ``lost``, racks with every feed in ``lost``)."""
    a = lost[state.rack_feed_a]
    dual = state.rack_feed_b >= 0
    b = np.where(dual, lost[np.maximum(state.rack_feed_b, 0)], False)
    return a | b, a & (b | ~dual)


def racks_exposed(state: SiteTables, ref: ElementRef) -> np.ndarray:
    """Rack ids that lose a feed, their cooling or their leaf when ``ref`` trips."""
    return np.flatnonzero(_masks(state, ref)[0])


def racks_dark(state: SiteTables, ref: ElementRef) -> np.ndarray:
    """Rack ids that lose all their power when ``ref`` trips (by the tree alone, sources aside)."""
    return np.flatnonzero(_masks(state, ref)[1])


def _masks(state: SiteTables, ref: ElementRef) -> tuple[np.ndarray, np.ndarray]:
    n = state.n_racks
    none = np.zeros(n, dtype=bool)
    if ref.kind == "power":
        return _fed(state, power_subtree(state, ref.id))
    if ref.kind == "source":
        lost = np.zeros(state.n_power, dtype=bool)
        lost |= power_subtree(state, int(state.source_bus[ref.id]))
        return _fed(state, lost)[0], none  # the bus stays up on the other sources
    if ref.kind == "cdu":
        return state.rack_cdu == ref.id, none
    if ref.kind == "loop":
        return state.cdu_loop[state.rack_cdu] == ref.id, none
    if ref.kind == "plant":
        return state.loop_plant[state.cdu_loop[state.rack_cdu]] == ref.id, none
    if ref.kind == "switch":
        if state.switch_tier[ref.id] != TIER_LEAF:
            return none, none  # spines and cores have parallel peers: capacity, not reach, is lost
        mask = np.zeros(n, dtype=bool)
        mask[np.unique(state.gpu_rack[state.gpu_leaf == ref.id])] = True
        return mask, none
    if ref.kind == "node":
        mask = np.zeros(n, dtype=bool)
        mask[state.node_rack[ref.id]] = True
        return mask, none
    mask = np.zeros(n, dtype=bool)
    mask[ref.id] = True
    return mask, mask
