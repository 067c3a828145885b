"""Coolant loops with thermal mass and transport delay: the secondary (CDU) and facility loops.

Pure numpy functions over per-loop arrays, plus :class:`DelayLine`, the small history the
engine keeps to delay a supply temperature by a loop's transport time.

Each loop is one well-mixed coolant node (its return temperature ``T``, heat capacity
``C = V ρ cp``) fed at flow ``ṁ`` with supply water at ``T_sup``:

    C dT/dt = Q_in − ṁ cp (T − T_sup)

For constant inputs over a step this is a first-order response with time constant
``τ = C / (ṁ cp) = V / V̇`` (the residence time) towards ``T_ss = T_sup + Q_in / (ṁ cp)``;
the step uses the exact solution ``T(t+dt) = T_ss + (T − T_ss) exp(−dt/τ)``, stable at any
``dt`` [Incropera-DeWitt §5.1] (lumped capacitance).  The heat the loop passes on over the
step is what came in minus what it stored, ``Q_out = Q_in − C ΔT / dt``, so energy is
conserved exactly whatever ``dt``.

Transport delay: the supply water reaches the load after ``θ = V_pipe / V̇`` (plug flow in
the supply run of length ``L`` and inner diameter ``d``, ``V_pipe = L π d² / 4``).  The pipe's
water counts in the loop's mixed mass; the delay acts on the supply temperature the load sees.

CDU control (secondary loop): the CDU's facility-water valve holds the secondary supply at
its setpoint ``T_set`` while the heat exchanger can reach it; fully open, the exchanger of
effectiveness ``ε`` gives ``T_sup = T − ε (T − T_fw)``.  So ``T_sup = max(T_set, T − ε (T − T_fw))``
and the heat removed is the smaller of the two laws; the step takes the larger of the two
exact end temperatures (exact while the regime holds, and the true solution is never below
either).  The exchanger never adds heat: with facility water warmer than the coolant the
valve shuts, and a loop below its setpoint keeps its heat (``T_sup ≤ T``).  ``ε`` follows from the capacity curve: at rated duty the supply sits ``approach_k``
above the facility water, so ``ε = ΔT_cap / (ΔT_cap + approach)`` with
``ΔT_cap = Q_cap / (ṁ_design cp)`` [Incropera-DeWitt §11.4] (effectiveness of an exchanger).
"""

from __future__ import annotations

import numpy as np

from twin.arrays import FloatArray, Floats


def pipe_volume_l(length_m: np.ndarray | float, inner_diameter_mm: np.ndarray | float) -> np.ndarray:
    """Water held in a pipe run ``L π d² / 4`` [L] (length in m, inner diameter in mm)."""
    d_m = np.asarray(inner_diameter_mm, dtype=np.float64) / 1e3
    return np.asarray(length_m, dtype=np.float64) * np.pi * d_m * d_m / 4.0 * 1e3


def transport_delay_s(pipe_volume_l: np.ndarray | float, flow_lpm: np.ndarray | float) -> np.ndarray:
    """Plug-flow transit time ``V_pipe / V̇`` [s]; ``inf`` with no flow."""
    flow = np.asarray(flow_lpm, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(flow > 0.0, np.asarray(pipe_volume_l) * 60.0 / np.maximum(flow, 1e-300), np.inf)


def hx_effectiveness_frac(
    capacity_w: np.ndarray, design_flow_w_per_k: np.ndarray, approach_k: np.ndarray | float
) -> np.ndarray:
    """Effectiveness of a CDU exchanger from its rated duty and approach: ``ΔT / (ΔT + approach)``."""
    rise_k = np.asarray(capacity_w, dtype=np.float64) / np.asarray(design_flow_w_per_k)
    return rise_k / (rise_k + approach_k)


def relax_exact_c(temp_c: np.ndarray, steady_c: np.ndarray, rate_per_s: np.ndarray, dt_s: float) -> np.ndarray:
    """Exact first-order step ``T_ss + (T − T_ss) exp(−rate · dt)`` [°C] (``rate = 1/τ``, 0 = no change)."""
    return steady_c + (temp_c - steady_c) * np.exp(-np.asarray(rate_per_s) * dt_s)


def _relax_or_hold(
    temp_c: FloatArray,
    heat_w: Floats,
    conductance_w_per_k: Floats,
    sink_c: Floats,
    capacity_j_per_k: Floats,
    dt_s: float,
) -> FloatArray:
    """End temperature of ``C dT/dt = Q − G (T − T_sink)``; with ``G = 0`` the heat accumulates."""
    g = np.asarray(conductance_w_per_k, dtype=np.float64)
    flowing = g > 0.0
    steady = sink_c + np.asarray(heat_w) / np.where(flowing, g, 1.0)
    relaxed = relax_exact_c(temp_c, steady, g / capacity_j_per_k, dt_s)
    return np.where(flowing, relaxed, temp_c + np.asarray(heat_w) * dt_s / capacity_j_per_k)


def heat_passed_w(
    heat_in_w: np.ndarray,
    capacity_j_per_k: np.ndarray | float,
    temp_old_c: np.ndarray,
    temp_new_c: np.ndarray,
    dt_s: float,
) -> np.ndarray:
    """Heat a node passes on over a step, ``Q_in − C (T_new − T_old) / dt`` [W] (``Q_in`` at ``dt = 0``)."""
    if dt_s <= 0.0:
        return np.asarray(heat_in_w, dtype=np.float64)
    return heat_in_w - np.asarray(capacity_j_per_k) * (temp_new_c - temp_old_c) / dt_s


def cdu_loop_step(
    temp_c: np.ndarray,
    heat_in_w: np.ndarray,
    flow_w_per_k: np.ndarray,
    setpoint_c: np.ndarray,
    facility_c: np.ndarray,
    effectiveness_frac: np.ndarray,
    capacity_j_per_k: np.ndarray,
    dt_s: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One step of CDU secondary loops under supply-setpoint control (see module docstring).

    Parameters
    ----------
    temp_c : mixed (return) coolant temperature now [°C]
    heat_in_w : heat into the secondary coolant over the step (racks, pump work) [W]
    flow_w_per_k : secondary heat-capacity flow ``ṁ cp`` [W/K] (0: no flow)
    setpoint_c : secondary supply setpoint [°C]
    facility_c : facility water at the CDU [°C]
    effectiveness_frac : exchanger effectiveness on the secondary side (0–1)
    capacity_j_per_k : loop heat capacity ``V ρ cp`` [J/K], > 0

    Returns
    -------
    temp_c : mixed temperature after the step [°C]
    supply_c : secondary supply after the step [°C]
    heat_out_w : heat passed to the facility water over the step [W]
    """
    held = _relax_or_hold(temp_c, heat_in_w, flow_w_per_k, setpoint_c, capacity_j_per_k, dt_s)
    eps_flow = np.asarray(effectiveness_frac) * flow_w_per_k
    saturated = _relax_or_hold(temp_c, heat_in_w, eps_flow, facility_c, capacity_j_per_k, dt_s)
    # the exchanger only removes heat: the valve shuts rather than let warmer facility water in,
    # and a loop below its setpoint just keeps its heat
    unremoved = temp_c + np.asarray(heat_in_w) * dt_s / capacity_j_per_k
    new = np.minimum(np.maximum(held, saturated), np.maximum(unremoved, temp_c))
    supply = np.minimum(new, np.maximum(setpoint_c, new - effectiveness_frac * (new - facility_c)))
    return new, supply, heat_passed_w(heat_in_w, capacity_j_per_k, temp_c, new, dt_s)


def facility_loop_step(
    temp_c: np.ndarray,
    heat_in_w: np.ndarray,
    flow_w_per_k: np.ndarray,
    supply_c: np.ndarray,
    capacity_j_per_k: np.ndarray,
    dt_s: float,
) -> tuple[np.ndarray, np.ndarray]:
    """One step of facility-water loops: mixed return temperature after the step [°C] and the
    heat returned to the plant over the step [W] (``C dT/dt = Q_in − ṁ cp (T − T_supply)``)."""
    new = _relax_or_hold(temp_c, heat_in_w, flow_w_per_k, supply_c, capacity_j_per_k, dt_s)
    return new, heat_passed_w(heat_in_w, capacity_j_per_k, temp_c, new, dt_s)


def pump_flow_lpm(
    flow_lpm: np.ndarray,
    pumps_before: np.ndarray,
    pumps_now: np.ndarray,
    pumps_required: np.ndarray,
    design_flow_lpm: np.ndarray,
    failover_s: np.ndarray,
    dt_s: float,
) -> np.ndarray:
    """Secondary flow after a step of pump changes and fail-over [L/min].

    The target is ``design · min(1, running / required)`` (parallel pumps on one system
    curve).  When pumps stop, the flow falls at once in proportion to the pumps left
    (they keep their speed); the remaining pumps then ramp up at ``design / failover_s``
    until the target, so an N+1 CDU is back at design flow within ``failover_s``
    ([NVIDIA-CDU-Reqs]: pump fail-over ≤ 5 s).  A rising target is followed at the same rate.
    """
    if np.any(np.asarray(pumps_now) < 0):
        raise ValueError("pumps_running_count: must be >= 0")
    target = design_flow_lpm * np.minimum(pumps_now / np.asarray(pumps_required, dtype=np.float64), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        kept = np.where(pumps_before > 0, flow_lpm * np.minimum(pumps_now / np.maximum(pumps_before, 1e-300), 1.0), 0.0)
    ramp = np.asarray(design_flow_lpm) * dt_s / np.maximum(failover_s, 1e-9)
    return np.minimum(target, kept + ramp)


class DelayLine:
    """Recent history of a per-entity signal, read back ``delay_s`` in the past (linear interpolation).

    Holds the last ``depth`` pushed values in a ring; a delay longer than the history reads
    the oldest value, a delay shorter than the last step interpolates towards the newest.
    """

    def __init__(self, initial: np.ndarray, depth: int = 16) -> None:
        initial = np.asarray(initial, dtype=np.float64)
        self.values = np.repeat(initial[None, :], depth, axis=0)
        self.times_s = np.zeros(depth)
        self.head = depth - 1  # slot of the newest value
        self.now_s = 0.0
        self._cols = np.arange(initial.size)

    def push(self, value: np.ndarray, dt_s: float) -> None:
        """Append the value at ``now + dt_s``."""
        self.now_s += dt_s
        self.head = (self.head + 1) % self.times_s.size
        self.values[self.head] = value
        self.times_s[self.head] = self.now_s

    def correct_last(self, value: np.ndarray) -> None:
        """Replace the newest value (a prediction made before the step was solved)."""
        self.values[self.head] = value

    def read(self, delay_s: np.ndarray) -> np.ndarray:
        """The signal ``delay_s`` before the newest entry, per entity."""
        depth = self.times_s.size
        order = (np.arange(1, depth + 1) + self.head) % depth  # oldest … newest
        times = self.times_s[order]
        t = self.now_s - np.minimum(np.asarray(delay_s, dtype=np.float64), self.now_s - times[0])
        hi = np.clip(np.searchsorted(times, t, side="left"), 1, depth - 1)
        t0, t1 = times[hi - 1], times[hi]
        span = t1 - t0
        w = np.clip(np.where(span > 0, (t - t0) / np.where(span > 0, span, 1.0), 1.0), 0.0, 1.0)
        return self.values[order[hi - 1], self._cols] * (1.0 - w) + self.values[order[hi], self._cols] * w
