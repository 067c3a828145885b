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
  The curve refers to the rated approach ([NVIDIA-CDU-Reqs]: 4 °C ATD): the duty the CDU
  removes with its secondary supply ``approach_k`` above the facility water, i.e. at
  facility water ``T_supply − approach_k``;
* loop dynamics, CDU control and the plant: :mod:`twin.physics.loops`, :mod:`twin.physics.plant`;
* cooling power: CDU pumps by the affinity laws on their closed loop, ``P ∝ V̇³`` shared by the
  pumps running (:func:`cdu_pump_power_w`); facility pumps ``V̇ · Δp / η``; chillers
  ``Q_chiller / COP`` (:func:`twin.physics.plant.chiller_cop`); tower fans
  ``TOWER_FAN_KW_PER_KW · Q_tower``.
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


def cdu_capacity_kw(supply_temp_c: np.ndarray | float, curve_supply_c: np.ndarray, curve_kw: np.ndarray) -> np.ndarray:
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


def coolant_flow_lpm(
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


def cdu_pump_power_w(
    pumps_running_count: np.ndarray | float,
    flow_lpm: np.ndarray | float,
    design_flow_lpm: np.ndarray | float,
    pump_power_w: np.ndarray | float,
) -> np.ndarray:
    """Electrical power of a CDU's running pumps [W], by the pump affinity laws.

    A secondary loop is closed, so its system curve has no static head: ``Δp = k·V̇²``.  Along
    it every operating point is the affinity-law image of the design point (``V̇ ∝ n``,
    ``Δp ∝ n²``, ``P ∝ n³`` [ASHRAE-HB-HVACSE-2020 Ch. 44]), and the hydraulic power ``V̇·Δp`` is
    ``∝ V̇³``.  Pumps running in parallel share that flow and that power: two pumps on the
    design flow slow down until together they deliver it, and draw together what one pump
    carrying it alone draws.  ``pump_power_w`` is that one pump at the design flow; the
    efficiency at the shared, slower operating point is taken equal to the rated one [E].
    ``P = pump_power_w · (V̇ / V̇_design)³`` with any pump running, 0 with none.
    """
    running = np.asarray(pumps_running_count, dtype=np.float64)
    if running.size and np.any(running < 0):
        raise ValueError("pumps_running_count: must be >= 0")
    ratio = np.asarray(flow_lpm, dtype=np.float64) / np.asarray(design_flow_lpm, dtype=np.float64)
    return np.where(running > 0, np.asarray(pump_power_w, dtype=np.float64) * ratio**3, 0.0)


def pump_power_kw(flow_lpm: np.ndarray | float, head_kpa: float, efficiency_frac: float) -> np.ndarray:
    """Hydraulic pump power ``V̇ · Δp / η`` [kW] (L/min × kPa / 60,000 = kW)."""
    return np.asarray(flow_lpm, dtype=np.float64) * head_kpa / (60_000.0 * efficiency_frac)


def cooling_power_kw(
    cdu_pump_kw: float,
    facility_pumps_kw: np.ndarray,
    tower_heat_kw: np.ndarray,
    chiller_kw_used: np.ndarray,
    cop: np.ndarray,
) -> dict[str, float]:
    """Electrical power of the cooling system by part [kW]: CDU pumps, facility pumps, chillers, tower fans.

    ``tower_heat_kw`` is the heat the towers reject (economiser and chiller duty plus the
    compressor work); the fans draw ``TOWER_FAN_KW_PER_KW`` of it.
    """
    facility_pumps = float(np.sum(facility_pumps_kw))
    chillers = float(np.sum(np.asarray(chiller_kw_used) / np.asarray(cop)))
    towers = float(TOWER_FAN_KW_PER_KW * np.sum(tower_heat_kw))
    total = cdu_pump_kw + facility_pumps + chillers + towers
    return {
        "cdu_pumps_kw": float(cdu_pump_kw),
        "facility_pumps_kw": facility_pumps,
        "chillers_kw": chillers,
        "tower_fans_kw": towers,
        "total_kw": total,
    }
