"""Time-to-throttle and time-to-shutdown projections after cooling failures, per rack or CDU.

Pure, elementwise numpy functions; the engine calls them with per-rack arrays built
from the hottest GPU of each rack (its die temperature and the rack's highest GPU
power: a conservative pairing).  Results are seconds, ``inf`` when the limit is never
reached, ``0`` when it is already reached.

Scenarios and physics (symbols as in :mod:`twin.physics.thermal`):

* **loss of one CDU pump** — the flow falls at once in proportion to the pumps left and the
  remaining pumps ramp back at ``design / pump_failover_s`` ([NVIDIA-CDU-Reqs]: an N+1 CDU is
  back at design within ≤ 5 s), as the engine's :func:`twin.physics.loops.pump_flow_lpm` does:
  ``f(t) = min(f_end, f0 (n − 1)/n + t / t_fo)`` of design, ``f_end = min(1, (n − 1)/required)``.
  The die resistance follows the flow (``R_cal ∝ 1/f``, ``R_die`` by
  :func:`twin.physics.thermal.die_resistance_c_per_w`), so the GPU heats towards a higher steady
  state only while the flow is low: the ramp is stepped in :data:`FAILOVER_SUBSTEPS` pieces at
  their mid-ramp flow (exact exponential within each), then the die relaxes to the steady state
  at ``f_end`` (back to nominal with a spare; ``(n − 1)/required`` of design without one).  With
  no pump left the GPU heats adiabatically (as for a CDU loss).
* **loss of a CDU** (no secondary flow) — the GPU heats adiabatically into its own
  heat capacity plus the coolant held in its cold plate (``PLATE_COOLANT_L``); the
  rest of the stagnant loop is not in thermal contact without flow.  This matches the
  observation that a DLC server reaches thermal shutdown in under a minute after loss
  of the secondary loop [InterPACK-2017].  To shutdown: full power to the
  slowdown temperature, then HW-slowdown power (clocks ÷2) to shutdown.
* **loss of facility water** — the CDU pumps keep circulating; the whole secondary
  loop (``loop_volume_l · ρ · cp``) and the GPU packages heat together at
  ``Q / C_loop``; the hottest GPU keeps its offset above the coolant.  After the first
  throttle the driver sheds GPU power as the coolant warms (linearised here to the
  mean of full and idle power) until only idle power and the non-GPU liquid heat remain,
  which carry the loop on to shutdown ("slow temperature rise" [InterPACK-2018]).
* **supply excursion +ΔT** — the steady temperature rises by ΔT; the GPU relaxes to
  it with time constant τ.  Shutdown only if even idle power cannot hold the die
  below the shutdown temperature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from twin.arrays import BoolArray, FloatArray, IntArray
from twin.physics.thermal import (
    CONVECTION_FLOW_EXPONENT,
    HW_SLOWDOWN_CLOCK_FRAC,
    die_temp_steady_c,
    power_at_clock_w,
    time_constant_s,
    two_node_coefficients,
)

# [E] coolant held in one GPU cold plate and its short hoses (~50 mL).
PLATE_COOLANT_L = 0.05
# [E] pieces of the fail-over ramp (midpoint flow, exact within each): the ramp (≤ 5 s) is short
# against the die's time constant (~30 s), so four pieces keep the error well under 0.1 s
FAILOVER_SUBSTEPS = 4


def time_to_temp_adiabatic_s(
    temp_c: np.ndarray, power_w: np.ndarray, heat_capacity_j_per_k: np.ndarray, limit_c: np.ndarray
) -> np.ndarray:
    """Seconds to heat from ``temp_c`` to ``limit_c`` at ``power_w`` with no cooling: ``C (T_lim − T) / P``."""
    t = np.asarray(temp_c, dtype=np.float64)
    p = np.asarray(power_w, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(p > 0.0, heat_capacity_j_per_k * (limit_c - t) / p, np.inf)
    return np.where(t >= limit_c, 0.0, out)


def time_to_temp_exponential_s(
    temp_c: np.ndarray, steady_c: np.ndarray, tau_s: np.ndarray, limit_c: np.ndarray
) -> np.ndarray:
    """Seconds for a first-order response from ``temp_c`` towards ``steady_c`` to cross ``limit_c``.

    ``τ · ln((T_ss − T0) / (T_ss − T_lim))`` when ``T_ss > T_lim``; ``inf`` otherwise.
    """
    t0 = np.asarray(temp_c, dtype=np.float64)
    ss = np.asarray(steady_c, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = tau_s * np.log((ss - t0) / (ss - limit_c))
    out = np.where(ss > limit_c, out, np.inf)
    return np.where(t0 >= limit_c, 0.0, out)


CROSSING_GRID = 48  # [E] (numerical) log-spaced times a two-node crossing is bracketed on, then bisected
CROSSING_BISECTIONS = 30
HORIZON_S = 3600.0  # a limit not reached within an hour at constant conditions counts as never


def _junction_after_c(
    tj: FloatArray,
    tp: FloatArray,
    power: FloatArray,
    supply: FloatArray,
    c_j: FloatArray,
    c_p: FloatArray,
    r_jp: FloatArray,
    r_pc: FloatArray,
    t_s: FloatArray | float,
) -> FloatArray:
    """Junction temperature ``t_s`` after a state ``(tj, tp)`` at constant power and supply (exact, broadcast)."""
    jj, jp, _, _, g_j, _, h_j, _ = two_node_coefficients(c_j, c_p, r_jp, r_pc, supply, t_s)
    return jj * tj + jp * tp + g_j * power + h_j


def two_node_crossing_s(
    tj: FloatArray,
    tp: FloatArray,
    power: FloatArray,
    supply: FloatArray,
    c_j: FloatArray,
    c_p: FloatArray,
    r_jp: FloatArray,
    r_pc: FloatArray,
    limit_c: FloatArray,
    horizon_s: FloatArray | float = HORIZON_S,
) -> np.ndarray:
    """First time [s] within ``horizon_s`` the two-node junction reaches ``limit_c`` (``inf``: never; ``0``: already).

    The junction need not rise monotonically (a junction hotter than its plate's steady
    offset first cools), so the crossing is bracketed on a log-spaced grid and bisected.
    """
    args = [np.asarray(v, dtype=np.float64) for v in (tj, tp, power, supply, c_j, c_p, r_jp, r_pc, limit_c)]
    shape = np.broadcast_shapes(*(a.shape for a in args))
    tj, tp, power, supply, c_j, c_p, r_jp, r_pc, limit = (np.broadcast_to(a, shape).ravel() for a in args)
    grid = np.concatenate([[0.0], np.geomspace(1e-3, max(float(np.max(horizon_s)), 1e-3), CROSSING_GRID)])[:, None]
    at = _junction_after_c(tj, tp, power, supply, c_j, c_p, r_jp, r_pc, grid)
    above = at >= limit
    crossed = above.any(axis=0)
    first = np.argmax(above, axis=0)
    lo, hi = grid[np.maximum(first - 1, 0), 0], grid[first, 0]
    for _ in range(CROSSING_BISECTIONS):
        mid = 0.5 * (lo + hi)
        up = _junction_after_c(tj, tp, power, supply, c_j, c_p, r_jp, r_pc, mid) >= limit
        hi, lo = np.where(up, mid, hi), np.where(up, lo, mid)
    out = np.where(crossed, hi, np.inf)
    horizon = np.broadcast_to(np.asarray(horizon_s, dtype=np.float64), shape).ravel()
    return np.where(tj >= limit, 0.0, np.where(out <= horizon, out, np.inf)).reshape(shape)


def _plate_heat_capacity(
    heat_capacity_j_per_k: FloatArray, coolant_cp_j_per_kg_k: FloatArray, coolant_density_kg_per_m3: FloatArray
) -> FloatArray:
    return heat_capacity_j_per_k + PLATE_COOLANT_L / 1000.0 * coolant_density_kg_per_m3 * coolant_cp_j_per_kg_k


def _no_flow_times(
    temp_c: FloatArray,
    power_w: FloatArray,
    idle_w: FloatArray,
    c_eff: FloatArray,
    max_op_c: FloatArray,
    slowdown_c: FloatArray,
    shutdown_c: FloatArray,
) -> tuple[FloatArray, FloatArray]:
    t_throttle = time_to_temp_adiabatic_s(temp_c, power_w, c_eff, max_op_c)
    t_slow = time_to_temp_adiabatic_s(temp_c, power_w, c_eff, slowdown_c)
    p_hw = power_at_clock_w(HW_SLOWDOWN_CLOCK_FRAC, power_w, idle_w)
    start = np.maximum(temp_c, slowdown_c)
    t_shut = t_slow + time_to_temp_adiabatic_s(start, p_hw, c_eff, shutdown_c)
    return t_throttle, np.where(temp_c >= shutdown_c, 0.0, t_shut)


def cdu_loss(
    temp_c: FloatArray,
    power_w: FloatArray,
    idle_w: FloatArray,
    heat_capacity_j_per_k: FloatArray,
    coolant_cp_j_per_kg_k: FloatArray,
    coolant_density_kg_per_m3: FloatArray,
    max_operating_temp_c: FloatArray,
    slowdown_temp_c: FloatArray,
    shutdown_temp_c: FloatArray,
) -> tuple[np.ndarray, np.ndarray]:
    """(time to throttle, time to shutdown) [s] after losing all secondary flow."""
    c_eff = _plate_heat_capacity(heat_capacity_j_per_k, coolant_cp_j_per_kg_k, coolant_density_kg_per_m3)
    return _no_flow_times(temp_c, power_w, idle_w, c_eff, max_operating_temp_c, slowdown_temp_c, shutdown_temp_c)


def failover_flow_frac(
    flow_frac: np.ndarray,
    pumps_running_count: np.ndarray,
    pumps_required: np.ndarray,
    pump_failover_s: np.ndarray,
    t_s: np.ndarray | float,
) -> np.ndarray:
    """Secondary flow over design ``t_s`` after one of ``pumps_running_count`` pumps is lost:
    ``min(f_end, f0 (n − 1)/n + t / t_fo)`` with ``f_end = min(1, (n − 1)/required)`` (see module docstring)."""
    f_drop, f_end = _failover_flows(flow_frac, pumps_running_count, pumps_required)
    return np.minimum(f_end, f_drop + np.asarray(t_s, dtype=np.float64) / np.maximum(pump_failover_s, 1e-9))


def _failover_flows(
    flow_frac: FloatArray, pumps_running_count: FloatArray, pumps_required: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Flow over design just after the loss (``f_drop``) and once the remaining pumps have ramped (``f_end``)."""
    n = np.asarray(pumps_running_count, dtype=np.float64)
    remaining = np.maximum(n - 1.0, 0.0)
    f_end = np.minimum(remaining / np.maximum(np.asarray(pumps_required, dtype=np.float64), 1e-9), 1.0)
    f_drop = np.asarray(flow_frac, dtype=np.float64) * remaining / np.maximum(n, 1.0)
    return np.minimum(f_drop, f_end), f_end


def _take(value: Any, idx: IntArray | BoolArray) -> Any:
    """``value[idx]`` for an array, the scalar itself otherwise."""
    return value[idx] if np.ndim(value) else value


def _scalar_if_uniform(value: Any) -> Any:
    """A float when every entry is equal (the ``[piece, rack]`` arrays of the fail-over then have one column)."""
    if np.ndim(value) and value.size and np.all(value == value.flat[0]):
        return float(value.flat[0])
    return value


def _crossing_during_failover_s(
    temp_c: FloatArray,
    power_w: FloatArray,
    supply_c: FloatArray,
    r_at: _ResistanceAtFlow,
    heat_capacity_j_per_k: FloatArray,
    f_drop: FloatArray,
    f_end: FloatArray,
    limit_c: FloatArray,
) -> FloatArray:
    """First time [s] the die crosses ``limit_c`` while the flow ramps from ``f_drop`` to ``f_end`` (over
    ``r_at.ramp_s``) and after it; ``r_at(f)`` is the die-to-coolant resistance at flow ``f`` of design.

    The pieces' resistances, steady states and decays are ``[piece, rack]`` arrays (one column when
    every rack shares the fail-over: one CDU model, every CDU at the same flow); the temperature at
    the end of each piece is carried from piece to piece, and the crossing is solved exactly inside
    the first piece that ends above the limit, then once more at the flow halfway to it.
    """
    k = FAILOVER_SUBSTEPS
    # one fail-over shared by every rack (one CDU model, every CDU at the same flow): scalars from here on
    r_at = _ResistanceAtFlow(
        *(_scalar_if_uniform(v) for v in (r_at.r_die_base, r_at.conv_frac, r_at.r_cal_design, r_at.ramp_s))
    )
    f_drop, f_end = _scalar_if_uniform(f_drop), _scalar_if_uniform(f_end)
    mid = (np.arange(k + 1, dtype=np.float64) + 0.5)[:, None] / k  # pieces' mid-ramp points, then f_end
    mid[-1] = 1.0
    r = r_at(f_drop + mid * (f_end - f_drop))  # [piece, 1] when the racks share the fail-over
    steady = supply_c + power_w * r
    tau = heat_capacity_j_per_k * r
    h = r_at.ramp_s / k
    decay = np.exp(-h / tau[:-1])
    end = np.empty((k + 1, temp_c.size))
    end[0] = temp_c
    for p in range(k):
        end[p + 1] = steady[p] + (end[p] - steady[p]) * decay[p]
    above = end[1:] >= limit_c
    crossed = above.any(axis=0)
    j = np.where(crossed, np.argmax(above, axis=0), k)  # piece of the crossing (k: after the ramp)
    cols = np.arange(temp_c.size)
    tau_j = np.broadcast_to(tau, steady.shape)[j, cols]
    inside = time_to_temp_exponential_s(end[j, cols], steady[j, cols], tau_j, limit_c)
    start_s = np.minimum(j, k) * h
    if crossed.any():
        f = np.minimum(f_drop + (start_s + 0.5 * inside) / np.maximum(r_at.ramp_s, 1e-300) * (f_end - f_drop), f_end)
        r = r_at(f)
        again = time_to_temp_exponential_s(end[j, cols], supply_c + power_w * r, heat_capacity_j_per_k * r, limit_c)
        inside = np.where(crossed & np.isfinite(again), again, inside)
    return start_s + inside


def _crossing_during_failover_two_node_s(
    temp_c: FloatArray,
    power_w: FloatArray,
    supply_c: FloatArray,
    r_at: _ResistanceAtFlow,
    heat_capacity_j_per_k: FloatArray,
    junction_frac: FloatArray,
    f_drop: FloatArray,
    f_end: FloatArray,
    limit_c: FloatArray,
) -> FloatArray:
    """:func:`_crossing_during_failover_s` with the two-node model (junction ``junction_frac`` of the heat
    capacity, junction-to-plate ``R_jp = R_die,design (1 − f_conv)``): junction and plate are carried
    through the pieces exactly; the plate starts at the junction less its steady offset ``P R_jp``."""
    k = FAILOVER_SUBSTEPS
    c_j = heat_capacity_j_per_k * junction_frac
    c_p = heat_capacity_j_per_k - c_j
    r_jp = r_at.r_die_base * (1.0 - r_at.conv_frac)
    mid = (np.arange(k + 1, dtype=np.float64) + 0.5)[:, None] / k
    mid[-1] = 1.0
    r_pc = r_at(f_drop + mid * (f_end - f_drop)) - r_jp  # [piece, rack]
    h = r_at.ramp_s / k
    tj, tp = np.array(temp_c, dtype=np.float64), temp_c - power_w * r_jp
    out = np.full(np.shape(tj), np.inf)
    open_ = np.ones(np.shape(tj), dtype=bool)
    for j in range(k + 1):
        horizon = HORIZON_S if j == k else h
        t = two_node_crossing_s(tj, tp, power_w, supply_c, c_j, c_p, r_jp, r_pc[j], limit_c, horizon)
        hit = open_ & np.isfinite(t)
        out = np.where(hit, j * h + t, out)
        open_ &= ~hit
        if j < k:
            jj, jp, pj, pp, g_j, g_p, h_j, h_p = two_node_coefficients(c_j, c_p, r_jp, r_pc[j], supply_c, h)
            tj, tp = jj * tj + jp * tp + g_j * power_w + h_j, pj * tj + pp * tp + g_p * power_w + h_p
    return out


@dataclass(frozen=True)
class _ResistanceAtFlow:
    """Die-to-coolant resistance at a flow ``f`` of design, scaled from the present one at ``f0`` (so a
    degraded interface keeps its factor): ``R_die(f) = R_die(f0) · g(f)/g(f0)``, ``g = 1 − c + c f^−0.8``;
    ``R_cal(f) = R_cal(f0) · f0 / f``.  ``ramp_s`` is how long the fail-over ramp lasts."""

    r_die_base: np.ndarray  # R_die / g at design flow [K/W]
    conv_frac: np.ndarray
    r_cal_design: np.ndarray  # [K/W]
    ramp_s: np.ndarray

    @classmethod
    def from_present(
        cls,
        r_die_now: FloatArray,
        r_cal_now: FloatArray,
        conv_frac: FloatArray,
        flow_frac: FloatArray,
        ramp_s: FloatArray,
    ) -> _ResistanceAtFlow:
        g0 = 1.0 - conv_frac + conv_frac * np.power(flow_frac, -CONVECTION_FLOW_EXPONENT)
        return cls(r_die_now / g0, conv_frac, r_cal_now * flow_frac, ramp_s)

    def take(self, idx: np.ndarray) -> _ResistanceAtFlow:
        return _ResistanceAtFlow(
            *(_take(v, idx) for v in (self.r_die_base, self.conv_frac, self.r_cal_design, self.ramp_s))
        )

    def __call__(self, f: FloatArray | float) -> FloatArray:
        f = np.maximum(f, 1e-9)
        g = 1.0 - self.conv_frac + self.conv_frac * np.power(f, -CONVECTION_FLOW_EXPONENT)
        return self.r_die_base * g + self.r_cal_design / f


def pump_loss(
    temp_c: FloatArray,
    power_w: FloatArray,
    idle_w: FloatArray,
    supply_temp_c: FloatArray,
    r_die_c_per_w: FloatArray,
    r_cal_c_per_w: FloatArray,
    r_conv_frac: FloatArray,
    flow_frac: FloatArray,
    heat_capacity_j_per_k: FloatArray,
    coolant_cp_j_per_kg_k: FloatArray,
    coolant_density_kg_per_m3: FloatArray,
    pumps_running_count: FloatArray,
    pumps_required: FloatArray,
    pump_failover_s: FloatArray,
    max_operating_temp_c: FloatArray,
    slowdown_temp_c: FloatArray,
    shutdown_temp_c: FloatArray,
    junction_heat_frac: FloatArray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(time to throttle, time to shutdown) [s] after losing one running CDU pump (see module docstring).

    With ``junction_heat_frac`` the die is the two-node model's junction (the engine's,
    :func:`twin.physics.thermal.two_node_coefficients`); without it one lumped node.

    ``r_die_c_per_w`` and ``r_cal_c_per_w`` are the resistances at the present flow, ``flow_frac`` of
    design; ``r_conv_frac`` the convective share of the die resistance at design flow.  Only racks
    whose steady state at the lowest flow of the fail-over lies beyond a limit are stepped, so a
    healthy site costs a few elementwise passes.
    """
    temp, power = np.asarray(temp_c, dtype=np.float64), np.asarray(power_w, dtype=np.float64)
    n, f0 = np.asarray(pumps_running_count, dtype=np.float64), np.asarray(flow_frac, dtype=np.float64)
    shape = np.broadcast_shapes(temp.shape, power.shape, n.shape, f0.shape, np.shape(supply_temp_c))
    temp, power = np.broadcast_to(temp, shape), np.broadcast_to(power, shape)
    no_flow = np.broadcast_to((n <= 1.0) | ~(f0 > 0.0), shape)  # the last pump lost, or no flow to begin with
    t_thr, t_shut = np.full(shape, np.inf), np.full(shape, np.inf)
    if no_flow.any():
        nf = np.flatnonzero(no_flow)
        c_eff = _plate_heat_capacity(
            _take(heat_capacity_j_per_k, nf), _take(coolant_cp_j_per_kg_k, nf), _take(coolant_density_kg_per_m3, nf)
        )
        t_thr[nf], t_shut[nf] = _no_flow_times(
            temp[nf],
            power[nf],
            _take(idle_w, nf),
            c_eff,
            _take(max_operating_temp_c, nf),
            _take(slowdown_temp_c, nf),
            _take(shutdown_temp_c, nf),
        )
    flowing = ~no_flow
    f0 = np.where(no_flow, 1.0, f0)
    f_drop, f_end = _failover_flows(f0, n, pumps_required)
    ramp_s = (f_end - f_drop) * pump_failover_s
    r_at = _ResistanceAtFlow.from_present(r_die_c_per_w, r_cal_c_per_w, r_conv_frac, f0, ramp_s)
    r_low = r_at(f_drop)  # the highest resistance of the transient
    supply = np.broadcast_to(np.asarray(supply_temp_c, dtype=np.float64), shape)
    steady_low = supply + power * r_low
    floor_low = supply + np.minimum(idle_w, power) * r_low  # shutdown only if even idle cannot hold the die
    for out, limit, reachable in ((t_thr, max_operating_temp_c, steady_low), (t_shut, shutdown_temp_c, floor_low)):
        out[flowing & (temp >= limit)] = 0.0
        idx = np.flatnonzero(flowing & (temp < limit) & (reachable > limit))
        if idx.size:
            args = (temp[idx], power[idx], supply[idx], r_at.take(idx), _take(heat_capacity_j_per_k, idx))
            flows = (_take(np.broadcast_to(f_drop, shape), idx), _take(np.broadcast_to(f_end, shape), idx))
            if junction_heat_frac is None:
                out[idx] = _crossing_during_failover_s(*args, *flows, _take(limit, idx))
            else:
                frac = _take(junction_heat_frac, idx)
                out[idx] = _crossing_during_failover_two_node_s(*args, frac, *flows, _take(limit, idx))
    return t_thr, t_shut


def facility_water_loss(
    gpu_temp_max_c: FloatArray,
    coolant_supply_c: FloatArray,
    cdu_heat_w: FloatArray,
    gpu_power_w: FloatArray,
    idle_w: FloatArray,
    n_gpus: FloatArray,
    heat_capacity_j_per_k: FloatArray,
    loop_volume_l: FloatArray,
    coolant_cp_j_per_kg_k: FloatArray,
    coolant_density_kg_per_m3: FloatArray,
    max_operating_temp_c: FloatArray,
    shutdown_temp_c: FloatArray,
) -> tuple[np.ndarray, np.ndarray]:
    """(time to throttle, time to shutdown) [s] per CDU after losing facility water.

    ``cdu_heat_w`` is the heat the CDU's loop receives now, ``gpu_power_w`` the mean
    GPU power of its ``n_gpus`` GPUs, ``gpu_temp_max_c`` its hottest die.
    """
    c_loop = loop_volume_l / 1000.0 * coolant_density_kg_per_m3 * coolant_cp_j_per_kg_k + n_gpus * heat_capacity_j_per_k
    q_gpu = n_gpus * gpu_power_w
    q_other = np.maximum(cdu_heat_w - q_gpu, 0.0)
    q_total = q_gpu + q_other
    offset = np.maximum(gpu_temp_max_c - coolant_supply_c, 0.0)  # hottest GPU above the coolant
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(q_total > 0, (max_operating_temp_c - gpu_temp_max_c) * c_loop / q_total, np.inf)
        # throttling phase: the die is held at max operating while its power falls to idle
        p_idle = np.minimum(idle_w, gpu_power_w)
        shed_rise = offset * (1.0 - np.where(gpu_power_w > 0, p_idle / gpu_power_w, 1.0))
        q_mid = n_gpus * 0.5 * (gpu_power_w + p_idle) + q_other
        t2 = np.where(q_mid > 0, shed_rise * c_loop / q_mid, np.inf)
        q_floor = n_gpus * p_idle + q_other
        t3 = np.where(q_floor > 0, (shutdown_temp_c - max_operating_temp_c) * c_loop / q_floor, np.inf)
    t1 = np.where(gpu_temp_max_c >= max_operating_temp_c, 0.0, t1)
    t_shut = np.where(gpu_temp_max_c >= shutdown_temp_c, 0.0, t1 + t2 + t3)
    return t1, t_shut


def supply_excursion(
    temp_c: FloatArray,
    power_w: FloatArray,
    idle_w: FloatArray,
    supply_temp_c: FloatArray,
    delta_k: FloatArray,
    r_total_c_per_w: FloatArray,
    heat_capacity_j_per_k: FloatArray,
    max_operating_temp_c: FloatArray,
    shutdown_temp_c: FloatArray,
    junction_heat_frac: FloatArray | None = None,
    r_jp_c_per_w: FloatArray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(time to throttle, time to shutdown) [s] after the coolant supply rises by ``delta_k``.

    With ``junction_heat_frac`` and ``r_jp_c_per_w`` the die is the two-node model's junction,
    its plate starting at the junction less its steady offset ``P R_jp``; without them one lumped node.
    """
    new_supply = supply_temp_c + delta_k
    steady = die_temp_steady_c(power_w, new_supply, r_total_c_per_w)
    steady_floor = die_temp_steady_c(np.minimum(idle_w, power_w), new_supply, r_total_c_per_w)
    if junction_heat_frac is None:
        tau = time_constant_s(heat_capacity_j_per_k, r_total_c_per_w)
        t_thr = time_to_temp_exponential_s(temp_c, steady, tau, max_operating_temp_c)
        t_shut = time_to_temp_exponential_s(temp_c, steady, tau, shutdown_temp_c)
    else:
        c_j = np.asarray(heat_capacity_j_per_k) * junction_heat_frac
        c_p = np.asarray(heat_capacity_j_per_k) - c_j
        assert r_jp_c_per_w is not None  # given with junction_heat_frac
        r_pc = np.asarray(r_total_c_per_w) - r_jp_c_per_w
        tp = np.asarray(temp_c) - np.asarray(power_w) * r_jp_c_per_w
        both = (temp_c, tp, power_w, new_supply, c_j, c_p, r_jp_c_per_w, r_pc)
        may = steady > max_operating_temp_c  # only those racks need the crossing solved
        t_thr = np.where(np.asarray(temp_c) >= max_operating_temp_c, 0.0, np.inf) * np.ones(np.shape(steady))
        if may.any():
            idx = np.flatnonzero(may)
            t_thr[idx] = two_node_crossing_s(*(_take(v, idx) for v in both), _take(max_operating_temp_c, idx))  # type: ignore[call-arg]  # both: 8 arrays
        t_shut = np.full(np.shape(steady), np.inf)
        hot = steady_floor > shutdown_temp_c
        if hot.any():
            idx = np.flatnonzero(hot)
            t_shut[idx] = two_node_crossing_s(*(_take(v, idx) for v in both), _take(shutdown_temp_c, idx))  # type: ignore[call-arg]  # both: 8 arrays
    t_shut = np.where(steady_floor > shutdown_temp_c, t_shut, np.inf)
    return t_thr, t_shut
