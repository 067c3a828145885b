"""Power-aware admission: which jobs run, and at what GPU cap, within the site's supply.

The budget is the site's sustained generation: every source's capacity but the batteries'
(a battery carries a swing's peak or a trip for seconds to minutes; a budget that counted it
would let the jobs run on it until it is empty, and the trip it is there for would find it
drained), less ``power_margin_frac``; during a demand-response event it is cut by ``cut_mw``
or held at ``target_mw``.  Facility power is
``IT / η_dist × (1 + cooling) + network + site overhead``: ``η_dist`` the product of the
power-tree efficiencies down one feed (:class:`twin.site.tables.SiteTables`), cooling a
fraction of IT ([E], ``Policy.cooling_overhead_frac``), network the switches at
``SWITCH_POWER_W`` each.  A job's IT power at a cap comes from :mod:`twin.fleet.jobspeed`
(node model and PSU curve) at its GPUs' peak draw under the cap (a training job's while it
computes: the swing's peak is what the sources carry); its speed at a cap from the
step-time model or the DVFS law, its energy from its mean draw.

Modes (``Policy.power``):

* ``per_job`` — per-job power groups, as NVIDIA's power service grants them ([NVIDIA-DPS]):
  a job is admitted only if its power at its floor cap (``power_floor_frac`` of TDP, or its
  QoS's ``min_power_cap_w``) fits beside every running job at its floor; the rest of the
  budget lifts caps in power order (higher QoS first, then the earlier start) up to full
  power; if even the floors do not fit (a demand-response cut) the last jobs in power order
  are requeued;
* ``uniform`` — the site's shortfall policy ``cap`` ([twin.physics.policy]): one cap for every
  running GPU, the highest that fits, and jobs requeued when even the GPUs' minimum does not;
* ``off`` — no limit (energy is still counted).

A *pinned* job (a workload job with ``full_power``, or one given to :meth:`PowerAdmission.pin`:
the live twin's own placed job, whose GPUs the twin's physics runs at full power) comes first in power order at full power in both modes,
its floor is its full power, and the standing budget never requeues it; the other jobs share what is
left.  A demand-response event is an order from outside the site: under one a pinned job keeps its
place first in power order and its full power while that fits, and is requeued when it does not.

Idle nodes draw their idle power unless ``idle_nodes_off`` (then they are switched off, as
the colossus site does with the nodes its generation cannot carry).
"""

from __future__ import annotations

import math

import numpy as np

from twin.fleet import jobclass, jobspeed
from twin.fleet.state import Sim
from twin.site.tables import SOURCE_KINDS, SiteTables

SWITCH_POWER_W = 1700.0  # [E] as the engine's site balance (docs/physics.md §7)
CAP_GRID_POINTS = 21
_FULL_POWER_MARGIN_W = 1.0  # a budget this far above every job's full power needs no cap computed


def distribution_efficiency(state: SiteTables) -> float:
    """Product of the power-tree efficiencies from a source to rack 0's A feed (1 without a tree)."""
    if state.n_power == 0 or state.n_racks == 0:
        return 1.0
    eff, e = 1.0, int(state.rack_feed_a[0])
    for _ in range(64):
        if e < 0:
            break
        eff *= float(state.power_efficiency_frac[e])
        e = int(state.power_parent[e])
    return eff


def supply_mw(state: SiteTables) -> float:
    """Sustained generation of the site: every source's capacity but the batteries' [MW]."""
    sustained = state.source_kind != SOURCE_KINDS.index("battery")
    return float(np.sum(state.source_capacity_mw[sustained]))


class PowerAdmission:
    """Budget, per-job power tables and caps of one simulation."""

    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        run = sim.run
        state = run.topo.site
        self.mode = run.policy.power
        self.k_facility = (1.0 + run.policy.cooling_overhead_frac) / distribution_efficiency(state)
        self.fixed_mw = state.n_switches * SWITCH_POWER_W / 1e6 + state.site_overhead_mw
        self.base_supply_mw = supply_mw(state)
        self.cut_mw, self.target_mw = 0.0, math.inf
        self._budget_key: tuple[object, float, float] = (None, math.nan, math.nan)  # what _it_budget_w is for
        self._it_budget_w = math.nan
        self.grids = [np.linspace(m.gpu_min_w, m.gpu_tdp_w, CAP_GRID_POINTS) for m in sim.node_models]
        n = run.n_jobs
        self.floor_w = np.zeros(n)  # node power at the floor cap
        self.full_w = np.zeros(n)
        self.floor_cap_w = np.full(n, math.inf)
        self.tables: dict[int, np.ndarray] = {}
        self.running_floor_w = 0.0
        self.running_gain_w = 0.0  # Σ max(full − floor, 0) over the running jobs: with the floors, their full power
        self.capped_running: set[int] = set()  # running jobs whose cap is not off (cap_w ≠ inf)
        # jobs held at full power, first in power order: the workload's full_power jobs, and those pinned later
        self.pinned = np.array([job.full_power for job in run.table.jobs], dtype=bool)
        self._idle_w: np.ndarray | None = None
        self._kind_tables: dict[tuple[object, ...], np.ndarray] = {}
        self._floor_w: dict[tuple[object, ...], float] = {}  # (kind, floor cap, GPUs) → node power at the floor [W]
        self._qos_floor_w = np.array([run.policy.qos_spec(q).min_power_cap_w for q in run.table.qos_names], float)
        self.est_floor_w = self._estimate_floors() if self.mode != "off" else np.zeros(n)

    # --- budget ------------------------------------------------------------------------
    def budget_mw(self) -> float:
        """Facility power the jobs may use now."""
        b = self.base_supply_mw * (1.0 - self.sim.run.policy.power_margin_frac) - self.cut_mw
        return min(b, self.target_mw)

    @property
    def in_demand_response(self) -> bool:
        """Whether a demand-response event holds the budget now (a pinned job then yields like any other)."""
        return self.cut_mw > 0.0 or math.isfinite(self.target_mw)

    def it_budget_w(self) -> float:
        """IT power the jobs may draw now [W] (kept until the policy or a demand-response figure changes)."""
        key = self._budget_key
        pol = self.sim.run.policy
        if key[0] is not pol or key[1] != self.cut_mw or key[2] != self.target_mw:
            self._it_budget_w = max(self.budget_mw() - self.fixed_mw, 0.0) / self.k_facility * 1e6
            self._budget_key = (pol, self.cut_mw, self.target_mw)
        return self._it_budget_w

    def facility_mw(self, it_w: float) -> float:
        return it_w * self.k_facility / 1e6 + self.fixed_mw

    # --- per-job tables ------------------------------------------------------------------
    def _model(self, j: int) -> tuple[int, jobspeed.NodeModel]:
        run = self.sim.run
        t = self.sim.placed_type[j] if run.gpus[j] is not None else 0
        return t, self.sim.node_models[t]

    def table(self, j: int) -> np.ndarray:
        """Node power of job ``j`` at each cap of its GPU type's grid [W] (built once per placement).

        What the budget must carry is the job's draw at its peak, not its mean: a kind's GPUs at
        ``min(demand, cap)``; a training job's at ``min(busy power, cap)``, their draw while they
        compute (the training swing's peak, which the site's sources and its shortfall policy see),
        not the step's average, which the communication phases pull down (on colossus pretrain-0
        averages 17.8 MW over a step and draws 24.0 MW computing).
        """
        tab = self.tables.get(j)
        if tab is None:
            tab = self.tables[j] = self._per_gpu(j)[1] * int(self.sim.run.table.n_gpus[j])
        return tab

    def _per_gpu(self, j: int) -> tuple[tuple[object, ...], np.ndarray]:
        """(cache key, node power of one GPU of job ``j`` at each cap of its grid [W]), cached per kind."""
        run = self.sim.run
        t, model = self._model(j)
        grid = self.grids[t]
        util = float(run.table.util_frac[j])
        training = run.table.jobs[j].training
        if training is None:  # a kind: GPUs at min(demand, cap), per GPU, cached per kind
            key: tuple[object, ...] = (t, round(util, 4))
            demand = model.gpu_idle_w + util * (model.gpu_tdp_w - model.gpu_idle_w)
        else:
            demand = min(training.hardware.busy_power_w, training.hardware.limit_w)
            key = (t, round(util, 4), "busy", round(demand, 1))
        per_gpu = self._kind_tables.get(key)
        if per_gpu is None:
            per_gpu = jobspeed.node_share_power_w(model, np.minimum(demand, grid), np.full(grid.size, util), 1)
            self._kind_tables[key] = per_gpu
        return key, per_gpu

    def floor_cap(self, j: int) -> float:
        """Lowest GPU cap job ``j`` may be held at [W]: its QoS's, else the policy's share of TDP."""
        run = self.sim.run
        _, model = self._model(j)
        floor = float(self._qos_floor_w[run.table.qos[j]]) or run.policy.power_floor_frac * model.gpu_tdp_w
        return min(max(floor, model.gpu_min_w), model.gpu_tdp_w)

    def pin(self, j: int) -> None:
        """Hold job ``j`` at full power whenever it runs: first in power order, its floor its full
        power, never requeued for power (the live twin's placed job, which its physics runs uncapped)."""
        self.pinned[j] = True

    def joined(self, j: int) -> None:
        """Job ``j`` was placed: fill its floor and full power (before its first rate is computed)."""
        if self.mode == "off":
            return
        run = self.sim.run
        t, _ = self._model(j)
        kind, per_gpu = self._per_gpu(j)
        n = int(run.table.n_gpus[j])
        tab = self.tables[j] = per_gpu * n
        self.full_w[j] = float(tab[-1])
        if self.pinned[j]:
            self.floor_cap_w[j] = math.inf
            self.floor_w[j] = self.full_w[j]
            run.cap_w[j] = math.inf
        else:
            floor = self.floor_cap(j) if self.mode == "per_job" else float(self.grids[t][0])
            self.floor_cap_w[j] = floor
            key = (kind, floor, n)
            floor_w = self._floor_w.get(key)
            if floor_w is None:
                floor_w = self._floor_w[key] = float(np.interp(floor, self.grids[t], tab))
            self.floor_w[j] = floor_w
            if self.mode == "per_job":
                run.cap_w[j] = floor  # a new job starts at its floor until the next rebalance lifts it
        self.running_floor_w += self.floor_w[j]
        self.running_gain_w += max(self.full_w[j] - self.floor_w[j], 0.0)
        if run.cap_w[j] != math.inf:
            self.capped_running.add(j)

    def left(self, j: int) -> None:
        self.tables.pop(j, None)
        self.running_floor_w -= self.floor_w[j]
        self.running_gain_w -= max(self.full_w[j] - self.floor_w[j], 0.0)
        self.capped_running.discard(j)
        self.floor_w[j] = self.full_w[j] = 0.0

    def _estimate_floors(self) -> np.ndarray:
        """Floor power of every job from its kind, size and QoS (before any placement) [W], on the node
        model of the GPU type it asks for (a job of any type: the type of most of the site's GPUs)."""
        run = self.sim.run
        tab = run.table
        topo = run.topo
        names = {name: i for i, name in enumerate(topo.gpu_type_names)}
        usual = int(np.argmax(np.bincount(topo.node_gpu_type, weights=topo.node_gpus))) if topo.n_nodes else 0
        types = jobclass.gpu_type_codes(tab, names, usual)
        types[types < 0] = usual
        qos_floor = self._qos_floor_w[tab.qos]
        out = np.zeros(tab.n_jobs)
        for t in np.unique(types).tolist():
            sel = types == t
            model = self.sim.node_models[t]
            default = run.policy.power_floor_frac * model.gpu_tdp_w if self.mode == "per_job" else model.gpu_min_w
            cap = np.where(qos_floor[sel] > 0, qos_floor[sel], default)
            util = tab.util_frac[sel]
            demand = model.gpu_idle_w + util * (model.gpu_tdp_w - model.gpu_idle_w)
            out[sel] = jobspeed.node_share_power_w(model, np.minimum(demand, cap), util, tab.n_gpus[sel])
        return out

    def admits(self, j: int) -> bool:
        """Whether pending job ``j`` fits the budget at its floor beside the running jobs at theirs (a pinned
        job always does)."""
        if self.mode == "off" or (self.pinned[j] and not self.in_demand_response):
            return True
        return self.running_floor_w + float(self.est_floor_w[j]) <= self.it_budget_w()

    def blocked(self, rows: np.ndarray) -> np.ndarray:
        """Mask of pending ``rows`` whose floor does not fit the budget beside the running jobs' (the vector
        form of :meth:`admits`)."""
        out = self.running_floor_w + self.est_floor_w[rows] > self.it_budget_w()
        if not self.in_demand_response:
            out &= ~self.pinned[rows]
        return out

    # --- caps ----------------------------------------------------------------------------
    def rebalance(self, t: float) -> tuple[list[int], list[int]]:
        """Set every running job's cap for the budget now; returns (jobs whose cap changed, jobs to requeue)."""
        if self.mode == "off":
            return [], []
        run = self.sim.run
        if not self.sim.running:
            return [], []
        budget = self.it_budget_w()
        if self._all_at_full_power(budget):
            changed = np.fromiter(self.capped_running, np.int64, len(self.capped_running))
            changed.sort()
            run.cap_w[changed] = math.inf
            self.capped_running.clear()
            return (self._power_order(changed) if changed.size > 1 else changed).tolist(), []
        order = self._power_order(self.sim.running_rows())
        caps, drop = (self._per_job if self.mode == "per_job" else self._uniform)(order, budget)
        before = run.cap_w[order]
        with np.errstate(invalid="ignore"):  # inf - inf: a cap that stays off is no change
            same = (caps == before) | (np.abs(caps - before) < 1.0)
        changed = order[~same].tolist()
        run.cap_w[order] = caps
        self.capped_running = set(order[caps != math.inf].tolist())
        return changed, drop

    def _all_at_full_power(self, budget: float) -> bool:
        """Whether every running job surely gets full power (both modes then lift every cap and requeue
        nobody): the floors and every increase to full power fit with ``_FULL_POWER_MARGIN_W`` to spare,
        far above the rounding of the running sums (kept as jobs join and leave).  Near that edge either
        answer gives the same caps: when every job fits, the modes' own arithmetic lifts every cap too."""
        return self.running_floor_w + self.running_gain_w <= budget - _FULL_POWER_MARGIN_W

    def _power_order(self, rows: np.ndarray) -> np.ndarray:
        run = self.sim.run
        tab, q = run.table, self.sim.quota
        keys = (rows, run.first_start_s[rows], -tab.priority[rows], -q.qos_priority[tab.qos[rows]], ~self.pinned[rows])
        return rows[np.lexsort(keys)]

    def _kept(self, order: np.ndarray, floors: np.ndarray, budget: float) -> np.ndarray:
        """Which jobs of ``order`` keep running: the pinned ones, then those whose floors fit in order."""
        pinned = self.pinned[order]
        kept = np.cumsum(floors) <= budget + 1e-6
        if not self.in_demand_response:
            return kept | pinned
        yielded = pinned & ~kept  # under a demand-response event a pinned job that does not fit yields
        if yielded.any():
            kept = (np.cumsum(np.where(yielded, 0.0, floors)) <= budget + 1e-6) & ~yielded
        return kept

    def _per_job(self, order: np.ndarray, budget: float) -> tuple[np.ndarray, list[int]]:
        floors = self.floor_w[order]
        keep = self._kept(order, floors, budget)
        drop = order[~keep].tolist()
        caps = self.floor_cap_w[order].copy()
        left = budget - float(floors[keep].sum())
        inc = np.where(keep, self.full_w[order] - floors, np.inf)
        full = np.cumsum(inc) <= left + 1e-6
        caps[full] = math.inf
        left -= float(inc[full].sum())
        nxt = np.flatnonzero(~full & keep)
        if nxt.size and left > 0:  # the first job that cannot have full power gets what is left
            i = int(nxt[0])
            t, _ = self._model(int(order[i]))
            tab, grid = self.table(int(order[i])), self.grids[t]
            fits = np.flatnonzero(tab <= floors[i] + left + 1e-6)
            if fits.size:
                caps[i] = max(float(grid[fits[-1]]), caps[i])
        return caps, drop

    def _uniform(self, order: np.ndarray, budget: float) -> tuple[np.ndarray, list[int]]:
        pinned = self.pinned[order]
        tables = [
            np.full(CAP_GRID_POINTS, self.full_w[j]) if p else self.table(j) for j, p in zip(order.tolist(), pinned)
        ]
        grid = self.grids[0]
        sums = np.array([sum(tab[i] for tab in tables) for i in range(grid.size)])
        drop: list[int] = []
        if sums[0] > budget:
            floors = np.array([tab[0] for tab in tables])
            drop = order[~self._kept(order, floors, budget)].tolist()
            return np.where(pinned, math.inf, grid[0]), drop
        i = int(np.flatnonzero(sums <= budget + 1e-6)[-1])
        cap = math.inf if i == grid.size - 1 else float(grid[i])
        return np.where(pinned, math.inf, cap), drop

    def it_power_w(self) -> float:
        """IT input power now: running jobs plus powered idle nodes [W]."""
        run = self.sim.run
        jobs = self.sim.it_w
        if run.policy.idle_nodes_off and self.mode != "off":
            return jobs
        if self._idle_w is None:
            self._idle_w = np.array([jobspeed.idle_node_power_w(m) for m in self.sim.node_models])
        if run.topo.uniform_nodes and len(self.sim.node_models) == 1:
            return jobs + float(self._idle_w[0]) * int(run.cluster.free_hist[-1])
        idle = run.cluster.whole_free()
        return jobs + float(self._idle_w[run.topo.node_gpu_type[idle]].sum()) if idle.any() else jobs
