"""Time-to-throttle and time-to-shutdown projections after cooling failures, per rack or CDU.

Pure, elementwise numpy functions; the engine calls them with per-rack arrays built
from the hottest GPU of each rack (its die temperature and the rack's highest GPU
power: a conservative pairing).  Results are seconds, ``inf`` when the limit is never
reached, ``0`` when it is already reached.

Scenarios and physics (symbols as in :mod:`twin.physics.thermal`):

* **loss of one CDU pump** — if the remaining pumps still meet ``pumps_required``,
  only the fail-over gap matters: the plate flow is taken as zero for
  ``pump_failover_s`` ([NVIDIA-CDU-Reqs]: ≤ 5 s) and the GPU heats adiabatically; otherwise the
  flow falls to ``remaining/required`` of design and the GPU relaxes exponentially to
  the new steady temperature ``T_s + P (R_die + R_cal / f)``.
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

import numpy as np

from twin.physics.thermal import HW_SLOWDOWN_CLOCK_FRAC, power_at_clock_w

# [E] coolant held in one GPU cold plate and its short hoses (~50 mL).
PLATE_COOLANT_L = 0.05


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


def _plate_heat_capacity(heat_capacity_j_per_k, coolant_cp_j_per_kg_k, coolant_density_kg_per_m3):
    return heat_capacity_j_per_k + PLATE_COOLANT_L / 1000.0 * coolant_density_kg_per_m3 * coolant_cp_j_per_kg_k


def _no_flow_times(temp_c, power_w, idle_w, c_eff, max_op_c, slowdown_c, shutdown_c):
    t_throttle = time_to_temp_adiabatic_s(temp_c, power_w, c_eff, max_op_c)
    t_slow = time_to_temp_adiabatic_s(temp_c, power_w, c_eff, slowdown_c)
    p_hw = power_at_clock_w(HW_SLOWDOWN_CLOCK_FRAC, power_w, idle_w)
    start = np.maximum(temp_c, slowdown_c)
    t_shut = t_slow + time_to_temp_adiabatic_s(start, p_hw, c_eff, shutdown_c)
    return t_throttle, np.where(temp_c >= shutdown_c, 0.0, t_shut)


def cdu_loss(
    temp_c, power_w, idle_w, heat_capacity_j_per_k, coolant_cp_j_per_kg_k, coolant_density_kg_per_m3,
    max_operating_temp_c, slowdown_temp_c, shutdown_temp_c,
) -> tuple[np.ndarray, np.ndarray]:
    """(time to throttle, time to shutdown) [s] after losing all secondary flow."""
    c_eff = _plate_heat_capacity(heat_capacity_j_per_k, coolant_cp_j_per_kg_k, coolant_density_kg_per_m3)
    return _no_flow_times(temp_c, power_w, idle_w, c_eff, max_operating_temp_c, slowdown_temp_c, shutdown_temp_c)


def pump_loss(
    temp_c, power_w, idle_w, supply_temp_c, r_die_c_per_w, r_cal_c_per_w, heat_capacity_j_per_k,
    coolant_cp_j_per_kg_k, coolant_density_kg_per_m3, pumps_running_count, pumps_required, pump_failover_s,
    max_operating_temp_c, slowdown_temp_c, shutdown_temp_c,
) -> tuple[np.ndarray, np.ndarray]:
    """(time to throttle, time to shutdown) [s] after losing one running CDU pump (see module docstring)."""
    c_eff = _plate_heat_capacity(heat_capacity_j_per_k, coolant_cp_j_per_kg_k, coolant_density_kg_per_m3)
    remaining = np.asarray(pumps_running_count, dtype=np.float64) - 1.0
    required = np.asarray(pumps_required, dtype=np.float64)
    # (a) redundant: fail-over gap with no flow, then nominal again
    nf_thr, nf_shut = _no_flow_times(temp_c, power_w, idle_w, c_eff, max_operating_temp_c, slowdown_temp_c,
                                     shutdown_temp_c)
    gap_thr = np.where(nf_thr <= pump_failover_s, nf_thr, np.inf)
    gap_shut = np.where(nf_shut <= pump_failover_s, nf_shut, np.inf)
    # (b) degraded flow: relax to the new steady state
    frac = np.clip(remaining / required, 1e-9, 1.0)
    r_total = r_die_c_per_w + np.asarray(r_cal_c_per_w) / frac
    steady = supply_temp_c + power_w * r_total
    tau = heat_capacity_j_per_k * r_total
    deg_thr = time_to_temp_exponential_s(temp_c, steady, tau, max_operating_temp_c)
    steady_floor = supply_temp_c + np.minimum(idle_w, power_w) * r_total
    deg_shut = np.where(steady_floor > shutdown_temp_c,
                        time_to_temp_exponential_s(temp_c, steady, tau, shutdown_temp_c), np.inf)
    redundant = remaining >= required
    no_pump = remaining <= 0.0
    t_thr = np.where(redundant, gap_thr, np.where(no_pump, nf_thr, deg_thr))
    t_shut = np.where(redundant, gap_shut, np.where(no_pump, nf_shut, deg_shut))
    return t_thr, t_shut


def facility_water_loss(
    gpu_temp_max_c, coolant_supply_c, cdu_heat_w, gpu_power_w, idle_w, n_gpus, heat_capacity_j_per_k,
    loop_volume_l, coolant_cp_j_per_kg_k, coolant_density_kg_per_m3, max_operating_temp_c, shutdown_temp_c,
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
    temp_c, power_w, idle_w, supply_temp_c, delta_k, r_total_c_per_w, heat_capacity_j_per_k,
    max_operating_temp_c, shutdown_temp_c,
) -> tuple[np.ndarray, np.ndarray]:
    """(time to throttle, time to shutdown) [s] after the coolant supply rises by ``delta_k``."""
    new_supply = supply_temp_c + delta_k
    steady = new_supply + power_w * r_total_c_per_w
    tau = heat_capacity_j_per_k * r_total_c_per_w
    t_thr = time_to_temp_exponential_s(temp_c, steady, tau, max_operating_temp_c)
    steady_floor = new_supply + np.minimum(idle_w, power_w) * r_total_c_per_w
    t_shut = np.where(steady_floor > shutdown_temp_c,
                      time_to_temp_exponential_s(temp_c, steady, tau, shutdown_temp_c), np.inf)
    return t_thr, t_shut
