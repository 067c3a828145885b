"""Fleet what-if of an edit: the same workload on the site as it is (baseline) and with one edit (scenario).

A :class:`FleetEdit` combines any of: halls or rows converted to another rack type, or a hall
added like one the site has (:class:`twin.fleet.whatif.Conversion`); another scheduling order or backfill; one team's
nominal GPU quota; a demand-response event (cut so many MW from an offset for so many
hours); halls taken down for maintenance over a window (a maintenance reservation: the
jobs on them are requeued when it starts and nothing runs there until it ends).  The edit
applies to the scenario side only; both sides run the same jobs under the same policy,
seed and horizon (:class:`twin.fleet.simulate.FleetSim`).

:func:`run_side` runs one side and :func:`compare_sides` sets two side against each other,
so that a caller asking several questions of one baseline (the browser page) runs the
baseline once; :func:`fleet_edit_whatif` does both.  Each side reports the fleet figures
(queue wait, utilisation, allocated share, tokens per day, goodput, energy, cost and carbon
when the options carry a tariff and a grid intensity), per team figures, an hourly series
of allocated GPUs and facility power, and the jobs that were held below full power
("capped") or requeued ("preempted": by power, by maintenance, by QoS preemption or quota
reclaim), with their team and count.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from twin.fleet import events
from twin.fleet.metrics import HourlySeries, Recorder, team_rows
from twin.fleet.policy import BACKFILLS, ORDERINGS, DemandResponse, Policy, Reservation
from twin.fleet.power import supply_mw
from twin.fleet.simulate import FleetSim, SimOptions
from twin.fleet.state import NEVER, PENDING, WAITING, FleetRun
from twin.fleet.topology import FleetTopology, fleet_topology
from twin.fleet.whatif import Conversion, WhatIfError, convert_site, gpus_by_type, retarget
from twin.fleet.workload import FleetJob, JobTable, job_table
from twin.site.catalogue import Catalogue
from twin.site.tables import SiteTables

SECONDS_PER_DAY = 86_400.0
MIN_HORIZON_S = 1 * SECONDS_PER_DAY
MAX_HORIZON_S = 30 * SECONDS_PER_DAY
PROGRESS_STEP_FRAC = 0.002  # a side reports its progress at most every 0.2 % of its horizon (and at its end)
JOBS_LISTED = 100  # capped or preempted jobs listed per side (largest first); the counts cover all
# requeue causes counted per job (columns of _RecordingSim.requeued)
CAUSES = ("power", "maintenance", "preemption")
POWER, MAINTENANCE, PREEMPTION = range(3)
FLEET_KEYS = (
    "jobs_count",
    "jobs_completed_count",
    "jobs_pending_count",
    "jobs_never_count",
    "mean_wait_s",
    "median_wait_s",
    "utilisation_frac",
    "allocated_frac",
    "tokens_count",
    "energy_mwh",
    "mean_power_mw",
    "peak_power_mw",
    "tokens_per_mwh",
    "cost_usd",
    "carbon_kg",
    "lost_work_gpu_h",
    "preemptions_count",
    "sim_wall_s",
)
DIFF_KEYS = (
    "n_gpus",
    "mean_wait_s",
    "mean_wait_all_s",
    "utilisation_frac",
    "allocated_frac",
    "goodput_frac",
    "tokens_per_day",
    "jobs_completed_count",
    "jobs_pending_count",
    "energy_mwh",
    "peak_power_mw",
    "cost_usd",
    "carbon_kg",
    "jobs_power_capped_count",
    "jobs_preempted_count",
)


@dataclass(frozen=True)
class QuotaChange:
    """Team ``team``'s nominal GPU quota set to ``nominal_gpus`` for the whole run."""

    team: str
    nominal_gpus: int


@dataclass(frozen=True)
class Maintenance:
    """``halls`` taken down from ``start_s`` for ``duration_s`` [s of simulation time]."""

    halls: tuple[str, ...]
    start_s: float
    duration_s: float


@dataclass(frozen=True)
class FleetEdit:
    """What the scenario side changes (None or empty: unchanged); hashable, so it can key a cache."""

    conversion: Conversion | None = None
    retarget_kinds: tuple[str, ...] = ()  # with a conversion: kinds without a job file asking for the new GPUs
    grow_quotas: bool = False  # with a conversion that adds GPUs: every team's quota grows in proportion
    ordering: str | None = None
    backfill: str | None = None
    quota: QuotaChange | None = None
    demand_response: DemandResponse | None = None
    maintenance: Maintenance | None = None

    def is_empty(self) -> bool:
        return not any(
            (self.conversion, self.ordering, self.backfill, self.quota, self.demand_response, self.maintenance)
        )

    def describe(self) -> list[str]:
        """One line per change, in words."""
        out = []
        c = self.conversion
        if c is not None:
            out.append(c.describe())
            if self.retarget_kinds:
                out.append(f"{', '.join(self.retarget_kinds)} jobs ask for the converted racks' GPUs")
            if self.grow_quotas:
                out.append("every team's quota grows with the GPUs added")
        if self.ordering:
            out.append(f"order the queue by {self.ordering}")
        if self.backfill:
            out.append(f"backfill: {self.backfill}")
        if self.quota is not None:
            out.append(f"{self.quota.team}'s nominal quota {self.quota.nominal_gpus:,} GPUs")
        d = self.demand_response
        if d is not None:
            out.append(
                f"demand response: cut {d.cut_mw:g} MW for {d.duration_s / 3600:g} h from hour {d.start_s / 3600:g}"
            )
        m = self.maintenance
        if m is not None:
            out.append(
                f"maintenance of {', '.join(m.halls)} for {m.duration_s / 3600:g} h from hour {m.start_s / 3600:g}"
            )
        return out


HORIZON_RANGE_S = (MIN_HORIZON_S, MAX_HORIZON_S)  # the browser's and the API's horizons: 1 to 30 days


def check_horizon(horizon_s: float, horizon_range_s: tuple[float, float] = HORIZON_RANGE_S) -> None:
    """Raise :class:`WhatIfError` unless the horizon is positive and within ``horizon_range_s`` [s]."""
    lo, hi = horizon_range_s
    if not (math.isfinite(horizon_s) and horizon_s > 0 and lo <= horizon_s <= hi):
        raise WhatIfError(
            f"horizon must be {lo / SECONDS_PER_DAY:g} to {hi / SECONDS_PER_DAY:g} days,"
            f" got {horizon_s / SECONDS_PER_DAY:g} days"
        )


def _check_window(what: str, start_s: float, duration_s: float, horizon_s: float) -> None:
    if not (math.isfinite(start_s) and 0 <= start_s < horizon_s):
        raise WhatIfError(f"{what}: start must be within the horizon (0 to {horizon_s / 3600:g} h)")
    if not (math.isfinite(duration_s) and duration_s > 0):
        raise WhatIfError(f"{what}: duration must be a positive number of hours")


def check_edit(
    edit: FleetEdit,
    state: SiteTables,
    policy: Policy,
    horizon_s: float,
    catalogue: Catalogue,
    horizon_range_s: tuple[float, float] = HORIZON_RANGE_S,
) -> None:
    """Raise :class:`WhatIfError` (one line naming the field) for an edit that cannot be answered."""
    check_horizon(horizon_s, horizon_range_s)
    if edit.is_empty():
        raise WhatIfError("the edit changes nothing: choose at least one change")
    c = edit.conversion
    if c is not None:
        if c.rack_type not in catalogue.racks:
            raise WhatIfError(
                f"conversion: unknown rack type {c.rack_type!r}; known: {', '.join(sorted(catalogue.racks))}"
            )
        _check_halls("conversion", c.halls, state)
        if c.add_hall_like:
            _check_halls("new hall like", (c.add_hall_like,), state)
    if edit.ordering is not None and edit.ordering not in ORDERINGS:
        raise WhatIfError(f"ordering must be one of {', '.join(ORDERINGS)}, got {edit.ordering!r}")
    if edit.backfill is not None and edit.backfill not in BACKFILLS:
        raise WhatIfError(f"backfill must be one of {', '.join(BACKFILLS)}, got {edit.backfill!r}")
    q = edit.quota
    if q is not None:
        teams = [t.team for t in policy.quotas]
        if q.team not in teams:
            raise WhatIfError(f"quota: unknown team {q.team!r}; teams: {', '.join(teams) or 'none'}")
        if not (isinstance(q.nominal_gpus, int) and 0 <= q.nominal_gpus <= 10 * max(state.n_gpus, 1)):
            raise WhatIfError(f"quota: nominal GPUs must be a whole number from 0 to {10 * state.n_gpus:,}")
    d = edit.demand_response
    if d is not None:
        _check_window("demand response", d.start_s, d.duration_s, horizon_s)
        if not (math.isfinite(d.cut_mw) and d.cut_mw > 0):
            raise WhatIfError("demand response: the cut must be a positive number of MW")
    m = edit.maintenance
    if m is not None:
        if not m.halls:
            raise WhatIfError("maintenance: name at least one hall")
        _check_halls("maintenance", m.halls, state)
        _check_window("maintenance", m.start_s, m.duration_s, horizon_s)


def _check_halls(what: str, halls: tuple[str, ...], state: SiteTables) -> None:
    for h in halls:
        if h not in state.hall_name:
            raise WhatIfError(f"{what}: unknown hall {h!r}; {state.name} has {', '.join(state.hall_name)}")


def hall_nodes(state: SiteTables, halls: tuple[str, ...]) -> tuple[int, ...]:
    """Node ids of the racks in ``halls``."""
    hall_ids = [state.hall_name.index(h) for h in halls]
    racks = np.flatnonzero(np.isin(state.rack_hall, hall_ids))
    return tuple(np.flatnonzero(np.isin(state.node_rack, racks)).tolist())


def scenario_policy(policy: Policy, edit: FleetEdit, state: SiteTables) -> Policy:
    """``policy`` with the edit's order, backfill, quota, demand response and maintenance (on ``state``'s nodes)."""
    changes: dict[str, Any] = {}
    if edit.ordering:
        changes["ordering"] = edit.ordering
    if edit.backfill:
        changes["backfill"] = edit.backfill
    q = edit.quota
    if q is not None:
        changes["quotas"] = tuple(
            replace(t, nominal_gpus=q.nominal_gpus) if t.team == q.team else t for t in policy.quotas
        )
    if edit.demand_response is not None:
        changes["demand_response"] = policy.demand_response + (edit.demand_response,)
    m = edit.maintenance
    if m is not None:
        resv = Reservation(
            name="maintenance " + ",".join(m.halls),
            start_s=m.start_s,
            end_s=m.start_s + m.duration_s,
            nodes=hall_nodes(state, m.halls),
        )
        changes["reservations"] = policy.reservations + (resv,)
    return replace(policy, **changes)


class _HourlyRecorder(Recorder):
    """The fleet recorder, also binning allocated GPUs and facility power by hour of the run."""

    def __init__(self, n_gpus: int, tariff: HourlySeries | None, carbon: HourlySeries | None, hours: int) -> None:
        super().__init__(n_gpus, tariff, carbon)
        self.alloc_gpu_s = [0.0] * hours  # lists: they take one addition at a time
        self.power_mw_s = [0.0] * hours

    def advance(self, t: float) -> None:
        t0 = self.t
        if t > t0:
            alloc, power = self.alloc, self.power_mw
            n = len(self.alloc_gpu_s)
            h = int(t0 // 3600.0)
            if h < n and t <= (h + 1) * 3600.0:  # within one hour of the run (most steps)
                dt = t - t0
                self.alloc_gpu_s[h] += alloc * dt
                self.power_mw_s[h] += power * dt
                h = n
            while h < n and h * 3600.0 < t:
                dt = min(t, (h + 1) * 3600.0) - max(t0, h * 3600.0)
                self.alloc_gpu_s[h] += alloc * dt
                self.power_mw_s[h] += power * dt
                h += 1
        super().advance(t)


class _RecordingSim(FleetSim):
    """A fleet run that records which jobs were ever capped and why jobs were requeued."""

    def __init__(
        self,
        topo: FleetTopology,
        table: JobTable,
        policy: Policy,
        opts: SimOptions,
        progress: Callable[[float], None] | None = None,
    ) -> None:
        self.progress = progress
        self._next_progress_s = -math.inf
        self.capped = np.zeros(table.n_jobs, bool)
        self.requeued = np.zeros((table.n_jobs, len(CAUSES)), np.int32)
        self._cause = PREEMPTION
        super().__init__(topo, table, policy, opts)
        self.rec = _HourlyRecorder(topo.n_gpus, opts.tariff, opts.carbon, max(1, math.ceil(opts.horizon_s / 3600.0)))

    def rebalance(self, t: float) -> list[int]:
        before, self._cause = self._cause, POWER
        try:
            drop = super().rebalance(t)
        finally:
            self._cause = before
        capped = self.power.capped_running  # the running jobs with a cap (cap_w ≠ inf)
        if capped:
            rows = np.fromiter(capped, np.int64, len(capped))
            self.capped[rows[np.isfinite(self.run.cap_w[rows])]] = True
        return drop

    def _dispatch(self, kind: int, a: int, b: int, t: float) -> None:
        if kind != events.EV_RESV_START:
            super()._dispatch(kind, a, b, t)
            return
        self._cause = MAINTENANCE
        try:
            super()._dispatch(kind, a, b, t)
        finally:
            self._cause = PREEMPTION

    def _advance_clock(self, t: float, commit: bool = True) -> None:
        super()._advance_clock(t, commit)
        if self.progress is not None and (t >= self._next_progress_s or t >= self.opts.horizon_s):
            self.progress(min(t / self.opts.horizon_s, 1.0))
            self._next_progress_s = t + PROGRESS_STEP_FRAC * self.opts.horizon_s

    def on_requeue(self, j: int, t: float, why: str, lost: float) -> None:
        super().on_requeue(j, t, why, lost)
        if why == "preempted":
            self.requeued[j, self._cause] += 1


def run_side(
    state: SiteTables,
    jobs: list[FleetJob],
    policy: Policy,
    opts: SimOptions,
    progress: Callable[[float], None] | None = None,
) -> dict[str, Any]:
    """One side of a what-if: ``jobs`` under ``policy`` on ``state`` for ``opts.horizon_s``.

    Returns a JSON-ready dict: ``site``, ``n_gpus``, ``gpus_by_type``, ``supply_mw``,
    ``design_warnings_count``, the fleet figures of :data:`FLEET_KEYS` (``mean_wait_s`` over the jobs
    that started), ``mean_wait_all_s`` (over every job submitted that fits the site, a job still
    waiting at the horizon counted with its wait so far: :func:`waits_so_far`), ``tokens_per_day``,
    ``goodput_frac`` (GPU time that made progress over GPU time allocated), ``jobs_power_capped_count``
    and ``jobs_preempted_count``; ``teams_by_name`` (team → jobs, completed, pending at the horizon,
    mean and median wait of the started jobs and ``mean_wait_all_s`` [s], GPU-hours, tokens per
    day, preemptions, jobs capped);
    ``hourly`` (``allocated_gpu_count`` and ``facility_power_mw``, the mean of each hour);
    ``jobs`` (up to :data:`JOBS_LISTED` capped or preempted jobs, largest first: ``job``, ``team``,
    ``kind``, ``n_gpus``, ``capped_flag``, ``preempted_count`` and the count per cause of :data:`CAUSES`);
    ``wall_s`` (the side's run time, topology and job table included).  ``progress(frac)`` is
    called as the simulation's clock moves (the share of the horizon simulated, 0 to 1).
    """
    t0 = time.perf_counter()
    table = job_table(jobs, teams=[q.team for q in policy.quotas], qos_names=[q.name for q in policy.qos])
    sim = _RecordingSim(fleet_topology(state), table, policy, opts, progress)
    res = sim.simulate()
    run, fleet = sim.run, res.fleet
    days = opts.horizon_s / SECONDS_PER_DAY
    preempted = sim.requeued.sum(axis=1)
    hit = np.flatnonzero(sim.capped | (preempted > 0))
    _, waits_all = waits_so_far(run)
    side: dict[str, Any] = {
        "site": state.name,
        "n_gpus": int(state.n_gpus),
        "gpus_by_type": gpus_by_type(state),
        "supply_mw": supply_mw(state),
        "design_warnings_count": len(state.design_findings or []),
        **{k: fleet[k] for k in FLEET_KEYS},
        "tokens_per_day": float(fleet["tokens_count"]) / days,
        "goodput_frac": fleet["utilisation_frac"] / fleet["allocated_frac"]
        if fleet["allocated_frac"] > 0
        else math.nan,
        "mean_wait_all_s": _mean(waits_all),
        "jobs_power_capped_count": int(sim.capped.sum()),
        "jobs_preempted_count": int((preempted > 0).sum()),
    }
    side["teams_by_name"] = _teams(sim, days)
    side["jobs"] = _listed(sim, hit, preempted)
    rec = sim.rec
    assert isinstance(rec, _HourlyRecorder)
    span = np.clip(opts.horizon_s - np.arange(len(rec.alloc_gpu_s)) * 3600.0, 0.0, 3600.0)
    side["hourly"] = {
        "allocated_gpu_count": (np.asarray(rec.alloc_gpu_s) / np.maximum(span, 1e-9)).tolist(),
        "facility_power_mw": (np.asarray(rec.power_mw_s) / np.maximum(span, 1e-9)).tolist(),
    }
    side["wall_s"] = time.perf_counter() - t0
    return side


def _teams(sim: _RecordingSim, days: float) -> dict[str, dict[str, Any]]:
    """Per team figures of a finished run (see :func:`run_side`)."""
    run = sim.run
    table = run.table
    queued, waits_all = waits_so_far(run)
    pending = np.bincount(table.team[run.status == PENDING], minlength=len(table.team_names))
    capped_team = np.bincount(table.team[sim.capped], minlength=len(table.team_names))
    teams = {}
    for row in team_rows(run):
        t = table.team_names.index(row["team"])
        mine = np.flatnonzero((table.team == t) & ~np.isnan(run.first_start_s))
        waits = run.first_start_s[mine] - table.submit_s[mine]
        teams[row["team"]] = {
            "jobs_count": row["jobs_count"],
            "jobs_completed_count": row["jobs_completed_count"],
            "jobs_pending_count": int(pending[t]),
            "mean_wait_s": row["mean_wait_s"],
            "median_wait_s": float(np.median(waits)) if waits.size else math.nan,
            "mean_wait_all_s": _mean(waits_all[table.team[queued] == t]),
            "gpu_h": row["gpu_h"],
            "tokens_per_day": row["tokens_count"] / days,
            "preemptions_count": row["preemptions_count"],
            "jobs_power_capped_count": int(capped_team[t]),
        }
    return teams


def _listed(sim: _RecordingSim, hit: np.ndarray, preempted: np.ndarray) -> list[dict[str, Any]]:
    """The capped or preempted jobs ``hit``, largest first, at most :data:`JOBS_LISTED`."""
    table = sim.run.table
    order = hit[np.lexsort((hit, -table.n_gpus[hit]))][:JOBS_LISTED]
    return [
        {
            "job": table.jobs[j].job_id,
            "team": table.team_names[int(table.team[j])],
            "kind": table.jobs[j].kind,
            "n_gpus": int(table.n_gpus[j]),
            "capped_flag": bool(sim.capped[j]),
            "preempted_count": int(preempted[j]),
            **{f"{c}_requeues_count": int(sim.requeued[j, i]) for i, c in enumerate(CAUSES)},
        }
        for j in order.tolist()
    ]


def waits_so_far(run: FleetRun) -> tuple[np.ndarray, np.ndarray]:
    """(rows, wait [s]) of every job submitted by now that may run: first start − submit, or now − submit
    for a job still waiting (its wait so far, a lower bound); jobs that never fit the site are left out."""
    rows = np.flatnonzero((run.status != WAITING) & (run.status != NEVER))
    start = run.first_start_s[rows]
    return rows, np.where(np.isnan(start), run.now_s, start) - run.table.submit_s[rows]


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else math.nan


def scenario_inputs(
    baseline: SiteTables,
    jobs: list[FleetJob],
    policy: Policy,
    edit: FleetEdit,
    converted: SiteTables | None = None,
    catalogue: Catalogue | None = None,
) -> tuple[SiteTables, list[FleetJob], Policy]:
    """The scenario side's site (converted unless ``converted`` is given), jobs and policy."""
    state = baseline
    new_jobs = jobs
    if edit.conversion is not None:
        state = converted if converted is not None else convert_site(baseline, edit.conversion, catalogue)
        if edit.retarget_kinds:
            from twin.fleet.whatif import converted_gpu_type

            new_jobs = retarget(jobs, edit.retarget_kinds, converted_gpu_type(baseline, state))
        if edit.grow_quotas:
            policy = grown_quotas(policy, baseline.n_gpus, state.n_gpus)
    return state, new_jobs, scenario_policy(policy, edit, state)


def grown_quotas(policy: Policy, before_gpus: int, after_gpus: int) -> Policy:
    """``policy`` with every team's nominal quota (and a borrowing limit, when set) × ``after_gpus /
    before_gpus``, rounded down: the GPUs a conversion or a new hall adds, shared among the teams as
    the quotas share the site.  Unchanged when the site does not grow.  Without it the added GPUs
    beyond the cohort's nominal quotas stay idle, as Kueue's borrowing only lends unused quota."""
    if before_gpus <= 0 or after_gpus <= before_gpus:
        return policy
    factor = after_gpus / before_gpus

    def grown(gpus: int) -> int:
        return gpus if gpus < 0 else int(gpus * factor)

    quotas = tuple(
        replace(q, nominal_gpus=grown(q.nominal_gpus), borrowing_limit_gpus=grown(q.borrowing_limit_gpus))
        for q in policy.quotas
    )
    return replace(policy, quotas=quotas)


def compare_sides(base: dict[str, Any], scen: dict[str, Any], horizon_s: float, edit: FleetEdit) -> dict[str, Any]:
    """The answer: ``horizon_s``, ``edit`` (lines in words), ``baseline``, ``scenario``, ``diff``
    (scenario − baseline of :data:`DIFF_KEYS`) and ``teams`` (per team: ``baseline`` and ``scenario`` rows)."""
    bt, st = base.get("teams_by_name", {}), scen.get("teams_by_name", {})
    return {
        "horizon_s": horizon_s,
        "edit": edit.describe(),
        "baseline": base,
        "scenario": scen,
        "diff": {k: _minus(scen.get(k), base.get(k)) for k in DIFF_KEYS},
        "teams": [
            {"team": name, "baseline": bt.get(name, {}), "scenario": st.get(name, {})}
            for name in sorted(set(bt) | set(st))
        ],
    }


def fleet_edit_whatif(
    baseline: SiteTables,
    jobs: list[FleetJob],
    policy: Policy,
    opts: SimOptions,
    edit: FleetEdit,
    *,
    catalogue: Catalogue | None = None,
    converted: SiteTables | None = None,
    baseline_side: dict[str, Any] | None = None,
    horizon_range_s: tuple[float, float] = HORIZON_RANGE_S,
) -> dict[str, Any]:
    """``jobs`` under ``policy`` on ``baseline`` as it is and with ``edit``, over ``opts.horizon_s``.

    ``converted`` (the site with the edit's conversion, from :func:`convert_site`) and
    ``baseline_side`` (a :func:`run_side` of the same jobs, policy and options) save their
    cost when given.  Raises :class:`WhatIfError` for an edit :func:`check_edit` refuses,
    among them a horizon outside ``horizon_range_s`` [s] (the browser's 1 to 30 days unless given).
    """
    from twin.site.catalogue import load_catalogue

    cat = catalogue or load_catalogue()
    check_edit(edit, baseline, policy, opts.horizon_s, cat, horizon_range_s)
    state, new_jobs, new_policy = scenario_inputs(baseline, jobs, policy, edit, converted, cat)
    base = baseline_side if baseline_side is not None else run_side(baseline, jobs, policy, opts)
    scen = run_side(state, new_jobs, new_policy, opts)
    return compare_sides(base, scen, opts.horizon_s, edit)


def _minus(a: object, b: object) -> float:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a - b)
    return math.nan
