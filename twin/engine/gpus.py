"""The GPU thermal phase: leakage, throttling, board power, the exact two-node thermal step, HBM and the shutdown latch.

:meth:`GpuThermalPhase.step` takes the demand (:class:`DemandResult`) and what the cold
plates see (:class:`CoolingResult`) and returns :class:`GpuThermalResult`.  It owns the
GPUs' carried state, :class:`GpuState`: die (junction) and cold-plate temperatures, the thermal-shutdown latch,
the last utilisation and board power (a missing reading holds them) and the heat the
packages hold per CDU.  The models are those of :mod:`twin.physics.thermal`.

With one GPU model and no per-GPU degradation, the operating point (supply, resistances,
SW thermal limit, step decay) is computed per CDU (1,568 values instead of 100k) and
kept while the supply, plate flow and step stay the same (every tick of a steady site).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.engine.constants import SiteConstants
from twin.engine.inputs import DEFAULT_UTIL_FRAC, TickInputs
from twin.engine.phases import CoolingResult, DemandResult, GpuThermalResult
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED
from twin.physics import loops, thermal

INITIAL_GPU_TEMP_C = 30.0  # [E] die temperature of a new engine, before it settles


@dataclass
class GpuState:
    """What the GPUs carry from one tick to the next (per GPU unless named per CDU)."""

    temp_c: np.ndarray  # die (junction node) temperature [°C]
    plate_temp_c: np.ndarray  # cold-plate node temperature [°C] (twin.physics.thermal.two_node_coefficients)
    down: np.ndarray  # bool: thermal shutdown latched (cleared by ``recover_down_gpus`` once cool)
    util_frac: np.ndarray  # last utilisation (held for a missing reading)
    power_w: np.ndarray  # last board power [W] (held for a missing power-demand reading)
    heat_cdu_j: np.ndarray  # [n_cdus] heat held by the GPU packages of each CDU, Σ C T [J] (0 °C reference)


@dataclass(frozen=True)
class OperatingPoint:
    """The thermal operating point of the GPUs for one step, in the layout the tick uses.

    Each per-GPU value is a scalar (every CDU alike), a per-CDU column ``[n_cdus, 1]`` or a
    per-GPU array (see :meth:`GpuThermalPhase.per_gpu_view`).
    """

    supply_c: np.ndarray | float  # coolant at the plate inlet [°C]
    r_total_c_per_w: np.ndarray | float  # die-to-coolant plus caloric resistance [K/W]
    hbm_rise_c_per_w: np.ndarray | float  # HBM rise over the supply per watt of board power [K/W]
    power_limit_w: np.ndarray | float  # SW thermal power limit [W] (inf without flow)
    step: tuple  # the two-node step's eight coefficients (twin.physics.thermal.two_node_coefficients)
    no_flow_cdu: np.ndarray  # bool [n_cdus]: no plate flow (adiabatic step)
    r_die_c_per_w: np.ndarray  # die-to-coolant resistance, per CDU (one GPU model) or per GPU [K/W]
    r_jp_c_per_w: np.ndarray | float  # junction-to-plate (conduction) resistance, scalar or per GPU [K/W]
    power_limit_cdu_w: np.ndarray | None  # SW thermal limit per CDU [W]; None off the per-CDU path


class GpuThermalPhase:
    """GPU thermal step and throttle (see module docstring)."""

    def __init__(self, const: SiteConstants) -> None:
        self.const = const
        n = const.state.n_gpus
        temp = np.full(n, INITIAL_GPU_TEMP_C)
        self.state = GpuState(
            temp_c=temp,
            plate_temp_c=temp.copy(),
            down=np.zeros(n, dtype=bool),
            util_frac=np.full(n, DEFAULT_UTIL_FRAC),
            power_w=np.zeros(n),
            heat_cdu_j=self.heat_by_cdu_j(temp, temp),
        )
        self._operating_point_cache = None  # (step, supply, plates) -> (per-CDU operating point, uniform)

    def heat_by_cdu_j(self, temp_c: np.ndarray, plate_temp_c: np.ndarray) -> np.ndarray:
        """Heat held by the GPU packages of each CDU, ``Σ (C_j T_j + C_p T_p)`` [J] (0 °C reference)."""
        cj, cp = self.const.junction_heat_capacity_j_per_k, self.const.plate_heat_capacity_j_per_k
        by_cdu = self.const.by_cdu
        if np.ndim(cj) == 0 and np.ndim(cp) == 0:
            return by_cdu.sum(temp_c) * cj + by_cdu.sum(plate_temp_c) * cp
        return by_cdu.sum(temp_c * cj + plate_temp_c * cp)

    def r_factor(self, inp: TickInputs) -> np.ndarray | None:
        """Per-GPU multiplier of the die-to-coolant resistance (a degrading interface), None if none given."""
        if inp.gpu_r_th_factor is None:
            return None
        n = self.const.state.n_gpus
        factor = np.asarray(inp.gpu_r_th_factor, dtype=np.float64)
        if factor.shape != (n,) or not (factor > 0).all():
            raise ValueError(f"gpu_r_th_factor: expected {n} positive factors")
        return factor

    def per_gpu_view(self, r_factor: np.ndarray | None):
        """How per-CDU values meet per-GPU arrays this tick: ``(ex, view)``.

        With one GPU model, no per-GPU degradation and contiguous equal-size CDU groups (every
        reference site), per-GPU arrays are viewed as ``[n_cdus, gpus_per_cdu]`` and per-CDU
        values broadcast as columns (no expansion copies); otherwise per-CDU values are
        expanded to the GPUs.
        """
        c = self.const
        w = c.by_cdu.width
        if w and c.uniform_gpus and r_factor is None:
            return (lambda v: v[:, None]), (lambda a: a.reshape(-1, w))
        return c.by_cdu.expand, (lambda a: a)

    # --- operating point -------------------------------------------------------------------
    def operating_point(self, r_factor: np.ndarray | None, cool: CoolingResult, dt_s: float, ex) -> OperatingPoint:
        """Supply, total die-to-coolant resistance, HBM rise per watt, SW thermal limit and step decay.

        The die resistance follows the plate flow (:func:`twin.physics.thermal.die_resistance_c_per_w`).
        With one GPU model and no per-GPU degradation these are per-CDU values spread by ``ex``
        (scalars when every CDU is at one operating point).
        """
        c = self.const
        no_flow_cdu = ~np.isfinite(cool.cdu_plate_r_cal_c_per_w)
        r_cal_cdu = np.where(no_flow_cdu, 0.0, cool.cdu_plate_r_cal_c_per_w)
        ratio = np.where(no_flow_cdu, 1.0, cool.cdu_plate_flow_ratio_frac)
        if c.uniform_gpus and r_factor is None:
            point, uniform = self._cached_cdu_point(cool, dt_s, no_flow_cdu, r_cal_cdu, ratio)
            spread = (lambda v: float(v[0])) if uniform else ex  # noqa: E731
            return OperatingPoint(
                supply_c=spread(point.supply_c),
                r_total_c_per_w=spread(point.r_total_c_per_w),
                hbm_rise_c_per_w=spread(point.hbm_rise_c_per_w),
                power_limit_w=spread(point.power_limit_w),
                step=tuple(spread(v) if np.ndim(v) else v for v in point.step),
                no_flow_cdu=no_flow_cdu,
                r_die_c_per_w=point.r_die_c_per_w,
                r_jp_c_per_w=point.r_jp_c_per_w,
                power_limit_cdu_w=point.power_limit_w,
            )
        supply, r_cal = ex(cool.coolant_supply_temp_c), ex(r_cal_cdu)
        r_die = thermal.die_resistance_c_per_w(c.r_die_c_per_w, c.r_conv_frac, ex(ratio))
        r_jp = np.asarray(c.r_die_c_per_w) * (1.0 - np.asarray(c.r_conv_frac))
        if r_factor is not None:
            r_die, r_jp = r_die * r_factor, r_jp * r_factor
        p_lim = np.where(
            ex(no_flow_cdu),
            np.inf,
            thermal.sw_thermal_power_limit_w(
                supply, r_die, c.r_hbm_c_per_w, r_cal, c.max_op_c, c.hbm_max_c, c.hbm_power_frac
            ),
        )
        step = thermal.two_node_coefficients(
            c.junction_heat_capacity_j_per_k, c.plate_heat_capacity_j_per_k, r_jp, r_die - r_jp + r_cal, supply, dt_s
        )
        return OperatingPoint(
            supply_c=supply,
            r_total_c_per_w=r_die + r_cal,
            hbm_rise_c_per_w=thermal.hbm_rise_c_per_w(r_cal, c.hbm_power_frac, c.r_hbm_c_per_w),
            power_limit_w=p_lim,
            step=step,
            no_flow_cdu=no_flow_cdu,
            r_die_c_per_w=r_die,
            r_jp_c_per_w=r_jp,
            power_limit_cdu_w=None,
        )

    def _cached_cdu_point(self, cool: CoolingResult, dt_s: float, no_flow_cdu, r_cal_cdu, ratio):
        """The per-CDU operating point and whether every CDU shares it; kept while supply, plates and step hold."""
        key = (
            dt_s,
            cool.coolant_supply_temp_c.tobytes(),
            cool.cdu_plate_r_cal_c_per_w.tobytes(),
            cool.cdu_plate_flow_ratio_frac.tobytes(),
        )
        if self._operating_point_cache is None or self._operating_point_cache[0] != key:
            point = self._cdu_point(cool, dt_s, no_flow_cdu, r_cal_cdu, ratio)
            # every CDU at one operating point (each holds the same setpoint at design flow: a
            # healthy site): scalars, which per-GPU arithmetic reads far faster than columns
            values = (point.supply_c, point.r_total_c_per_w, point.hbm_rise_c_per_w, point.power_limit_w, *point.step)
            uniform = all(np.min(v) == np.max(v) for v in values) if self.const.state.n_cdus else False
            self._operating_point_cache = (key, point, uniform)
        return self._operating_point_cache[1], self._operating_point_cache[2]

    def _cdu_point(self, cool: CoolingResult, dt_s: float, no_flow_cdu, r_cal_cdu, ratio) -> OperatingPoint:
        """The operating point per CDU (one GPU model): every per-GPU field is an array [n_cdus]."""
        c = self.const
        r_die = thermal.die_resistance_c_per_w(c.r_die_c_per_w, c.r_conv_frac, ratio)
        p_lim_cdu = np.where(
            no_flow_cdu,
            np.inf,
            thermal.sw_thermal_power_limit_w(
                cool.coolant_supply_temp_c, r_die, c.r_hbm_c_per_w, r_cal_cdu, c.max_op_c, c.hbm_max_c, c.hbm_power_frac
            ),
        )
        r_tot_cdu = r_die + r_cal_cdu
        r_jp = float(c.r_die_c_per_w) * (1.0 - float(c.r_conv_frac))  # one GPU model: a scalar
        step = thermal.two_node_coefficients(
            c.junction_heat_capacity_j_per_k,
            c.plate_heat_capacity_j_per_k,
            r_jp,
            r_die - r_jp + r_cal_cdu,  # the per-GPU path's order of operations: shards replay bit for bit
            cool.coolant_supply_temp_c,
            dt_s,
        )
        return OperatingPoint(
            supply_c=cool.coolant_supply_temp_c.copy(),
            r_total_c_per_w=r_tot_cdu,
            hbm_rise_c_per_w=thermal.hbm_rise_c_per_w(r_cal_cdu, c.hbm_power_frac, c.r_hbm_c_per_w),
            power_limit_w=p_lim_cdu,
            step=step,
            no_flow_cdu=no_flow_cdu,
            r_die_c_per_w=r_die,
            r_jp_c_per_w=r_jp,
            power_limit_cdu_w=p_lim_cdu,
        )

    # --- throttle --------------------------------------------------------------------------
    def throttle(self, dem: DemandResult, demand: np.ndarray, op: OperatingPoint, view, off: np.ndarray | None):
        """Board power, clock, clock-event mask and whether any GPU is limited; the full model runs only
        on GPUs near a limit.

        The clocks of GPUs in ``off`` (without power; None: none) may be left unsolved: the
        caller sets them to 0.
        """
        c = self.const
        temp, limit, util, brake = self.state.temp_c, dem.gpu_power_limit_w, dem.gpu_util_frac, dem.gpu_power_brake
        p_lim_cdu = op.power_limit_cdu_w
        if (
            p_lim_cdu is not None
            and np.ndim(limit) == 0
            and brake is False
            and np.ndim(c.max_op_c) == 0
            and float(p_lim_cdu.min()) >= limit
            and float(temp.max()) < c.max_op_c
        ):
            # every SW thermal limit above the power limit and every die below max operating: of
            # throttle's mechanisms only the power cap can act (e.g. a shortfall policy's cap)
            duty = self.cap_duty(limit, util)
            p, clock, mask = thermal.power_cap_only(demand, float(limit), c.idle_w, None if off is None else ~off, duty)
            limited = bool(mask.any())
        else:
            p, clock, mask, limited = self._throttle_near_limits(dem, demand, op, view)
        idle = util < thermal.IDLE_UTIL_FRAC
        if idle.any():
            mask |= np.where(idle, thermal.CLOCK_EVENT_GPU_IDLE, 0).astype(np.int32)
        return p, clock, mask, limited

    def cap_duty(self, limit, util: np.ndarray):
        """The share of time a power limit acts on each GPU: its utilisation under a cap below TDP, 1 at TDP.

        A cap holds the busy power, so a GPU under one draws its mean below the cap
        (:func:`twin.physics.thermal.mean_power_limit_w`); the nominal demand model already
        takes TDP as the busy power.  A scalar 1.0 when no GPU is capped below TDP.
        """
        below = np.less(limit, self.const.tdp_w)
        if not np.any(below):
            return 1.0
        return util if np.all(below) else np.where(below, util, 1.0)

    def _throttle_near_limits(self, dem: DemandResult, demand: np.ndarray, op: OperatingPoint, view):
        """:func:`twin.physics.thermal.throttle` on the GPUs a mechanism acts on (on all when most do)."""
        c = self.const
        n = c.state.n_gpus
        temp, limit, brake = self.state.temp_c, dem.gpu_power_limit_w, dem.gpu_power_brake
        util = dem.gpu_util_frac
        duty = self.cap_duty(limit, util)
        v = lambda a: view(a) if np.ndim(a) else a  # noqa: E731
        idx = np.flatnonzero(
            thermal.throttle_active(
                view(demand), v(limit), view(temp), op.power_limit_w, c.max_op_c, v(brake), v(duty), v(c.idle_w)
            )
        )
        if op.power_limit_cdu_w is not None:
            per_gpu = lambda idx: op.power_limit_cdu_w[c.gpu_cdu[idx]]  # noqa: E731
        else:
            per_gpu = lambda idx: op.power_limit_w[idx]  # noqa: E731
        if idx.size > n // 2:  # most GPUs near a limit: the full model on whole arrays
            p, clock, mask = thermal.throttle(
                demand, limit, c.idle_w, temp, per_gpu(slice(None)), c.max_op_c, c.slowdown_c, util, brake, duty
            )
            return p, clock, mask, True
        p = np.minimum(demand, limit)
        clock = np.ones(n)
        mask = np.zeros(n, dtype=np.int32)
        if idx.size:
            sub = lambda v: v[idx] if np.ndim(v) else v  # noqa: E731
            p[idx], clock[idx], mask[idx] = thermal.throttle(
                demand[idx],
                sub(limit),
                sub(c.idle_w),
                temp[idx],
                per_gpu(idx),
                sub(c.max_op_c),
                sub(c.slowdown_c),
                util[idx],
                sub(brake),
                sub(duty),
            )
        return p, clock, mask, idx.size > 0

    # --- the step ----------------------------------------------------------------------------
    def step(self, dt_s: float, inp: TickInputs, dem: DemandResult, cool: CoolingResult) -> GpuThermalResult:
        """Leakage, throttle decisions, board power, exact thermal step (adiabatic without flow), HBM,
        shutdown latch, and the heat the packages gave their coolant."""
        c, st = self.const, self.state
        if inp.recover_down_gpus and st.down.any():
            st.down &= st.temp_c >= c.max_op_c
        r_factor = self.r_factor(inp)
        ex, view = self.per_gpu_view(r_factor)
        op = self.operating_point(r_factor, cool, dt_s, ex)
        # leakage rises with the die temperature the sensors read now; the power limit holds the total
        demand = dem.gpu_power_demand_w
        if np.any(c.leakage_w_per_k):
            demand = thermal.demand_with_leakage_w(demand, st.temp_c, c.leakage_w_per_k)
        off = dem.gpu_off | st.down
        any_off = bool(off.any())
        p, clock, mask, any_limited = self.throttle(dem, demand, op, view, off if any_off else None)
        if any_off:
            np.copyto(p, 0.0, where=off)  # (a masked copy is cheaper than boolean indexing)
        new_temp, new_plate = self._temperature(dt_s, p, op, view)
        hbm = thermal.hbm_temp_from_rise_c(view(p), op.supply_c, op.hbm_rise_c_per_w).reshape(-1)
        newly_down = (new_temp >= c.shutdown_c) if float(new_temp.max()) >= c.shutdown_min_c else None
        if newly_down is not None and newly_down.any():
            newly_down &= ~off
            st.down = st.down | newly_down
            off = off | newly_down
            any_off = True
        state = self._gpu_state(clock, any_limited, off if any_off else None, dem)
        held = self.heat_by_cdu_j(new_temp, new_plate)  # heat the packages gave their coolant: power in minus stored
        gpu_heat = loops.heat_passed_w(c.by_cdu.sum(p), 1.0, st.heat_cdu_j, held, dt_s)
        st.heat_cdu_j, st.temp_c, st.plate_temp_c = held, new_temp, new_plate
        st.power_w, st.util_frac = p, dem.gpu_util_frac
        return GpuThermalResult(
            gpu_power_w=p,
            gpu_clock_frac=clock,
            gpu_clock_event_mask=mask,
            hbm_temp_c=hbm,
            gpu_state=state,
            gpu_down=off,
            any_gpu_down=any_off,
            rack_r_die_c_per_w=self._rack_r_die(op, r_factor),
            cdu_gpu_heat_w=gpu_heat,
        )

    def _temperature(self, dt_s: float, p: np.ndarray, op: OperatingPoint, view) -> tuple[np.ndarray, np.ndarray]:
        """Junction and plate temperatures after the step: exact two-node step with flow, adiabatic without.

        Without flow the hardware cuts the power at shutdown, so ``p`` of those GPUs is lowered
        to what their packages stored.
        """
        c, st = self.const, self.state
        new_temp, new_plate = thermal.two_node_step_few_pass_c(view(st.temp_c), view(st.plate_temp_c), view(p), op.step)
        new_temp, new_plate = new_temp.reshape(-1), new_plate.reshape(-1)
        if op.no_flow_cdu.any():
            nf = np.flatnonzero(c.by_cdu.expand(op.no_flow_cdu))
            sub = lambda v: v[nf] if np.ndim(v) else v  # noqa: E731
            new_temp[nf], new_plate[nf], p[nf] = thermal.two_node_adiabatic_step_c(
                st.temp_c[nf],
                st.plate_temp_c[nf],
                p[nf],
                sub(c.junction_heat_capacity_j_per_k),
                sub(c.plate_heat_capacity_j_per_k),
                sub(op.r_jp_c_per_w),
                dt_s,
                sub(c.shutdown_c),
            )
        return new_temp, new_plate

    def _gpu_state(self, clock: np.ndarray, any_limited: bool, off: np.ndarray | None, dem: DemandResult):
        """GPU_OK / GPU_THROTTLED / GPU_DOWN / GPU_OFF per GPU; the clocks of GPUs in ``off`` set to 0."""
        if any_limited:  # GPU_OK is 0: the throttled mask's bytes (0/1) scaled to GPU_THROTTLED are the states
            state = np.less(clock, 0.999).view(np.int8)
            if GPU_THROTTLED != 1:
                state *= np.int8(GPU_THROTTLED)
        else:
            state = np.zeros(clock.size, dtype=np.int8)
        if off is not None:
            np.copyto(clock, 0.0, where=off)
            np.copyto(state, GPU_DOWN, where=off)
            if dem.node_off is not None:
                np.copyto(state, GPU_OFF, where=dem.gpu_node_off)
        return state

    def _rack_r_die(self, op: OperatingPoint, r_factor: np.ndarray | None) -> np.ndarray:
        """Highest die-to-coolant resistance of each rack's GPUs [K/W]."""
        c = self.const
        if r_factor is None and c.uniform_gpus:
            if c.one_rack_per_cdu:
                return op.r_die_c_per_w[c.state.rack_cdu]
            return c.by_rack.max(c.by_cdu.expand(op.r_die_c_per_w))
        return c.by_rack.max(np.broadcast_to(op.r_die_c_per_w, (c.state.n_gpus,)))
