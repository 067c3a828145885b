"""Power-tree roll-up, element utilisation and N-1 (single-failure) analysis.

The tree is the SiteTables's power elements (switchgear → transformer → UPS → busway,
``power_parent``/``power_depth``) with racks attached to a busway on each of an A and a
B feed.  Conventions:

* ``load_kw[e]`` is the power element ``e`` delivers downstream: the sum of its
  children's input power (racks' shares for a busway); its input is
  ``load_kw[e] / efficiency_frac[e]`` ([Power-Stage-Efficiency] per stage), so a parent
  carries its children's conversion losses;
* a dual-fed rack splits its load evenly over A and B while both are live and moves it
  all to the live side otherwise; with neither live it is *dark*;
* an element is live when it has not failed, its parent is live, and (for a root
  switchgear) one of its sources is live;
* utilisation is ``load_kw / (rating_kw × max_util_frac)``.

N-1 without re-running the roll-up per failure: losing element ``e`` moves the share
that every dual-fed rack draws through ``e`` onto its other feed ``f``.  The extra load
at an ancestor ``k`` of ``f`` is that share times the conversion factor from ``f`` up to
``k``, provided ``e`` is not also an ancestor of ``f`` (then the rack goes dark and
nothing moves).  The set of (receiving ``k``, failed ``e``, rack group) triples depends
only on topology, so it is built once; each tick evaluates it with one ``np.bincount``
over the triples and one ``np.maximum.reduceat`` per receiving element.  Racks are
first aggregated by their (receiving feed, other feed) pair, so the triple count scales
with busway pairs, not racks.  ``test_powertree.py`` checks the result against a brute
force roll-up per failed element.  The result is exact when no element lies on both a
rack's A and B paths below the root (a 2N tree); in trees that share a mid-tier element
it is an upper bound, because the relief from racks a failure darkens is not
subtracted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.arrays import FloatArray, IntArray
from twin.site.tables import SOURCE_KINDS, SiteTables

SOURCE_GRID, SOURCE_GENERATOR, SOURCE_BATTERY = (SOURCE_KINDS.index(k) for k in ("grid", "generator", "battery"))


@dataclass(frozen=True)
class PowerTopology:
    """Static arrays derived from a SiteTables's power tree (built once per site)."""

    n_power: int
    n_racks: int
    parent: np.ndarray  # int32 [n_power]
    efficiency_frac: np.ndarray  # float64 [n_power]
    usable_kw: np.ndarray  # float64 [n_power], rating × max_util_frac
    levels: tuple[np.ndarray, ...]  # element ids per depth, deepest first (depth >= 1 only)
    top_down: tuple[np.ndarray, ...]  # element ids per depth, root first
    ancestors: np.ndarray  # int32 [n_power, max_depth + 1], self first, -1 padded
    root: np.ndarray  # int32 [n_power], depth-0 ancestor
    feed_a: np.ndarray  # int32 [n_racks]
    feed_b: np.ndarray  # int32 [n_racks], -1 single-fed
    source_bus: np.ndarray  # int32 [n_sources]
    bus_has_source: np.ndarray  # bool [n_power]
    # N-1 structure -------------------------------------------------------------
    group_of_rack_to_a: np.ndarray  # int32 [n_racks], group id of the (a, b) pair receiving on a, -1 if single-fed
    group_of_rack_to_b: np.ndarray  # int32 [n_racks], group id of the (b, a) pair receiving on b
    n_groups: int
    triple_group: np.ndarray  # int32 [n_triples]
    triple_pair: np.ndarray  # int32 [n_triples], (k, e) pair id
    triple_factor: np.ndarray  # float64 [n_triples], conversion factor receiving feed → k
    pair_k: np.ndarray  # int32 [n_pairs], sorted
    pair_e: np.ndarray  # int32 [n_pairs]
    k_with_pairs: np.ndarray  # int32, receiving elements that have any pair
    k_starts: np.ndarray  # int64, reduceat starts into pairs
    dark_racks_if_lost: np.ndarray  # int32 [n_power], racks that go dark when the element is lost (healthy tree)


def _ancestors(parent: np.ndarray, depth: np.ndarray) -> np.ndarray:
    n = parent.size
    width = int(depth.max()) + 1 if n else 1
    anc = np.full((n, width), -1, dtype=np.int32)
    anc[:, 0] = np.arange(n)
    for j in range(1, width):
        prev = anc[:, j - 1]
        has = prev >= 0
        anc[has, j] = parent[prev[has]]
    return anc


def _conversion_factor(anc_row: np.ndarray, eff: np.ndarray) -> np.ndarray:
    """Factor from a feed's load to the load of each of its ancestors (1 at the feed itself)."""
    valid = anc_row >= 0
    factors = np.ones(anc_row.size)
    for j in range(1, anc_row.size):
        if valid[j]:
            factors[j] = factors[j - 1] / eff[anc_row[j - 1]]
    return factors


def _feed_groups(fa: IntArray, fb: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Dual-fed racks grouped by (receiving feed, other feed): the pairs, and each rack's group when its
    load moves to A and to B (-1 single-fed)."""
    dual = fb >= 0
    pairs_ab = np.stack([np.concatenate([fa[dual], fb[dual]]), np.concatenate([fb[dual], fa[dual]])], axis=1)
    uniq, inverse = (
        np.unique(pairs_ab, axis=0, return_inverse=True)
        if pairs_ab.size
        else (np.zeros((0, 2), np.int32), np.zeros(0, np.int64))
    )
    inverse = inverse.ravel()
    n_dual = int(dual.sum())
    g_a = np.full(fa.size, -1, np.int32)
    g_b = np.full(fa.size, -1, np.int32)
    g_a[dual] = inverse[:n_dual]
    g_b[dual] = inverse[n_dual:]
    return uniq, g_a, g_b


def _n1_triples(uniq: IntArray, anc: IntArray, eff: FloatArray) -> tuple[list[int], list[int], list[int], list[float]]:
    """(group, element k, failed element e, factor) for every element ``k`` above a group's receiving feed
    that takes its load when an element ``e`` above only the other feed fails."""
    t_group: list[int] = []
    t_k: list[int] = []
    t_e: list[int] = []
    t_factor: list[float] = []
    for g, (recv, other) in enumerate(uniq):  # construction only: one pass over busway pairs
        anc_recv, anc_other = anc[recv], anc[other]
        anc_recv_set = set(int(x) for x in anc_recv if x >= 0)
        other_pos = {int(x): j for j, x in enumerate(anc_other) if x >= 0}
        factors = _conversion_factor(anc_recv, eff)
        factors_other = _conversion_factor(anc_other, eff)
        failed = [int(x) for x in anc_other if x >= 0 and int(x) not in anc_recv_set]
        for j, k in enumerate(anc_recv):
            if k < 0:
                break
            # a common ancestor of both feeds only sees the change in conversion losses
            factor = factors[j] - (factors_other[other_pos[int(k)]] if int(k) in other_pos else 0.0)
            for e in failed:
                t_group.append(g)
                t_k.append(int(k))
                t_e.append(e)
                t_factor.append(factor)
    return t_group, t_k, t_e, t_factor


def _dark_racks_if_lost(fa: np.ndarray, fb: np.ndarray, anc: np.ndarray, n: int) -> np.ndarray:
    """Racks that go dark when an element is lost: it is an ancestor of every live feed (per element)."""
    dark = np.zeros(n, dtype=np.int64)
    for r in range(fa.size):  # construction only
        common = set(int(x) for x in anc[fa[r]] if x >= 0)
        if fb[r] >= 0:
            common &= set(int(x) for x in anc[fb[r]] if x >= 0)
        for e in common:
            dark[e] += 1
    return dark


def build_topology(state: SiteTables) -> PowerTopology:
    """Precompute everything static about the power tree of ``state``."""
    parent = state.power_parent.astype(np.int32)
    depth = state.power_depth.astype(np.int64)
    eff = state.power_efficiency_frac.astype(np.float64)
    if np.any(~(eff > 0.0)) or np.any(eff > 1.0):
        raise ValueError("power_efficiency_frac: must be in (0, 1]")
    n = parent.size
    anc = _ancestors(parent, depth)
    root = anc[np.arange(n), depth] if n else np.zeros(0, np.int32)
    max_depth = int(depth.max()) if n else 0
    bus_has_source = np.zeros(n, dtype=bool)
    bus_has_source[state.source_bus] = True
    fa = state.rack_feed_a.astype(np.int32)
    fb = state.rack_feed_b.astype(np.int32)
    uniq, g_a, g_b = _feed_groups(fa, fb)
    t_group, t_k, t_e, t_factor = _n1_triples(uniq, anc, eff)
    keys = np.asarray(t_k, dtype=np.int64) * max(n, 1) + np.asarray(t_e, dtype=np.int64)
    uniq_keys, pair_of_triple = np.unique(keys, return_inverse=True)
    pair_k = (uniq_keys // max(n, 1)).astype(np.int32)
    pair_e = (uniq_keys % max(n, 1)).astype(np.int32)
    k_with_pairs, k_starts = np.unique(pair_k, return_index=True)
    return PowerTopology(
        n_power=n,
        n_racks=int(fa.size),
        parent=parent,
        efficiency_frac=eff,
        usable_kw=state.power_rating_kw * state.power_max_util_frac,
        levels=tuple(np.flatnonzero(depth == d).astype(np.int32) for d in range(max_depth, 0, -1)),
        top_down=tuple(np.flatnonzero(depth == d).astype(np.int32) for d in range(0, max_depth + 1)),
        ancestors=anc,
        root=root.astype(np.int32),
        feed_a=fa,
        feed_b=fb,
        source_bus=state.source_bus.astype(np.int32),
        bus_has_source=bus_has_source,
        group_of_rack_to_a=g_a,
        group_of_rack_to_b=g_b,
        n_groups=int(len(uniq)),
        triple_group=np.asarray(t_group, dtype=np.int32),
        triple_pair=pair_of_triple.ravel().astype(np.int32),
        triple_factor=np.asarray(t_factor, dtype=np.float64),
        pair_k=pair_k,
        pair_e=pair_e,
        k_with_pairs=k_with_pairs.astype(np.int32),
        k_starts=k_starts.astype(np.int64),
        dark_racks_if_lost=_dark_racks_if_lost(fa, fb, anc, n).astype(np.int32),
    )


def element_live(topo: PowerTopology, failed: np.ndarray, source_live: np.ndarray) -> np.ndarray:
    """Live flag per element given failed element ids and per-source live flags.

    A root is live if it has not failed and at least one of its sources is live (a root
    with no source listed at all is taken as fed from outside the model).
    """
    live = np.ones(topo.n_power, dtype=bool)
    failed = np.asarray(failed, dtype=np.int64)
    if failed.size:
        live[failed] = False
    energised = np.bincount(topo.source_bus[np.asarray(source_live, dtype=bool)], minlength=topo.n_power) > 0
    roots = topo.top_down[0]
    live[roots] &= energised[roots] | ~topo.bus_has_source[roots]
    for level in topo.top_down[1:]:
        live[level] &= live[topo.parent[level]]
    return live


def rack_feed_shares(topo: PowerTopology, live: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fraction of each rack's load on its A and B feed, and the dark-rack mask."""
    a_live = live[topo.feed_a]
    b_live = np.where(topo.feed_b >= 0, live[np.maximum(topo.feed_b, 0)], False)
    share_a = np.where(a_live, np.where(b_live, 0.5, 1.0), 0.0)
    share_b = np.where(b_live, np.where(a_live, 0.5, 1.0), 0.0)
    return share_a, share_b, ~(a_live | b_live)


def rollup(
    topo: PowerTopology, rack_power_kw: np.ndarray, share_a: np.ndarray, share_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Load and input power of every element [kW] (loop over depth levels, bincount within).

    Returns ``(load_kw, input_kw)``; ``input_kw = load_kw / efficiency``.
    """
    n = topo.n_power
    load = np.bincount(topo.feed_a, weights=rack_power_kw * share_a, minlength=n)
    single = topo.feed_b < 0
    if np.any(~single):
        load += np.bincount(
            np.maximum(topo.feed_b, 0), weights=np.where(single, 0.0, rack_power_kw * share_b), minlength=n
        )
    for level in topo.levels:
        load += np.bincount(topo.parent[level], weights=load[level] / topo.efficiency_frac[level], minlength=n)
    return load, load / topo.efficiency_frac


def n1_worst_load_kw(
    topo: PowerTopology,
    load_kw: np.ndarray,
    rack_power_kw: np.ndarray,
    share_a: np.ndarray,
    share_b: np.ndarray,
    live: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Worst load of every element over the loss of any one other element [kW], and that element.

    ``worst_kw[k] = load_kw[k] + max_e Δ(k, e)``; ``worst_by[k]`` is the element whose loss
    gives it (-1 when no single loss raises the load).  Dead elements keep their load (0).
    """
    # Load that moves onto the A feed if B is lost (rack's current B share), per group.
    recv_a_live = live[topo.feed_a]
    moved_to_a = np.where(recv_a_live, rack_power_kw * share_b, 0.0)
    fb_safe = np.maximum(topo.feed_b, 0)
    recv_b_live = np.where(topo.feed_b >= 0, live[fb_safe], False)
    moved_to_b = np.where(recv_b_live, rack_power_kw * share_a, 0.0)
    dual = topo.feed_b >= 0
    group_kw = np.bincount(topo.group_of_rack_to_a[dual], weights=moved_to_a[dual], minlength=topo.n_groups)
    group_kw += np.bincount(topo.group_of_rack_to_b[dual], weights=moved_to_b[dual], minlength=topo.n_groups)
    worst = load_kw.copy()
    worst_by = np.full(topo.n_power, -1, dtype=np.int32)
    if topo.triple_group.size == 0:
        return worst, worst_by
    delta = np.bincount(
        topo.triple_pair, weights=group_kw[topo.triple_group] * topo.triple_factor, minlength=topo.pair_k.size
    )
    best = np.maximum.reduceat(delta, topo.k_starts)
    # element achieving the max: first pair per k whose delta equals the max
    is_best = delta == np.repeat(best, np.diff(np.append(topo.k_starts, delta.size)))
    first = np.minimum.reduceat(np.where(is_best, np.arange(delta.size), delta.size), topo.k_starts)
    raise_k = best > 0.0
    ks = topo.k_with_pairs
    worst[ks] += np.where(raise_k, best, 0.0)
    worst_by[ks[raise_k]] = topo.pair_e[first[raise_k]]
    return worst, worst_by


def load_frac(load_kw: np.ndarray, usable_kw: np.ndarray) -> np.ndarray:
    """Load as a fraction of usable rating (``rating × max_util_frac``); NaN for zero rating."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(usable_kw > 0, load_kw / usable_kw, np.nan)
