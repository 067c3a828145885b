"""What a site does when its sources and batteries cannot carry the demand.

The site file names one policy and its response time:

* ``cap`` — lower every GPU's software power limit (NVML/DCGM power management limit
  [NVML-Power-Limit]) to the highest uniform cap that fits; GPUs slow through the
  SW power-cap clock path the thermal model already has.  If even the minimum limit
  does not fit, whole racks are shed as well;
* ``power_brake`` — assert the external power brake on every GPU (HW slowdown, clocks
  cut at least 2× [NVML-ClocksEventReasons]); racks are shed if that is not enough;

and before either slows a job, the racks without work go: the racks holding no GPU of a
placed job (``idle_racks``, first in :func:`shed_order`) are shed whole until the
demand fits, and only when all of them are off does the cap (or the brake) act on the
job's GPUs; relief runs the other way (the cap is lifted first, then the idle racks come
back one at a time as they fit);
* ``shed`` — power off the nodes of whole racks (out of band, as an operator would; the
  rack's CDU keeps running), racks without a placed job first, then the job's racks; the
  halls take turns (:func:`shed_order`).

A change of action takes effect ``response_s`` after the shortfall (or the relief) is
first seen; meanwhile the batteries and the UPSs carry the gap.  The policy decides on the
training swing's envelope, not on its instant: every training step alternates a compute
phase near TDP and a communication phase near idle [Choukse-2025], so the action pursued is
the strictest one wanted over the last ``ENVELOPE_S`` (most racks shed, then the brake, then
the lowest cap).  A shortfall is answered as fast as before; a relief waits until the last
strict wish has left the window, then ``response_s``.  Without the envelope a one-tick trough
(the communication phase) could lift a cap that the next compute phase needs.

The cap is found from the GPUs' demand: with ``G0`` the GPU board power now and ``F0`` the
facility power, the facility falls by ``k = dF/dG`` per watt of GPU power removed (PSU,
distribution and cooling on top of it), so the target GPU power is ``G* = G0 − (F0 − S)/k``
for a supply ``S``, and the cap ``c`` solves ``Σ min(p_i, c) = G*`` over the uncapped demands
``p_i`` (on a 1 W histogram: cost per tick independent of how the demands are spread).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

POLICIES = ("cap", "power_brake", "shed")
MARGIN_FRAC = 0.01  # [E] the policy aims 1 % below the supply: the linear model's error stays inside
ENVELOPE_S = 30.0  # [E] window of the wishes the policy weighs [s]: several training steps of seconds each
MAX_RECENT = 256  # wishes kept in the window at most (ticks of at least ENVELOPE_S / MAX_RECENT s)


@dataclass(frozen=True)
class PolicyAction:
    """The action in force (or pending) on the GPUs and racks."""

    gpu_cap_w: float = float("inf")  # per-GPU power limit set by the policy, inf when none
    brake: bool = False  # power brake asserted on every GPU
    racks_shed: int = 0  # whole racks switched off, in priority order

    def same_as(self, other: PolicyAction) -> bool:
        cap_same = (self.gpu_cap_w == other.gpu_cap_w) or abs(self.gpu_cap_w - other.gpu_cap_w) < 1.0
        return cap_same and self.brake == other.brake and self.racks_shed == other.racks_shed

    @property
    def active(self) -> bool:
        return np.isfinite(self.gpu_cap_w) or self.brake or self.racks_shed > 0


@dataclass(frozen=True)
class PolicyState:
    """Action in force, action pursued, for how long the pursued one has differed [s], and the wishes
    of the last ``ENVELOPE_S`` as ``(age_s, action)``, newest last."""

    applied: PolicyAction = PolicyAction()
    wanted: PolicyAction = PolicyAction()
    pending_s: float = 0.0
    recent: tuple[tuple[float, PolicyAction], ...] = ()


def strictest(actions: Iterable[PolicyAction]) -> PolicyAction:
    """The strictest of ``actions``: most racks shed, then the brake, then the lowest cap."""
    return max(actions, key=lambda a: (a.racks_shed, a.brake, -a.gpu_cap_w))


def cap_for_gpu_power_w(
    demand_w: np.ndarray,
    target_sum_w: float,
    min_w: float,
    max_w: float,
    duty_frac: np.ndarray | None = None,
    idle_w: np.ndarray | float = 0.0,
) -> tuple[float, bool]:
    """Highest uniform cap ``c`` in [min_w, max_w] with ``Σ min(p_i, c) ≤ target_sum_w`` [W].

    With ``duty_frac`` (each GPU's utilisation ``u_i``) the cap holds the busy power: a GPU
    draws ``P_idle + u_i (min(b_i, c) − P_idle)`` with ``b_i = P_idle + (p_i − P_idle) / u_i``
    its busy power (:func:`twin.physics.thermal.mean_power_limit_w`), so the sum is over
    ``u_i min(b_i, c)`` plus the idle part.  Returns ``(cap_w, fits)``; ``fits`` is False when
    even ``min_w`` exceeds the target (the cap is then ``min_w``).  Demands are rounded to
    whole watts.
    """
    p = np.asarray(demand_w, dtype=np.float64)
    weight, base = None, 0.0
    if duty_frac is not None:
        u = np.broadcast_to(np.asarray(duty_frac, dtype=np.float64), p.shape)
        idle = np.broadcast_to(np.asarray(idle_w, dtype=np.float64), p.shape)
        working = (u > 0.0) & (p > idle)
        weight = np.where(working, u, 1.0)
        base = float(np.sum(np.where(working, idle * (1.0 - u), 0.0)))
        p = np.where(working, idle + (p - idle) / np.where(working, u, 1.0), p)
    p = np.clip(np.rint(p), 0.0, np.ceil(max_w)).astype(np.int64)
    top = int(np.ceil(max_w))
    counts = np.bincount(p, weights=weight, minlength=top + 1)
    values = np.arange(top + 1, dtype=np.float64)
    below_n = np.concatenate(([0], np.cumsum(counts)))[:-1]  # (weighted) GPUs with p < c, for c = 0..top
    below_sum = np.concatenate(([0.0], np.cumsum(values * counts)))[:-1]
    total = float(counts.sum())
    sums = base + below_sum + values * (total - below_n)  # Σ min(p_i, c) for integer c, non-decreasing
    lo = int(np.ceil(min_w))
    if sums[lo] > target_sum_w:
        return float(min_w), False
    c = int(np.searchsorted(sums, target_sum_w, side="right")) - 1
    return float(min(max(c, lo), max_w)), True


def _shed_count(current: int, over_mw: float, rack_mw: float) -> int:
    """Racks to keep shed: more while over the supply, fewer only as far as the room allows."""
    if rack_mw <= 0.0:
        return current
    racks = over_mw / rack_mw
    if over_mw > 0.0:
        return current + int(np.ceil(racks - 1e-9))  # rounding of an exact multiple is not one more rack
    return max(current - int(np.floor(-racks + 1e-9)), 0)


def wanted_action(
    policy: str,
    over_mw: float,
    k_mw_per_mw: float,
    gpu_power_mw: float,
    uncapped_demand_w: np.ndarray,
    min_w: float,
    max_w: float,
    rack_facility_mw: float,
    current: PolicyAction,
    idle_racks: int = 0,
    idle_rack_facility_mw: float = 0.0,
    duty_frac: np.ndarray | None = None,
    idle_w: np.ndarray | float = 0.0,
) -> PolicyAction:
    """Action that brings the facility ``over_mw`` above the supply back under it.

    ``over_mw`` is measured with ``current`` in force (negative: room to relax);
    ``k_mw_per_mw`` the facility power per GPU board power; ``rack_facility_mw`` the
    facility power of one running rack (for shedding), ``idle_rack_facility_mw`` that of a
    rack without work; ``idle_racks`` the racks without work, shed before the job's GPUs
    are capped or braked (module docstring); ``duty_frac`` and ``idle_w`` how a cap holds
    each GPU's busy power (:func:`cap_for_gpu_power_w`).  Racks come back one whole rack at a time
    and only when it fits, so the action does not oscillate.  ``uncapped_demand_w`` may be
    None where :func:`reads_gpu_demand` says it is not read.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy: {policy!r} is not one of {', '.join(POLICIES)}")
    if policy == "shed":
        return PolicyAction(racks_shed=_shed_count(current.racks_shed, over_mw, rack_facility_mw))
    idle_left = max(idle_racks - current.racks_shed, 0)
    if idle_left > 0 and current.racks_shed <= idle_racks:  # the racks without work go before the job slows
        full_over = over_mw  # the excess with the job's GPUs at full power
        if current.brake or np.isfinite(current.gpu_cap_w):
            full_w = float(np.sum(np.minimum(uncapped_demand_w, max_w)))
            full_over = over_mw + k_mw_per_mw * (full_w / 1e6 - gpu_power_mw)
        if full_over > 0.0:
            per_rack = idle_rack_facility_mw if idle_rack_facility_mw > 0.0 else rack_facility_mw
            need = _shed_count(0, full_over, per_rack)
            if need <= idle_left:
                return PolicyAction(racks_shed=current.racks_shed + need)
            # all of them off and still over: the job's GPUs slow as well
            over_mw -= idle_left * per_rack
            current = replace(current, racks_shed=idle_racks)
    if current.racks_shed > idle_racks:  # at the minimum cap (or braked) with job racks shed: those racks first
        n = _shed_count(current.racks_shed, over_mw, rack_facility_mw)
        return replace(current, racks_shed=max(n, idle_racks))
    duty = (duty_frac, idle_w)
    return _slow_the_job(
        policy, over_mw, k_mw_per_mw, gpu_power_mw, uncapped_demand_w, min_w, max_w, rack_facility_mw, current, duty
    )


def _sum_under_cap_w(
    demand_w: np.ndarray, cap_w: float, duty_frac: np.ndarray | float | None, idle_w: np.ndarray | float
) -> float:
    """``Σ`` of the GPUs' mean power under a cap of ``cap_w`` (``Σ min(p_i, c)`` without a duty) [W]."""
    if duty_frac is None:
        return float(np.sum(np.minimum(demand_w, cap_w)))
    u = np.asarray(duty_frac, dtype=np.float64)
    idle = np.asarray(idle_w, dtype=np.float64)
    held = np.where((u > 0.0) & (cap_w > idle), idle + u * (cap_w - idle), cap_w)
    return float(np.sum(np.minimum(demand_w, held)))


def _slow_the_job(
    policy: str,
    over_mw: float,
    k_mw_per_mw: float,
    gpu_power_mw: float,
    uncapped_demand_w: np.ndarray,
    min_w: float,
    max_w: float,
    rack_facility_mw: float,
    current: PolicyAction,
    duty: tuple[np.ndarray | None, np.ndarray | float],
) -> PolicyAction:
    """The cap or the brake on top of ``current.racks_shed`` racks without work (all of them, while it acts)."""
    idle_shed = current.racks_shed

    def relieved(room_mw: float) -> PolicyAction:  # job at full power: the idle racks come back as they fit
        return (
            PolicyAction(racks_shed=_shed_count(idle_shed, room_mw, rack_facility_mw)) if idle_shed else PolicyAction()
        )

    if policy == "power_brake":
        if not current.brake:
            return PolicyAction(brake=True, racks_shed=idle_shed) if over_mw > 0.0 else relieved(over_mw)
        full_mw = over_mw + k_mw_per_mw * (float(np.sum(uncapped_demand_w)) / 1e6 - gpu_power_mw)
        if full_mw <= 0.0:  # released only when the GPUs at full power fit
            return relieved(full_mw) if idle_shed else PolicyAction()
        return PolicyAction(brake=True, racks_shed=idle_shed + _shed_count(0, over_mw, rack_facility_mw))
    target_w = (gpu_power_mw - over_mw / k_mw_per_mw) * 1e6 if k_mw_per_mw > 0 else float("inf")
    full_w = float(np.sum(np.minimum(uncapped_demand_w, max_w)))
    if target_w >= full_w:
        return relieved(over_mw + k_mw_per_mw * (full_w / 1e6 - gpu_power_mw)) if idle_shed else PolicyAction()
    cap_w, fits = cap_for_gpu_power_w(uncapped_demand_w, target_w, min_w, max_w, *duty)
    if fits:
        return PolicyAction(gpu_cap_w=cap_w, racks_shed=idle_shed)
    at_min_mw = _sum_under_cap_w(uncapped_demand_w, min_w, *duty) / 1e6
    rest_mw = (at_min_mw - target_w / 1e6) * k_mw_per_mw
    return PolicyAction(gpu_cap_w=float(min_w), racks_shed=idle_shed + _shed_count(0, rest_mw, rack_facility_mw))


def reads_gpu_demand(policy: str, current: PolicyAction, idle_racks: int = 0) -> bool:
    """Whether :func:`wanted_action` reads ``uncapped_demand_w`` for ``policy`` with ``current`` in force
    (a caller may then skip building the per-GPU array and pass None)."""
    if policy == "shed" or current.racks_shed > idle_racks:
        return False
    slowing = current.brake or np.isfinite(current.gpu_cap_w)
    return (policy != "power_brake" or current.brake) or (slowing and current.racks_shed < idle_racks)


def advance(
    state: PolicyState, wanted_now: PolicyAction, response_s: float, dt_s: float, envelope_s: float = ENVELOPE_S
) -> PolicyState:
    """Advance the policy by ``dt_s`` [s] with ``wanted_now`` the action this tick asks for.

    The action pursued is the :func:`strictest` of the wishes of the last ``envelope_s`` [s]
    (module docstring); a change of it takes effect once it has waited ``response_s`` [s].
    """
    aged = tuple((age + dt_s, a) for age, a in state.recent if age + dt_s < envelope_s)
    recent = (*aged, (0.0, wanted_now))[-MAX_RECENT:]
    wanted = strictest(a for _, a in recent)
    if wanted.same_as(state.applied):
        return PolicyState(applied=state.applied, wanted=wanted, pending_s=0.0, recent=recent)
    waited = state.pending_s + dt_s
    if waited >= response_s:
        return PolicyState(applied=wanted, wanted=wanted, pending_s=0.0, recent=recent)
    return PolicyState(applied=state.applied, wanted=wanted, pending_s=waited, recent=recent)


def shed_order(rack_job_gpus: np.ndarray, rack_hall: np.ndarray, rack_off: np.ndarray | None = None) -> np.ndarray:
    """Racks in the order they are shed: racks without job GPUs first, then the job's.

    Within each group the halls take turns, each from its last rack, so that no hall's
    facility loop (and plant share) is emptied before the others.  Racks whose nodes are all
    off already (``rack_off``) come last: shedding them would free nothing.
    """
    n = rack_job_gpus.size
    order = np.arange(n)
    hall_start = np.searchsorted(rack_hall[np.argsort(rack_hall, kind="stable")], rack_hall, side="left")
    hall_count = np.bincount(rack_hall, minlength=int(rack_hall.max()) + 1 if n else 0)
    rank_from_end = (
        hall_count[rack_hall] - 1 - (np.argsort(np.argsort(rack_hall, kind="stable"), kind="stable") - hall_start)
    )
    off = np.zeros(n, dtype=bool) if rack_off is None else np.asarray(rack_off, dtype=bool)
    return order[np.lexsort((rack_hall, rank_from_end, rack_job_gpus > 0, off))]
