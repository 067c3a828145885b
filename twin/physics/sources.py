"""Power sources that respond: generator units, batteries and UPS ride-through.

Pure numpy functions over per-source (or per-UPS) arrays; the ``site`` phase of the tick
calls them once per tick, so their cost is per source, never per GPU.

* **Generator units** (and the grid connection): output is limited by the unit rating
  derated with outdoor air, ``P_max = P_unit · (1 − d · max(T_air − T_rated, 0))``
  (``d`` per kelvin above the rating temperature, e.g. 25 °C for reciprocating engines
  [ISO-3046-1 §5]), and by how fast the unit picks up load: within one tick of
  ``dt`` seconds its output rises by at most one sudden load step plus its sustained ramp,
  ``ΔP ≤ P_step + ramp · dt``.  The step is the load acceptance of the unit's ISO 8528-5
  performance class [ISO-8528-5 §7]: the site file states the class and the largest step
  the unit accepts within that class's transient limits (:data:`ISO_8528_5_CLASSES`).
  After a step the unit must recover: the class's frequency and voltage recovery times
  (the longer of the two, ``t_rec``) pass before it accepts another full step.  The step
  budget is a bucket of one step that refills at ``1/t_rec`` per second
  (:func:`step_available_frac`): a unit that took its whole step at once takes the next
  only ``t_rec`` later, and a fraction of a step costs that fraction of the recovery.  From
  idle to full load a G2 unit with a 25 % step (6 s recovery) thus needs about 12 s at
  its stated ramp, not the 4 s of one full step every 1-s tick.  Load falls without limit (a load
  rejection; its frequency rise is judged in :mod:`twin.physics.island`).  A unit that trips
  gives 0 at once; its load moves onto the units with room, each within its own step and
  ramp, and what they cannot pick up falls to the batteries.
* **The grid** is a stiff source: its output follows the load at once up to the import
  limit of the contract (``unit_mw``); the contract's ramp and voltage-change limits are
  power-quality limits that :mod:`twin.physics.island` checks the swing against, not a
  limit of what the grid delivers.
* **Batteries** take what generation cannot reach, up to their power rating and their
  stored energy, and charge from spare generation otherwise.  As supply to plan on (the
  shortfall policy) a battery counts only at the power it can sustain for
  :data:`BATTERY_HORIZON_S`, so a nearly empty battery is a bridge, not capacity.  The round-trip efficiency
  ``η`` is split evenly between charge and discharge: delivering ``P`` for ``dt`` takes
  ``P · dt / √η`` from the store, charging at ``P`` stores ``P · dt · √η``.  The power is
  limited so the state of charge lands exactly on 0 or 1, never past it.
* **UPS** (double conversion, IT load only): when the sources and batteries together
  deliver less than the load, the UPS batteries carry the rest of the power-tree input
  in proportion to each UPS's load, each for ``E / P`` seconds
  (``E = rating · ride-through minutes at rated load``).  An exhausted UPS drops its racks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.site.tables import SOURCE_KINDS

BATTERY = SOURCE_KINDS.index("battery")
GRID = SOURCE_KINDS.index("grid")
BATTERY_HORIZON_S = 900.0  # [E] a battery counts as supply at the power it can hold for 15 minutes
UPS_RECHARGE_S = 7200.0  # [E] UPS battery back to full two hours after a discharge (charger sizing)


@dataclass(frozen=True)
class Iso8528Class:
    """Operating limits of an ISO 8528-5 performance class after a sudden load increase."""

    freq_dip_frac: float  # largest transient frequency fall on a sudden power increase, of rated frequency
    freq_recovery_s: float  # time back into the steady-state frequency band
    volt_dip_frac: float  # largest transient voltage fall, of rated voltage
    volt_recovery_s: float  # time back into the steady-state voltage band
    freq_rise_frac: float  # largest transient frequency rise on a 100 % sudden power decrease
    volt_rise_frac: float  # largest transient voltage rise on a 100 % sudden power decrease
    freq_band_frac: float  # steady-state frequency band (peak to peak) at constant power
    droop_frac: float  # largest frequency droop from no load to rated load


# [ISO-8528-5 Table 4]: transient frequency deviation on sudden power increase δf_dyn⁻ and on a
# 100 % sudden power decrease δf_dyn⁺, frequency recovery time t_f (the same after an increase
# and a decrease), transient voltage deviations δU_dyn⁻ / δU_dyn⁺, voltage recovery time t_U,
# steady-state frequency band β_f and frequency droop δf_st.
ISO_8528_5_CLASSES: dict[str, Iso8528Class] = {
    "G1": Iso8528Class(
        freq_dip_frac=0.15,
        freq_recovery_s=10.0,
        volt_dip_frac=0.25,
        volt_recovery_s=10.0,
        freq_rise_frac=0.18,
        volt_rise_frac=0.35,
        freq_band_frac=0.025,
        droop_frac=0.08,
    ),
    "G2": Iso8528Class(
        freq_dip_frac=0.10,
        freq_recovery_s=5.0,
        volt_dip_frac=0.20,
        volt_recovery_s=6.0,
        freq_rise_frac=0.12,
        volt_rise_frac=0.25,
        freq_band_frac=0.015,
        droop_frac=0.05,
    ),
    "G3": Iso8528Class(
        freq_dip_frac=0.07,
        freq_recovery_s=3.0,
        volt_dip_frac=0.15,
        volt_recovery_s=4.0,
        freq_rise_frac=0.10,
        volt_rise_frac=0.20,
        freq_band_frac=0.005,
        droop_frac=0.03,
    ),
}


def recovery_s(iso_class: list[str] | tuple[str, ...], n: int) -> np.ndarray:
    """Recovery time after a load step per source: the longer of its class's frequency and voltage
    recovery times [s]; 0 (no recovery limit) for a source without a class."""
    out = np.zeros(n)
    for i, name in enumerate(list(iso_class)[:n]):
        c = ISO_8528_5_CLASSES.get(name)
        if c is not None:
            out[i] = max(c.freq_recovery_s, c.volt_recovery_s)
    return out


def step_available_frac(ready_frac: np.ndarray, recovery_s: np.ndarray, dt_s: float) -> np.ndarray:
    """Load steps a unit may take within ``dt_s``: its step bucket ``ready_frac`` (0–1) refilled at
    ``1/t_rec`` per second, at most one step (or ``dt/t_rec`` steps over a tick longer than
    the recovery); unlimited (inf) without a recovery time."""
    with np.errstate(divide="ignore", invalid="ignore"):
        refill = np.where(recovery_s > 0, dt_s / recovery_s, np.inf)
    return np.minimum(ready_frac + refill, np.maximum(1.0, refill))


def derated_capacity_mw(
    unit_mw: np.ndarray, derate_frac_per_k: np.ndarray, rated_ambient_c: np.ndarray, outdoor_c: float
) -> np.ndarray:
    """Deliverable output of each unit at outdoor air ``outdoor_c`` [MW] (never below 0)."""
    above_k = np.maximum(outdoor_c - np.asarray(rated_ambient_c, dtype=np.float64), 0.0)
    return np.asarray(unit_mw, dtype=np.float64) * np.clip(1.0 - derate_frac_per_k * above_k, 0.0, 1.0)


def reachable_mw(
    capacity_mw: np.ndarray,
    prev_mw: np.ndarray,
    step_mw: np.ndarray,
    ramp_mw_per_s: np.ndarray,
    dt_s: float,
    steps_frac: np.ndarray | float = 1.0,
) -> np.ndarray:
    """Highest output each unit can reach within ``dt_s``: ``min(P_max, P_prev + n · P_step + ramp · dt)`` [MW],
    ``n = steps_frac`` the load steps it may take (:func:`step_available_frac`)."""
    with np.errstate(invalid="ignore"):  # an unlimited step (inf) times no step left (0) is no step
        step = np.nan_to_num(np.asarray(step_mw) * steps_frac, nan=0.0, posinf=np.inf)
    return np.minimum(capacity_mw, np.maximum(prev_mw, 0.0) + step + ramp_mw_per_s * dt_s)


def share_generation_mw(demand_mw: float, capacity_mw: np.ndarray, reach_mw: np.ndarray) -> np.ndarray:
    """Output of each generating unit carrying ``demand_mw`` [MW].

    Units share the demand in proportion to their capacity; a unit that cannot reach its
    share gives what it can, and the rest goes to the units with room in proportion to
    their room (so no unit exceeds ``reach_mw``).  Dead units have zero capacity.
    """
    total = float(capacity_mw.sum())
    if total <= 0.0 or demand_mw <= 0.0:
        return np.zeros_like(capacity_mw)
    out = np.minimum(capacity_mw * min(demand_mw / total, 1.0), reach_mw)
    rest = demand_mw - float(out.sum())
    room = np.maximum(reach_mw - out, 0.0)
    room_total = float(room.sum())
    if rest > 0.0 and room_total > 0.0:
        out = out + room * min(rest / room_total, 1.0)
    return out


def battery_limits_mw(
    soc_frac: np.ndarray, energy_mwh: np.ndarray, rating_mw: np.ndarray, efficiency_frac: np.ndarray, dt_s: float
) -> tuple[np.ndarray, np.ndarray]:
    """Largest discharge and charge power over ``dt_s`` [MW]: the rating, and what the store holds or can take."""
    leg = np.sqrt(efficiency_frac)  # one-way efficiency
    hours = dt_s / 3600.0
    soc = np.nan_to_num(soc_frac, nan=0.0)
    if hours <= 0.0:
        return np.where(soc > 0, rating_mw, 0.0), np.where(soc < 1, rating_mw, 0.0)
    out = np.minimum(rating_mw, soc * energy_mwh * leg / hours)
    into = np.minimum(rating_mw, (1.0 - soc) * energy_mwh / leg / hours)
    return np.where(energy_mwh > 0, out, 0.0), np.where(energy_mwh > 0, into, 0.0)


def battery_soc_after(
    soc_frac: np.ndarray, power_mw: np.ndarray, energy_mwh: np.ndarray, efficiency_frac: np.ndarray, dt_s: float
) -> np.ndarray:
    """State of charge after delivering ``power_mw`` (negative: charging) for ``dt_s``, clipped to [0, 1]."""
    leg = np.sqrt(efficiency_frac)
    stored_mwh = np.where(power_mw > 0, power_mw / leg, power_mw * leg) * dt_s / 3600.0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(energy_mwh > 0, np.clip(soc_frac - stored_mwh / energy_mwh, 0.0, 1.0), soc_frac)


def battery_step(
    power_mw: float, soc_frac: float, energy_mwh: float, rating_mw: float, efficiency_frac: float, dt_s: float
) -> tuple[float, float]:
    """Battery output for a request of ``power_mw`` (negative: charge) and its new state of charge.

    The output is limited to ``±rating_mw`` and to what the store holds (or can take) over
    ``dt_s``; losses follow the module docstring.  Returns ``(power_mw, soc_frac)``.
    """
    out, into = battery_limits_mw(
        np.array([soc_frac]), np.array([energy_mwh]), np.array([rating_mw]), np.array([efficiency_frac]), dt_s
    )
    p = float(np.clip(power_mw, -into[0], out[0]))
    return p, float(
        battery_soc_after(
            np.array([soc_frac]), np.array([p]), np.array([energy_mwh]), np.array([efficiency_frac]), dt_s
        )[0]
    )


def sustained_battery_mw(
    rating_mw: np.ndarray, soc_frac: np.ndarray, energy_mwh: np.ndarray, efficiency_frac: np.ndarray
) -> np.ndarray:
    """Power a battery can sustain for :data:`BATTERY_HORIZON_S`: its rating, less as it runs empty [MW].

    This is what the shortfall policy counts on (a battery with a minute left is no
    supply to run GPUs on, only a bridge); the dispatch itself may draw the full rating.
    """
    held = np.nan_to_num(soc_frac, nan=0.0) * energy_mwh * np.sqrt(efficiency_frac)
    return np.minimum(rating_mw, held * 3600.0 / BATTERY_HORIZON_S)


@dataclass(frozen=True)
class Dispatch:
    """What each source delivers this tick and what nobody could."""

    source_power_mw: np.ndarray  # [n_sources], negative: a battery charging
    battery_soc_frac: np.ndarray  # [n_sources], NaN for non-batteries
    capacity_mw: np.ndarray  # [n_sources] sustained output (0 when not live; see sustained_battery_mw)
    reach_mw: np.ndarray  # [n_sources] output generation could reach this tick (0 for batteries)
    unmet_mw: float  # demand that neither generation nor batteries delivered
    step_ready_frac: np.ndarray | None = None  # [n_sources] step bucket after the tick (None: not tracked)
    step_limited: np.ndarray | None = None  # bool [n_sources]: held below its share by the step still recovering


def dispatch(
    demand_mw: float,
    kind: np.ndarray,
    capacity_mw: np.ndarray,
    live: np.ndarray,
    prev_mw: np.ndarray,
    step_mw: np.ndarray,
    ramp_mw_per_s: np.ndarray,
    energy_mwh: np.ndarray,
    efficiency_frac: np.ndarray,
    soc_frac: np.ndarray,
    dt_s: float,
    recovery_s: np.ndarray | None = None,
    step_ready_frac: np.ndarray | None = None,
) -> Dispatch:
    """Dispatch ``demand_mw`` over the sources (see module docstring).

    ``capacity_mw`` is already derated; ``prev_mw`` is each source's output of the last tick.
    Generation carries what it can reach; charged batteries cover the rest (the fast
    part of any change) and charge from spare reach otherwise.  With ``recovery_s`` (per
    source, 0 for none) and the step buckets ``step_ready_frac`` of the last tick, a unit
    takes only the steps it has recovered for; the grid (kind ``grid``) is stiff: it reaches
    its capacity at once.
    """
    battery = kind == BATTERY
    gen = live & ~battery
    cap = np.where(gen, capacity_mw, 0.0)
    tracked = recovery_s is not None and step_ready_frac is not None
    steps = (
        step_available_frac(step_ready_frac, recovery_s, dt_s)
        if step_ready_frac is not None and recovery_s is not None  # tracked
        else 1.0
    )
    reach = reachable_mw(cap, prev_mw, step_mw, ramp_mw_per_s, dt_s, steps)
    reach = np.where(gen, np.where(kind == GRID, cap, reach), 0.0)
    out = share_generation_mw(demand_mw, cap, reach)
    deficit = demand_mw - float(out.sum())
    spare = float((reach - out).sum())
    soc = soc_frac.copy()
    bat = np.flatnonzero(battery & live)
    if bat.size and (deficit > 1e-12 or spare > 1e-12):  # batteries share in proportion to what each can give
        most_out, most_in = battery_limits_mw(soc[bat], energy_mwh[bat], capacity_mw[bat], efficiency_frac[bat], dt_s)
        limit, want = (most_out, deficit) if deficit > 1e-12 else (-most_in, -spare)
        total = float(np.abs(limit).sum())
        p = limit * min(abs(want) / total, 1.0) if total > 0 else np.zeros(bat.size)
        out[bat] = p
        soc[bat] = battery_soc_after(soc[bat], p, energy_mwh[bat], efficiency_frac[bat], dt_s)
        deficit -= float(np.clip(p, 0.0, None).sum())
    charging = -float(out[battery & (out < 0)].sum())
    if charging > 0.0:  # the charging power is drawn from generation
        out[gen] = share_generation_mw(demand_mw + charging, cap, reach)[gen]
    # batteries as supply at the charge they start the tick with (a long tick may empty them within it)
    usable = np.where(
        battery, np.where(live, sustained_battery_mw(capacity_mw, soc_frac, energy_mwh, efficiency_frac), 0.0), cap
    )
    ready, limited = None, None
    if tracked:
        ready, limited = _steps_after(
            out, prev_mw, cap, reach, step_mw, ramp_mw_per_s, dt_s, steps, gen & (kind != GRID)
        )
    return Dispatch(
        source_power_mw=out,
        battery_soc_frac=soc,
        capacity_mw=usable,
        reach_mw=reach,
        unmet_mw=deficit if deficit > 1e-9 else 0.0,
        step_ready_frac=ready,
        step_limited=limited,
    )


def _steps_after(
    out: np.ndarray,
    prev_mw: np.ndarray,
    cap: np.ndarray,
    reach: np.ndarray,
    step_mw: np.ndarray,
    ramp_mw_per_s: np.ndarray,
    dt_s: float,
    steps: np.ndarray | float,
    stepping: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Step buckets after the tick (what the rise beyond the ramp used) and the units the bucket held back."""
    rise = np.maximum(out - np.maximum(prev_mw, 0.0) - ramp_mw_per_s * dt_s, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        used = np.where(np.isfinite(step_mw) & (step_mw > 0), rise / step_mw, 0.0)
    ready = np.where(np.isfinite(steps), np.clip(steps - used, 0.0, 1.0), 1.0)
    # held back: at its reach, which the recovering step (not the rating) set
    limited = stepping & (out >= reach * (1.0 - 1e-9)) & (reach < cap * (1.0 - 1e-9)) & (steps < 1.0 - 1e-9)
    return ready, limited


def ups_discharge(
    deficit_mw: float, ups_load_kw: np.ndarray, energy_kwh: np.ndarray, energy_frac: np.ndarray, dt_s: float
) -> tuple[float, np.ndarray]:
    """UPS batteries carry ``deficit_mw`` in proportion to each UPS's load for ``dt_s``.

    Returns ``(carried_mw, new_energy_frac)``; a UPS gives at most what it holds.  With no
    deficit the UPS batteries recharge over :data:`UPS_RECHARGE_S`.
    """
    if deficit_mw <= 1e-9:  # rounding, not a deficit
        return 0.0, np.where(energy_kwh > 0, np.minimum(energy_frac + dt_s / UPS_RECHARGE_S, 1.0), energy_frac)
    load = np.where((energy_kwh > 0) & (energy_frac > 0), ups_load_kw, 0.0)
    total = float(load.sum())
    if total <= 0.0:
        return 0.0, energy_frac
    want_kw = load * min(deficit_mw * 1e3 / total, 1.0)
    held_kwh = energy_frac * energy_kwh
    give_kw = np.minimum(want_kw, held_kwh * 3600.0 / dt_s) if dt_s > 0 else want_kw
    used_kwh = give_kw * dt_s / 3600.0
    with np.errstate(divide="ignore", invalid="ignore"):
        new = np.where(energy_kwh > 0, np.maximum(held_kwh - used_kwh, 0.0) / energy_kwh, energy_frac)
    return float(give_kw.sum()) / 1e3, new


def ride_through_s(energy_kwh: np.ndarray, energy_frac: np.ndarray, load_kw: np.ndarray) -> float:
    """Seconds the UPSs carry their present load on battery: the shortest ``E_left / P`` [s]."""
    on = (energy_kwh > 0) & (load_kw > 0)
    if not on.any():
        return float("inf")
    return float(np.min(energy_frac[on] * energy_kwh[on] * 3600.0 / load_kw[on]))


@dataclass(frozen=True)
class SwingShare:
    """Which source carries how much of the training swing, and whether it stays within its limits."""

    share_mw: np.ndarray  # [n_sources] part of the swing amplitude each source carries
    ramp_mw_per_s: np.ndarray  # [n_sources] ramp that asks of it (share over the swing's edge time)
    limit_mw: np.ndarray  # [n_sources] what it can follow within one phase (batteries: spare power)
    over_limit: np.ndarray  # bool [n_sources]: asked for more than its limit (MW; batteries also MW/s)
    unfollowed_mw: float  # swing the sources cannot follow within their limits
    battery_exhaust_s: float  # time the charged batteries last at their output plus swing share (inf: none)
    within_limits: bool


def swing_share(
    amplitude_mw: float,
    ramp_mw_per_s: float,
    phase_s: float,
    kind: np.ndarray,
    capacity_mw: np.ndarray,
    power_mw: np.ndarray,
    live: np.ndarray,
    step_mw: np.ndarray,
    source_ramp_mw_per_s: np.ndarray,
    energy_mwh: np.ndarray,
    efficiency_frac: np.ndarray,
    soc_frac: np.ndarray,
) -> SwingShare:
    """Split a swing of ``amplitude_mw`` rising at ``ramp_mw_per_s`` over the sources.

    Charged batteries take the fast part first, up to their spare power.  A live grid is
    stiff: it takes the rest at once (the units in parallel with it see no frequency change
    and hold their output), within the contract's import headroom and ramp
    (``source_ramp_mw_per_s`` of a grid is the contract's ramp limit).  Islanded, the
    generating units share the rest in proportion to their capacity (governor droop) and can
    follow, within a phase of ``phase_s``, one load step plus their ramp, ``P_step + ramp ·
    t_phase``, and no more than their headroom.  A unit asked for more runs past its limits
    (frequency and voltage dips beyond its ISO 8528-5 class); a battery or a grid also when
    the ramp asked of it exceeds its own.  The battery time is the charge held over the
    batteries' present output plus their share, i.e. at the swing's peak all the time: a
    lower bound.
    """
    n = kind.size
    battery = (kind == BATTERY) & live & (np.nan_to_num(soc_frac, nan=0.0) > 0.0)
    grid = live & (kind == GRID)
    gen = grid if grid.any() else live & (kind != BATTERY)
    amp = max(float(amplitude_mw), 0.0)
    edge_s = amp / ramp_mw_per_s if ramp_mw_per_s > 0 else float("inf")
    spare = np.where(battery, np.maximum(capacity_mw - power_mw, 0.0), 0.0)
    share = np.zeros(n)
    spare_total = float(spare.sum())
    if spare_total > 0.0:
        share = spare * min(amp / spare_total, 1.0)
    rest = amp - float(share.sum())
    cap_total = float(np.where(gen, capacity_mw, 0.0).sum())
    if cap_total > 0.0:
        share = share + np.where(gen, capacity_mw, 0.0) * rest / cap_total
        rest = 0.0
    phase = phase_s if np.isfinite(phase_s) else 0.0
    headroom = np.maximum(capacity_mw - power_mw, 0.0)
    follow = np.where(gen, np.minimum(step_mw + source_ramp_mw_per_s * phase, headroom), spare)
    follow = np.where(grid, headroom, follow)
    ramp = share / edge_s if np.isfinite(edge_s) and edge_s > 0 else np.zeros(n)
    # generators follow by load steps (the MW check); batteries also by their inverters' ramp, the grid by its contract's
    fast = battery | grid
    over = (share > follow * (1.0 + 1e-9) + 1e-12) | (fast & (ramp > source_ramp_mw_per_s * (1.0 + 1e-9)))
    unfollowed = float(np.maximum(share - follow, 0.0).sum()) + rest
    within = unfollowed <= 1e-9 * max(amp, 1.0) and not over.any()
    held_mwh = float(np.sum(np.where(battery, soc_frac * energy_mwh * np.sqrt(efficiency_frac), 0.0)))
    battery_mw = float(share[battery].sum() + np.maximum(power_mw[battery], 0.0).sum())  # at the swing's peak
    return SwingShare(
        share_mw=share,
        ramp_mw_per_s=ramp,
        limit_mw=follow,
        over_limit=over,
        unfollowed_mw=unfollowed,
        battery_exhaust_s=held_mwh * 3600.0 / battery_mw if battery_mw > 0 else float("inf"),
        within_limits=bool(within),
    )
