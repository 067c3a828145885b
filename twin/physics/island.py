"""The generating units as a generator engineer tests them, and the grid as its contract sees it.

Pure functions over per-source arrays (a few dozen values; no per-GPU work):

* **Frequency and inertia of the island** — the live generating units (not the grid, not
  the batteries) as one equivalent machine, small-signal [Kundur-1994 §3.9, §11.1]::

      2 H dΔf/dt = ΔP_m − ΔP_e          (Δf per unit of nominal frequency, ΔP per unit of the
      T_g dΔP_m/dt = −Δf / R − ΔP_m      units' online rating; swing equation, droop governor)

  with ``H = Σ H_i S_i / Σ S_i`` the inertia constant, ``R`` the governor droop and ``T_g``
  the governor and engine lag, both capacity-weighted.  The load is power electronics
  (PSUs hold their output whatever the frequency): no load damping [E].  So
  ``Δf(s) / ΔP_e(s) = −R (1 + s T_g) / (2 H R T_g s² + 2 H R s + 1)``: the island has one
  electromechanical mode at ``ω_n = 1 / √(2 H R T_g)`` with damping ``ζ = √(H R / (2 T_g))``
  (:class:`IslandModel`).  Each Fourier line of the training swing drives the frequency
  through that transfer function: the swing's frequency content is judged against the
  governors' response (:func:`line_freq_pp_frac`: peak-to-peak against the ISO 8528-5
  steady-state band).  Steps (a checkpoint's drop, the surge back) are exact solutions
  of the same equations (:func:`step_extreme_frac`), their first rate of change
  ``ΔP / (2 H)`` the RoCoF.
* **Load rejection and overspeed** — a whole-job drop (checkpoint, evaluation, restart) is
  a sudden power decrease on the units that carry it: its frequency rise is checked against
  the class's ``δf_dyn⁺`` and the overspeed trip; the surge back at the end of a
  checkpoint is a load acceptance, checked against the class's ``δf_dyn⁻`` and the units'
  load step [ISO-8528-5 Table 4].
* **Spinning reserve and N-1** — the headroom of the live sources and the batteries' spare
  power against the largest single source's output: after that source trips the others
  must carry the demand (N-1 capacity) and pick up its output in one sudden step
  (:func:`reserve_figures`).
* **The grid contract** — the grid is stiff (:mod:`twin.physics.sources`): what the
  batteries do not absorb of the swing and the dips lands on it at once.  Its import must
  stay between the export and import limits of the contract, its ramp below the
  contract's, and the relative voltage change at the point of common coupling, ``d ≈ ΔS /
  S_sc`` [IEC-TR-61000-3-7 §6.4], below the contract's limit (:func:`grid_figures`).
  Harmonic distortion (IEEE 519) is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from twin.physics.sources import BATTERY, GRID, ISO_8528_5_CLASSES
from twin.physics.swing import SwingReport

DEFAULT_INERTIA_H_S = (
    1.0  # [E] reciprocating gas set with its alternator (large turbine units: 2.5–10 s [Kundur-1994 §3.9])
)
DEFAULT_DROOP_FRAC = 0.05  # [Kundur-1994 §11.1] typical governor droop; the ISO 8528-5 G2 limit
DEFAULT_GOVERNOR_S = 1.0  # [E] governor, fuel system and turbocharger lag of a gas engine
DEFAULT_OVERSPEED_TRIP_FRAC = 0.10  # [E] overspeed shutdown at 110 % of rated speed
NOMINAL_FREQUENCY_HZ = 60.0  # the US grid's nominal frequency
STEP_SAMPLES = 4000  # time samples of a step response (its extreme and recovery are read off them)


@dataclass(frozen=True)
class IslandModel:
    """One equivalent machine of the live generating units (see module docstring)."""

    online_mw: float  # rating of the live generating units (the per-unit base)
    inertia_h_s: float  # capacity-weighted inertia constant H [MW·s/MW]
    droop_frac: float  # capacity-weighted governor droop R
    governor_s: float  # capacity-weighted governor and engine lag T_g [s]
    nominal_hz: float = NOMINAL_FREQUENCY_HZ

    @property
    def mode_hz(self) -> float:
        """Frequency of the island's electromechanical mode, ``ω_n / 2π`` [Hz]."""
        return 1.0 / math.sqrt(2.0 * self.inertia_h_s * self.droop_frac * self.governor_s) / (2.0 * math.pi)

    @property
    def damping_ratio(self) -> float:
        """Damping of that mode, ``ζ = √(H R / (2 T_g))``."""
        return math.sqrt(self.inertia_h_s * self.droop_frac / (2.0 * self.governor_s))

    def gain(self, period_s: float) -> float:
        """``|Δf / ΔP_e|`` at a line of ``period_s`` [pu frequency per pu power]; the droop ``R`` at 0 Hz."""
        h, r, tg = self.inertia_h_s, self.droop_frac, self.governor_s
        w = 2.0 * math.pi / period_s if math.isfinite(period_s) and period_s > 0 else 0.0
        return abs(r * complex(1.0, w * tg) / complex(1.0 - 2.0 * h * r * tg * w * w, 2.0 * h * r * w))


def island_model(
    kind: np.ndarray,
    capacity_mw: np.ndarray,
    live: np.ndarray,
    inertia_h_s: np.ndarray,
    droop_frac: np.ndarray,
    governor_s: np.ndarray,
    nominal_hz: float = NOMINAL_FREQUENCY_HZ,
) -> IslandModel | None:
    """The equivalent machine of the live generating units (not the grid, not batteries); None without any."""
    units = live & (kind != BATTERY) & (kind != GRID) & (capacity_mw > 0)
    if not units.any():
        return None
    w = capacity_mw[units]
    total = float(w.sum())
    avg: Callable[[np.ndarray], float] = lambda v: float(np.sum(v[units] * w)) / total  # noqa: E731
    return IslandModel(total, avg(inertia_h_s), avg(droop_frac), avg(governor_s), nominal_hz)


@lru_cache(maxsize=64)
def _unit_step(h: float, r: float, tg: float) -> tuple[np.ndarray, np.ndarray]:
    """``(t_s, Δf)`` after a unit power increase ``ΔP_e = 1`` pu, exact (eigen-decomposition of the 2×2 system)."""
    a = np.array([[0.0, 1.0 / (2.0 * h)], [-1.0 / (r * tg), -1.0 / tg]])
    steady = np.array([-r, 1.0])  # Δf = −R ΔP, ΔP_m = ΔP
    lam, vec = np.linalg.eig(a)
    coeff = np.linalg.solve(vec, -steady)  # x(0) = 0
    slowest = float(np.min(np.abs(lam.real)))
    t = np.linspace(0.0, 12.0 / slowest, STEP_SAMPLES)
    x = (vec @ (coeff[:, None] * np.exp(np.outer(lam, t)))).real + steady[:, None]
    return t, x[0]


def step_extreme_frac(model: IslandModel, step_pu: float) -> float:
    """Largest frequency deviation after a sudden power change of ``step_pu`` (of ``online_mw``) [pu].

    Negative for an increase (the dip), positive for a decrease (the rise).
    """
    t, df = _unit_step(model.inertia_h_s, model.droop_frac, model.governor_s)
    return float(step_pu * df.min())


def step_recovery_s(model: IslandModel, step_pu: float, band_frac: float) -> float:
    """Time after a sudden power change of ``step_pu`` until the frequency stays within ``±band/2`` of its
    new steady value ``−R ΔP`` [s] (the ISO 8528-5 recovery time)."""
    t, df = _unit_step(model.inertia_h_s, model.droop_frac, model.governor_s)
    off = np.abs(step_pu * (df + model.droop_frac)) > band_frac / 2.0
    return float(t[min(np.flatnonzero(off)[-1] + 1, t.size - 1)]) if off.any() else 0.0


def line_freq_pp_frac(model: IslandModel, lines_mw: tuple[tuple[float, float], ...]) -> float:
    """Peak-to-peak frequency swing the training swing's lines drive through the governors [pu].

    ``lines_mw`` are ``(period_s, amplitude_mw)`` sinusoids (peak) on the units; in phase the
    peaks add, so ``2 Σ |G(jω)| a / S`` bounds the peak-to-peak.
    """
    return 2.0 * sum(model.gain(p) * a for p, a in lines_mw if a > 0) / model.online_mw


def class_limits(iso_class: list[str], units: np.ndarray) -> dict[str, float]:
    """The tightest ISO 8528-5 limits of the classes of ``units`` (bool per source); the G1 limits
    for units without a class."""
    given = [ISO_8528_5_CLASSES.get(iso_class[i] if i < len(iso_class) else "", None) for i in np.flatnonzero(units)]
    classes = [c or ISO_8528_5_CLASSES["G1"] for c in given] or [ISO_8528_5_CLASSES["G1"]]
    return {
        "freq_dip_frac": min(c.freq_dip_frac for c in classes),
        "freq_rise_frac": min(c.freq_rise_frac for c in classes),
        "freq_band_frac": min(c.freq_band_frac for c in classes),
        "freq_recovery_s": min(c.freq_recovery_s for c in classes),
    }


@dataclass(frozen=True)
class ReserveFigures:
    """Spinning reserve and the loss of the largest source [MW]."""

    spinning_reserve_mw: float  # live sources' headroom plus the batteries' spare power
    largest_source: int  # index of the live source with the largest output (-1: none)
    largest_source_mw: float  # its output: the single contingency
    n1_capacity_mw: float  # capacity left after it trips
    n1_deficit_mw: float  # demand beyond that capacity
    n1_step_deficit_mw: float  # its output beyond what the others pick up at once (ready steps, batteries)


def reserve_figures(
    demand_mw: float,
    kind: np.ndarray,
    capacity_mw: np.ndarray,
    power_mw: np.ndarray,
    live: np.ndarray,
    step_mw: np.ndarray,
    steps_ready_frac: np.ndarray,
    battery_rating_mw: np.ndarray,
) -> ReserveFigures:
    """Spinning reserve and N-1 of the live sources (``capacity_mw`` sustained, batteries at what they hold)."""
    battery = (kind == BATTERY) & live
    gen = live & ~battery
    out = np.maximum(power_mw, 0.0)
    bat_spare = np.where(battery & (capacity_mw > 0), np.maximum(battery_rating_mw - out, 0.0), 0.0)
    reserve = float(np.sum(np.where(gen, np.maximum(capacity_mw - out, 0.0), 0.0)) + bat_spare.sum())
    if not live.any():
        return ReserveFigures(reserve, -1, 0.0, 0.0, max(demand_mw, 0.0), 0.0)
    largest = int(np.argmax(np.where(live, out, -np.inf)))
    others = live.copy()
    others[largest] = False
    n1_cap = float(capacity_mw[others].sum())
    # what the others take at once: each generating unit its ready step within its headroom (the grid: its
    # headroom), each battery its spare power
    head = np.maximum(capacity_mw - out, 0.0)
    at_once = np.where(kind == GRID, head, np.minimum(step_mw * steps_ready_frac, head))
    at_once = np.where(kind == BATTERY, bat_spare, np.nan_to_num(at_once, nan=0.0, posinf=np.inf))
    pick_up = float(np.sum(np.where(others, at_once, 0.0)))
    return ReserveFigures(
        spinning_reserve_mw=reserve,
        largest_source=largest,
        largest_source_mw=float(out[largest]),
        n1_capacity_mw=n1_cap,
        n1_deficit_mw=max(demand_mw - n1_cap, 0.0),
        n1_step_deficit_mw=max(float(out[largest]) - pick_up, 0.0),
    )


@dataclass(frozen=True)
class GridContract:
    """A grid connection's contract [MW, MW/s, MVA, fraction]; NaN where the contract states nothing."""

    import_limit_mw: float
    export_limit_mw: float  # largest export allowed (0: none, reverse power trips the interconnection)
    ramp_limit_mw_per_s: float
    short_circuit_mva: float  # at the point of common coupling
    voltage_change_limit_frac: float


@dataclass(frozen=True)
class GridFigures:
    """The grid import under the swing and the dips against the contract."""

    import_mw: float
    peak_import_mw: float  # import plus the swing's rise above the mean that lands on the grid
    min_import_mw: float  # import less the largest whole-job drop that lands on the grid
    ramp_mw_per_s: float  # the swing's ramp on the grid
    voltage_change_frac: float  # largest ΔS / S_sc of the swing or a drop (NaN: no short-circuit power given)
    within_contract: bool


def grid_figures(
    contract: GridContract, import_mw: float, swing_mw: float, drop_mw: float, ramp_mw_per_s: float
) -> GridFigures:
    """The import under ``swing_mw`` (peak to peak) and ``drop_mw`` landing on the grid, against ``contract``."""
    peak = import_mw + swing_mw / 2.0
    low = import_mw - max(drop_mw, swing_mw / 2.0)
    d = max(swing_mw, drop_mw) / contract.short_circuit_mva if contract.short_circuit_mva > 0 else math.nan
    ok = peak <= contract.import_limit_mw * (1.0 + 1e-9) and low >= -contract.export_limit_mw - 1e-9
    if math.isfinite(contract.ramp_limit_mw_per_s):
        ok = ok and ramp_mw_per_s <= contract.ramp_limit_mw_per_s * (1.0 + 1e-9)
    if math.isfinite(d) and math.isfinite(contract.voltage_change_limit_frac):
        ok = ok and d <= contract.voltage_change_limit_frac
    return GridFigures(import_mw, peak, low, ramp_mw_per_s, d, bool(ok))


@dataclass(frozen=True)
class GenerationChecks:
    """The tick's supply against the tests of a generator engineer and the grid contract (see module docstring).

    Frequency, rejection and surge figures are those of the island of generating units: live
    conditions when it is islanded (no grid live), the case of losing the grid otherwise.
    """

    islanded_flag: bool
    reserve: ReserveFigures
    units_step_limited_count: int  # units held below their share by a step still recovering
    island_online_mw: float  # rating of the live generating units (0: none)
    island_mode_hz: float  # the island's electromechanical mode (NaN: no units)
    island_damping_ratio: float
    swing_on_units_mw: float  # the swing (peak to peak) the batteries leave to the units
    swing_freq_pp_hz: float  # the frequency swing it drives through the governors
    freq_band_hz: float  # the class's steady-state band
    rejection_mw: float  # largest whole-job drop the batteries leave to the units
    rejection_frac: float  # of the units' rating
    rejection_freq_rise_frac: float  # transient frequency rise it causes
    freq_rise_limit_frac: float  # the class's δf_dyn⁺
    overspeed_trip_frac: float  # the units' overspeed shutdown above rated speed
    surge_mw: float  # largest sudden return to training power (end of a checkpoint or evaluation) on the units
    surge_frac: float  # of the units' rating
    unit_step_frac: float  # the units' load acceptance, of their rating
    surge_freq_dip_frac: float  # transient frequency dip it causes
    freq_dip_limit_frac: float  # the class's δf_dyn⁻
    surge_recovery_s: float  # frequency recovery time after it
    freq_recovery_limit_s: float  # the class's recovery time
    rocof_hz_per_s: float  # first rate of change of frequency after the larger of drop and surge
    grid: GridFigures | None = None  # None: no live grid
    grid_contract: GridContract | None = None

    @property
    def frequency_ok(self) -> bool:
        return not self.swing_freq_pp_hz > self.freq_band_hz

    @property
    def rejection_ok(self) -> bool:
        rise = self.rejection_freq_rise_frac
        return not (rise > self.freq_rise_limit_frac or rise >= self.overspeed_trip_frac)

    @property
    def surge_ok(self) -> bool:
        return not (
            self.surge_frac > self.unit_step_frac * (1.0 + 1e-9) or -self.surge_freq_dip_frac > self.freq_dip_limit_frac
        )

    @property
    def reserve_ok(self) -> bool:
        return self.reserve.n1_deficit_mw <= 1e-9 and self.reserve.n1_step_deficit_mw <= 1e-9


@dataclass(frozen=True)
class SupplyUnits:
    """Per-source parameters the checks read (arrays [n_sources]; grids' contract fields NaN elsewhere)."""

    kind: np.ndarray
    iso_class: list[str]
    unit_mw: np.ndarray  # nameplate rating (a battery's power rating)
    step_mw: np.ndarray  # load acceptance (inf: any step)
    inertia_h_s: np.ndarray
    droop_frac: np.ndarray
    governor_s: np.ndarray
    overspeed_trip_frac: np.ndarray
    export_limit_mw: np.ndarray
    short_circuit_mva: np.ndarray
    voltage_change_max_frac: np.ndarray
    ramp_mw_per_s: np.ndarray  # a grid's: the contract's ramp limit
    nominal_hz: float = NOMINAL_FREQUENCY_HZ


def _battery_room(u: SupplyUnits, live: np.ndarray, power_mw: np.ndarray, soc_frac: np.ndarray) -> tuple[float, float]:
    """What the charged batteries add at once (spare discharge) and absorb at once (charge) [MW]."""
    bat = live & (u.kind == BATTERY)
    soc = np.nan_to_num(soc_frac, nan=0.0)
    up = np.where(bat & (soc > 0), np.maximum(u.unit_mw - power_mw, 0.0), 0.0)
    down = np.where(bat & (soc < 1), u.unit_mw + power_mw, np.where(bat, np.maximum(power_mw, 0.0), 0.0))
    return float(up.sum()), float(np.maximum(down, 0.0).sum())


def generation_checks(
    u: SupplyUnits,
    live: np.ndarray,
    capacity_mw: np.ndarray,
    power_mw: np.ndarray,
    soc_frac: np.ndarray,
    steps_ready_frac: np.ndarray,
    step_limited: np.ndarray | None,
    demand_mw: float,
    swing: SwingReport,
) -> GenerationChecks:
    """:class:`GenerationChecks` of the sources now against ``swing`` (:class:`twin.physics.swing.SwingReport`)."""
    grid = live & (u.kind == GRID)
    units = live & (u.kind != GRID) & (u.kind != BATTERY)
    reserve = reserve_figures(demand_mw, u.kind, capacity_mw, power_mw, live, u.step_mw, steps_ready_frac, u.unit_mw)
    up, down = _battery_room(u, live, power_mw, soc_frac)
    amp = max(float(swing.amplitude_mw), 0.0)
    swing_left = max(amp - up, 0.0)
    drop = max(swing.checkpoint_dip_mw, swing.eval_dip_mw, swing.restart_dip_mw)
    drop_left = max(drop - down, 0.0)
    surge_left = max(max(swing.checkpoint_dip_mw, swing.eval_dip_mw) - up, 0.0)
    limits = class_limits(u.iso_class, units)
    model = island_model(u.kind, capacity_mw, live, u.inertia_h_s, u.droop_frac, u.governor_s, u.nominal_hz)
    f0 = u.nominal_hz
    if model is not None:
        scale = swing_left / amp if amp > 0 else 0.0
        lines = tuple((p, a * scale) for p, a in swing.lines_mw)
        s = model.online_mw
        rise = step_extreme_frac(model, -drop_left / s)
        dip = step_extreme_frac(model, surge_left / s)
        freq = (model.mode_hz, model.damping_ratio, line_freq_pp_frac(model, lines) * f0)
        step_frac = float(np.min(np.where(units, u.step_mw / np.maximum(u.unit_mw, 1e-12), np.inf)))
        rec = step_recovery_s(model, surge_left / s, limits["freq_band_frac"])
        rocof = max(drop_left, surge_left) / s / (2.0 * model.inertia_h_s) * f0
        overspeed = float(np.min(u.overspeed_trip_frac[units]))
    else:
        s, rise, dip, step_frac, rec, rocof, overspeed = 0.0, 0.0, 0.0, math.inf, 0.0, 0.0, math.inf
        freq = (math.nan, math.nan, 0.0)
    contract, figures = None, None
    if grid.any():
        g = int(np.flatnonzero(grid)[0])
        contract = GridContract(
            import_limit_mw=float(capacity_mw[grid].sum()),
            export_limit_mw=float(np.nansum(u.export_limit_mw[grid])),
            ramp_limit_mw_per_s=float(u.ramp_mw_per_s[g]),
            short_circuit_mva=float(u.short_circuit_mva[g]),
            voltage_change_limit_frac=float(u.voltage_change_max_frac[g]),
        )
        ramp = float(swing.ramp_mw_per_s) * (swing_left / amp if amp > 0 else 0.0)
        figures = grid_figures(contract, float(power_mw[grid].sum()), swing_left, drop_left, ramp)
    return GenerationChecks(
        islanded_flag=not bool(grid.any()),
        reserve=reserve,
        units_step_limited_count=int(np.count_nonzero(step_limited)) if step_limited is not None else 0,
        island_online_mw=s,
        island_mode_hz=freq[0],
        island_damping_ratio=freq[1],
        swing_on_units_mw=swing_left,
        swing_freq_pp_hz=freq[2],
        freq_band_hz=limits["freq_band_frac"] * f0,
        rejection_mw=drop_left,
        rejection_frac=drop_left / s if s > 0 else 0.0,
        rejection_freq_rise_frac=rise,
        freq_rise_limit_frac=limits["freq_rise_frac"],
        overspeed_trip_frac=overspeed,
        surge_mw=surge_left,
        surge_frac=surge_left / s if s > 0 else 0.0,
        unit_step_frac=step_frac,
        surge_freq_dip_frac=dip,
        freq_dip_limit_frac=limits["freq_dip_frac"],
        surge_recovery_s=rec,
        freq_recovery_limit_s=limits["freq_recovery_s"],
        rocof_hz_per_s=rocof,
        grid=figures,
        grid_contract=contract,
    )
