"""GPU die and HBM temperature on a liquid cold plate, and the throttling the GPU applies.

Pure numpy functions over per-GPU arrays (no state, no I/O).  The model is one lumped
thermal node per GPU package:

* steady state: ``T_die = T_supply + P · (R_die + R_cal)`` where ``R_die`` is the
  die-to-coolant resistance of the cold plate (catalogue ``r_th_die_c_per_w``) and
  ``R_cal = 1 / (2 · ṁ · cp)`` the *caloric* resistance: the coolant warms by
  ``P / (ṁ · cp)`` across the plate, so its mean temperature sits half of that above
  the supply [Incropera-DeWitt §8.3] (the
  mean-temperature energy balance).
* HBM: ``T_hbm = T_local + P_hbm · R_hbm`` with ``T_local = T_supply + P · R_cal`` and the
  HBM's own power ``P_hbm = f_hbm · P`` (catalogue ``hbm_power_frac``: HBM energy per bit
  times bandwidth over board power); ``R_hbm`` (catalogue ``r_th_hbm_c_per_w``) is the
  stacks' resistance to the plate coolant per watt of HBM power.  The stacks' small heat
  capacity is neglected (they follow their power within the tick).
* cold-plate convection: ``R_die = R_die,design · (1 − f_conv + f_conv · (ṁ_design / ṁ)^0.8)``:
  the convective share ``f_conv`` (catalogue ``r_th_conv_frac``) scales as ``1/h`` with
  ``h ∝ ṁ^0.8`` (Dittus–Boelter, ``Nu = 0.023 Re^0.8 Pr^0.4`` [Incropera-DeWitt eq. 8.60]).
* leakage: static power rises linearly with die temperature,
  ``P_leak = k_leak · (T_die − LEAKAGE_REF_C)`` (catalogue ``leakage_w_per_k``); a linear
  model is within a few per cent over the operating range [Liu-DATE-2007].
* transient: ``C · dT/dt = P − (T − T_supply) / R_total`` with heat capacity ``C``
  (catalogue ``heat_capacity_j_per_k``) and time constant ``τ = C · R_total``.  The
  step update is the exact solution for constant inputs over ``dt``, so it is
  unconditionally stable: ``T(t+dt) = T_ss + (T − T_ss) · exp(−dt / τ)``.
* no flow: ``C_eff · dT/dt = P`` (adiabatic, :func:`adiabatic_step_c`).

Throttling follows what the firmware and driver do ([NVSMI-H800-Capture]; [NVML-ClocksEventReasons]; [DCGM-Fields]):

* SW power cap (bit 0x04): board power held at the power limit;
* SW thermal slowdown (0x20): the driver lowers clocks so the die stays below max
  operating (87 °C H100) and the HBM below its max (95 °C);
* HW slowdown (0x08 + 0x40): at the slowdown temperature (89 °C) hardware cuts clocks
  by at least 2× (``HW_SLOWDOWN_CLOCK_FRAC``);
* HW power brake (0x08 + 0x80): external brake (e.g. node PSUs lost), clocks cut 2×;
* shutdown at 92 °C (handled by the caller as a latched ``GPU_DOWN``).

Clock/power relation: ``P = P_idle + (P_demand − P_idle) · f^α`` with the clock
fraction ``f`` and ``α = DVFS_POWER_EXPONENT`` (dynamic power ∝ f·V², V rising with f
gives 2–3 over the DVFS range [E]); throughput is taken proportional to ``f``.
Units are in the names (°C, K, W, J/K, kg/s, s).
"""

from __future__ import annotations

import numpy as np

# NVML / DCGM clock-event reason bits ([DCGM-Fields] field 112; [NVML-ClocksEventReasons]).
CLOCK_EVENT_GPU_IDLE = 0x001
CLOCK_EVENT_SW_POWER_CAP = 0x004
CLOCK_EVENT_HW_SLOWDOWN = 0x008
CLOCK_EVENT_SW_THERMAL = 0x020
CLOCK_EVENT_HW_THERMAL = 0x040
CLOCK_EVENT_HW_POWER_BRAKE = 0x080

# [E] dynamic power ∝ f·V² with V roughly ∝ f over the upper DVFS range → exponent 2–3;
# 2.5 gives ~86 % throughput at a 500 W cap of a 700 W-demand H100 (85 W idle).
DVFS_POWER_EXPONENT = 2.5
# [P] [NVML-ClocksEventReasons]: HW slowdown cuts core clocks by >= 2x.
HW_SLOWDOWN_CLOCK_FRAC = 0.5
# [E] utilisation below which a GPU reports the GPU_IDLE clock-event bit.
IDLE_UTIL_FRAC = 0.01
# [Incropera-DeWitt eq. 8.60] Dittus–Boelter: Nu = 0.023 Re^0.8 Pr^0.4, so h ∝ ṁ^0.8 at fixed geometry.
CONVECTION_FLOW_EXPONENT = 0.8
# [NVSMI-H100-Capture] the idle power (and so the catalogue's leakage baseline) was read at 28–31 °C.
LEAKAGE_REF_C = 30.0


def _require_finite(name: str, value: np.ndarray | float) -> None:
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{name}: non-finite value (NaN or inf) in input")


def _require_positive(name: str, value: np.ndarray | float) -> None:
    arr = np.asarray(value)
    if arr.size and not np.all(arr > 0.0):  # also rejects NaN
        bad = arr[~(arr > 0.0)].ravel()[0]
        raise ValueError(f"{name}: must be > 0 (got {bad!r}); zero or negative flow has no steady state")


def _require_nonnegative(name: str, value: np.ndarray | float) -> None:
    arr = np.asarray(value)
    if arr.size and not np.all(arr >= 0.0):
        bad = arr[~(arr >= 0.0)].ravel()[0]
        raise ValueError(f"{name}: must be >= 0 (got {bad!r})")


def caloric_resistance_c_per_w(mass_flow_kg_s: np.ndarray | float, cp_j_per_kg_k: np.ndarray | float) -> np.ndarray:
    """Rise of the mean coolant temperature in the plate per watt, ``1 / (2 ṁ cp)`` [K/W].

    Parameters
    ----------
    mass_flow_kg_s : coolant mass flow through the GPU's cold plate [kg/s], > 0
    cp_j_per_kg_k : coolant specific heat [J/(kg·K)], > 0

    Raises ``ValueError`` for zero, negative or NaN flow (no steady state exists).
    """
    _require_positive("mass_flow_kg_s", mass_flow_kg_s)
    _require_positive("cp_j_per_kg_k", cp_j_per_kg_k)
    return 0.5 / (np.asarray(mass_flow_kg_s, dtype=np.float64) * cp_j_per_kg_k)


def die_temp_steady_c(
    power_w: np.ndarray | float,
    supply_temp_c: np.ndarray | float,
    r_th_die_c_per_w: np.ndarray | float,
    r_cal_c_per_w: np.ndarray | float = 0.0,
) -> np.ndarray:
    """Steady die temperature ``T_supply + P · (R_die + R_cal)`` [°C].

    Parameters
    ----------
    power_w : GPU board power [W], >= 0
    supply_temp_c : coolant temperature at the cold-plate inlet [°C]
    r_th_die_c_per_w : die-to-coolant thermal resistance [K/W], > 0
    r_cal_c_per_w : caloric resistance from :func:`caloric_resistance_c_per_w` [K/W]
    """
    _require_nonnegative("power_w", power_w)
    _require_finite("supply_temp_c", supply_temp_c)
    _require_positive("r_th_die_c_per_w", r_th_die_c_per_w)
    return supply_temp_c + np.asarray(power_w, dtype=np.float64) * (np.asarray(r_th_die_c_per_w) + r_cal_c_per_w)


def plate_coolant_temp_c(
    power_w: np.ndarray | float, supply_temp_c: np.ndarray | float, r_cal_c_per_w: np.ndarray | float
) -> np.ndarray:
    """Mean coolant temperature in the GPU's cold plate ``T_supply + P · R_cal`` [°C]."""
    return supply_temp_c + np.asarray(power_w, dtype=np.float64) * r_cal_c_per_w


def hbm_temp_c(
    local_coolant_temp_c: np.ndarray | float,
    hbm_power_w: np.ndarray | float,
    r_th_hbm_c_per_w: np.ndarray | float,
) -> np.ndarray:
    """HBM temperature ``T_local + P_hbm · R_hbm`` [°C].

    ``local_coolant_temp_c`` is the mean coolant temperature in the plate
    (:func:`plate_coolant_temp_c`), ``hbm_power_w`` the stacks' own power (``hbm_power_frac``
    of board power) and ``r_th_hbm_c_per_w`` their resistance to that coolant [K/W].
    """
    return local_coolant_temp_c + np.asarray(hbm_power_w, dtype=np.float64) * r_th_hbm_c_per_w


def die_resistance_c_per_w(
    r_th_die_c_per_w: np.ndarray | float, conv_frac: np.ndarray | float, flow_ratio: np.ndarray | float
) -> np.ndarray:
    """Die-to-coolant resistance at ``flow_ratio`` = plate flow / design flow [K/W].

    ``R_design · (1 − f_conv + f_conv · ratio^−0.8)`` (``h ∝ ṁ^0.8``, [Incropera-DeWitt eq. 8.60]).
    ``flow_ratio`` must be > 0 (no flow has no convective resistance: the caller steps
    those GPUs adiabatically).
    """
    _require_positive("flow_ratio", flow_ratio)
    scale = np.power(np.asarray(flow_ratio, dtype=np.float64), -CONVECTION_FLOW_EXPONENT)
    return np.asarray(r_th_die_c_per_w) * (1.0 - np.asarray(conv_frac) + np.asarray(conv_frac) * scale)


def leakage_power_w(die_temp_c: np.ndarray | float, leakage_w_per_k: np.ndarray | float) -> np.ndarray:
    """Extra static power at ``die_temp_c`` over the catalogue's figures [W]: ``k · (T − LEAKAGE_REF_C)``.

    Linear in temperature [Liu-DATE-2007]; negative below the reference (less leakage).
    """
    return np.asarray(leakage_w_per_k) * (np.asarray(die_temp_c, dtype=np.float64) - LEAKAGE_REF_C)


def time_constant_s(heat_capacity_j_per_k: np.ndarray | float, r_total_c_per_w: np.ndarray | float) -> np.ndarray:
    """Lumped time constant ``τ = C · R_total`` [s]."""
    _require_positive("heat_capacity_j_per_k", heat_capacity_j_per_k)
    _require_positive("r_total_c_per_w", r_total_c_per_w)
    return np.asarray(heat_capacity_j_per_k, dtype=np.float64) * r_total_c_per_w


def decay_frac(tau_s: np.ndarray | float, dt_s: float) -> np.ndarray:
    """Fraction of a temperature difference left after ``dt_s``: ``exp(−dt/τ)`` (1 for ``τ = inf``)."""
    if not dt_s >= 0.0:
        raise ValueError(f"dt_s: must be >= 0 (got {dt_s!r})")
    _require_positive("tau_s", tau_s)
    return np.exp(-dt_s / np.asarray(tau_s, dtype=np.float64))


def relax_temp_c(
    temp_c: np.ndarray | float, steady_temp_c: np.ndarray | float, decay_frac: np.ndarray | float
) -> np.ndarray:
    """Exact first-order step ``T_ss + (T − T_ss) · d`` [°C] with ``d = exp(−dt/τ)`` from :func:`decay_frac`.

    Stable for any ``dt_s >= 0``.  ``decay_frac`` may be computed once per group of GPUs
    that share a time constant (a CDU) and broadcast.
    """
    return steady_temp_c + (np.asarray(temp_c, dtype=np.float64) - steady_temp_c) * decay_frac


def adiabatic_step_c(
    temp_c: np.ndarray | float,
    power_w: np.ndarray | float,
    heat_capacity_j_per_k: np.ndarray | float,
    dt_s: float,
    shutdown_c: np.ndarray | float | None = None,
) -> np.ndarray:
    """Temperature after ``dt_s`` with no coolant flow: ``T + P · dt / C`` [°C].

    With ``shutdown_c`` the heating stops there: the GPU's hardware shutdown cuts its power
    when the die reaches it (NVML shutdown threshold [NVSMI-H800-Capture]), so a long step
    cannot carry a package past it; a die already above it keeps its temperature.
    """
    if not dt_s >= 0.0:
        raise ValueError(f"dt_s: must be >= 0 (got {dt_s!r})")
    _require_nonnegative("power_w", power_w)
    _require_positive("heat_capacity_j_per_k", heat_capacity_j_per_k)
    heated = temp_c + np.asarray(power_w, dtype=np.float64) * dt_s / heat_capacity_j_per_k
    if shutdown_c is None:
        return heated
    return np.minimum(heated, np.maximum(temp_c, shutdown_c))


# --- the same models in few passes, for the tick's per-GPU arrays ------------------------------
# Equal to the compositions of the checked functions above (tests/twin/physics/test_thermal.py),
# without their input checks and temporaries: the engine's inputs are valid by construction.


def demand_with_leakage_w(
    demand_w: np.ndarray, die_temp_c: np.ndarray, leakage_w_per_k: np.ndarray | float
) -> np.ndarray:
    """``max(demand + leakage_power_w(T, k), 0)`` in one new array [W]: a cold die leaks less and a GPU
    that draws nothing (shed, off) leaks nothing."""
    out = np.subtract(die_temp_c, LEAKAGE_REF_C)
    out *= leakage_w_per_k
    out += demand_w
    return np.maximum(out, 0.0, out=out)


def die_temp_step_c(
    temp_c: np.ndarray,
    power_w: np.ndarray,
    supply_temp_c: np.ndarray | float,
    r_total_c_per_w: np.ndarray | float,
    decay_frac: np.ndarray | float,
) -> np.ndarray:
    """``relax_temp_c(T, die_temp_steady_c(P, T_supply, R_total), d)`` in one new array [°C].

    ``r_total_c_per_w`` is ``R_die + R_cal``; ``power_w`` must be >= 0 (not checked).
    """
    steady = np.multiply(power_w, r_total_c_per_w)
    steady += supply_temp_c
    out = np.subtract(temp_c, steady)
    out *= decay_frac
    out += steady
    return out


def hbm_temp_from_rise_c(
    power_w: np.ndarray, supply_temp_c: np.ndarray | float, rise_c_per_w: np.ndarray | float
) -> np.ndarray:
    """``hbm_temp_c(plate_coolant_temp_c(P, T_supply, R_cal), f_hbm P, R_hbm)`` in one new array [°C].

    ``rise_c_per_w`` is ``R_cal + f_hbm · R_hbm``, the HBM's rise over the supply per watt of
    board power (:func:`hbm_rise_c_per_w`).
    """
    out = np.multiply(power_w, rise_c_per_w)
    out += supply_temp_c
    return out


def hbm_rise_c_per_w(
    r_cal_c_per_w: np.ndarray | float, hbm_power_frac: np.ndarray | float, r_th_hbm_c_per_w: np.ndarray | float
) -> np.ndarray | float:
    """The HBM's rise over the supply per watt of board power, ``R_cal + f_hbm · R_hbm`` [K/W]."""
    return r_cal_c_per_w + hbm_power_frac * r_th_hbm_c_per_w


def power_at_clock_w(
    clock_frac: np.ndarray | float, demand_w: np.ndarray | float, idle_w: np.ndarray | float
) -> np.ndarray:
    """Board power at clock fraction ``f``: ``P_idle + (P_demand − P_idle)·f^α`` [W] (never below demand if demand < idle)."""
    dynamic = np.maximum(np.asarray(demand_w, dtype=np.float64) - idle_w, 0.0)
    return np.minimum(demand_w, idle_w) + dynamic * np.power(clock_frac, DVFS_POWER_EXPONENT)


def clock_at_power_frac(
    power_w: np.ndarray | float, demand_w: np.ndarray | float, idle_w: np.ndarray | float
) -> np.ndarray:
    """Clock fraction that brings board power from ``demand_w`` down to ``power_w`` (inverse of :func:`power_at_clock_w`)."""
    dynamic = np.asarray(demand_w, dtype=np.float64) - idle_w
    allowed = np.asarray(power_w, dtype=np.float64) - idle_w
    ratio = np.clip(allowed / np.maximum(dynamic, 1e-12), 0.0, 1.0)
    no_dynamic = dynamic <= 0.0
    if np.any(no_dynamic):  # demand at or below idle: clocks are not the limit
        ratio = np.where(no_dynamic, 1.0, ratio)
    return np.power(ratio, 1.0 / DVFS_POWER_EXPONENT)


def thermal_power_limit_w(
    limit_temp_c: np.ndarray | float,
    supply_temp_c: np.ndarray | float,
    r_total_c_per_w: np.ndarray | float,
) -> np.ndarray:
    """Power whose steady temperature equals ``limit_temp_c``: ``(T_limit − T_supply) / R_total`` [W].

    This is the operating point the driver's SW thermal slowdown converges to; it is
    negative when the coolant itself is above the limit.
    """
    return (limit_temp_c - np.asarray(supply_temp_c, dtype=np.float64)) / r_total_c_per_w


def sw_thermal_power_limit_w(
    supply_temp_c: np.ndarray | float,
    r_die_c_per_w: np.ndarray | float,
    r_hbm_c_per_w: np.ndarray | float,
    r_cal_c_per_w: np.ndarray | float,
    max_operating_temp_c: np.ndarray | float,
    hbm_max_temp_c: np.ndarray | float,
    hbm_power_frac: np.ndarray | float,
) -> np.ndarray:
    """Highest board power that keeps the die below max operating and the HBM below its max [W].

    ``min((T_maxop − T_s) / (R_die + R_cal), (T_hbm,max − T_s) / (R_cal + f_hbm · R_hbm))``: the
    steady operating point the driver's SW thermal slowdown converges to (the HBM's rise is
    ``P R_cal`` of the plate coolant plus ``f_hbm P R_hbm`` of its own power).
    """
    return np.minimum(
        thermal_power_limit_w(max_operating_temp_c, supply_temp_c, np.asarray(r_die_c_per_w) + r_cal_c_per_w),
        thermal_power_limit_w(
            hbm_max_temp_c, supply_temp_c, np.asarray(r_cal_c_per_w) + np.asarray(hbm_power_frac) * r_hbm_c_per_w
        ),
    )


def throttle_active(
    demand_w: np.ndarray | float,
    power_limit_w: np.ndarray | float,
    die_temp_c: np.ndarray | float,
    thermal_limit_w: np.ndarray | float,
    max_operating_temp_c: np.ndarray | float,
    power_brake: np.ndarray | bool = False,
) -> np.ndarray:
    """GPUs on which a throttling mechanism of :func:`throttle` acts (bool).

    Power cap (demand above the limit), SW thermal slowdown (operating point below the
    capped demand, or die at max operating), HW slowdown or power brake.  Elsewhere
    :func:`throttle` returns ``min(demand, limit)``, full clocks and at most the idle bit,
    so a caller may run it on the active GPUs only.  Assumes the slowdown temperature is
    not below max operating (true of every catalogue GPU).
    """
    target = np.minimum(demand_w, power_limit_w)
    return (thermal_limit_w < target) | (die_temp_c >= max_operating_temp_c) | (demand_w > power_limit_w) | power_brake


def power_cap_only(
    demand_w: np.ndarray, power_limit_w: float, idle_w: np.ndarray | float, solve: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`throttle` where only the power cap can act: board power, clock fraction and clock-event mask.

    Valid when no power brake is asserted, every die is below max operating (so below the
    slowdown temperature too) and every SW thermal operating point is at or above the scalar
    ``power_limit_w`` [W]; then :func:`throttle` gives ``min(demand, limit)``, the clock of
    :func:`clock_at_power_frac` on the capped GPUs (full clocks elsewhere) and the
    SW_POWER_CAP bit on the capped GPUs.  The GPU_IDLE bit is left to the caller.  Equal to
    :func:`throttle` bit for bit under those conditions, at a fraction of its passes.
    With ``solve`` (bool per GPU), clocks are solved only there (elsewhere they are left
    unspecified, for GPUs the caller powers off).
    """
    demand_w = np.asarray(demand_w, dtype=np.float64)
    capped = demand_w > power_limit_w
    power = np.minimum(demand_w, power_limit_w)
    n_capped = int(np.count_nonzero(capped))
    if n_capped == capped.size:
        mask = np.full(capped.shape, CLOCK_EVENT_SW_POWER_CAP, dtype=np.int32)
        if power_limit_w >= np.max(idle_w):
            # clock_at_power_frac in place: demand > limit >= idle, so the ratio lies in [0, 1)
            clock = np.subtract(demand_w, idle_w)
            np.divide(power_limit_w - np.asarray(idle_w, dtype=np.float64), clock, out=clock)
            where = True if solve is None else solve
            return power, np.power(clock, 1.0 / DVFS_POWER_EXPONENT, out=clock, where=where), mask
        return power, clock_at_power_frac(power_limit_w, demand_w, idle_w), mask
    clock = np.ones(capped.shape)
    mask = np.zeros(capped.shape, dtype=np.int32)
    if n_capped:
        idx = np.flatnonzero(capped)
        idle_at = idle_w[idx] if isinstance(idle_w, np.ndarray) and idle_w.ndim else idle_w
        clock[idx] = clock_at_power_frac(power_limit_w, demand_w[idx], idle_at)
        mask[idx] = CLOCK_EVENT_SW_POWER_CAP
    return power, clock, mask


def throttle(
    demand_w: np.ndarray,
    power_limit_w: np.ndarray | float,
    idle_w: np.ndarray | float,
    die_temp_c: np.ndarray,
    thermal_limit_w: np.ndarray | float,
    max_operating_temp_c: np.ndarray | float,
    slowdown_temp_c: np.ndarray | float,
    util_frac: np.ndarray | float = 1.0,
    power_brake: np.ndarray | bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Board power, clock fraction and NVML clock-event mask the GPU settles on this step.

    Decisions use the die temperature at the start of the step (what the sensors read)
    and, for the driver's SW thermal slowdown, the steady operating point
    ``thermal_limit_w`` from :func:`sw_thermal_power_limit_w` (``inf`` with no flow:
    then only the hardware limits act).

    Parameters
    ----------
    demand_w : power the workload would draw at full clocks [W], >= 0
    power_limit_w : enforced board power limit [W]
    idle_w : idle board power [W] (the floor of clock scaling)
    die_temp_c : die temperature now [°C]
    thermal_limit_w : SW thermal operating point [W]
    max_operating_temp_c, slowdown_temp_c : GPU limits [°C]
    util_frac : utilisation (only for the GPU_IDLE bit)
    power_brake : external power brake asserted (node PSUs lost)

    Returns
    -------
    power_w, clock_frac, clock_event_mask (int32)
    """
    _require_finite("demand_w", demand_w)
    _require_finite("die_temp_c", die_temp_c)
    _require_nonnegative("demand_w", demand_w)
    demand_w = np.asarray(demand_w, dtype=np.float64)
    capped = demand_w > power_limit_w
    target = np.minimum(demand_w, power_limit_w)
    sw_thermal = (thermal_limit_w < target) | (die_temp_c >= max_operating_temp_c)
    target = np.minimum(target, np.maximum(thermal_limit_w, np.minimum(idle_w, demand_w)))
    clock = clock_at_power_frac(target, demand_w, idle_w)
    hw_thermal = np.asarray(die_temp_c >= slowdown_temp_c)
    hw = hw_thermal | power_brake
    power = np.broadcast_to(target, np.shape(clock)).astype(np.float64)
    if np.any(hw):  # hardware slowdown: clocks cut at least 2x, power follows the clock
        clock = np.where(hw, np.minimum(clock, HW_SLOWDOWN_CLOCK_FRAC), clock)
        power = np.where(hw, power_at_clock_w(clock, demand_w, idle_w), power)
    flags = (
        (np.asarray(util_frac) < IDLE_UTIL_FRAC, CLOCK_EVENT_GPU_IDLE),
        (capped, CLOCK_EVENT_SW_POWER_CAP),
        (sw_thermal, CLOCK_EVENT_SW_THERMAL),
        (hw, CLOCK_EVENT_HW_SLOWDOWN),
        (hw_thermal, CLOCK_EVENT_HW_THERMAL),
        (np.asarray(power_brake), CLOCK_EVENT_HW_POWER_BRAKE),
    )
    mask = np.zeros(np.shape(clock), dtype=np.int32)
    for flag, bit in flags:
        if np.any(flag):
            mask |= np.asarray(flag, dtype=np.int32) * np.int32(bit)
    return power, clock, mask
