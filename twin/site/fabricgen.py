"""Generate a rail-optimised three-tier Clos fabric from a few parameters.

Layout (what NVIDIA calls rail-optimised; the xAI topology itself is unpublished,
[Colossus-Unpublished]): GPU *k* of every node is on rail *k*.  An *array* of racks has one
leaf per rail; the leaf's downlinks are the NICs of that rail in the array.  A *pod*
of ``pod_arrays`` arrays has ``leaf_uplinks / leaf_spine_parallel`` spines, each
leaf connecting ``leaf_spine_parallel`` links to every spine of its pod.  Spine *j*
of every pod (plane *j*) connects its uplinks round-robin to the cores of group *j*.
With radix 128 at 1:1 this is the folded Clos of [Est-Clos-Sizing] (k³/4 host limit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.site import limits
from twin.site.tables import TIER_CORE, TIER_LEAF, TIER_SPINE


class FabricDesignError(ValueError):
    """The fabric parameters do not fit the switch radix."""


@dataclass
class Fabric:
    """Switches and switch-to-switch links of a generated fabric."""

    switch_name: list[str]
    switch_tier: np.ndarray
    switch_pod: np.ndarray
    switch_plane: np.ndarray
    switch_ports: np.ndarray
    link_a: np.ndarray
    link_b: np.ndarray
    link_gbps: np.ndarray
    gpu_leaf: np.ndarray
    pod_gpus: int
    leaf_down_ports: int = 0  # NIC ports of one leaf switch


def generate_fabric(
    gpu_array: np.ndarray,
    gpu_rail: np.ndarray,
    *,
    radix: int,
    rails: int,
    pod_arrays: int,
    link_gbps: float,
    leaf_oversubscription: float,
    spine_oversubscription: float,
    leaf_spine_parallel: int,
    allow_leaf_overflow: bool = False,
) -> Fabric:
    """Build the fabric for GPUs placed in arrays (``gpu_array``) on rails (``gpu_rail``).

    Raises :class:`FabricDesignError` naming the parameter when ports do not suffice or the
    fabric would exceed the switch and link limits of :mod:`twin.site.limits`.  With
    ``allow_leaf_overflow`` (a what-if that reports the overflow as a design finding) a leaf
    may take more NICs than it has ports; the rest of the design is sized by the ports.
    """
    n_arrays = int(gpu_array.max()) + 1
    n_pods = math.ceil(n_arrays / pod_arrays)
    leaf_of_gpu = gpu_array.astype(np.int64) * rails + gpu_rail
    leaf_down = int(np.bincount(leaf_of_gpu, minlength=n_arrays * rails).max())
    down_ports_leaf = math.floor(radix * leaf_oversubscription / (1 + leaf_oversubscription))
    if leaf_down > down_ports_leaf and allow_leaf_overflow:
        leaf_down = down_ports_leaf
    if leaf_down > down_ports_leaf:
        raise FabricDesignError(
            f"racks_per_array: a leaf needs {leaf_down} NIC ports but has {down_ports_leaf} "
            f"downlinks at radix {radix} and {leaf_oversubscription}:1"
        )
    leaf_up = math.ceil(down_ports_leaf / leaf_oversubscription)
    if leaf_up % leaf_spine_parallel:
        raise FabricDesignError(
            f"leaf_spine_parallel: {leaf_up} leaf uplinks are not divisible by {leaf_spine_parallel}"
        )
    spines_per_pod = leaf_up // leaf_spine_parallel
    leaves_per_pod = pod_arrays * rails
    spine_down = leaves_per_pod * leaf_spine_parallel
    down_ports_spine = math.floor(radix * spine_oversubscription / (1 + spine_oversubscription))
    if spine_down > down_ports_spine:
        raise FabricDesignError(
            f"pod_arrays: a spine needs {spine_down} downlinks but has {down_ports_spine} "
            f"at radix {radix} and {spine_oversubscription}:1"
        )
    spine_up = math.ceil(spine_down / spine_oversubscription)
    cores_per_plane = math.ceil(n_pods * spine_up / radix)

    n_leaves = n_arrays * rails
    n_spines = n_pods * spines_per_pod
    n_cores = spines_per_pod * cores_per_plane
    n_switches = n_leaves + n_spines + n_cores
    n_links = n_leaves * spines_per_pod * leaf_spine_parallel + n_spines * spine_up
    if n_switches > limits.MAX_SWITCHES:
        raise FabricDesignError(
            f"switches: the design needs {n_switches:,} switches, more than the limit of "
            f"{limits.MAX_SWITCHES:,} (fewer, fuller arrays: racks_per_array, pod_arrays)"
        )
    if n_links > limits.MAX_SWITCH_LINKS:
        raise FabricDesignError(
            f"links: the design needs {n_links:,} switch-to-switch links, more than the "
            f"limit of {limits.MAX_SWITCH_LINKS:,}"
        )
    leaf_ids = np.arange(n_leaves)
    leaf_array = leaf_ids // rails
    leaf_pod = leaf_array // pod_arrays
    spine_pod = np.repeat(np.arange(n_pods), spines_per_pod)
    spine_plane = np.tile(np.arange(spines_per_pod), n_pods)
    core_plane = np.repeat(np.arange(spines_per_pod), cores_per_plane)
    core_index = np.tile(np.arange(cores_per_plane), spines_per_pod)

    names = [f"leaf-p{p:02d}-a{a:03d}-r{r}" for p, a, r in zip(leaf_pod, leaf_array, leaf_ids % rails)]
    names += [f"spine-p{p:02d}-s{j:02d}" for p, j in zip(spine_pod, spine_plane)]
    names += [f"core-g{j:02d}-c{c:02d}" for j, c in zip(core_plane, core_index)]

    # leaf → every spine of its pod, leaf_spine_parallel times
    la = np.repeat(leaf_ids, spines_per_pod * leaf_spine_parallel)
    plane = np.tile(np.repeat(np.arange(spines_per_pod), leaf_spine_parallel), n_leaves)
    lb = n_leaves + leaf_pod[la] * spines_per_pod + plane
    # spine uplinks → cores of its plane, round-robin across pods
    spine_ids = np.arange(n_spines)
    sa = np.repeat(spine_ids, spine_up)
    uplink = np.tile(np.arange(spine_up), n_spines)
    core_slot = (spine_pod[sa] * spine_up + uplink) % cores_per_plane
    sb = n_leaves + n_spines + spine_plane[sa] * cores_per_plane + core_slot

    link_a = np.concatenate([la, n_leaves + sa]).astype(np.int32)
    link_b = np.concatenate([lb, sb]).astype(np.int32)
    return Fabric(
        switch_name=names,
        switch_tier=np.concatenate(
            [np.full(n_leaves, TIER_LEAF), np.full(n_spines, TIER_SPINE), np.full(n_cores, TIER_CORE)]
        ).astype(np.int8),
        switch_pod=np.concatenate([leaf_pod, spine_pod, np.full(n_cores, -1)]).astype(np.int32),
        switch_plane=np.concatenate([np.full(n_leaves, -1), spine_plane, core_plane]).astype(np.int32),
        switch_ports=np.full(n_leaves + n_spines + n_cores, radix, dtype=np.int32),
        link_a=link_a,
        link_b=link_b,
        link_gbps=np.full(link_a.size, float(link_gbps)),
        gpu_leaf=leaf_of_gpu.astype(np.int32),
        pod_gpus=int(pod_arrays * rails * leaf_down),
        leaf_down_ports=down_ports_leaf,
    )
