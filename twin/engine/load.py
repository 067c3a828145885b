"""Inputs and load, the first phases of a tick: outdoor weather, live power, and what the GPUs demand.

* :meth:`LoadPhase.weather` → :class:`WeatherResult`: dry/wet bulb from the site's curve or the inputs;
* :meth:`LoadPhase.power_state` → :class:`PowerStateResult`: live elements and sources, rack feed
  shares, dark racks, and the racks the shortfall policy sheds;
* :meth:`LoadPhase.demand` → :class:`DemandResult`: GPU utilisation, power demand and limit,
  GPUs without power, node PSUs and the power brake.

The phase carries no physical state; it keeps answers that hold until their inputs
change (the power tree's state, the policy's shedding order and the shed racks' nodes).
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from twin.engine.constants import SiteConstants, as_ids
from twin.engine.inputs import TickInputs
from twin.engine.phases import DemandResult, PowerStateResult, WeatherResult
from twin.physics import policy, power, powertree, weather


class LoadPhase:
    """Weather, power state and GPU demand (see module docstring)."""

    def __init__(self, const: SiteConstants) -> None:
        self.const = const
        s = const.state
        self.weather_curve = weather.load_weather(s.weather)
        self.source_live_all = np.ones(s.n_sources, dtype=bool)
        self._tree_cache: tuple[tuple[bytes, bytes], tuple[np.ndarray, ...]] | None = (
            None  # (failed elements, live sources) -> (live, feed shares A/B, dark racks), read-only
        )
        self._shed_order_cache: tuple[tuple[bytes, bytes], np.ndarray] | None = (
            None  # (job GPUs per rack) -> racks in shedding order
        )
        self._work_cache: tuple[list[np.ndarray | None], np.ndarray, int, np.ndarray | None, np.ndarray] | None = (
            None  # (the job GPU arrays) -> (job GPUs per rack, racks without work), read-only
        )
        self._shed_cache: tuple[bytes, np.ndarray, np.ndarray] | None = (
            None  # (shed racks) -> (their nodes, their GPUs)
        )

    def weather(self, ts: datetime, inp: TickInputs) -> WeatherResult:
        """Outdoor dry and wet bulb at ``ts`` [°C]: the inputs' readings, else the site's curve."""
        dry, wet = weather.outdoor_conditions(self.weather_curve, ts, self.const.state.longitude_deg)
        return WeatherResult(
            dry_bulb_c=dry if inp.outdoor_dry_bulb_c is None else float(inp.outdoor_dry_bulb_c),
            wet_bulb_c=wet if inp.outdoor_wet_bulb_c is None else float(inp.outdoor_wet_bulb_c),
        )

    # --- power state ----------------------------------------------------------------------
    def power_state(self, inp: TickInputs, dropped: np.ndarray, racks_shed: int) -> PowerStateResult:
        """Live sources and elements under the inputs' failures and the ``dropped`` UPSs (element ids);
        the first ``racks_shed`` racks of the shortfall policy's order are shed."""
        s = self.const.state
        source_live = self.source_live_all.copy()
        source_live[as_ids(inp.failed_sources, s.n_sources, "failed_sources")] = False
        failed = as_ids(inp.failed_power, s.n_power, "failed_power")
        if dropped.size:  # an exhausted UPS drops its load like a failed element
            failed = np.union1d(failed, dropped)
        live, share_a, share_b, dark = self._tree_state(failed, source_live)
        return PowerStateResult(
            source_live=source_live,
            power_live=live,
            rack_feed_a_share_frac=share_a,
            rack_feed_b_share_frac=share_b,
            rack_dark=dark,
            rack_shed=self._shed_racks(inp, racks_shed) if racks_shed else np.zeros(0, dtype=np.int64),
            idle_racks_count=self._racks_without_work(inp)[1],
            rack_idle_flag=self._racks_without_work(inp)[2],
        )

    def _tree_state(self, failed: np.ndarray, source_live: np.ndarray) -> tuple[np.ndarray, ...]:
        """(live elements, feed shares A and B, dark racks), read-only; kept until something else fails."""
        key = (failed.tobytes(), source_live.tobytes())
        if self._tree_cache is None or self._tree_cache[0] != key:
            topo = self.const.topo
            live = powertree.element_live(topo, failed, source_live)
            answer = (live, *powertree.rack_feed_shares(topo, live))
            for a in answer:
                a.flags.writeable = False
            self._tree_cache = (key, answer)
        return self._tree_cache[1]

    def _racks_without_work(self, inp: TickInputs) -> tuple[np.ndarray, int, np.ndarray | None, np.ndarray]:
        """GPUs of the placed jobs (or the priority GPUs) per rack, the count of running racks with none (0
        without jobs), their mask (None without jobs) and the racks the operator has switched off whole.

        Kept while the same arrays are given (a placement or node states change by giving new ones).
        """
        s = self.const.state
        lists = [j.gpu_ids for j in inp.jobs] if inp.priority_gpus is None else [inp.priority_gpus]
        given = [*lists, inp.nodes_off]
        kept = self._work_cache
        if kept is None or len(kept[0]) != len(given) or any(a is not b for a, b in zip(kept[0], given)):
            job_gpus = np.zeros(s.n_racks)
            for gpus in lists:
                job_gpus += np.bincount(s.gpu_rack[as_ids(gpus, s.n_gpus, "priority_gpus")], minlength=s.n_racks)
            off = np.zeros(s.n_racks, dtype=bool)
            if inp.nodes_off is not None and np.shape(inp.nodes_off) == (s.n_nodes,):
                on = np.bincount(s.node_rack, weights=~np.asarray(inp.nodes_off, dtype=bool), minlength=s.n_racks)
                off = on == 0
            mask = (job_gpus == 0) & ~off if lists else None
            for a in (job_gpus, off, mask):
                if a is not None:
                    a.flags.writeable = False
            kept = (given, job_gpus, int(np.count_nonzero(mask)) if mask is not None else 0, mask, off)
            self._work_cache = kept
        return kept[1:]

    def _shed_racks(self, inp: TickInputs, count: int) -> np.ndarray:
        """The first ``count`` racks in the policy's shedding order (racks of the priority GPUs last)."""
        s = self.const.state
        job_gpus, _, _, off = self._racks_without_work(inp)
        key = (job_gpus.tobytes(), off.tobytes())
        if self._shed_order_cache is None or self._shed_order_cache[0] != key:
            self._shed_order_cache = (key, policy.shed_order(job_gpus, s.rack_hall, off))
        return self._shed_order_cache[1][:count]

    # --- demand ----------------------------------------------------------------------------
    def gpu_util(self, inp: TickInputs, previous: np.ndarray) -> np.ndarray:
        """Utilisation per GPU from the inputs, a missing reading holding the ``previous`` value."""
        n = self.const.state.n_gpus
        if np.ndim(inp.gpu_util_frac) == 0:
            u = float(inp.gpu_util_frac)
            return np.full(n, min(max(u, 0.0), 1.0)) if np.isfinite(u) else previous.copy()
        util = np.asarray(inp.gpu_util_frac, dtype=np.float64)
        if util.shape != (n,):
            raise ValueError(f"gpu_util_frac: expected shape ({n},), got {util.shape}")
        if util.size == 0 or (util.min() >= 0.0 and util.max() <= 1.0):  # in range and finite (NaN fails both)
            return util.copy()
        if not np.isfinite(util).all():
            util = np.where(np.isfinite(util), util, previous)
        return np.clip(util, 0.0, 1.0)

    def gpu_off(self, inp: TickInputs, ps: PowerStateResult) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """GPUs without power (dark rack, node switched off), the switched-off nodes and their GPUs (None if none)."""
        c = self.const
        s = c.state
        off = c.by_rack.expand(ps.rack_dark) if ps.rack_dark.any() else np.zeros(s.n_gpus, dtype=bool)
        if inp.nodes_off is None and not ps.rack_shed.size:
            return off, None, None
        if inp.nodes_off is None:  # the shortfall policy's shed racks only: kept while the shed set holds
            key = ps.rack_shed.tobytes()
            if self._shed_cache is None or self._shed_cache[0] != key:
                node_off = np.isin(s.node_rack, ps.rack_shed)
                gpu_node_off = c.by_node.expand(node_off)
                gpu_node_off.flags.writeable = False
                self._shed_cache = (key, node_off, gpu_node_off)
            node_off, gpu_node_off = self._shed_cache[1].copy(), self._shed_cache[2]
            return off | gpu_node_off, node_off, gpu_node_off
        node_off = np.asarray(inp.nodes_off, dtype=bool)
        if node_off.shape != (s.n_nodes,):
            raise ValueError(f"nodes_off: expected shape ({s.n_nodes},), got {node_off.shape}")
        if ps.rack_shed.size:  # the shortfall policy powers off the nodes of shed racks (their CDUs keep running)
            node_off = node_off | np.isin(s.node_rack, ps.rack_shed)
        if not node_off.any():
            return off, None, None
        gpu_node_off = c.by_node.expand(node_off)
        return off | gpu_node_off, node_off, gpu_node_off

    def demand(
        self,
        inp: TickInputs,
        ps: PowerStateResult,
        act: policy.PolicyAction,
        previous_util: np.ndarray,
        previous_power_w: np.ndarray,
    ) -> DemandResult:
        """What the GPUs ask for under the inputs and the shortfall policy's action ``act`` in force.

        A missing utilisation or power reading holds the ``previous`` value of the GPU.
        """
        c = self.const
        util = self.gpu_util(inp, previous_util)
        if inp.gpu_power_demand_w is None:
            demand = power.gpu_demand_power_w(util, c.idle_w, c.tdp_w)
        else:
            demand = np.broadcast_to(np.asarray(inp.gpu_power_demand_w, dtype=np.float64), (c.state.n_gpus,))
            demand = np.where(np.isfinite(demand), np.maximum(demand, 0.0), previous_power_w)
        limit = c.tdp_w if inp.gpu_power_limit_w is None else np.clip(inp.gpu_power_limit_w, c.min_limit_w, c.tdp_w)
        operator_limit = limit
        if np.isfinite(act.gpu_cap_w):  # the shortfall policy's cap on top of the operator's limit
            limit = np.minimum(limit, max(act.gpu_cap_w, c.min_limit_min_w))
        off, node_off, gpu_node_off = self.gpu_off(inp, ps)
        psus_live = self._psus_live(inp, ps)
        brake = self._power_brake(demand, limit, psus_live)
        if act.brake:
            brake = np.ones(c.state.n_gpus, dtype=bool)
        return DemandResult(
            gpu_util_frac=util,
            gpu_power_demand_w=demand,
            gpu_power_limit_w=limit,
            gpu_off=off,
            node_off=node_off,
            node_psus_live=psus_live,
            gpu_power_brake=brake,
            node_util_frac=c.by_node.sum(util) / c.gpus_per_node,
            gpu_operator_limit_w=operator_limit,
            gpu_node_off=gpu_node_off,
        )

    def _psus_live(self, inp: TickInputs, ps: PowerStateResult) -> np.ndarray:
        """Node PSUs that deliver: less the failed ones, and half of them when one of two feeds is lost."""
        s, topo = self.const.state, self.const.topo
        psus = s.node_psus.astype(np.float64)
        failed_psus = 0.0 if inp.node_psus_failed is None else np.asarray(inp.node_psus_failed, dtype=np.float64)
        one_feed = ((ps.rack_feed_a_share_frac == 1.0) | (ps.rack_feed_b_share_frac == 1.0)) & (topo.feed_b >= 0)
        lost_feed_psus = np.where(one_feed[s.node_rack], np.floor(psus / 2.0), 0.0) if one_feed.any() else 0.0
        return np.maximum(psus - failed_psus - lost_feed_psus, 0.0)

    def _power_brake(self, demand: np.ndarray, limit: np.ndarray | float, psus_live: np.ndarray) -> np.ndarray | bool:
        """GPUs whose node asserts the power brake (False: none).

        The brake compares the node's need at full base load with what its live PSUs deliver;
        a scalar limit bounds the need from above, and when the bound fits nowhere is braked.
        """
        c = self.const
        s = c.state
        available = power.node_power_available_w(psus_live, s.node_psu_rating_w)
        if np.ndim(limit) == 0:
            bound = power.node_dc_power_w(
                c.gpus_per_node * float(limit), 1.0, s.node_base_power_w, s.node_idle_base_power_w
            )
            if not (bound > available).any():
                return False
        node_need = power.node_dc_power_w(
            c.by_node.sum(np.minimum(demand, limit)), 1.0, s.node_base_power_w, s.node_idle_base_power_w
        )
        brake_node = node_need > available
        return c.by_node.expand(brake_node) if np.any(brake_node) else False
