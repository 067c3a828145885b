"""The twin engine: one tick composes the physical models into a :class:`Snapshot`.

:class:`TwinEngine` is built once per site and composes one object per phase, each in its
own module, each precomputing what it needs and owning the state it carries from one
tick to the next:

* inputs and load (:mod:`twin.engine.load`): weather, power state, demand;
* GPU thermal (:mod:`twin.engine.gpus`): throttle, board power, thermal step — carries :class:`GpuState`;
* cooling loops and plant (:mod:`twin.engine.coolant`): what the plates see, the CDU step, the
  facility loops and plant — carries :class:`CoolingState`;
* power tree and sources (:mod:`twin.engine.supply`): IT power, the tree and N-1, dispatch,
  the shortfall policy's step, the swing's share per source — carries :class:`SupplyState`;
* site balance (:mod:`twin.engine.balance`): facility power and what fits in the supply;
* fabric (:mod:`twin.engine.network`), jobs and swing (:mod:`twin.engine.jobs`),
  projections (:mod:`twin.engine.projections`).

Site constants several phases read are :class:`twin.engine.constants.SiteConstants`.

:meth:`TwinEngine.tick` advances the twin by ``dt_s`` under :class:`TickInputs`: it runs
the phases in order, each taking the typed results it needs, and builds the
:class:`twin.engine.snapshot.Snapshot` and :class:`TickDetail` from the
:class:`~twin.engine.phases.TickResults`.  The phases call the model functions of
:mod:`twin.physics` rather than re-deriving them.

Every coolant node steps exactly and passes on what it did not store, so facility power
equals the heat rejected at the towers plus the change of stored heat, every tick.  The
GPUs see the secondary supply predicted with the previous tick's heat (the heat phase
corrects it); the CDUs see the plant's supply of the previous tick, each delayed by its
pipe run.  Approximations are listed in ``docs/physics.md``.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np

from twin.engine.balance import SiteBalance, SiteBalancePhase
from twin.engine.constants import SiteConstants
from twin.engine.coolant import CoolingPhase
from twin.engine.gpus import GpuThermalPhase
from twin.engine.groups import Groups
from twin.engine.inputs import DEFAULT_UTIL_FRAC, PlacedJob, TickInputs
from twin.engine.jobs import JobsPhase
from twin.engine.load import LoadPhase
from twin.engine.network import FabricPhase
from twin.engine.phases import (
    CoolingResult,
    DemandResult,
    GpuThermalResult,
    HeatResult,
    ItPowerResult,
    PowerStateResult,
    PowerTreeResult,
    SiteResult,
    TickDetail,
    TickResults,
    WeatherResult,
)
from twin.engine.projections import ProjectionPhase
from twin.engine.snapshot import Snapshot
from twin.engine.supply import PowerPhase
from twin.physics import policy
from twin.site.tables import SiteTables

__all__ = ["PlacedJob", "SiteBalance", "TickDetail", "TickInputs", "TwinEngine", "START_TS", "DEFAULT_UTIL_FRAC"]

XID_THERMAL_SHUTDOWN = 79  # [NVIDIA-XID-Catalog]: "fallen off the bus", thermal suspect
START_TS = datetime(2024, 7, 22, 9, 20, tzinfo=UTC)  # Colossus training start, 04:20 CDT [Musk-2024-07-22]


class TwinEngine:
    """Per-site tick engine (see module docstring).

    ``fabric_phase`` and ``projection_phase`` are the classes of those two phases; a
    subclass may put cheaper ones in their place (the replay does).
    """

    fabric_phase: type[FabricPhase] = FabricPhase
    projection_phase: type[ProjectionPhase] = ProjectionPhase

    def __init__(self, state: SiteTables, start: datetime = START_TS, settle: bool = True) -> None:
        self.state = state
        self.ts = start
        self.const = SiteConstants(state)
        self.load = LoadPhase(self.const)
        self.gpus = GpuThermalPhase(self.const)
        self.cooling = CoolingPhase(self.const, self.gpus.state.heat_cdu_j)
        self.power = PowerPhase(self.const)
        self.balance = SiteBalancePhase(self.const)
        self.fabric = self.fabric_phase(self.const)
        self.jobs = JobsPhase(self.const)
        self.projections = self.projection_phase(self.const)
        self.detail: TickDetail | None = None
        if settle:
            self.settle(TickInputs(ts=start))

    @property
    def gpu_temp_c(self) -> np.ndarray:
        """Die temperature per GPU after the last tick [°C]."""
        return self.gpus.state.temp_c

    @property
    def by_rack(self) -> Groups:
        """GPUs grouped by rack (:class:`twin.engine.groups.Groups`)."""
        return self.const.by_rack

    @property
    def policy(self) -> policy.PolicyState:
        """The shortfall policy's state after the last tick (in force from the next, and pending)."""
        return self.power.policy

    def settle(self, inputs: TickInputs) -> Snapshot:
        """Reach the steady state under ``inputs`` (long exact steps); batteries and UPSs stay full.

        Two steps, and up to three more while the shortfall policy is still changing its action.
        """
        self.power.state.settling = True  # settling is not time: no store drains, no UPS drops its racks
        try:
            for i in range(5):
                before = self.power.policy.applied
                snap = self.tick(3600.0, inputs)
                if i >= 1 and self.power.policy.applied.same_as(before):
                    break
        finally:
            self.power.state.settling = False
        self.power.reset_stores()
        st = self.power.state  # the settle's wishes are not the last seconds of time: the window starts empty
        st.policy = dataclasses.replace(st.policy, recent=())
        return snap

    # --- tick ---------------------------------------------------------------------------
    def tick(self, dt_s: float, inputs: TickInputs | None = None) -> Snapshot:
        """Advance the twin by ``dt_s`` seconds under ``inputs`` and return the snapshot."""
        if not (dt_s >= 0.0 and np.isfinite(dt_s)):
            raise ValueError(f"dt_s: must be a finite number >= 0 (got {dt_s!r})")
        inp = inputs or TickInputs()
        ts = inp.ts if inp.ts is not None else self.ts + timedelta(seconds=dt_s)
        if ts.tzinfo is None:
            raise ValueError("TickInputs.ts: must be timezone-aware (UTC)")
        act = self.power.policy.applied
        wx = self.load.weather(ts, inp)
        ps = self.load.power_state(inp, self.power.dropped_ups(inp.recover_down_gpus), act.racks_shed)
        dem = self.load.demand(inp, ps, act, self.gpus.state.util_frac, self.gpus.state.power_w)
        cool = self.cooling.supply(dt_s, inp, ps, wx, self.power.state.supply_dipped)
        gt = self.gpus.step(dt_s, inp, dem, cool)
        itp = self.power.it_power(ps, dem, gt)
        heat = self.cooling.heat(dt_s, cool, gt, itp)
        tree = self.power.tree(ps, itp)
        site = self._site(dt_s, wx, ps, dem, cool, gt, itp, heat, tree)
        fab = self.fabric.run(inp, dem, gt)
        jobs = self.jobs.run(inp, gt, fab)
        sw = self.jobs.swing(inp, ps, dem, gt, itp, tree, site, jobs)
        share = self.power.swing_share(sw, ps, site)
        checks = self.power.checks_of(sw, ps, site)
        proj = self.projections.run(inp, ps, cool, gt, itp, heat, self.gpus.state.temp_c)
        self.ts = ts
        return self._snapshot(
            TickResults(
                ts,
                wx,
                ps,
                dem,
                cool,
                gt,
                itp,
                heat,
                tree,
                site,
                fab,
                jobs.statuses,
                sw,
                proj,
                swing_share=share,
                generation=checks,
            )
        )

    def _site(
        self,
        dt_s: float,
        wx: WeatherResult,
        ps: PowerStateResult,
        dem: DemandResult,
        cool: CoolingResult,
        gt: GpuThermalResult,
        itp: ItPowerResult,
        heat: HeatResult,
        tree: PowerTreeResult,
    ) -> SiteResult:
        """Site balance: plant, facility power, what the sources deliver, and the policy's next action."""
        it_mw = float(itp.rack_power_kw.sum()) / 1e3
        tree_mw = tree.tree_input_kw / 1e3
        plant = self.cooling.plant(dt_s, cool, heat, self.balance.indoor_mw(it_mw, tree_mw), self.gpus.state.heat_cdu_j)
        cooling_mw = plant.cooling_kw["total_kw"] / 1e3
        facility = self.balance.facility_mw(tree_mw, cooling_mw)
        supply = self.power.sources(dt_s, facility, tree, ps, wx)
        balance = self.balance.balance(it_mw, tree_mw, cooling_mw, facility, supply.dispatch)
        in_force = self.power.policy.applied
        over_mw = facility - balance.generation_capacity_mw * (1.0 - policy.MARGIN_FRAC)
        self.power.policy_step(dt_s, over_mw, facility, it_mw, ps, itp, dem, gt)
        return SiteResult(
            cooling_kw=plant.cooling_kw,
            it_mw=it_mw,
            cooling_mw=cooling_mw,
            facility_mw=facility,
            source_power_mw=supply.dispatch.source_power_mw,
            battery_soc_frac=self.power.state.battery_soc_frac,
            balance=balance,
            loop_heat_kw=plant.loop_heat_kw,
            loop_return_temp_c=plant.loop_return_temp_c,
            plant_supply_temp_c=plant.plant_supply_temp_c,
            plant_economiser_kw=plant.plant_economiser_kw,
            plant_chiller_kw=plant.plant_chiller_kw,
            plant_chillers_online_count=plant.plant_chillers_online_count,
            plant_cop_ratio=plant.plant_cop_ratio,
            heat_rejected_mw=plant.heat_rejected_mw,
            heat_stored_mw=plant.heat_stored_mw,
            supply=supply,
            policy_in_force=in_force,
            policy=self.power.policy,
        )

    # --- snapshot -------------------------------------------------------------------------
    def _detail(self, res: TickResults) -> TickDetail:
        """What the tick found that the Snapshot has no field for."""
        site, tree, topo = res.site, res.power_tree, self.const.topo
        detail = TickDetail(
            clock_event_mask=res.gpu_thermal.gpu_clock_event_mask,
            dark_racks=np.flatnonzero(res.power_state.rack_dark).astype(np.int32),
            power_live=res.power_state.power_live,
            source_live=res.power_state.source_live,
            power_n1_worst_by=tree.power_n1_worst_by,
            power_headroom_kw=topo.usable_kw - tree.feed_power_kw,
            power_n1_headroom_kw=topo.usable_kw - tree.power_n1_load_kw,
            balance=site.balance,
            swing=res.swing,
            cooling_kw=site.cooling_kw,
            projections_s=res.projections.times_s,
            supply=site.supply,
            policy_in_force=site.policy_in_force,
            policy=site.policy,
            swing_share=res.swing_share,
            racks_shed=res.power_state.rack_shed,
        )
        detail.defer_generation(res.generation)
        return detail

    def _snapshot(self, res: TickResults) -> Snapshot:
        """The snapshot of the tick's results (and :attr:`detail` beside it)."""
        c = self.const
        gt, site, tree, cool, heat, sw = res.gpu_thermal, res.site, res.power_tree, res.cooling, res.heat, res.swing
        it_mw, facility = site.it_mw, site.facility_mw
        assert site.supply is not None  # the supply phase ran this tick
        self.detail = self._detail(res)
        down = self.gpus.state.down
        xid = np.zeros(c.state.n_gpus, dtype=np.int16)
        if down.any():
            xid[down & ~res.demand.gpu_off] = XID_THERMAL_SHUTDOWN
        util = res.demand.gpu_util_frac
        return Snapshot(
            ts=self.ts,
            gpu_temp_c=self.gpus.state.temp_c,
            hbm_temp_c=gt.hbm_temp_c,
            gpu_power_w=gt.gpu_power_w,
            gpu_util_frac=np.where(gt.gpu_down, 0.0, util) if gt.any_gpu_down else util,
            sm_clock_mhz=gt.gpu_clock_frac * c.max_clock_mhz,
            throttle_frac=gt.gpu_clock_frac,
            gpu_state=gt.gpu_state,
            last_xid_code=xid,
            rack_power_kw=res.it_power.rack_power_kw,
            rack_max_gpu_temp_c=res.projections.rack_max_gpu_temp_c,
            rack_time_to_throttle_s=res.projections.times_s["pump_loss_throttle_s"],
            coolant_supply_temp_c=heat.coolant_supply_temp_c,
            coolant_return_temp_c=heat.coolant_return_temp_c,
            coolant_flow_lpm=cool.coolant_flow_lpm,
            cdu_heat_kw=heat.cdu_heat_kw,
            cdu_capacity_kw=cool.cdu_capacity_kw,
            pumps_running_count=cool.pumps_running_count.astype(np.int8),
            loop_supply_temp_c=cool.loop_supply_temp_c,
            loop_return_temp_c=site.loop_return_temp_c,
            loop_heat_kw=site.loop_heat_kw,
            feed_power_kw=tree.feed_power_kw,
            load_frac=tree.load_frac,
            power_n1_load_frac=tree.power_n1_load_frac,
            source_power_mw=site.source_power_mw,
            battery_soc_frac=site.battery_soc_frac.copy(),
            link_up_flag=res.fabric.link_up_flag,
            link_util_frac=res.fabric.link_util_frac,
            it_power_mw=it_mw,
            cooling_power_mw=site.cooling_mw,
            facility_power_mw=facility,
            generation_capacity_mw=site.balance.generation_capacity_mw,
            # PUE counts network switches as IT equipment (The Green Grid, PUE: a comprehensive
            # examination of the metric, WP#49, 2012: IT equipment = compute, storage, network)
            pue_ratio=facility / (it_mw + c.network_mw) if it_mw > 0 else float("nan"),
            outdoor_wet_bulb_c=res.weather.wet_bulb_c,
            outdoor_dry_bulb_c=res.weather.dry_bulb_c,
            swing_amplitude_mw=sw.amplitude_mw,
            swing_ramp_mw_per_s=sw.ramp_mw_per_s,
            jobs=res.jobs,
            policy_gpu_cap_w=site.policy_in_force.gpu_cap_w,
            n_gpus_shed=int(c.gpus_per_rack[res.power_state.rack_shed].sum()),
            unserved_mw=site.supply.unserved_mw,
            ups_ride_through_s=site.supply.ups_ride_through_s,
            heat_rejected_mw=site.heat_rejected_mw,
            heat_stored_mw=site.heat_stored_mw,
        )
