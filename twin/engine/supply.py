"""Power tree and sources: node and rack input power, the tree's loads and N-1, what the sources deliver,
and the shortfall policy's next action.

* :meth:`PowerPhase.it_power` → :class:`ItPowerResult`: node and rack input power (PSU efficiency);
* :meth:`PowerPhase.tree` → :class:`PowerTreeResult`: roll-up, utilisation, vectorised N-1;
* :meth:`PowerPhase.sources` → :class:`SupplyResult`: generator units, batteries and UPSs carry
  the facility load (:mod:`twin.physics.sources`);
* :meth:`PowerPhase.policy_step`: the shortfall policy decides its action for the next ticks
  (:mod:`twin.physics.policy`);
* :meth:`PowerPhase.swing_share`: the share of the training swing each source carries;
* :meth:`PowerPhase.checks`: the generating units' reserve, N-1, frequency, load rejection and
  the grid contract against the swing (:mod:`twin.physics.island`).

It owns the supply's carried state, :class:`SupplyState`: battery and UPS charge, the
UPSs that dropped their racks, each source's output and load-step bucket (ISO 8528-5
recovery), which sources were live, whether the buses dipped, and the shortfall policy's
state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.engine.balance import BATTERY
from twin.engine.constants import SiteConstants
from twin.engine.phases import (
    DemandResult,
    GpuThermalResult,
    ItPowerResult,
    PowerStateResult,
    PowerTreeResult,
    SiteResult,
    SupplyResult,
    WeatherResult,
)
from twin.physics import island, policy, power, powertree, sources, swing


@dataclass
class SupplyState:
    """What the supply carries from one tick to the next."""

    battery_soc_frac: np.ndarray  # [n_sources], NaN for non-batteries
    ups_energy_frac: np.ndarray  # [n_power], NaN for elements without a UPS battery
    ups_dropped: np.ndarray  # bool [n_power]: a UPS ran empty while the sources fell short
    source_power_mw: np.ndarray  # [n_sources] output (negative: a battery charging)
    sources_live_before: np.ndarray  # bool [n_sources]: live last tick (a source that goes down has tripped)
    step_ready_frac: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [n_sources] load-step bucket
    step_limited: np.ndarray | None = None  # bool [n_sources]: held back by a recovering step last tick
    supply_dipped: bool = False  # a source tripped last tick and the rest fell short: every bus dipped
    policy: policy.PolicyState = field(default_factory=policy.PolicyState)
    settling: bool = False  # settling is not time: no store drains, no UPS drops its racks


class PowerPhase:
    """Power tree, sources and the shortfall policy (see module docstring)."""

    def __init__(self, const: SiteConstants) -> None:
        self.const = const
        s = const.state
        n = s.n_sources
        given = lambda a, default: a if np.size(a) == n else np.full(n, default)  # noqa: E731 (tables built in code)
        self.source_step_mw = given(s.source_step_mw, np.inf)
        self.source_derate_frac_per_k = given(s.source_derate_frac_per_k, 0.0)
        self.source_rated_ambient_c = given(s.source_rated_ambient_c, 15.0)
        self.source_efficiency_frac = given(s.source_efficiency_frac, 1.0)
        self.ups_kwh = (
            s.power_ride_through_kwh if np.size(s.power_ride_through_kwh) == s.n_power else np.zeros(s.n_power)
        )
        self.ups_ids = np.flatnonzero(self.ups_kwh > 0)
        self.recovery_s = sources.recovery_s(s.source_iso_class, n)
        self.units = island.SupplyUnits(
            kind=s.source_kind,
            iso_class=list(s.source_iso_class) or [""] * n,
            unit_mw=s.source_capacity_mw,
            step_mw=self.source_step_mw,
            inertia_h_s=given(s.source_inertia_h_s, np.nan),
            droop_frac=given(s.source_droop_frac, np.nan),
            governor_s=given(s.source_governor_s, np.nan),
            overspeed_trip_frac=given(s.source_overspeed_trip_frac, np.nan),
            export_limit_mw=given(s.source_export_limit_mw, 0.0),
            short_circuit_mva=given(s.source_short_circuit_mva, np.nan),
            voltage_change_max_frac=given(s.source_voltage_change_max_frac, np.nan),
            ramp_mw_per_s=s.source_ramp_mw_per_s,
            nominal_hz=s.nominal_frequency_hz,
        )
        for name, default in (
            ("inertia_h_s", island.DEFAULT_INERTIA_H_S),
            ("droop_frac", island.DEFAULT_DROOP_FRAC),
            ("governor_s", island.DEFAULT_GOVERNOR_S),
            ("overspeed_trip_frac", island.DEFAULT_OVERSPEED_TRIP_FRAC),
        ):
            values = getattr(self.units, name)
            np.copyto(values, default, where=~np.isfinite(values))
        self.state = SupplyState(
            battery_soc_frac=np.zeros(0),
            ups_energy_frac=np.zeros(0),
            ups_dropped=np.zeros(0, dtype=bool),
            source_power_mw=np.zeros(n),
            sources_live_before=np.ones(n, dtype=bool),
        )
        self.reset_stores()

    @property
    def policy(self) -> policy.PolicyState:
        """The shortfall policy's state: the action in force, and one pending."""
        return self.state.policy

    def reset_stores(self) -> None:
        """Batteries and UPSs full, no UPS dropped."""
        s, st = self.const.state, self.state
        st.battery_soc_frac = np.where(s.source_kind == BATTERY, 1.0, np.nan)
        st.ups_energy_frac = np.where(self.ups_kwh > 0, 1.0, np.nan)
        st.ups_dropped = np.zeros(s.n_power, dtype=bool)
        st.supply_dipped = False
        st.step_ready_frac = np.ones(s.n_sources)

    def dropped_ups(self, recover: bool) -> np.ndarray:
        """Element ids of the UPSs that dropped their load (none once ``recover`` clears them)."""
        if recover:
            self.state.ups_dropped[:] = False
        dropped = self.state.ups_dropped
        return np.flatnonzero(dropped) if dropped.any() else np.zeros(0, dtype=np.int64)

    # --- load on the tree ------------------------------------------------------------------------
    def it_power(self, ps: PowerStateResult, dem: DemandResult, gt: GpuThermalResult) -> ItPowerResult:
        """Node DC load and AC input (PSU efficiency at the load), rack input power and GPU power."""
        c = self.const
        s = c.state
        gpu_sum = c.by_node.sum(gt.gpu_power_w)
        node_live = dem.node_psus_live > 0
        dc = power.node_dc_power_w(gpu_sum, dem.node_util_frac, s.node_base_power_w, s.node_idle_base_power_w)
        dark_node = ps.rack_dark[s.node_rack]
        if dem.node_off is not None:
            dark_node = dark_node | dem.node_off
        dc = np.where(dark_node | ~node_live, 0.0, dc)
        ac, _ = power.node_input_power_w(dc, dem.node_psus_live, s.node_psu_rating_w, s.psu_efficiency_points_frac)
        return ItPowerResult(
            node_dc_power_w=dc,
            node_input_power_w=ac,
            rack_power_kw=c.node_by_rack.sum(ac) / 1e3,
            rack_gpu_power_w=c.node_by_rack.sum(gpu_sum),
        )

    def tree(self, ps: PowerStateResult, itp: ItPowerResult) -> PowerTreeResult:
        """Loads of every element, their use of the usable rating, and the worst single failure (N-1)."""
        topo = self.const.topo
        shares = (ps.rack_feed_a_share_frac, ps.rack_feed_b_share_frac)
        load, inp_kw = powertree.rollup(topo, itp.rack_power_kw, *shares)
        worst, worst_by = powertree.n1_worst_load_kw(topo, load, itp.rack_power_kw, *shares, ps.power_live)
        return PowerTreeResult(
            feed_power_kw=load,
            load_frac=powertree.load_frac(load, topo.usable_kw),
            power_n1_load_kw=worst,
            power_n1_load_frac=powertree.load_frac(worst, topo.usable_kw),
            power_n1_worst_by=worst_by,
            tree_input_kw=float(inp_kw[topo.top_down[0]].sum()),
        )

    # --- sources ------------------------------------------------------------------------------------
    def sources(
        self, dt_s: float, facility_mw: float, tree: PowerTreeResult, ps: PowerStateResult, wx: WeatherResult
    ) -> SupplyResult:
        """Generator units, batteries and UPSs carry the facility load (:mod:`twin.physics.sources`)."""
        s, st = self.const.state, self.state
        tree_mw = tree.tree_input_kw / 1e3
        cap = sources.derated_capacity_mw(
            s.source_capacity_mw, self.source_derate_frac_per_k, self.source_rated_ambient_c, wx.dry_bulb_c
        )
        d = sources.dispatch(
            facility_mw,
            s.source_kind,
            cap,
            ps.source_live,
            st.source_power_mw,
            self.source_step_mw,
            s.source_ramp_mw_per_s,
            s.source_energy_mwh,
            self.source_efficiency_frac,
            st.battery_soc_frac,
            dt_s,
            self.recovery_s,
            st.step_ready_frac,
        )
        ups = self.ups_ids
        ups_load_kw = np.where(ps.power_live[ups], tree.feed_power_kw[ups], 0.0)
        ups_mw, ups_frac = sources.ups_discharge(
            min(d.unmet_mw, tree_mw), ups_load_kw, self.ups_kwh[ups], st.ups_energy_frac[ups], dt_s
        )
        # a trip the others cannot pick up dips every bus: the chillers stop from the next tick
        tripped = bool((st.sources_live_before & ~ps.source_live).any())
        st.supply_dipped = tripped and d.unmet_mw > 0.0 and not st.settling
        st.sources_live_before = ps.source_live
        if not st.settling:
            st.battery_soc_frac = d.battery_soc_frac
            st.ups_energy_frac[ups] = ups_frac
            if d.unmet_mw - ups_mw > 1e-9:  # UPSs with nothing left while the sources fall short drop their racks
                st.ups_dropped[ups] |= (ups_frac <= 0.0) & (ups_load_kw > 0.0)
        st.source_power_mw = d.source_power_mw
        if not st.settling:
            st.step_ready_frac, st.step_limited = d.step_ready_frac, d.step_limited
        unserved = d.unmet_mw - ups_mw
        return SupplyResult(
            dispatch=d,
            ups_power_mw=ups_mw,
            unserved_mw=unserved if unserved > 1e-9 else 0.0,
            ups_ride_through_s=sources.ride_through_s(self.ups_kwh[ups], st.ups_energy_frac[ups], ups_load_kw),
        )

    # --- the shortfall policy ---------------------------------------------------------------------
    def policy_step(
        self,
        dt_s: float,
        over_mw: float,
        facility_mw: float,
        it_mw: float,
        ps: PowerStateResult,
        itp: ItPowerResult,
        dem: DemandResult,
        gt: GpuThermalResult,
    ) -> None:
        """Decide the shortfall policy's action for the next ticks; ``over_mw`` is the facility power over
        what the sources carry with their margin (:mod:`twin.physics.policy`)."""
        c, st = self.const, self.state
        s = c.state
        act = st.policy.applied
        if over_mw <= 0.0 and not act.active:
            st.policy = policy.advance(st.policy, policy.PolicyAction(), s.policy_response_s, dt_s)
            return
        fixed = c.network_mw + s.site_overhead_mw
        node_dc = float(itp.node_dc_power_w.sum())
        psu = float(itp.node_input_power_w.sum()) / node_dc if node_dc > 0 else 1.0
        k = (facility_mw - fixed) / it_mw * psu if it_mw > 0 else 1.0  # facility MW per MW of GPU board power
        live_racks = max(s.n_racks - int(np.count_nonzero(ps.rack_dark)) - ps.rack_shed.size, 1)
        rack_mw = (facility_mw - fixed) / live_racks
        idle_racks, idle_rack_mw = ps.idle_racks_count, 0.0
        if idle_racks > act.racks_shed and it_mw > 0:  # what one more rack without work gives back
            idle_rack_mw = self._idle_rack_kw(ps, itp) / 1e3 * (facility_mw - fixed) / it_mw
        uncapped = None
        if policy.reads_gpu_demand(s.shortfall_policy, act, idle_racks):
            uncapped = np.minimum(dem.gpu_power_demand_w, dem.gpu_operator_limit_w)
            if gt.any_gpu_down:
                np.copyto(uncapped, 0.0, where=gt.gpu_down)
        wanted = policy.wanted_action(
            s.shortfall_policy,
            over_mw,
            k,
            float(itp.rack_gpu_power_w.sum()) / 1e6,
            uncapped,
            c.min_limit_min_w,
            c.tdp_max_w,
            rack_mw,
            act,
            idle_racks,
            idle_rack_mw,
            dem.gpu_util_frac,
            c.idle_w,
        )
        st.policy = policy.advance(st.policy, wanted, s.policy_response_s, dt_s)

    @staticmethod
    def _idle_rack_kw(ps: PowerStateResult, itp: ItPowerResult) -> float:
        """Mean input power of the racks without work still running [kW] (the next ones the policy sheds)."""
        running = ps.rack_idle_flag & (itp.rack_power_kw > 0.0)
        return float(itp.rack_power_kw[running].mean()) if running.any() else 0.0

    def swing_share(self, sw: swing.SwingReport, ps: PowerStateResult, site: SiteResult) -> sources.SwingShare:
        """Share of the swing each source carries, against its limits (:func:`twin.physics.sources.swing_share`)."""
        s, d = self.const.state, site.supply.dispatch
        cap = np.where(s.source_kind == BATTERY, s.source_capacity_mw, d.capacity_mw)  # bursts: full rating
        return sources.swing_share(
            sw.amplitude_mw,
            sw.ramp_mw_per_s,
            sw.phase_s,
            s.source_kind,
            cap,
            d.source_power_mw,
            ps.source_live,
            self.source_step_mw,
            s.source_ramp_mw_per_s,
            s.source_energy_mwh,
            self.source_efficiency_frac,
            d.battery_soc_frac,
        )

    def checks_of(self, sw: swing.SwingReport, ps: PowerStateResult, site: SiteResult):
        """Reserve, N-1, frequency, load rejection and the grid contract of this tick
        (:func:`twin.physics.island.generation_checks`), as a function to call when they are read:
        most ticks nobody reads them."""
        st, d = self.state, site.supply.dispatch
        args = (
            self.units,
            ps.source_live,
            d.capacity_mw,
            d.source_power_mw,
            d.battery_soc_frac,
            st.step_ready_frac,
            st.step_limited,
            site.facility_mw,
            sw,
        )
        return lambda: island.generation_checks(*args)
