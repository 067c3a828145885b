"""Per-job physics of the fleet: speed, tokens and power of a placed job at a GPU power cap.

* A job with a training job file: the step time of :func:`twin.training.steptime.step_time`
  with the fabric factors its placement gets (:func:`twin.physics.fabric.job_fabric_report`
  on the site's switches) and the cap as the GPUs' power limit (the clock follows the twin's
  DVFS law, compute slows, HBM does not).  Its speed is the ideal step time (full power,
  full fabric) over this one.
* A job described only by a kind: its GPUs draw ``P_idle + u (P_TDP − P_idle)``
  (:func:`twin.physics.power.gpu_demand_power_w`) held at the cap; the cap lowers the clock by
  :func:`twin.physics.thermal.clock_at_power_frac` and the job's speed with it (compute-bound,
  [E] as the throttle model takes throughput ∝ clock).
* Node power: the job's GPUs plus its share of the node's base power at its utilisation,
  through the PSU curve (:func:`twin.physics.power.node_dc_power_w`, :func:`node_input_power_w`).

Results of the step-time model are cached per (job, cap in whole watts, fabric factors):
a pretraining job is re-evaluated only when its placement or its cap changes.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from twin.physics import fabric, power, thermal
from twin.site.tables import SiteTables
from twin.training import steptime
from twin.training.jobfile import TrainingJob
from twin.training.ranks import rank_groups


class JobRate(NamedTuple):
    """How a running job performs at its placement and cap (a named tuple: one is made per refresh)."""

    speed_frac: float  # progress per wall second, 1 = full speed on an ideal placement
    tokens_per_s: float  # 0 for a job without a training description
    gpu_power_w: float  # mean board power per GPU
    node_power_w: float  # the job's node input power (its GPUs and its share of the nodes) [W]
    fabric_factor_dp_frac: float = 1.0
    clock_frac: float = 1.0


@dataclass(frozen=True)
class NodeModel:
    """Power figures of one node type (the first node of each GPU type on the site)."""

    gpus: int
    gpu_idle_w: float
    gpu_tdp_w: float
    gpu_min_w: float
    base_idle_w: float
    base_full_w: float
    psus: int
    psu_rating_w: float
    psu_points_frac: np.ndarray | None

    @functools.cached_property
    def key(self) -> tuple[object, ...]:
        """The model's figures as a hashable value: equal models share cache entries, and a model made
        later at the address of a freed one does not inherit its entries."""
        points = None if self.psu_points_frac is None else np.asarray(self.psu_points_frac).tobytes()
        return (
            self.gpus,
            self.gpu_idle_w,
            self.gpu_tdp_w,
            self.gpu_min_w,
            self.base_idle_w,
            self.base_full_w,
            self.psus,
            self.psu_rating_w,
            points,
        )


def node_models(state: SiteTables, node_gpu_type: np.ndarray, node_gpus: np.ndarray) -> list[NodeModel]:
    """One :class:`NodeModel` per GPU type of ``state`` (index = ``gpu_spec``)."""
    out = []
    for t, spec in enumerate(state.gpu_specs):
        sel = np.flatnonzero(node_gpu_type == t)
        n = int(sel[0]) if sel.size else 0
        out.append(
            NodeModel(
                gpus=int(node_gpus[n]) if sel.size else 8,
                gpu_idle_w=spec.idle_power_w,
                gpu_tdp_w=spec.tdp_w,
                gpu_min_w=spec.min_power_limit_w,
                base_idle_w=float(state.node_idle_base_power_w[n]) if state.n_nodes else 0.0,
                base_full_w=float(state.node_base_power_w[n]) if state.n_nodes else 0.0,
                psus=int(state.node_psus[n]) if state.n_nodes else 1,
                psu_rating_w=float(state.node_psu_rating_w[n]) if state.n_nodes else 1.0,
                psu_points_frac=state.psu_efficiency_points_frac,
            )
        )
    return out


def node_share_power_w(
    model: NodeModel, gpu_power_w: np.ndarray | float, util_frac: np.ndarray | float, n_gpus: np.ndarray | float
) -> np.ndarray:
    """Input power of ``n_gpus`` GPUs at ``gpu_power_w`` and their share of a node at ``util_frac`` [W].

    Vectorised over jobs; the PSU efficiency is that of a whole node loaded the same way.
    """
    g = np.asarray(gpu_power_w, dtype=np.float64)
    dc = power.node_dc_power_w(g * model.gpus, np.asarray(util_frac), model.base_full_w, model.base_idle_w)
    node_in, _ = power.node_input_power_w(
        dc, np.full(np.shape(dc), model.psus), model.psu_rating_w, model.psu_points_frac
    )
    return node_in * np.asarray(n_gpus, dtype=np.float64) / model.gpus


def idle_node_power_w(model: NodeModel) -> float:
    """Input power of a powered, idle node [W]."""
    return float(node_share_power_w(model, model.gpu_idle_w, 0.0, model.gpus))


_KIND_CACHE: dict[tuple[object, ...], tuple[float, float, float]] = {}


def kind_rate(model: NodeModel, util_frac: float, cap_w: float, n_gpus: int) -> JobRate:
    """Speed and power of a job described by its kind (utilisation) at GPU cap ``cap_w``.

    Cached per (node model, utilisation, cap in whole watts): the fleet asks the same few
    questions for thousands of jobs.
    """
    limit = min(cap_w, model.gpu_tdp_w)
    key = (model.key, round(util_frac, 4), round(limit))
    hit = _KIND_CACHE.get(key)
    if hit is None:
        demand = float(power.gpu_demand_power_w(util_frac, model.gpu_idle_w, model.gpu_tdp_w))
        clock = 1.0 if limit >= demand else float(thermal.clock_at_power_frac(limit, demand, model.gpu_idle_w))
        gpu_w = min(demand, limit)
        hit = (clock, gpu_w, float(node_share_power_w(model, gpu_w, util_frac, 1)))
        if len(_KIND_CACHE) > 100_000:
            _KIND_CACHE.clear()
        _KIND_CACHE[key] = hit
    clock, gpu_w, per_gpu_w = hit
    return JobRate(clock, 0.0, gpu_w, per_gpu_w * n_gpus, 1.0, clock)


_IDLE_CACHE: dict[tuple[object, ...], float] = {}


def idle_share_power_w(model: NodeModel, n_gpus: int) -> float:
    """Input power of ``n_gpus`` idle GPUs and their share of an idle node [W] (cached per node model)."""
    per_gpu_w = _IDLE_CACHE.get(model.key)
    if per_gpu_w is None:
        per_gpu_w = _IDLE_CACHE[model.key] = kind_rate(model, 0.0, model.gpu_idle_w, 1).node_power_w
    return per_gpu_w * n_gpus


_GROUPS: dict[object, dict[str, np.ndarray]] = {}


def _rank_groups(par: steptime.ParallelSpec) -> dict[str, np.ndarray]:
    """:func:`rank_groups` of ``par``, kept (a pretraining job asks again after every spare swap)."""
    groups = _GROUPS.get(par)
    if groups is None:
        if len(_GROUPS) > 64:
            _GROUPS.clear()
        groups = _GROUPS[par] = rank_groups(par)
        for a in groups.values():
            a.flags.writeable = False
    return groups


def placement_factors(state: SiteTables, job: TrainingJob, gpu_ids: np.ndarray) -> steptime.FabricFactors:
    """Fabric factors per parallel dimension of a job file placed on ``gpu_ids`` (healthy fabric).

    The factor of each dimension is :func:`twin.physics.fabric.job_fabric_report`'s on a
    healthy fabric (no failed link or switch), with the site's uplink capacities computed once
    per site instead of once per report (:func:`healthy_factor_frac`).
    """
    par = job.parallel
    ids = np.sort(np.asarray(gpu_ids, dtype=np.int64))[: par.n_gpus]
    groups = _rank_groups(par)
    out = {}
    for dim, size in (("dp", par.dp), ("pp", par.pp), ("cp", par.cp)):
        out[dim] = 1.0 if size <= 1 else healthy_factor_frac(state, ids, groups[dim])
    return steptime.FabricFactors(dp=out["dp"], pp=out["pp"], cp=out["cp"])


def _healthy_capacity(state: SiteTables) -> tuple[np.ndarray, np.ndarray]:
    """Uplink capacity per switch and per pod of the healthy fabric [Gbit/s] (cached on the site)."""
    cache = state.__dict__.setdefault("_fleet_uplinks", {})
    if "switch" not in cache:
        cache["switch"] = fabric.switch_uplink_gbps(state)
        cache["pod"] = fabric.pod_uplink_gbps(state)
    return cache["switch"], cache["pod"]


def healthy_factor_frac(state: SiteTables, gpu_ids: np.ndarray, group: np.ndarray) -> float:
    """Ring factor of collective groups ``group`` on ``gpu_ids`` with every link and switch up.

    The same ring bound as :func:`twin.physics.fabric.job_fabric_report` (the worst leaf's and the
    worst pod's ``min(1, capacity / demand)``), on capacities cached per site.
    """
    uplinks, pod_cap = _healthy_capacity(state)
    leaf = state.gpu_leaf[gpu_ids].astype(np.int64)
    leaf_f = fabric.domain_factor(
        fabric.spanning_groups_per_domain(group, leaf, state.n_switches), uplinks, state.nic_gbps
    )
    pod = state.switch_pod[leaf].astype(np.int64)
    pod_f = fabric.domain_factor(fabric.spanning_groups_per_domain(group, pod, pod_cap.size), pod_cap, state.nic_gbps)
    return min(float(leaf_f.min()) if leaf_f.size else 1.0, float(pod_f.min()) if pod_f.size else 1.0)


class TrainingRates:
    """Step-time results of training jobs, cached per (job, cap, fabric factors)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, int, float, float, float], tuple[float, float, float, float]] = {}

    def step(
        self, job: TrainingJob, cap_w: float, factors: steptime.FabricFactors
    ) -> tuple[float, float, float, float]:
        """``(step_time_s, tokens_per_s, avg_gpu_power_w, clock_frac)`` of ``job`` at ``cap_w`` and ``factors``."""
        cap = round(min(cap_w, job.hardware.busy_power_w))
        key = (id(job), cap, round(factors.dp, 4), round(factors.pp, 4), round(factors.cp, 4))
        hit = self._cache.get(key)
        if hit is None:
            hw = job.hardware
            if cap < hw.busy_power_w:
                hw = dataclasses.replace(hw, power_limit_w=float(max(cap, hw.idle_power_w + 1.0)))
            r = steptime.step_time(job.model, job.parallel, hw, factors)
            hit = (r.step_time_s, r.tokens_per_s, r.avg_gpu_power_w, r.clock_frac)
            self._cache[key] = hit
        return hit

    def rate(
        self, model: NodeModel, job: TrainingJob, cap_w: float, factors: steptime.FabricFactors, util_frac: float
    ) -> JobRate:
        """Speed (ideal step over this step), tokens/s and power of ``job`` at ``cap_w`` and ``factors``."""
        ideal_s, _, _, _ = self.step(job, job.hardware.busy_power_w, steptime.FabricFactors())
        step_s, tokens, gpu_w, clock = self.step(job, cap_w, factors)
        n = job.parallel.n_gpus
        node_w = float(node_share_power_w(model, gpu_w, util_frac, n))
        return JobRate(ideal_s / step_s, tokens, gpu_w, node_w, factors.dp, clock)
