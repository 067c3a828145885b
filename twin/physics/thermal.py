"""GPU die and HBM temperature on a liquid cold plate, and the throttling the GPU applies.

Pure numpy functions over per-GPU arrays (no state, no I/O).  The steady model and the
throttling read one die-to-coolant resistance; the transient is two thermal nodes per GPU
(:func:`two_node_coefficients`): the **junction** (die, package and the cold-plate base
right under it, heat capacity ``C_j``) and the **plate** (the rest of the cold plate and its
coolant, ``C_p``), joined by the conduction resistance ``R_jp`` (die, TIM, base: the
``1 − f_conv`` share of ``R_die``), the plate reaching the coolant through the convective
share and the caloric resistance.  One lumped node (``τ = C R ≈ 29 s``) cannot follow the
junction's fast rise under a power step (τ_j = C_j R_jp ≈ 1 s) and understates the die's
peak under the training swing by several kelvin; the lumped forms below remain for the
failure projections (:mod:`twin.physics.failures`).

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
* cold-plate convection: ``R_die = R_die,design · (1 − f_conv + f_conv · (ṁ_design / ṁ)^n)``:
  the convective share ``f_conv`` (catalogue ``r_th_conv_frac``) scales as ``1/h``.  The
  micro-channels of a cold plate run laminar and thermally developing, where
  ``Nu ∝ (Re Pr D/L)^{1/3}`` (Sieder–Tate, combined entry [Incropera-DeWitt eq. 8.57]), so
  ``h ∝ ṁ^{1/3}`` (``n = CONVECTION_FLOW_EXPONENT``), not the ``ṁ^0.8`` of turbulent
  pipe flow (Dittus–Boelter [Incropera-DeWitt eq. 8.60]).
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

A power limit holds the board power *while the GPU computes*: a GPU at utilisation ``u``
computes for ``u`` of the time at its busy power and waits the rest near idle, so under a
limit ``L`` its mean power is ``P_idle + u (L − P_idle)``, below the limit
(:func:`mean_power_limit_w`), and its clocks fall only as far as the busy power needs.
Units are in the names (°C, K, W, J/K, kg/s, s).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
# [Incropera-DeWitt eq. 8.57] Sieder–Tate, laminar combined entry: Nu ∝ (Re Pr D/L)^(1/3), so h ∝ ṁ^(1/3) in the
# plate's micro-channels (turbulent Dittus–Boelter, eq. 8.60, would give 0.8).
CONVECTION_FLOW_EXPONENT = 1.0 / 3.0
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

    ``R_design · (1 − f_conv + f_conv · ratio^−n)`` (``h ∝ ṁ^n``, n = 1/3 laminar [Incropera-DeWitt eq. 8.57]).
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


# (a_jj, a_jp, a_pj, a_pp, g_j, g_p, h_j, h_p) of :func:`two_node_coefficients`: arrays or scalars alike
_Coef = np.ndarray | float
TwoNodeCoefficients = tuple[_Coef, _Coef, _Coef, _Coef, _Coef, _Coef, _Coef, _Coef]


def two_node_coefficients(
    c_junction_j_per_k: np.ndarray | float,
    c_plate_j_per_k: np.ndarray | float,
    r_jp_c_per_w: np.ndarray | float,
    r_pc_c_per_w: np.ndarray | float,
    supply_temp_c: np.ndarray | float,
    dt_s: np.ndarray | float,
) -> TwoNodeCoefficients:
    """Exact step of the two-node model over ``dt_s`` as eight coefficients (scalars or arrays alike, ``dt_s``
    too: the coefficients broadcast over it).

    ``C_j dT_j/dt = P − (T_j − T_p)/R_jp`` and ``C_p dT_p/dt = (T_j − T_p)/R_jp − (T_p − T_s)/R_pc``
    (``R_pc`` the plate's convective plus caloric resistance) for constant power and supply
    over the step give ``T_j' = a_jj T_j + a_jp T_p + g_j P + h_j`` and ``T_p' = a_pj T_j + a_pp T_p
    + g_p P + h_p``: ``Φ = e^{A dt}`` from the two real eigenvalues ``λ = s ± q`` of the RC
    ladder (``Φ = (E₁ + E₂)/2 · I + (E₁ − E₂)/(2q) · (A − s I)``, ``E = e^{λ dt}``, no overflow at
    any ``dt``), and ``g, h`` such that the steady state ``T_p = T_s + P R_pc``,
    ``T_j = T_p + P R_jp`` is a fixed point.  Returns ``(a_jj, a_jp, a_pj, a_pp, g_j, g_p, h_j, h_p)``.
    """
    if not np.all(np.asarray(dt_s) >= 0.0):
        raise ValueError(f"dt_s: must be >= 0 (got {dt_s!r})")
    for name, v in (("c_junction_j_per_k", c_junction_j_per_k), ("c_plate_j_per_k", c_plate_j_per_k)):
        _require_positive(name, v)
    _require_positive("r_jp_c_per_w", r_jp_c_per_w)
    _require_positive("r_pc_c_per_w", r_pc_c_per_w)
    cj, cp = np.asarray(c_junction_j_per_k, dtype=np.float64), np.asarray(c_plate_j_per_k, dtype=np.float64)
    rjp, rpc = np.asarray(r_jp_c_per_w, dtype=np.float64), np.asarray(r_pc_c_per_w, dtype=np.float64)
    a11, a12 = -1.0 / (cj * rjp), 1.0 / (cj * rjp)
    a21, a22 = 1.0 / (cp * rjp), -(1.0 / rjp + 1.0 / rpc) / cp
    mid = (a11 + a22) / 2.0
    q = np.sqrt(((a11 - a22) / 2.0) ** 2 + a12 * a21)
    e1, e2 = np.exp((mid + q) * dt_s), np.exp((mid - q) * dt_s)
    even, odd = (e1 + e2) / 2.0, (e1 - e2) / (2.0 * q)
    jj, jp = even + odd * (a11 - mid), odd * a12
    pj, pp = odd * a21, even + odd * (a22 - mid)
    rt = rjp + rpc
    g_j, g_p = (1.0 - jj) * rt - jp * rpc, (1.0 - pp) * rpc - pj * rt
    h_j, h_p = (1.0 - jj - jp) * supply_temp_c, (1.0 - pj - pp) * supply_temp_c
    return jj, jp, pj, pp, g_j, g_p, h_j, h_p


def two_node_steady_c(
    power_w: np.ndarray | float,
    supply_temp_c: np.ndarray | float,
    r_jp_c_per_w: np.ndarray | float,
    r_pc_c_per_w: np.ndarray | float,
) -> tuple[np.ndarray, np.ndarray]:
    """Steady junction and plate temperatures ``(T_s + P (R_jp + R_pc), T_s + P R_pc)`` [°C]."""
    plate = supply_temp_c + np.asarray(power_w, dtype=np.float64) * r_pc_c_per_w
    return plate + np.asarray(power_w, dtype=np.float64) * r_jp_c_per_w, plate


def two_node_adiabatic_step_c(
    junction_c: np.ndarray | float,
    plate_c: np.ndarray | float,
    power_w: np.ndarray | float,
    c_junction_j_per_k: np.ndarray | float,
    c_plate_j_per_k: np.ndarray | float,
    r_jp_c_per_w: np.ndarray | float,
    dt_s: float,
    shutdown_c: np.ndarray | float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Junction and plate after ``dt_s`` with no coolant flow, and the power the package drew [°C, °C, W].

    The mean ``T̄ = (C_j T_j + C_p T_p)/C`` rises by ``P dt / C``; the difference ``D = T_j − T_p``
    relaxes to ``P R_jp C_p / C`` with ``τ = R_jp C_j C_p / C``.  With ``shutdown_c`` the hardware
    cuts the power when the junction reaches it: the power is lowered so the junction ends
    there (a junction already above keeps its temperature), as :func:`adiabatic_step_c`.
    """
    cj, cp = np.asarray(c_junction_j_per_k, dtype=np.float64), np.asarray(c_plate_j_per_k, dtype=np.float64)
    c = cj + cp
    tj, tp, p = (np.asarray(v, dtype=np.float64) for v in (junction_c, plate_c, power_w))
    mean, diff = (cj * tj + cp * tp) / c, tj - tp
    decay = np.exp(-dt_s * c / (np.asarray(r_jp_c_per_w) * cj * cp))
    # T_j' = mean + P dt/C + (D_ss + (D − D_ss) decay) C_p/C: linear in P, a + b P
    a = mean + diff * decay * cp / c
    b = dt_s / c + np.asarray(r_jp_c_per_w) * cp / c * (1.0 - decay) * cp / c
    if shutdown_c is not None:
        target = np.maximum(tj, shutdown_c)
        with np.errstate(divide="ignore", invalid="ignore"):
            allowed = np.where(b > 0, (target - a) / b, p)
        p = np.clip(np.minimum(p, allowed), 0.0, None)
    d_new = p * np.asarray(r_jp_c_per_w) * cp / c * (1.0 - decay) + diff * decay
    m_new = mean + p * dt_s / c
    return m_new + d_new * cp / c, m_new - d_new * cj / c, p


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


def two_node_step_few_pass_c(
    junction_c: np.ndarray, plate_c: np.ndarray, power_w: np.ndarray, coeffs: TwoNodeCoefficients
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`two_node_coefficients`' step ``(T_j', T_p')`` in two new arrays and one scratch [°C]."""
    jj, jp, pj, pp, g_j, g_p, h_j, h_p = coeffs
    buf = np.empty_like(junction_c)
    out_j = np.multiply(junction_c, jj)
    out_j += np.multiply(plate_c, jp, out=buf)
    out_j += np.multiply(power_w, g_j, out=buf)
    out_j += h_j
    out_p = np.multiply(plate_c, pp)
    out_p += np.multiply(junction_c, pj, out=buf)
    out_p += np.multiply(power_w, g_p, out=buf)
    out_p += h_p
    return out_j, out_p


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


def mean_power_limit_w(
    power_limit_w: np.ndarray | float, duty_frac: np.ndarray | float, idle_w: np.ndarray | float
) -> np.ndarray | float:
    """Mean board power of a GPU held at ``power_limit_w`` while it computes: ``P_idle + u (L − P_idle)`` [W].

    The limit acts on the busy power for the share ``u = duty_frac`` of the time the GPU
    computes (its utilisation); the rest of the time it waits near idle.  A limit at or
    below idle, or a GPU without work, is held at the limit itself.
    """
    if np.ndim(duty_frac) == 0 and float(duty_frac) >= 1.0:
        return power_limit_w
    u = np.asarray(duty_frac, dtype=np.float64)
    held = np.asarray(idle_w) + u * (np.asarray(power_limit_w) - idle_w)
    return np.where((u > 0.0) & (np.asarray(power_limit_w) > idle_w), held, power_limit_w)


def throttle_active(
    demand_w: np.ndarray | float,
    power_limit_w: np.ndarray | float,
    die_temp_c: np.ndarray | float,
    thermal_limit_w: np.ndarray | float,
    max_operating_temp_c: np.ndarray | float,
    power_brake: np.ndarray | bool = False,
    duty_frac: np.ndarray | float = 1.0,
    idle_w: np.ndarray | float = 0.0,
) -> np.ndarray:
    """GPUs on which a throttling mechanism of :func:`throttle` acts (bool).

    Power cap (demand above the limit), SW thermal slowdown (operating point below the
    capped demand, or die at max operating), HW slowdown or power brake.  Elsewhere
    :func:`throttle` returns ``min(demand, limit)``, full clocks and at most the idle bit,
    so a caller may run it on the active GPUs only.  Assumes the slowdown temperature is
    not below max operating (true of every catalogue GPU).  ``duty_frac`` and ``idle_w`` give the
    mean power the limit holds (:func:`mean_power_limit_w`).
    """
    held = mean_power_limit_w(power_limit_w, duty_frac, idle_w)
    target = np.minimum(demand_w, held)
    return (thermal_limit_w < target) | (die_temp_c >= max_operating_temp_c) | (demand_w > held) | power_brake


def power_cap_only(
    demand_w: np.ndarray,
    power_limit_w: float,
    idle_w: np.ndarray | float,
    solve: np.ndarray | None = None,
    duty_frac: np.ndarray | float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`throttle` where only the power cap can act: board power, clock fraction and clock-event mask.

    Valid when no power brake is asserted, every die is below max operating (so below the
    slowdown temperature too) and every SW thermal operating point is at or above the scalar
    ``power_limit_w`` [W]; then :func:`throttle` gives ``min(demand, limit)``, the clock of
    :func:`clock_at_power_frac` on the capped GPUs (full clocks elsewhere) and the
    SW_POWER_CAP bit on the capped GPUs.  The GPU_IDLE bit is left to the caller.  Equal to
    :func:`throttle` bit for bit under those conditions, at a fraction of its passes.
    With ``solve`` (bool per GPU), clocks are solved only there (elsewhere they are left
    unspecified, for GPUs the caller powers off).  ``duty_frac`` sets the mean power the
    limit holds (:func:`mean_power_limit_w`).
    """
    demand_w = np.asarray(demand_w, dtype=np.float64)
    if np.ndim(duty_frac) == 0 and float(duty_frac) >= 1.0:
        above: np.ndarray | None
        held: np.ndarray | float
        above, held = None, power_limit_w  # the limit holds the mean power
    else:  # held − idle = u (L − idle) on the busy share, the limit itself for GPUs without work
        u = np.broadcast_to(np.asarray(duty_frac, dtype=np.float64), demand_w.shape)
        above = np.multiply(u, np.subtract(power_limit_w, idle_w))
        if float(u.min()) <= 0.0 or power_limit_w <= float(np.min(idle_w)):
            np.copyto(above, np.subtract(power_limit_w, idle_w), where=(u <= 0.0) | (power_limit_w <= idle_w))
        held = np.add(above, idle_w)
    capped = demand_w > held
    n_capped = int(np.count_nonzero(capped))
    if n_capped == capped.size:
        mask = np.full(capped.shape, CLOCK_EVENT_SW_POWER_CAP, dtype=np.int32)
        power = held if above is not None else np.minimum(demand_w, held)
        if power_limit_w >= np.max(idle_w):
            # clock_at_power_frac in place: demand > held >= idle, so the ratio lies in [0, 1)
            clock = np.subtract(demand_w, idle_w)
            np.divide(
                power_limit_w - np.asarray(idle_w, dtype=np.float64) if above is None else above, clock, out=clock
            )
            where = True if solve is None else solve
            return power, np.power(clock, 1.0 / DVFS_POWER_EXPONENT, out=clock, where=where), mask  # type: ignore[return-value]  # held is an array whenever above is
        return np.minimum(demand_w, held), clock_at_power_frac(held, demand_w, idle_w), mask
    power = np.minimum(demand_w, held)
    clock = np.ones(capped.shape)
    mask = np.zeros(capped.shape, dtype=np.int32)
    if n_capped:
        idx = np.flatnonzero(capped)
        sub: Callable[[Any], Any] = lambda v: v[idx] if np.ndim(v) else v  # noqa: E731  # an array's or the scalar
        clock[idx] = clock_at_power_frac(sub(held), demand_w[idx], sub(idle_w))
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
    duty_frac: np.ndarray | float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Board power, clock fraction and NVML clock-event mask the GPU settles on this step.

    Decisions use the die temperature at the start of the step (what the sensors read)
    and, for the driver's SW thermal slowdown, the steady operating point
    ``thermal_limit_w`` from :func:`sw_thermal_power_limit_w` (``inf`` with no flow:
    then only the hardware limits act).

    Parameters
    ----------
    demand_w : power the workload would draw at full clocks [W], >= 0
    power_limit_w : enforced board power limit [W] (on the busy power: the mean is
        :func:`mean_power_limit_w` of it)
    idle_w : idle board power [W] (the floor of clock scaling)
    die_temp_c : die temperature now [°C]
    thermal_limit_w : SW thermal operating point [W]
    max_operating_temp_c, slowdown_temp_c : GPU limits [°C]
    util_frac : utilisation (only for the GPU_IDLE bit)
    power_brake : external power brake asserted (node PSUs lost)
    duty_frac : share of time the power limit acts (a GPU's utilisation under a cap, 1 when
        the limit holds the mean power: :func:`mean_power_limit_w`)

    Returns
    -------
    power_w, clock_frac, clock_event_mask (int32)
    """
    _require_finite("demand_w", demand_w)
    _require_finite("die_temp_c", die_temp_c)
    _require_nonnegative("demand_w", demand_w)
    demand_w = np.asarray(demand_w, dtype=np.float64)
    held = mean_power_limit_w(power_limit_w, duty_frac, idle_w)
    capped = demand_w > held
    target = np.minimum(demand_w, held)
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
