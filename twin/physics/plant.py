"""Cooling plant: towers, series water-side economiser, chillers with lift-dependent COP, restart.

Pure numpy functions over per-plant arrays (a site has one or a few plants).

* Tower approach as a function of load and wet bulb (Merkel's enthalpy-difference
  equation linearised about the wet bulb [Merkel-1925]; [ASHRAE-HB-HVACSE-2020 Ch. 40]):
  the tower moves ``Q ≈ K · s(T_wb) · (T_water − T_wb)`` with ``s = dh_sat/dT`` of
  saturated air, so at fixed air and water flow
  ``approach = approach_design · (Q / Q_design) · s(T_wb,design) / s(T_wb)``.  ``s`` comes
  from the saturation humidity ratio ``W_s = 0.622 p_s / (p − p_s)``
  [ASHRAE-HB-Fund-2017 Ch. 1] with ``p_s`` by the Magnus formula
  [Alduchov-Eskridge-1996]; ``h = 1.006 T + W (2501 + 1.86 T)`` kJ/kg
  [ASHRAE-HB-Fund-2017 Ch. 1].
* Series water-side economiser: the return water first passes a plate exchanger on tower
  water and leaves it at ``max(T_tower + ECONOMISER_APPROACH_K, T_set)`` when that is
  colder than the return; chillers take the rest down to the setpoint (partial duty),
  within the capacity of the chillers online.
* Chiller COP from lift and load (:func:`chiller_cop`): a manufacturer's published curve for a
  variable-speed centrifugal chiller, the Trane CVHF 2,567 kW VSD of the EnergyPlus chiller
  data set [EnergyPlus-Chillers], in EnergyPlus's electric EIR form [EnergyPlus-EngRef
  §Chiller:Electric:EIR]: ``P = Q_cap · EIR_ref · EIRFT(T_chw, T_cw) · EIRFPLR(PLR)`` with a
  biquadratic ``EIRFT`` of the leaving chilled water and the entering condenser water and a
  quadratic ``EIRFPLR``, so ``COP = PLR / (EIR_ref · EIRFT · EIRFPLR)``.  The site's rated COP
  is the AHRI 550/590 standard rating (6.7 °C leaving chilled water, 29.4 °C entering
  condenser water, full load [AHRI-550-590 §5]); the curve scales it to the present lift and
  load.  Chilled water warmer than the curve's range (4.4–8.9 °C; data-centre plants run
  15–25 °C) is evaluated at the curve's warmest chilled water with the same water-side lift,
  and the COP scaled by the ratio of the evaporating temperatures in kelvin, the Carnot COP's
  dependence at equal lift [Cengel-Boles ch. 6]; lifts outside the curve hold its end.  Below
  the curve's minimum part load (0.11) the COP of the minimum holds.  The plant stages its
  chillers: as many run as the duty needs, sharing it (:func:`staged_part_load_frac`) [E].
  At the colossus plant's design (25 °C chilled water on 30 °C tower water, full load) that gives
  a COP of 13.8, 0.63 of the Carnot COP between the refrigerant temperatures, where the
  constant Carnot fraction calibrated at the design lift gave 6.0 (0.275); the older
  :func:`chiller_cop_ratio` is kept for comparison.
* Power: chillers, like the rest of the mechanical plant, are not on UPS [Schneider-WP179].
  A plant's chillers are spread over the site's top-level buses (chiller ``i`` on bus ``i mod n``,
  :func:`chillers_by_bus_count`); those on a bus that dips stop at once
  (:func:`chillers_powered_count`).  A bus dips when it is dead, or when a source trips and the
  units left and the batteries cannot pick up its load: beyond a generating unit's ISO 8528-5
  load step its voltage and frequency leave the class's limits [ISO-8528-5 §7], the UPSs carry
  the IT racks and nothing carries the chillers.
* Restart: chillers that come back (after a power dip or a trip) produce cooling only
  ``restart_s`` later [Schneider-WP179].  Then they soft-load (:func:`chillers_soft_loaded`):
  the controls limit a started compressor's motor current to ``SOFTLOAD_START_FRAC`` of its
  rated load and raise the limit linearly to full over ``SOFTLOAD_S`` (the defaults of the
  Trane CH530 controls: softload starting percent 40 % RLA, current-limit softload time
  10 min [Trane-CH530 §Softloading]).  The twin limits the restarted chillers' cooling in the
  same proportion as their current [E], so a plant coming back adds its electrical load over
  minutes, not in one tick.
* The plant's chilled-water headers and storage are one mixed node of heat capacity ``C``:
  ``C dT/dt = Q_in − Q_removed``, the removal holding the setpoint while the economiser and
  chillers can; short of that the supply ramps by ``(Q_in − Q_cap) dt / C``.
"""

from __future__ import annotations

import numpy as np

from twin.arrays import Floats

# [Alduchov-Eskridge-1996] Magnus coefficients over water (−40…50 °C): p_s = 610.94 exp(17.625 T / (T + 243.04)) Pa.
MAGNUS_A_PA, MAGNUS_B, MAGNUS_C_C = 610.94, 17.625, 243.04
STANDARD_PRESSURE_PA = 101_325.0  # [ASHRAE-HB-Fund-2017 Ch. 1] sea-level standard atmosphere
AIR_CP_KJ_PER_KG_K = 1.006  # [ASHRAE-HB-Fund-2017 Ch. 1] dry air
VAPOUR_CP_KJ_PER_KG_K = 1.86  # same equation, water vapour
SOFTLOAD_START_FRAC = 0.40  # [Trane-CH530 §Softloading] current-limit softload starting percent, default 40 % RLA
SOFTLOAD_S = 600.0  # [Trane-CH530 §Softloading] current-limit softload time, default 10 min [s]
LATENT_HEAT_KJ_PER_KG = 2501.0  # same equation, at 0 °C
# [AHRI-550-590 §5] standard rating: condenser water enters at 29.4 °C (85 °F) and leaves at
# 35 °C (95 °F), a 5.6 K range.
CONDENSER_RANGE_K = 5.6
REFRIGERANT_APPROACH_K = 1.5  # [E] refrigerant-to-water approach of each chiller barrel
ECONOMISER_APPROACH_K = 1.5  # [E] plate exchanger between tower water and facility water
MIN_TOWER_APPROACH_K = 0.5  # [E] a tower never cools water to the wet bulb itself
ZERO_C_IN_K = 273.15


def saturation_pressure_pa(temp_c: np.ndarray | float) -> np.ndarray:
    """Saturation vapour pressure over water [Pa] (Magnus formula, [Alduchov-Eskridge-1996])."""
    t = np.asarray(temp_c, dtype=np.float64)
    return MAGNUS_A_PA * np.exp(MAGNUS_B * t / (t + MAGNUS_C_C))


def saturated_enthalpy_slope_kj_per_kg_k(temp_c: np.ndarray | float) -> np.ndarray:
    """``dh/dT`` of saturated moist air at ``temp_c`` [kJ/(kg dry air · K)]."""
    t = np.asarray(temp_c, dtype=np.float64)
    ps = saturation_pressure_pa(t)
    w = 0.622 * ps / (STANDARD_PRESSURE_PA - ps)
    dps = ps * MAGNUS_B * MAGNUS_C_C / (t + MAGNUS_C_C) ** 2
    dw = 0.622 * STANDARD_PRESSURE_PA * dps / (STANDARD_PRESSURE_PA - ps) ** 2
    return AIR_CP_KJ_PER_KG_K + w * VAPOUR_CP_KJ_PER_KG_K + dw * (LATENT_HEAT_KJ_PER_KG + VAPOUR_CP_KJ_PER_KG_K * t)


def tower_approach_k(
    load_frac: np.ndarray | float,
    wet_bulb_c: np.ndarray | float,
    design_approach_k: np.ndarray | float,
    design_wet_bulb_c: np.ndarray | float,
) -> np.ndarray:
    """Tower approach [K] at ``load_frac`` of design heat and ``wet_bulb_c`` (Merkel, see module docstring)."""
    ratio = saturated_enthalpy_slope_kj_per_kg_k(design_wet_bulb_c) / saturated_enthalpy_slope_kj_per_kg_k(wet_bulb_c)
    return np.maximum(np.asarray(design_approach_k) * np.maximum(load_frac, 0.0) * ratio, MIN_TOWER_APPROACH_K)


def carnot_cop_ratio(chilled_c: np.ndarray | float, tower_c: np.ndarray | float) -> np.ndarray:
    """Carnot COP between the refrigerant temperatures of a chiller making ``chilled_c`` on ``tower_c`` water."""
    t_evap = np.asarray(chilled_c, dtype=np.float64) - REFRIGERANT_APPROACH_K + ZERO_C_IN_K
    t_cond = np.asarray(tower_c, dtype=np.float64) + CONDENSER_RANGE_K + REFRIGERANT_APPROACH_K + ZERO_C_IN_K
    return t_evap / np.maximum(t_cond - t_evap, 2.0 * REFRIGERANT_APPROACH_K)


def chiller_cop_ratio(chilled_c: Floats, tower_c: Floats, carnot_frac: Floats) -> np.ndarray:
    """Chiller COP ``η · COP_Carnot`` at the present lift [Cengel-Boles ch. 6]."""
    return np.asarray(carnot_frac) * carnot_cop_ratio(chilled_c, tower_c)


def carnot_frac_from_rating(rated_cop: np.ndarray, chilled_c: np.ndarray, design_tower_c: np.ndarray) -> np.ndarray:
    """Carnot fraction ``η`` that gives ``rated_cop`` at the design lift."""
    return np.asarray(rated_cop, dtype=np.float64) / carnot_cop_ratio(chilled_c, design_tower_c)


# --- chiller curve [EnergyPlus-Chillers]: "ElectricEIRChiller Trane CVHF 2567kW/11.77COP/VSD" ------
CURVE_REF_COP = 11.77  # at 4.44 °C leaving chilled water, 12.78 °C entering condenser water, full load
# EIRFT = a + b·Te + c·Te² + d·Tc + e·Tc² + f·Te·Tc  (Te leaving chilled, Tc entering condenser, °C)
CURVE_EIR_FT = (4.561990e-01, -3.333063e-02, -1.763576e-03, 5.624520e-02, -8.535085e-05, 3.567604e-04)
# EIRFPLR = a + b·PLR + c·PLR²
CURVE_EIR_FPLR = (1.039419e-01, 4.184975e-01, 4.774210e-01)
CURVE_CHILLED_MIN_C, CURVE_CHILLED_MAX_C = 4.44, 8.89  # the curve's valid leaving chilled water
CURVE_CONDENSER_MIN_C, CURVE_CONDENSER_MAX_C = 12.78, 29.44  # and entering condenser water
CURVE_MIN_PLR = 0.11  # minimum part-load ratio of the curve
# [AHRI-550-590 §5] standard rating: 44 °F (6.67 °C) leaving chilled water, 85 °F (29.44 °C) entering condenser water
AHRI_CHILLED_C = 6.67
AHRI_CONDENSER_C = 29.44


def _eir_ft(chilled_c: Floats, condenser_c: Floats) -> Floats:
    a, b, c, d, e, f = CURVE_EIR_FT
    te, tc = chilled_c, condenser_c
    return a + b * te + c * te * te + d * tc + e * tc * tc + f * te * tc


def _eir_fplr(plr: Floats) -> Floats:
    a, b, c = CURVE_EIR_FPLR
    return a + b * plr + c * plr * plr


def chiller_cop(
    chilled_c: np.ndarray | float,
    tower_c: np.ndarray | float,
    rated_cop: np.ndarray | float,
    part_load_frac: np.ndarray | float = 1.0,
) -> np.ndarray:
    """Chiller COP making ``chilled_c`` on ``tower_c`` condenser water at ``part_load_frac`` of capacity.

    ``rated_cop`` is the AHRI 550/590 standard rating at full load; the published curve of the
    module docstring scales it: ``COP = rated · EIRFT(AHRI) / EIRFT(T) · (PLR / EIRFPLR(PLR)) ·
    (T_evap / T_evap,curve)``, temperatures brought into the curve's range at equal water-side
    lift, ``PLR`` held at ``CURVE_MIN_PLR`` or above.
    """
    t_chw = np.asarray(chilled_c, dtype=np.float64)
    lift = np.asarray(tower_c, dtype=np.float64) - t_chw
    te = np.clip(t_chw, CURVE_CHILLED_MIN_C, CURVE_CHILLED_MAX_C)
    tc = np.clip(te + lift, CURVE_CONDENSER_MIN_C, CURVE_CONDENSER_MAX_C)
    temperature = _eir_ft(AHRI_CHILLED_C, AHRI_CONDENSER_C) / _eir_ft(te, tc)
    evap_k = t_chw - REFRIGERANT_APPROACH_K + ZERO_C_IN_K
    evap_curve_k = te - REFRIGERANT_APPROACH_K + ZERO_C_IN_K
    plr = np.clip(np.asarray(part_load_frac, dtype=np.float64), CURVE_MIN_PLR, 1.0)
    load = (plr / _eir_fplr(plr)) * _eir_fplr(1.0)
    return np.asarray(rated_cop, dtype=np.float64) * temperature * (evap_k / evap_curve_k) * load


def staged_part_load_frac(duty_w: np.ndarray, unit_w: np.ndarray, online_count: np.ndarray) -> np.ndarray:
    """Part-load ratio of each running chiller when the plant stages them [E]: as many of the
    ``online_count`` units run as the duty needs, ``⌈duty / unit⌉``, sharing it evenly."""
    duty = np.asarray(duty_w, dtype=np.float64)
    unit = np.maximum(np.asarray(unit_w, dtype=np.float64), 1e-300)
    running = np.clip(np.ceil(duty / unit - 1e-9), 1.0, np.maximum(np.asarray(online_count, dtype=np.float64), 1.0))
    return np.clip(duty / (running * unit), 0.0, 1.0)


def chillers_by_bus_count(chiller_count: np.ndarray, n_buses: int) -> np.ndarray:
    """Chillers of each plant on each bus ``[n_plants, n_buses]``: chiller ``i`` on bus ``i mod n_buses``."""
    count = np.asarray(chiller_count, dtype=np.int64)[:, None]
    if n_buses <= 0:
        return np.zeros((count.shape[0], 0))
    return (count // n_buses + (np.arange(n_buses)[None, :] < count % n_buses)).astype(np.float64)


def chillers_powered_count(chillers_by_bus: np.ndarray, bus_live: np.ndarray, supply_dipped: bool) -> np.ndarray:
    """Chillers with power per plant: those on live buses; none after a source trip the rest could not
    pick up (every bus dips; the UPSs carry only the IT racks)."""
    if supply_dipped:
        return np.zeros(chillers_by_bus.shape[0])
    return chillers_by_bus @ np.asarray(bus_live, dtype=np.float64)


def chillers_online_count(
    online: np.ndarray,
    available: np.ndarray,
    restart_left_s: np.ndarray,
    restart_s: np.ndarray,
    dt_s: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Chillers producing cooling after a step, and the restart time still to run [s].

    Chillers lost stop at once; chillers that become available again start a restart of
    ``restart_s`` (one timer per plant: a dip restarts them together) and come online
    when it has run out.
    """
    online = np.minimum(online, available)
    waiting = available > online
    left = np.where(waiting, np.where(restart_left_s > 0.0, restart_left_s, restart_s), 0.0) - dt_s
    done = waiting & (left <= 0.0)
    return np.where(done, available, online), np.where(waiting & ~done, left, 0.0)


def chillers_soft_loaded(
    online_before: np.ndarray,
    online_after: np.ndarray,
    loading_count: np.ndarray,
    loading_s: np.ndarray,
    dt_s: float,
    softload_s: float = SOFTLOAD_S,
    start_frac: float = SOFTLOAD_START_FRAC,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chillers' worth of cooling capacity per plant while restarted chillers soft-load (module docstring).

    ``online_before``/``online_after``: chillers online before and after this step's
    :func:`chillers_online_count`; ``loading_count`` the chillers still soft-loading and
    ``loading_s`` for how long they have been [s].  Chillers that came online this step join
    the loading ones and the ramp starts again for all of them (a dip restarts them together).
    Returns ``(capacity_count, loading_count, loading_s)``: ``capacity_count`` =
    ``online − loading · (1 − f)`` with ``f = start_frac + (1 − start_frac) · min(t / softload_s, 1)``.
    """
    before = np.asarray(online_before, dtype=np.float64)
    after = np.asarray(online_after, dtype=np.float64)
    came = np.maximum(after - before, 0.0)
    loading = np.minimum(np.asarray(loading_count, dtype=np.float64), after) + came
    t = np.where(came > 0.0, 0.0, np.asarray(loading_s, dtype=np.float64) + dt_s)
    frac = start_frac + (1.0 - start_frac) * np.clip(t / softload_s, 0.0, 1.0) if softload_s > 0 else 1.0
    done = (frac >= 1.0) | (loading <= 0.0)
    loading = np.where(done, 0.0, loading)
    return after - loading * (1.0 - frac), loading, np.where(done, 0.0, t)


def plant_step(
    temp_c: np.ndarray,
    heat_in_w: np.ndarray,
    return_c: np.ndarray,
    flow_w_per_k: np.ndarray,
    setpoint_c: np.ndarray,
    tower_c: np.ndarray,
    chiller_capacity_w: np.ndarray,
    capacity_j_per_k: np.ndarray,
    dt_s: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One step of the plant node: supply temperature after the step [°C], economiser and chiller duty [W].

    Parameters
    ----------
    temp_c : plant supply (mixed header/storage) temperature now [°C]
    heat_in_w : heat the facility loops return over the step [W]
    return_c : mixed return temperature [°C]
    flow_w_per_k : facility-water heat-capacity flow through the plant ``ṁ cp`` [W/K]
    setpoint_c : supply setpoint [°C]
    tower_c : tower leaving water [°C]
    chiller_capacity_w : cooling of the chillers online [W]
    capacity_j_per_k : heat capacity of the plant's water [J/K], > 0
    """
    # heat that brings the node to the setpoint by the end of the step (a zero step: just what comes in)
    need = heat_in_w + (capacity_j_per_k * (temp_c - setpoint_c) / dt_s if dt_s > 0.0 else 0.0)
    econ_leaving = np.maximum(tower_c + ECONOMISER_APPROACH_K, setpoint_c)
    econ_max = flow_w_per_k * np.maximum(return_c - econ_leaving, 0.0)
    econ = np.clip(need, 0.0, econ_max)
    chill = np.clip(need - econ, 0.0, chiller_capacity_w)
    removed = econ + chill
    if dt_s <= 0.0:
        return temp_c, econ, chill
    return temp_c + (heat_in_w - removed) * dt_s / capacity_j_per_k, econ, chill
