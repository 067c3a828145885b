"""The projections phase: per rack, the time to throttle and to shutdown after each cooling failure.

:meth:`ProjectionPhase.run` → :class:`ProjectionResult`, from the hottest GPU of each rack
and the conservative end of the rack's GPU models (highest resistance and idle power,
lowest heat capacity and thresholds): loss of one pump (:func:`twin.physics.failures.pump_loss`),
of the whole CDU, of the facility water, and a step of the supply temperature.  Dark racks
never throttle (inf).
"""

from __future__ import annotations

import numpy as np

from twin.engine.constants import SiteConstants, uniform_or_array
from twin.engine.inputs import TickInputs
from twin.engine.phases import (
    CoolingResult,
    GpuThermalResult,
    HeatResult,
    ItPowerResult,
    PowerStateResult,
    ProjectionResult,
)
from twin.physics import failures


class ProjectionPhase:
    """Per-rack times to throttle/shutdown after cooling failures (see module docstring)."""

    def __init__(self, const: SiteConstants) -> None:
        self.const = const
        s, by_rack, per_gpu = const.state, const.by_rack, const.per_gpu
        rack_min = lambda v: -by_rack.max(-per_gpu(v))  # noqa: E731
        self.rack_heat_capacity_j_per_k = rack_min(const.heat_capacity_j_per_k)
        # the two-node model (twin.physics.thermal.two_node_coefficients): junction share and junction-to-plate R
        self.rack_junction_heat_frac = uniform_or_array(
            rack_min(np.asarray(const.junction_heat_capacity_j_per_k) / np.asarray(const.heat_capacity_j_per_k))
        )
        self.rack_r_jp_c_per_w = uniform_or_array(
            rack_min(np.asarray(const.r_die_c_per_w) * (1.0 - np.asarray(const.r_conv_frac)))
        )
        self.rack_idle_w = by_rack.max(per_gpu(const.idle_w))
        self.rack_r_conv_frac = uniform_or_array(by_rack.max(per_gpu(const.r_conv_frac)))
        self.rack_max_op_c = rack_min(const.max_op_c)
        self.rack_slowdown_c = rack_min(const.slowdown_c)
        self.rack_shutdown_c = rack_min(const.shutdown_c)
        cdu = s.cdu_spec_array
        self.rack_pumps_required = cdu("pumps_required")[s.rack_cdu]
        self.cdu_failover_s = cdu("pump_failover_s")
        self.cdu_loop_volume_l = cdu("loop_volume_l")

    def run(
        self,
        inp: TickInputs,
        ps: PowerStateResult,
        cool: CoolingResult,
        gt: GpuThermalResult,
        itp: ItPowerResult,
        heat: HeatResult,
        gpu_temp_c: np.ndarray,
    ) -> ProjectionResult:
        """Per-rack times [s] after each cooling failure from the GPUs' temperatures ``gpu_temp_c`` after the step."""
        c = self.const
        rack_temp = c.by_rack.max(gpu_temp_c)
        rack_p = c.by_rack.max(gt.gpu_power_w)
        rack_cdu = c.state.rack_cdu
        supply = cool.coolant_supply_temp_c[rack_cdu]
        r_cal = cool.cdu_plate_r_cal_c_per_w[rack_cdu]
        r_cal = np.where(np.isfinite(r_cal), r_cal, 0.0)
        cp, rho = cool.cdu_coolant_cp_j_per_kg_k[rack_cdu], cool.cdu_coolant_density_kg_per_m3[rack_cdu]
        args = (rack_temp, rack_p, self.rack_idle_w)
        limits = (self.rack_max_op_c, self.rack_slowdown_c, self.rack_shutdown_c)
        out = {}
        out["pump_loss_throttle_s"], out["pump_loss_shutdown_s"] = failures.pump_loss(
            *args,
            supply,
            gt.rack_r_die_c_per_w,
            r_cal,
            self.rack_r_conv_frac,
            cool.cdu_plate_flow_ratio_frac[rack_cdu],
            self.rack_heat_capacity_j_per_k,
            cp,
            rho,
            cool.pumps_running_count[rack_cdu],
            self.rack_pumps_required,
            self.cdu_failover_s[rack_cdu],
            *limits,
            self.rack_junction_heat_frac,
        )
        out["cdu_loss_throttle_s"], out["cdu_loss_shutdown_s"] = failures.cdu_loss(
            *args, self.rack_heat_capacity_j_per_k, cp, rho, *limits
        )
        cdu_thr, cdu_shut = self._facility_loss(cool, itp, heat, rack_temp)
        out["facility_loss_throttle_s"], out["facility_loss_shutdown_s"] = cdu_thr[rack_cdu], cdu_shut[rack_cdu]
        out["excursion_throttle_s"], out["excursion_shutdown_s"] = failures.supply_excursion(
            rack_temp,
            rack_p,
            self.rack_idle_w,
            supply,
            inp.supply_excursion_k,
            gt.rack_r_die_c_per_w + r_cal,
            self.rack_heat_capacity_j_per_k,
            self.rack_max_op_c,
            self.rack_shutdown_c,
            self.rack_junction_heat_frac,
            self.rack_r_jp_c_per_w,
        )
        if ps.rack_dark.any():
            out = {key: np.where(ps.rack_dark, np.inf, value) for key, value in out.items()}
        return ProjectionResult(times_s=out, rack_max_gpu_temp_c=rack_temp)

    def _facility_loss(self, cool: CoolingResult, itp: ItPowerResult, heat: HeatResult, rack_temp: np.ndarray):
        """Per CDU: times to throttle and shutdown after its facility water is lost (the loop's coolant heats)."""
        c = self.const
        s = c.state
        rack_cdu = s.rack_cdu
        cdu_temp_max = np.full(s.n_cdus, -np.inf)
        if c.one_rack_per_cdu:  # in-rack CDUs
            cdu_temp_max[rack_cdu] = rack_temp
        else:
            np.maximum.at(cdu_temp_max, rack_cdu, rack_temp)
        gpu_mean = np.bincount(rack_cdu, weights=itp.rack_gpu_power_w, minlength=s.n_cdus) / np.maximum(
            c.gpus_per_cdu, 1
        )
        return failures.facility_water_loss(
            cdu_temp_max,
            cool.coolant_supply_temp_c,
            heat.cdu_heat_in_w,
            gpu_mean,
            c.idle_mean_w,
            c.gpus_per_cdu,
            c.heat_capacity_mean_j_per_k,
            self.cdu_loop_volume_l,
            cool.cdu_coolant_cp_j_per_kg_k,
            cool.cdu_coolant_density_kg_per_m3,
            c.max_op_min_c,
            c.shutdown_min_c,
        )
