"""Liquid-cooling models: coolant properties, loop temperatures, CDU capacity, plant and cooling power.

Pure numpy functions.  Secondary (rack-side) loops carry PG25 from in-rack or in-row
CDUs; CDUs reject heat to facility-water loops; a plant (cooling towers, chillers)
holds the facility supply temperature at its setpoint while it can.

Equations (units in names):

* energy balance of a loop: ``ΔT = Q / (ṁ · cp)`` with ``ṁ = V̇ · ρ``
  [Incropera-DeWitt §8.3];
* CDU capacity: linear interpolation of the catalogue curve of capacity against
  secondary supply temperature ([Supermicro-HotChips-2024]: in-rack 100 kW @ 32 °C, 60 kW @
  40 °C), held at its first point below the curve, extended linearly above it, never
  negative;
* CDU approach: for a liquid-to-liquid exchanger with fixed flows the log-mean
  temperature difference scales with duty, so ``approach = approach_design ·
  Q / capacity`` (``approach_design`` quoted at rated duty, [NVIDIA-CDU-Reqs]: 4 °C ATD);
* plant: towers deliver ``T_wb + approach_tower``; when that is at or below the
  setpoint the plant free-cools, otherwise chillers make up the lift.  Heat above the
  plant's capacity stays in the water: ``T_supply = T_base + (Q − Q_cap)⁺ / (ṁ cp)``;
* cooling power: pumps ``V̇ · Δp / η``; chillers ``Q_chiller / COP``; tower fans
  ``TOWER_FAN_KW_PER_KW · Q``.
"""

from __future__ import annotations

import numpy as np

# --- coolant property tables ([Airedale-DeltaChill p. 53] glycol tables) [P] ---
PROPERTY_TEMP_C = np.array([20.0, 30.0, 40.0])
PG25_CP_J_PER_KG_K = np.array([3910.0, 3940.0, 3960.0])
PG25_DENSITY_KG_PER_M3 = np.array([1023.7, 1019.2, 1014.3])
WATER_CP_J_PER_KG_K = np.array([4180.0, 4180.0, 4180.0])
WATER_DENSITY_KG_PER_M3 = np.array([998.2, 995.6, 992.2])
PG25_FREEZING_C = -9.6  # [P] same table
COOLANT_BOILING_C = 100.0  # sanity ceiling for an open-vented loop at 1 atm

# --- cooling-power constants ------------------------------------------------------
# [E] facility-water pumps: ~300 kPa total head at ~75 % wire-to-water efficiency.
FACILITY_PUMP_HEAD_KPA = 300.0
FACILITY_PUMP_EFF_FRAC = 0.75
# [S] ASHRAE 90.1 minimum open-tower fan efficiency 38.2 gpm/hp (axial) at a 10 °F
# range: 38.2 gpm × 1.465 kW/gpm = 56 kW of heat per 0.746 kW fan → 0.013 kW/kW.
TOWER_FAN_KW_PER_KW = 0.013


def _interp(temp_c: np.ndarray | float, table: np.ndarray) -> np.ndarray:
    return np.interp(temp_c, PROPERTY_TEMP_C, table)


def coolant_properties(temp_c: np.ndarray | float, coolant: str = "PG25") -> tuple[np.ndarray, np.ndarray]:
    """Specific heat [J/(kg·K)] and density [kg/m³] of ``coolant`` at ``temp_c``.

    Linear interpolation of the [Airedale-DeltaChill] table (20/30/40 °C), held constant outside it
    (the properties change by < 1 % per 10 K).  ``coolant`` is ``"PG25"`` or ``"water"``.
    Raises ``ValueError`` below the freezing point, at or above boiling, or for NaN.
    """
    t = np.asarray(temp_c, dtype=np.float64)
    if not np.all(np.isfinite(t)):
        raise ValueError("temp_c: non-finite coolant temperature")
    key = coolant.lower()
    if key == "pg25":
        cp_table, rho_table, freeze = PG25_CP_J_PER_KG_K, PG25_DENSITY_KG_PER_M3, PG25_FREEZING_C
    elif key == "water":
        cp_table, rho_table, freeze = WATER_CP_J_PER_KG_K, WATER_DENSITY_KG_PER_M3, 0.0
    else:
        raise ValueError(f"coolant: unknown coolant {coolant!r} (known: PG25, water)")
    if t.size and (t.min() <= freeze or t.max() >= COOLANT_BOILING_C):
        raise ValueError(f"temp_c: {coolant} outside its liquid range ({freeze} °C, {COOLANT_BOILING_C} °C)")
    return _interp(t, cp_table), _interp(t, rho_table)


def mass_flow_kg_s(flow_lpm: np.ndarray | float, density_kg_per_m3: np.ndarray | float) -> np.ndarray:
    """Mass flow ``V̇ · ρ`` [kg/s] from volume flow [L/min] and density [kg/m³]."""
    return np.asarray(flow_lpm, dtype=np.float64) * (np.asarray(density_kg_per_m3) / 60_000.0)


def coolant_delta_t_k(
    heat_w: np.ndarray | float, flow_lpm: np.ndarray | float, temp_c: np.ndarray | float = 30.0, coolant: str = "PG25"
) -> np.ndarray:
    """Coolant temperature rise ``Q / (ṁ · cp)`` [K] of a loop carrying ``heat_w`` at ``flow_lpm``.

    Hand check [Est-Coolant-Flow]: 1 kW on PG25 at 30 °C with 1.49 L/min gives 10 K.
    Raises ``ValueError`` for zero, negative or NaN flow.
    """
    flow = np.asarray(flow_lpm, dtype=np.float64)
    if flow.size and not np.all(flow > 0.0):
        raise ValueError("flow_lpm: must be > 0; a loop with no flow has no steady temperature rise")
    cp, rho = coolant_properties(temp_c, coolant)
    return np.asarray(heat_w, dtype=np.float64) / (mass_flow_kg_s(flow, rho) * cp)


def cdu_capacity_kw(
    supply_temp_c: np.ndarray | float, curve_supply_c: np.ndarray, curve_kw: np.ndarray
) -> np.ndarray:
    """CDU heat capacity [kW] at secondary supply temperature ``supply_temp_c`` [°C].

    ``curve_supply_c``/``curve_kw`` are per-CDU curves of shape ``[n, k]`` (or one
    curve of shape ``[k]``).  Below the first point the first capacity holds; above the
    last point the last segment is extended; the result is never negative.
    """
    xs = np.atleast_2d(np.asarray(curve_supply_c, dtype=np.float64))
    ys = np.atleast_2d(np.asarray(curve_kw, dtype=np.float64))
    t = np.asarray(supply_temp_c, dtype=np.float64)
    if xs.shape[1] < 2:
        raise ValueError("capacity curve needs at least two points")
    if not np.all(np.diff(xs, axis=1) > 0):
        raise ValueError("capacity curve supply temperatures must increase")
    t_b = np.broadcast_to(t, np.broadcast_shapes(t.shape, xs.shape[:1]))
    # Segment index per CDU (the curves have few points: a loop over points is fine).
    seg = np.zeros(t_b.shape, dtype=np.intp)
    for j in range(1, xs.shape[1] - 1):
        seg += t_b >= np.broadcast_to(xs[:, j], t_b.shape)
    rows = np.arange(t_b.shape[0]) if xs.shape[0] > 1 else np.zeros(t_b.shape[0], dtype=np.intp)
    x0, x1 = xs[rows, seg], xs[rows, seg + 1]
    y0, y1 = ys[rows, seg], ys[rows, seg + 1]
    out = y0 + (np.maximum(t_b, xs[rows, 0]) - x0) * (y1 - y0) / (x1 - x0)
    out = np.where(t_b <= xs[rows, 0], ys[rows, 0], out)
    return np.maximum(out, 0.0)


def cdu_supply_temp_c(
    facility_supply_c: np.ndarray | float,
    heat_kw: np.ndarray | float,
    capacity_kw: np.ndarray | float,
    approach_k: np.ndarray | float,
) -> np.ndarray:
    """Secondary supply temperature ``T_fw + approach · Q / capacity`` [°C].

    ``capacity_kw`` is the CDU's rated duty at the nominal supply temperature; above it
    the approach (and the supply) rises in proportion.  Capacity must be > 0.
    """
    cap = np.asarray(capacity_kw, dtype=np.float64)
    if cap.size and not np.all(cap > 0.0):
        raise ValueError("capacity_kw: must be > 0")
    return facility_supply_c + np.asarray(approach_k) * np.maximum(heat_kw, 0.0) / cap


def cdu_flow_lpm(
    pumps_running_count: np.ndarray | float, pumps_required: np.ndarray | float, design_flow_lpm: np.ndarray | float
) -> np.ndarray:
    """Secondary flow [L/min]: design flow with ``pumps_required`` running, pro rata below, no gain above.

    Identical pumps in parallel on a fixed system curve: extra pumps beyond those
    required share the duty (redundancy) rather than add flow [E].
    """
    running = np.asarray(pumps_running_count, dtype=np.float64)
    if running.size and np.any(running < 0):
        raise ValueError("pumps_running_count: must be >= 0")
    return np.asarray(design_flow_lpm) * np.minimum(running / np.asarray(pumps_required, dtype=np.float64), 1.0)


def tower_leaving_temp_c(wet_bulb_c: np.ndarray | float, tower_approach_k: np.ndarray | float) -> np.ndarray:
    """Cooling-tower leaving water temperature ``T_wb + approach`` [°C]."""
    return np.asarray(wet_bulb_c, dtype=np.float64) + tower_approach_k


def plant_supply_temp_c(
    heat_kw: np.ndarray,
    flow_lpm: np.ndarray,
    setpoint_c: np.ndarray,
    wet_bulb_c: float | np.ndarray,
    tower_approach_k: np.ndarray,
    plant_capacity_kw: np.ndarray,
    chillers_running: np.ndarray,
    chiller_kw: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Facility supply temperature, chiller duty and free-cooling flag per plant.

    Parameters
    ----------
    heat_kw : heat returned to the plant [kW]
    flow_lpm : facility-water flow through the plant [L/min], > 0
    setpoint_c : supply setpoint [°C]
    wet_bulb_c : outdoor wet bulb [°C]
    tower_approach_k : tower approach [K]
    plant_capacity_kw : heat rejection at design wet bulb [kW]
    chillers_running, chiller_kw : chillers available to run and the capacity of one [kW]

    Returns
    -------
    supply_c : facility supply [°C] — the setpoint while the plant can hold it, else
        the base temperature plus the unrejected heat over ``ṁ cp`` of the loop;
    chiller_kw_used : heat the chillers lift [kW] (0 when free cooling);
    free_cooling : bool, towers alone reach the setpoint.
    """
    heat = np.maximum(np.asarray(heat_kw, dtype=np.float64), 0.0)
    tower_c = tower_leaving_temp_c(wet_bulb_c, tower_approach_k)
    free = tower_c <= setpoint_c
    chiller_cap = np.asarray(chillers_running, dtype=np.float64) * chiller_kw
    chilled = ~free & (chiller_cap > 0.0)
    # free cooling: towers alone; chilled: chillers (bounded by the plant); neither:
    # towers without chillers deliver their leaving temperature.
    capacity = np.where(chilled, np.minimum(plant_capacity_kw, chiller_cap), plant_capacity_kw)
    base_c = np.where(free | chilled, setpoint_c, tower_c)
    excess_kw = np.maximum(heat - capacity, 0.0)
    rise_k = np.zeros_like(heat)
    if np.any(excess_kw > 0.0):
        rise_k = coolant_delta_t_k(excess_kw * 1e3, flow_lpm, np.asarray(setpoint_c), coolant="water")
    chiller_used = np.where(free, 0.0, np.minimum(heat, chiller_cap))
    return base_c + rise_k, chiller_used, free


def pump_power_kw(flow_lpm: np.ndarray | float, head_kpa: float, efficiency_frac: float) -> np.ndarray:
    """Hydraulic pump power ``V̇ · Δp / η`` [kW] (L/min × kPa / 60,000 = kW)."""
    return np.asarray(flow_lpm, dtype=np.float64) * head_kpa / (60_000.0 * efficiency_frac)


def cooling_power_kw(
    cdu_pump_kw: float,
    facility_flow_lpm: np.ndarray,
    plant_heat_kw: np.ndarray,
    chiller_kw_used: np.ndarray,
    cop: np.ndarray,
) -> dict[str, float]:
    """Electrical power of the cooling system by part [kW]: CDU pumps, facility pumps, chillers, tower fans."""
    facility_pumps = float(pump_power_kw(facility_flow_lpm, FACILITY_PUMP_HEAD_KPA, FACILITY_PUMP_EFF_FRAC).sum())
    chillers = float(np.sum(np.asarray(chiller_kw_used) / np.asarray(cop)))
    towers = float(TOWER_FAN_KW_PER_KW * np.sum(plant_heat_kw))
    total = cdu_pump_kw + facility_pumps + chillers + towers
    return {
        "cdu_pumps_kw": float(cdu_pump_kw),
        "facility_pumps_kw": facility_pumps,
        "chillers_kw": chillers,
        "tower_fans_kw": towers,
        "total_kw": total,
    }
