"""Cooling loops and plant: what the cold plates see, the CDU loop step, facility loops and the plant.

* :meth:`CoolingPhase.supply` → :class:`CoolingResult`: pump fail-over, facility and secondary
  supply after their transport delays, exchangers and plate resistances, chillers available;
* :meth:`CoolingPhase.heat` → :class:`HeatResult`: heat into each secondary loop (GPU packages,
  CPU plates, pump work) and the CDU step under supply control; air heat per facility loop;
* :meth:`CoolingPhase.plant` → :class:`PlantResult`: facility loops and plant step, cooling
  power by part, heat rejected at the towers and the change of heat stored.

It owns the cooling's carried state, :class:`CoolingState`.  Every coolant node steps
exactly and passes on what it did not store (:mod:`twin.physics.loops`,
:mod:`twin.physics.plant`).  The GPUs see the secondary supply predicted with the
previous tick's heat (the heat step corrects it); the CDUs see the plant's supply of the
previous tick, each delayed by its pipe run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from twin.engine.constants import SiteConstants
from twin.engine.inputs import TickInputs
from twin.engine.phases import (
    CoolingResult,
    GpuThermalResult,
    HeatResult,
    ItPowerResult,
    PlantResult,
    PowerStateResult,
    WeatherResult,
)
from twin.physics import cooling, loops, plant, thermal
from twin.site import cooling_defaults
from twin.site.tables import SiteTables

log = logging.getLogger(__name__)

GPU_FLOW_SHARE_FRAC = 0.8  # [E] share of a rack's secondary flow through GPU cold plates (rest: CPUs, NICs)
BASE_LIQUID_CAPTURE_FRAC = 0.5  # [E] share of non-GPU node power removed by liquid (CPU cold plates)


@dataclass
class CoolingState:
    """What the coolant carries from one tick to the next."""

    cdu_pumps_count: np.ndarray  # [n_cdus] pumps running (float)
    coolant_flow_lpm: np.ndarray  # [n_cdus] secondary flow
    cdu_temp_c: np.ndarray  # [n_cdus] mixed secondary coolant
    cdu_heat_in_w: np.ndarray  # [n_cdus] heat into each secondary loop over the last step
    loop_temp_c: np.ndarray  # [n_loops] facility water returning
    plant_temp_c: np.ndarray  # [n_plants] plant water (its supply)
    loop_delay: loops.DelayLine  # plant supply → CDUs
    cdu_delay: loops.DelayLine  # CDU supply → cold plates
    chillers_online: np.ndarray  # [n_plants] (float)
    chiller_restart_left_s: np.ndarray  # [n_plants]
    chillers_loading: np.ndarray  # [n_plants] restarted chillers still soft-loading (float)
    chiller_loading_s: np.ndarray  # [n_plants] for how long they have been [s]
    tower_load_frac: np.ndarray  # [n_plants] heat at the towers over their capacity, last step
    stored_heat_j: float  # heat in GPU packages, coolant, facility and plant water (0 °C reference)


class CoolingPhase:
    """Cooling loops and plant (see module docstring)."""

    def __init__(self, const: SiteConstants, gpu_heat_j: np.ndarray) -> None:
        """``gpu_heat_j``: heat held by the GPU packages per CDU at the start [J]."""
        self.const = const
        s = const.state
        self._cdus(s)
        self._facility(s)
        # chillers are fed from the top-level buses, not from the UPSs (twin.physics.plant)
        self.plant_buses = const.topo.top_down[0] if s.n_power else np.zeros(0, dtype=np.int64)
        self.plant_chillers_by_bus = plant.chillers_by_bus_count(s.plant_chiller_count, self.plant_buses.size)
        self._exchanger_cache: tuple[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = (
            None  # (loop supply and flow) -> (facility water, capacity, effectiveness)
        )
        self._plate_cache: tuple[bytes, tuple[np.ndarray, np.ndarray]] | None = (
            None  # secondary flows -> (plate caloric resistance, plate flow ratio)
        )
        plant_temp = s.plant_supply_setpoint_c.astype(np.float64).copy()
        self.state = CoolingState(
            cdu_pumps_count=self.cdu_pumps.copy(),
            coolant_flow_lpm=cooling.coolant_flow_lpm(
                self.cdu_pumps, self.cdu_pumps_required, self.cdu_design_flow_lpm
            ),
            cdu_temp_c=self.cdu_setpoint_c.copy(),
            cdu_heat_in_w=np.zeros(s.n_cdus),
            loop_temp_c=plant_temp[s.loop_plant].copy(),
            plant_temp_c=plant_temp,
            loop_delay=loops.DelayLine(plant_temp[s.loop_plant]),
            cdu_delay=loops.DelayLine(self.cdu_setpoint_c),
            chillers_online=s.plant_chiller_count.astype(np.float64).copy(),
            chiller_restart_left_s=np.zeros(self.n_plants),
            chillers_loading=np.zeros(self.n_plants),
            chiller_loading_s=np.zeros(self.n_plants),
            tower_load_frac=np.zeros(self.n_plants),
            stored_heat_j=0.0,
        )
        self.state.stored_heat_j = self.stored_heat_j(gpu_heat_j)

    def _cdus(self, s: SiteTables) -> None:
        """CDU constants: pumps, flow, capacity curve, coolant, setpoint, heat capacity, supply pipe."""
        cdu = s.cdu_spec_array
        self.cdu_pumps = cdu("pumps")
        self.cdu_pumps_required = cdu("pumps_required")
        self.cdu_pump_power_w = cdu("pump_power_w")
        self.cdu_design_flow_lpm = cdu("design_flow_lpm")
        self.cdu_approach_k = cdu("approach_k")
        self.cdu_failover_s = cdu("pump_failover_s")
        self.cdu_loop_volume_l = cdu("loop_volume_l")
        self.cdu_curve_x, self.cdu_curve_y = _capacity_curves(s)
        specs = s.cdu_specs
        coolants = {c.coolant for c in specs}
        if len(coolants) > 1:
            log.warning("several secondary coolants %s; using the first for properties", sorted(coolants))
        self.coolant = specs[0].coolant if specs else "PG25"
        self.cdu_in_rack = np.array([specs[i].placement == "in-rack" for i in s.cdu_spec], dtype=bool)
        # the CDU holds its secondary supply at the facility setpoint plus its rated approach
        self.cdu_setpoint_c = s.plant_supply_setpoint_c[s.loop_plant[s.cdu_loop]] + self.cdu_approach_k
        self.cdu_rated_kw = np.maximum(
            cooling.cdu_capacity_kw(self.cdu_setpoint_c, self.cdu_curve_x, self.cdu_curve_y), 1e-3
        )
        # coolant properties at the setpoints, held constant (they change < 1 % per 10 K), so the
        # stored heat C·T of every node is exact
        self.cdu_cp, self.cdu_rho = cooling.coolant_properties(self.cdu_setpoint_c, self.coolant)
        self.cdu_w_per_k_per_lpm = self.cdu_rho * self.cdu_cp / 60_000.0
        self.cdu_heat_capacity_j_per_k = self.cdu_loop_volume_l / 1e3 * self.cdu_rho * self.cdu_cp
        self.cdu_design_w_per_k = self.cdu_design_flow_lpm * self.cdu_w_per_k_per_lpm
        self.cdu_pipe_l = loops.pipe_volume_l(cdu("supply_pipe_length_m"), cdu("supply_pipe_id_mm"))
        self.plate_design_kg_s = (
            cooling.mass_flow_kg_s(self.cdu_design_flow_lpm, self.cdu_rho)
            * GPU_FLOW_SHARE_FRAC
            / np.maximum(self.const.gpus_per_cdu, 1)
        )

    def _facility(self, s: SiteTables) -> None:
        """Facility loops (water volume, supply pipe; defaults filled in) and plants (water, chillers)."""
        self.n_plants, self.n_loops = len(s.plant_name), len(s.loop_name)
        self.rack_loop = s.cdu_loop[s.rack_cdu]
        self.loop_rack_share_frac = np.bincount(self.rack_loop, minlength=self.n_loops) / max(s.n_racks, 1)
        cp_w, rho_w = cooling.coolant_properties(s.plant_supply_setpoint_c[s.loop_plant], "water")
        self.loop_w_per_k_per_lpm = rho_w * cp_w / 60_000.0
        length = (
            s.loop_pipe_length_m
            if s.loop_pipe_length_m is not None
            else np.full(self.n_loops, cooling_defaults.LOOP_PIPE_LENGTH_M)
        )
        pipe_id = s.loop_pipe_id_mm if s.loop_pipe_id_mm is not None else cooling_defaults.pipe_id_mm(s.loop_flow_lpm)
        volume = s.loop_volume_l if s.loop_volume_l is not None else cooling_defaults.loop_volume_l(length, pipe_id)
        self.loop_heat_capacity_j_per_k = volume / 1e3 * rho_w * cp_w
        self.loop_pipe_l = loops.pipe_volume_l(length, pipe_id)
        # plant: one water node, chillers with a Carnot fraction calibrated at the design lift
        cp_p, rho_p = cooling.coolant_properties(s.plant_supply_setpoint_c, "water")
        plant_flow = np.bincount(s.loop_plant, weights=s.loop_flow_lpm, minlength=self.n_plants)
        plant_l = s.plant_volume_l if s.plant_volume_l is not None else cooling_defaults.plant_volume_l(plant_flow)
        self.plant_heat_capacity_j_per_k = np.maximum(plant_l, 1.0) / 1e3 * rho_p * cp_p
        self.plant_restart_s = (
            s.plant_chiller_restart_s
            if s.plant_chiller_restart_s is not None
            else np.full(self.n_plants, cooling_defaults.CHILLER_RESTART_S)
        )

    def stored_heat_j(self, gpu_heat_j: np.ndarray) -> float:
        """Heat held in GPU packages (``gpu_heat_j`` per CDU), secondary coolant, facility and plant water [J]."""
        st = self.state
        return float(
            gpu_heat_j.sum()
            + self.cdu_heat_capacity_j_per_k @ st.cdu_temp_c
            + self.loop_heat_capacity_j_per_k @ st.loop_temp_c
            + self.plant_heat_capacity_j_per_k @ st.plant_temp_c
        )

    # --- what the cold plates see -------------------------------------------------------------
    def supply(
        self, dt_s: float, inp: TickInputs, ps: PowerStateResult, wx: WeatherResult, supply_dipped: bool
    ) -> CoolingResult:
        """Pumps and fail-over, facility and secondary supply after their transport delays, plate resistances.

        ``supply_dipped``: a source tripped last tick and the rest fell short, so every bus dipped
        and the chillers stopped.
        """
        st = self.state
        flow = self._pump_flow(dt_s, inp, ps)
        loop_flow, loop_supply = self._loop_supply(inp)
        fw, cap_kw, eff = self._cdu_exchangers(loop_supply, loop_flow)
        # secondary supply: predicted for the end of the step with the previous step's heat (the
        # CDU step of the heat phase corrects it), then delayed by the manifold transit
        flow_w_per_k = flow * self.cdu_w_per_k_per_lpm
        setpoint = self.cdu_setpoint_c
        if inp.cdu_supply_setpoint_c is not None:  # an operator's setpoint per CDU (NaN: the design setpoint)
            wanted = np.asarray(inp.cdu_supply_setpoint_c, dtype=np.float64)
            setpoint = np.where(np.isfinite(wanted), wanted, setpoint)
        _, predicted, _ = loops.cdu_loop_step(
            st.cdu_temp_c, st.cdu_heat_in_w, flow_w_per_k, setpoint, fw, eff, self.cdu_heat_capacity_j_per_k, dt_s
        )
        st.cdu_delay.push(predicted, dt_s)
        supply = st.cdu_delay.read(loops.transport_delay_s(self.cdu_pipe_l, flow))
        r_cal_cdu, flow_ratio = self._plates(flow)
        return CoolingResult(
            pumps_running_count=st.cdu_pumps_count,
            coolant_flow_lpm=flow,
            cdu_flow_w_per_k=flow_w_per_k,
            coolant_supply_temp_c=supply,
            cdu_setpoint_c=setpoint,
            cdu_facility_temp_c=fw,
            cdu_capacity_kw=cap_kw,
            cdu_effectiveness_frac=eff,
            cdu_coolant_cp_j_per_kg_k=self.cdu_cp,
            cdu_coolant_density_kg_per_m3=self.cdu_rho,
            cdu_plate_r_cal_c_per_w=r_cal_cdu,
            cdu_plate_flow_ratio_frac=flow_ratio,
            loop_supply_temp_c=loop_supply,
            loop_flow_lpm=loop_flow,
            plant_chillers_available_count=self._chillers_available(inp, ps, supply_dipped),
            wet_bulb_c=wx.wet_bulb_c,
        )

    def _pump_flow(self, dt_s: float, inp: TickInputs, ps: PowerStateResult) -> np.ndarray:
        """Pumps running and the secondary flow after fail-over (a measured flow wins) [l/min]; carried on."""
        s, st = self.const.state, self.state
        pumps = (
            self.cdu_pumps.copy()
            if inp.pumps_running_count is None
            else np.asarray(inp.pumps_running_count, dtype=np.float64)
        )
        if self.cdu_in_rack.any() and ps.rack_dark.any():  # an in-rack CDU is powered by its rack
            cdu_dark = np.bincount(s.rack_cdu, weights=ps.rack_dark, minlength=s.n_cdus) >= self.const.racks_per_cdu
            pumps = np.where(self.cdu_in_rack & cdu_dark, 0.0, pumps)
        flow = loops.pump_flow_lpm(
            st.coolant_flow_lpm,
            st.cdu_pumps_count,
            pumps,
            self.cdu_pumps_required,
            self.cdu_design_flow_lpm,
            self.cdu_failover_s,
            dt_s,
        )
        if inp.coolant_flow_lpm is not None:
            measured = np.asarray(inp.coolant_flow_lpm, dtype=np.float64)
            flow = np.where(np.isfinite(measured), np.maximum(measured, 0.0), flow)
        st.cdu_pumps_count, st.coolant_flow_lpm = pumps, flow
        return flow

    def _loop_supply(self, inp: TickInputs) -> tuple[np.ndarray, np.ndarray]:
        """Facility flow per loop and the plant's supply reaching the CDUs after the loop's transport delay."""
        loop_flow = self.const.state.loop_flow_lpm
        if inp.loop_flow_lpm is not None:
            forced = np.asarray(inp.loop_flow_lpm, dtype=np.float64)
            loop_flow = np.where(np.isfinite(forced), np.maximum(forced, 0.0), loop_flow)
        loop_supply = self.state.loop_delay.read(loops.transport_delay_s(self.loop_pipe_l, loop_flow))
        if inp.loop_supply_temp_c is not None:
            override = np.asarray(inp.loop_supply_temp_c, dtype=np.float64)
            cooling.coolant_properties(override[np.isfinite(override)], "water")  # raises outside the liquid range
            loop_supply = np.where(np.isfinite(override), override, loop_supply)
        return loop_flow, loop_supply

    def _chillers_available(self, inp: TickInputs, ps: PowerStateResult, supply_dipped: bool) -> np.ndarray:
        """Chillers with power and not failed, per plant; chillers on buses that dipped stop (twin.physics.plant)."""
        if inp.plant_chillers_running is not None:
            return np.asarray(inp.plant_chillers_running, dtype=np.float64)
        if not self.plant_buses.size:
            return np.asarray(self.const.state.plant_chiller_count, dtype=np.float64)
        powered = plant.chillers_powered_count(
            self.plant_chillers_by_bus, ps.power_live[self.plant_buses], supply_dipped
        )
        return np.asarray(powered, dtype=np.float64)

    def _plates(self, flow_lpm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Caloric resistance of one GPU plate (inf with no flow) and its flow over design, per CDU;
        recomputed only when the secondary flows change."""
        key = flow_lpm.tobytes()
        if self._plate_cache is None or self._plate_cache[0] != key:
            plate_flow = (
                cooling.mass_flow_kg_s(flow_lpm, self.cdu_rho)
                * GPU_FLOW_SHARE_FRAC
                / np.maximum(self.const.gpus_per_cdu, 1)
            )
            flowing = plate_flow > 0.0
            r_cal = np.full(self.const.state.n_cdus, np.inf)
            r_cal[flowing] = thermal.caloric_resistance_c_per_w(plate_flow[flowing], self.cdu_cp[flowing])
            self._plate_cache = (key, (r_cal, plate_flow / self.plate_design_kg_s))
        return self._plate_cache[1]

    def _cdu_exchangers(
        self, loop_supply_c: np.ndarray, loop_flow_lpm: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Facility water, rated-approach capacity and effectiveness per CDU; recomputed only when the
        loops' supply or flow change (the plant holds its setpoint most of the time)."""
        key = loop_supply_c.tobytes() + loop_flow_lpm.tobytes()
        if self._exchanger_cache is None or self._exchanger_cache[0] != key:
            s = self.const.state
            fw = loop_supply_c[s.cdu_loop]
            # capacity curve: duty at the rated approach, i.e. secondary supply = facility water + approach;
            # floored at 10 % of the rated duty [E] so a CDU far past its curve keeps a finite approach
            cap_kw = np.maximum(
                cooling.cdu_capacity_kw(fw + self.cdu_approach_k, self.cdu_curve_x, self.cdu_curve_y),
                0.1 * self.cdu_rated_kw,
            )
            share = np.minimum(loop_flow_lpm / s.loop_flow_lpm, 1.0)[s.cdu_loop]  # no facility flow: no exchange
            eff = loops.hx_effectiveness_frac(cap_kw * 1e3, self.cdu_design_w_per_k, self.cdu_approach_k) * share
            self._exchanger_cache = (key, (fw, cap_kw, eff))
        return self._exchanger_cache[1]

    # --- the secondary loops ---------------------------------------------------------------------
    def heat(self, dt_s: float, cool: CoolingResult, gt: GpuThermalResult, itp: ItPowerResult) -> HeatResult:
        """Secondary loops: heat in (GPU packages, CPU plates, pump work) and the CDU step; air heat per loop."""
        c, st = self.const, self.state
        s = c.state
        rack_dc = c.node_by_rack.sum(itp.node_dc_power_w)
        base_liquid_w = BASE_LIQUID_CAPTURE_FRAC * (rack_dc - itp.rack_gpu_power_w)
        air_w = itp.rack_power_kw * 1e3 - itp.rack_gpu_power_w - base_liquid_w  # PSU losses, rest of the base
        pump_w = cooling.cdu_pump_power_w(  # pump work ends as heat in the coolant
            cool.pumps_running_count, cool.coolant_flow_lpm, self.cdu_design_flow_lpm, self.cdu_pump_power_w
        )
        heat_in = gt.cdu_gpu_heat_w + np.bincount(s.rack_cdu, weights=base_liquid_w, minlength=s.n_cdus) + pump_w
        temp, supply, out_w = loops.cdu_loop_step(
            st.cdu_temp_c,
            heat_in,
            cool.cdu_flow_w_per_k,
            cool.cdu_setpoint_c,
            cool.cdu_facility_temp_c,
            cool.cdu_effectiveness_frac,
            self.cdu_heat_capacity_j_per_k,
            dt_s,
        )
        st.cdu_temp_c, st.cdu_heat_in_w = temp, heat_in
        st.cdu_delay.correct_last(supply)
        return HeatResult(
            cdu_heat_kw=out_w / 1e3,
            coolant_supply_temp_c=supply,
            coolant_return_temp_c=temp,
            cdu_pump_kw=float(np.sum(pump_w)) / 1e3,
            loop_air_heat_kw=np.bincount(self.rack_loop, weights=air_w, minlength=self.n_loops) / 1e3,
            loop_cdu_heat_kw=np.bincount(s.cdu_loop, weights=out_w, minlength=self.n_loops) / 1e3,
            cdu_heat_in_w=heat_in,
        )

    # --- facility loops and plant ------------------------------------------------------------------
    def plant(
        self, dt_s: float, cool: CoolingResult, heat: HeatResult, indoor_mw: float, gpu_heat_j: np.ndarray
    ) -> PlantResult:
        """Facility loops and plant step; cooling power by part, heat rejected and stored.

        ``indoor_mw`` is the heat released indoors outside the racks (distribution losses,
        switches, site overhead), taken up by air handlers on the facility loops in
        proportion to their racks [E]; ``gpu_heat_j`` the heat the GPU packages hold per CDU
        after the step (for the heat stored).
        """
        s, st = self.const.state, self.state
        loop_w_per_k = cool.loop_flow_lpm * self.loop_w_per_k_per_lpm
        facility_pumps_kw = cooling.pump_power_kw(
            cool.loop_flow_lpm, cooling.FACILITY_PUMP_HEAD_KPA, cooling.FACILITY_PUMP_EFF_FRAC
        )
        loop_in_w = (
            heat.loop_cdu_heat_kw + heat.loop_air_heat_kw + facility_pumps_kw
        ) * 1e3 + indoor_mw * 1e6 * self.loop_rack_share_frac
        loop_temp, to_plant_w = loops.facility_loop_step(
            st.loop_temp_c, loop_in_w, loop_w_per_k, cool.loop_supply_temp_c, self.loop_heat_capacity_j_per_k, dt_s
        )
        st.loop_temp_c = loop_temp
        temp, econ_w, chill_w, tower_c = self._plant_step(dt_s, cool, loop_temp, to_plant_w, loop_w_per_k)
        plr = plant.staged_part_load_frac(chill_w, s.plant_chiller_kw * 1e3, st.chillers_online)
        cop = plant.chiller_cop(s.plant_supply_setpoint_c, tower_c, s.plant_cop, plr)
        tower_kw = (econ_w + chill_w + chill_w / cop) / 1e3  # compressor work leaves through the towers too
        st.tower_load_frac = tower_kw / np.maximum(s.plant_capacity_kw, 1e-9)
        cool_kw = cooling.cooling_power_kw(heat.cdu_pump_kw, facility_pumps_kw, tower_kw, chill_w / 1e3, cop)
        stored = self.stored_heat_j(gpu_heat_j)
        heat_stored_mw = (stored - st.stored_heat_j) / dt_s / 1e6 if dt_s > 0 else 0.0
        st.stored_heat_j = stored
        return PlantResult(
            cooling_kw=cool_kw,
            loop_heat_kw=to_plant_w / 1e3,
            loop_return_temp_c=loop_temp,
            plant_supply_temp_c=temp,
            plant_economiser_kw=econ_w / 1e3,
            plant_chiller_kw=chill_w / 1e3,
            plant_chillers_online_count=st.chillers_online.copy(),
            plant_cop_ratio=cop,
            heat_rejected_mw=float(tower_kw.sum() + cool_kw["tower_fans_kw"]) / 1e3,
            heat_stored_mw=heat_stored_mw,
        )

    def _plant_step(
        self,
        dt_s: float,
        cool: CoolingResult,
        loop_temp: np.ndarray,
        to_plant_w: np.ndarray,
        loop_w_per_k: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Chillers online, tower water and the plant water step: (plant supply [°C], economiser W,
        chiller W, tower water [°C]); the plant's supply enters the loops' delay lines."""
        s, st = self.const.state, self.state
        n = self.n_plants
        plant_in_w = np.bincount(s.loop_plant, weights=to_plant_w, minlength=n)
        plant_w_per_k = np.bincount(s.loop_plant, weights=loop_w_per_k, minlength=n)
        plant_return = np.bincount(s.loop_plant, weights=loop_w_per_k * loop_temp, minlength=n)
        plant_return = np.where(plant_w_per_k > 0, plant_return / np.maximum(plant_w_per_k, 1e-300), st.plant_temp_c)
        before = st.chillers_online
        st.chillers_online, st.chiller_restart_left_s = plant.chillers_online_count(
            st.chillers_online,
            cool.plant_chillers_available_count,
            st.chiller_restart_left_s,
            self.plant_restart_s,
            dt_s,
        )
        capacity_count, st.chillers_loading, st.chiller_loading_s = plant.chillers_soft_loaded(
            before, st.chillers_online, st.chillers_loading, st.chiller_loading_s, dt_s
        )
        tower_c = cool.wet_bulb_c + plant.tower_approach_k(
            st.tower_load_frac, cool.wet_bulb_c, s.plant_tower_approach_k, s.plant_design_wet_bulb_c
        )
        temp, econ_w, chill_w = plant.plant_step(
            st.plant_temp_c,
            plant_in_w,
            plant_return,
            plant_w_per_k,
            s.plant_supply_setpoint_c,
            tower_c,
            capacity_count * s.plant_chiller_kw * 1e3,
            self.plant_heat_capacity_j_per_k,
            dt_s,
        )
        st.plant_temp_c = temp
        st.loop_delay.push(temp[s.loop_plant], dt_s)
        return temp, econ_w, chill_w, tower_c


def _capacity_curves(s: SiteTables) -> tuple[np.ndarray, np.ndarray]:
    """Each CDU's capacity curve (supply °C → kW), padded to one width with its last point [n_cdus, width]."""
    specs = s.cdu_specs
    width = max(len(c.capacity_curve_supply_c) for c in specs) if specs else 2
    xs = np.array(
        [np.pad(c.capacity_curve_supply_c, (0, width - len(c.capacity_curve_supply_c)), mode="edge") for c in specs]
    )
    ys = np.array([np.pad(c.capacity_curve_kw, (0, width - len(c.capacity_curve_kw)), mode="edge") for c in specs])
    # padding repeats the last point; nudge repeated x so the curve stays increasing
    xs = xs + np.cumsum(np.diff(xs, prepend=xs[:, :1] - 1.0, axis=1) == 0, axis=1) * 1e-6
    return xs[s.cdu_spec], ys[s.cdu_spec]
