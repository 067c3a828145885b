"""Fabric bandwidth a job's collectives get: nccl-tests bus bandwidth, tier capacity, failures.

Bus bandwidth (nccl-tests ``doc/PERFORMANCE.md``, github.com/NVIDIA/nccl-tests [NCCL-Tests-Perf]):
a collective moving ``S`` bytes over ``n`` ranks takes ``t = (S/B)·factor(n)`` at per-rank
bus bandwidth ``B``, with ``factor = 2(n−1)/n`` for all-reduce and ``(n−1)/n`` for
reduce-scatter, all-gather and all-to-all.

Placement model (ring bound, documented assumption [E]): NCCL orders each ring by
topology, so a collective group whose members sit in several switch domains (leaves,
pods) leaves each domain with one ring flow per direction at the full per-GPU rate.  The
out-flows of all groups present in a domain share its surviving uplinks; a domain whose
demand exceeds its uplink capacity slows every ring through it by ``capacity/demand``
and the worst domain bounds the collective.  For ``k`` members of each group per
domain of ``G`` GPUs at ``oversub``:1 this gives ``min(1, k/oversub)``.

Switches and links are the arrays of :class:`twin.site.tables.SiteTables`; health is given as
boolean masks (``link_up_flag[n_links]``, ``switch_up[n_switches]``).  Everything is
vectorised with ``np.bincount`` over links, switches and GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

import numpy as np

from twin.site.tables import TIER_LEAF, TIER_SPINE, SiteTables

BUSBW_FACTORS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce")


class FabricError(ValueError):
    """Bad collective or placement description."""


@overload
def busbw_factor(op: str, n: int) -> float: ...
@overload
def busbw_factor(op: str, n: np.ndarray) -> float | np.ndarray: ...
def busbw_factor(op: str, n: int | np.ndarray) -> float | np.ndarray:
    """nccl-tests busbw/algbw factor of collective ``op`` over ``n`` ranks."""
    n_arr = np.asarray(n, dtype=np.float64)
    if np.any(n_arr < 1):
        raise FabricError(f"collective needs at least one rank, got {n}")
    if op == "all_reduce":
        out = 2.0 * (n_arr - 1.0) / n_arr
    elif op in ("reduce_scatter", "all_gather", "all_to_all"):
        out = (n_arr - 1.0) / n_arr
    elif op in ("broadcast", "reduce"):
        out = np.ones_like(n_arr)
    else:
        raise FabricError(f"unknown collective {op!r}; expected one of {BUSBW_FACTORS}")
    return float(out) if np.ndim(out) == 0 else out


def collective_time_s(op: str, size_bytes: float, n: int, busbw_bytes_per_s: float) -> float:
    """Time of a collective of ``size_bytes`` (nccl-tests ``S``) at per-rank bus bandwidth [B/s].

    ``t = S · factor(n) / busbw``; zero for a single rank; infinite at zero bandwidth.
    """
    factor = busbw_factor(op, n)
    if factor == 0.0:
        return 0.0
    if busbw_bytes_per_s <= 0.0:
        return float("inf")
    return size_bytes * factor / busbw_bytes_per_s


# --- tier capacity --------------------------------------------------------------------
def link_alive(
    state: SiteTables, link_up_flag: np.ndarray | None = None, switch_up: np.ndarray | None = None
) -> np.ndarray:
    """Links that carry traffic: up, with both end switches up."""
    alive = np.ones(state.n_links, bool) if link_up_flag is None else np.asarray(link_up_flag, bool).copy()
    if alive.shape != (state.n_links,):
        raise FabricError(f"link_up_flag has shape {alive.shape}, expected ({state.n_links},)")
    if switch_up is not None:
        sw = np.asarray(switch_up, bool)
        if sw.shape != (state.n_switches,):
            raise FabricError(f"switch_up has shape {sw.shape}, expected ({state.n_switches},)")
        alive &= sw[state.link_a] & sw[state.link_b]
    return alive


def switch_uplink_gbps(state: SiteTables, alive: np.ndarray | None = None) -> np.ndarray:
    """Uplink capacity per switch [Gbit/s] over the given surviving links (all if None)."""
    weights = state.link_gbps if alive is None else state.link_gbps * alive
    return np.bincount(state.link_a, weights=weights, minlength=state.n_switches)


def tier_capacity_gbps(state: SiteTables, alive: np.ndarray | None = None) -> dict[str, float]:
    """Total capacity of each tier boundary: injection (NICs), leaf→spine, spine→core."""
    up = switch_uplink_gbps(state, alive)
    return {
        "injection": float(state.n_gpus * state.nic_gbps),
        "leaf_spine": float(up[state.switch_tier == TIER_LEAF].sum()),
        "spine_core": float(up[state.switch_tier == TIER_SPINE].sum()),
    }


def pod_uplink_gbps(state: SiteTables, alive: np.ndarray | None = None) -> np.ndarray:
    """Capacity leaving each pod towards the core [Gbit/s] (sum of its spines' uplinks)."""
    up = switch_uplink_gbps(state, alive)
    spines = state.switch_tier == TIER_SPINE
    n_pods = int(state.switch_pod.max()) + 1 if state.n_switches else 0
    return np.bincount(state.switch_pod[spines], weights=up[spines], minlength=n_pods)


def uplink_util_frac(
    state: SiteTables,
    leaf_active_gpus: np.ndarray,
    uplink_gbps: np.ndarray,
    offered_frac: float,
    cross_pod_frac: float,
) -> np.ndarray:
    """Estimated utilisation of each switch's uplinks (switch level, 0–1) [E].

    Active GPUs offer ``nic_gbps × offered_frac`` (the communication share of a step)
    averaged over a step; a leaf spreads its GPUs' traffic over its uplinks; a pod's leaf
    traffic spreads evenly over its spines, which forward ``cross_pod_frac`` of it over
    their uplinks.  ``leaf_active_gpus`` counts active GPUs per switch (by ``gpu_leaf``),
    ``uplink_gbps`` is the surviving uplink capacity per switch
    (:func:`switch_uplink_gbps`); a switch without uplinks reads 0.
    """
    leaves = np.flatnonzero(state.switch_tier == TIER_LEAF)
    spines = np.flatnonzero(state.switch_tier == TIER_SPINE)
    n_pods = int(state.switch_pod.max()) + 1 if state.n_switches else 0
    leaf_pod, spine_pod = np.maximum(state.switch_pod[leaves], 0), np.maximum(state.switch_pod[spines], 0)
    spines_per_pod = np.maximum(np.bincount(spine_pod, minlength=n_pods), 1)
    carried = np.asarray(leaf_active_gpus, dtype=np.float64) * (state.nic_gbps * offered_frac)
    pod_up = np.bincount(leaf_pod, weights=carried[leaves], minlength=n_pods)
    carried[spines] = pod_up[spine_pod] / spines_per_pod[spine_pod] * cross_pod_frac
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.minimum(np.where(uplink_gbps > 0, carried / uplink_gbps, 0.0), 1.0)


# --- ring demand against capacity ---------------------------------------------------------
def _distinct(keys: np.ndarray) -> np.ndarray:
    """The distinct values of int64 ``keys``, ascending (``np.unique``'s answer): sorted as int32
    when they fit, which here is several times faster than ``np.unique`` (it hashes)."""
    if keys.size and int(keys.max()) <= np.iinfo(np.int32).max and int(keys.min()) >= np.iinfo(np.int32).min:
        keys = keys.astype(np.int32)
    keys = np.sort(keys)
    first = np.empty(keys.size, bool)
    first[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    return keys[first].astype(np.int64)


def spanning_groups_per_domain(group: np.ndarray, domain: np.ndarray, n_domains: int) -> np.ndarray:
    """Number of groups present in each domain that also have members elsewhere.

    ``group[i]`` and ``domain[i]`` are the collective group and switch domain of member ``i``.
    Each such group sends one ring flow out of (and into) the domain.
    """
    group = np.asarray(group, dtype=np.int64)
    domain = np.asarray(domain, dtype=np.int64)
    if group.shape != domain.shape:
        raise FabricError("group and domain arrays must have the same shape")
    if group.size == 0:
        return np.zeros(n_domains, np.int64)
    pairs = _distinct(group * n_domains + domain)
    pair_group = pairs // n_domains
    pair_domain = pairs - pair_group * n_domains
    domains_per_group = np.bincount(pair_group)
    spanning = domains_per_group[pair_group] > 1
    return np.bincount(pair_domain[spanning], minlength=n_domains)


def domain_factor(demand_flows: np.ndarray, capacity_gbps: np.ndarray, flow_gbps: float) -> np.ndarray:
    """Per-domain ring-rate factor ``min(1, capacity / (flows·flow_gbps))`` (1 with no demand)."""
    demand = np.asarray(demand_flows, dtype=np.float64) * flow_gbps
    out = np.ones_like(demand)
    np.divide(capacity_gbps, demand, out=out, where=demand > 0)
    return np.minimum(out, 1.0)


@dataclass
class JobFabricReport:
    """Bus-bandwidth fraction a collective group set gets on a site, and why."""

    factor_frac: float  # fraction of the NIC rate the ring collective sustains
    busbw_gbps: float  # per-GPU bus bandwidth: NIC rate × collective efficiency × factor
    limiting_tier: str  # "none", "leaf", "pod" or "disconnected"
    worst_leaf: int  # switch id, -1 if none limits
    worst_pod: int  # pod id, -1 if none limits
    leaf_factor_frac: float
    pod_factor_frac: float
    disconnected_gpus: np.ndarray  # int32 job GPUs whose leaf is down


def job_fabric_report(
    state: SiteTables,
    job_gpu_ids: np.ndarray,
    group: np.ndarray,
    link_up_flag: np.ndarray | None = None,
    switch_up: np.ndarray | None = None,
    collective_efficiency_frac: float = 0.80,
) -> JobFabricReport:
    """Fabric factor of one set of collective groups placed on a site.

    ``group[i]`` is the collective group (e.g. DP group id) of the job's ``i``-th GPU
    ``job_gpu_ids[i]``.  Leaf domains are leaf switches (their uplinks carry the flows of
    groups spanning several leaves); pod domains are pods (their spines' core uplinks carry
    the flows of groups spanning several pods).  A job GPU whose leaf is down is
    disconnected and gives factor 0.  ``collective_efficiency_frac`` is the nccl-tests
    busbw over line rate ([E] 0.80, as ``twin.training.steptime.COLLECTIVE_EFFICIENCY_FRAC``).
    """
    ids = np.asarray(job_gpu_ids, dtype=np.int64)
    alive = link_alive(state, link_up_flag, switch_up)
    leaf = state.gpu_leaf[ids].astype(np.int64)
    sw_up = np.ones(state.n_switches, bool) if switch_up is None else np.asarray(switch_up, bool)
    disconnected = ids[~sw_up[leaf]].astype(np.int32)
    if disconnected.size:
        return JobFabricReport(0.0, 0.0, "disconnected", int(leaf[~sw_up[leaf]][0]), -1, 0.0, 0.0, disconnected)

    uplinks = switch_uplink_gbps(state, alive)
    leaf_flows = spanning_groups_per_domain(group, leaf, state.n_switches)
    leaf_f = domain_factor(leaf_flows, uplinks, state.nic_gbps)
    pod = state.switch_pod[leaf].astype(np.int64)
    pod_cap = pod_uplink_gbps(state, alive)
    pod_flows = spanning_groups_per_domain(group, pod, pod_cap.size)
    pod_f = domain_factor(pod_flows, pod_cap, state.nic_gbps)

    worst_leaf = int(np.argmin(leaf_f))
    worst_pod = int(np.argmin(pod_f)) if pod_f.size else -1
    lf, pf = float(leaf_f[worst_leaf]), float(pod_f[worst_pod]) if pod_f.size else 1.0
    factor = min(lf, pf)
    if factor >= 1.0:
        tier = "none"
    else:
        tier = "leaf" if lf <= pf else "pod"
    return JobFabricReport(
        factor_frac=factor,
        busbw_gbps=state.nic_gbps * collective_efficiency_frac * factor,
        limiting_tier=tier,
        worst_leaf=worst_leaf if lf < 1.0 else -1,
        worst_pod=worst_pod if pf < 1.0 else -1,
        leaf_factor_frac=lf,
        pod_factor_frac=pf,
        disconnected_gpus=disconnected,
    )


def analytic_factor(group_stride_gpus: int, group_size: int, domain_gpus: int, oversubscription: float) -> float:
    """Ring factor for a regular layout without a site: ``min(1, k/oversub)`` if the group spans domains.

    Members of a group sit ``group_stride_gpus`` ranks apart; ``k`` of them fall in each
    ``domain_gpus`` domain (full bisection inside, ``oversubscription``:1 above).
    """
    if group_size <= 1 or oversubscription <= 1.0:
        return 1.0
    span = group_stride_gpus * group_size
    if span <= domain_gpus:
        return 1.0
    k = max(1, min(group_size, domain_gpus // max(group_stride_gpus, 1)))
    return min(1.0, k / oversubscription)
