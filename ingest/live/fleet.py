"""The live fleet: the fleet model run beside the live tick, its occupancy handed to the twin.

:class:`LiveFleet` is owned by the tick loop (:class:`ingest.live.tick_loop.TickLoop`).  It
runs a :class:`twin.fleet.simulate.FleetSim` of the site on the wall clock: time 0 of the
simulation is ``warmup_s`` before the hub started, and the warm-up runs when the fleet is
built, so the first tick already shows a busy site.  The workload is the LLM-lab mix of
:mod:`ingest.workload.generator` (``LIVE_MIX``): pretraining runs of the site's default job
file, many fine-tuning, evaluation and debugging jobs of eight teams with quotas in one
cohort.  The first pretraining run starts on the GPUs of the live twin's placed job, so the
job the twin evaluates (diagnosis, restart phase) is one of the fleet's.

Each tick :meth:`LiveFleet.advance` runs the simulation up to the tick's instant and,
when an allocation changed (at most every ``OCCUPANCY_EVERY_S``), updates the :class:`Occupancy`: which GPUs run which job, at
what utilisation and power cap, and which nodes are out of service.  The synthetic plant
and the twin take it (the GPU counts of the overview therefore agree with the fleet).

With a Slurm source (``--source slurm=…``) the pages show the scheduler's own queue:
:meth:`LiveFleet.frame` reads the poller's last snapshot (:mod:`ingest.live.fleet_slurm`)
instead of the model's.

The stepping is the simulation's own loop (:meth:`FleetSim.run_until`): the warm-up schedules
after every event batch, as :meth:`FleetSim.simulate` does; live ticks apply the events as
they come and schedule at the tick's instant at most every ``LIVE_PASS_EVERY_S``.  The
simulation keeps the backfill's planned starts for the pending jobs (``squeue --start``).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from ingest.live.fleet_frame import FleetFrame, frame_from_sim, team_rows
from ingest.live.fleet_occupancy import Occupancy, OccupancyBuilder
from ingest.workload import ctfile, generator
from ingest.workload import run as wrun
from twin.fleet import lifecycle
from twin.fleet.policy import Policy
from twin.fleet.simulate import FleetSim, SimOptions
from twin.fleet.state import RUNNING
from twin.fleet.topology import fleet_topology
from twin.fleet.workload import job_table
from twin.training import jobgoodput

SECONDS_PER_DAY = 86_400.0
HISTORY_STEP_S = 60.0  # team usage is sampled once a simulated minute
HISTORY_S = 7 * SECONDS_PER_DAY
GANTT_MIN_GPUS = 64  # the allocation timeline keeps jobs of at least this many GPUs
GANTT_KEEP = 2_000  # … and at most this many of them
# [E] live ticks schedule at most this often (events still apply every tick), like Slurm's
# ``SchedulerParameters=defer`` batching submissions for the next scheduling run [Slurm-Conf]
LIVE_PASS_EVERY_S = 5.0
OCCUPANCY_EVERY_S = 5.0  # the twin's occupancy follows the fleet's allocations at most this late [s]


@dataclass(frozen=True)
class LiveMix:
    """The live workload: the generator's LLM-lab mix, scaled so the site is busy [E].

    Jobs arrive over ``days``; run times are log-normal with ``median_run_s`` and
    ``mean_run_s``.  The defaults keep colossus (100,352 GPUs) about 80–90 % allocated:
    two 24,576-GPU pretraining runs and ~12,000 smaller jobs a day averaging ~11 GPUs for
    ~3 h (fine-tunes and evaluations of a lab at that scale run hours, not Seren's minutes).
    """

    jobs_per_day: float = 24_000.0
    days: float = 8.0
    n_pretrain: int = 2
    median_run_s: float = 900.0
    mean_run_s: float = 10_800.0
    teams: int = 8
    warmup_s: float = 4 * 3600.0
    seed: int = 0

    def scaled(self, site_gpus: int) -> LiveMix:
        """The mix for a site of ``site_gpus`` GPUs (arrivals in proportion to colossus's 100,352)."""
        return replace(self, jobs_per_day=self.jobs_per_day * site_gpus / 100_352)


LIVE_MIX = LiveMix()


class TeamHistory:
    """Per-team GPUs held and preemptions so far, sampled every ``HISTORY_STEP_S`` over ``HISTORY_S``."""

    def __init__(self, n_teams: int) -> None:
        n = int(HISTORY_S / HISTORY_STEP_S)
        self.gpus = np.zeros((n, n_teams), np.int64)
        self.preempted = np.zeros((n, n_teams), np.int64)
        self.t_s = np.full(n, math.nan)
        self.count = 0
        self.next_s = 0.0

    def due(self, t_s: float) -> bool:
        return t_s >= self.next_s

    def sample(self, t_s: float, gpus: np.ndarray, preempted: np.ndarray) -> None:
        i = self.count % self.t_s.size
        self.gpus[i], self.preempted[i], self.t_s[i] = gpus, preempted, t_s
        self.count += 1
        self.next_s = (math.floor(t_s / HISTORY_STEP_S) + 1) * HISTORY_STEP_S

    def _window(self, window_s: float) -> np.ndarray:
        n = min(self.count, self.t_s.size)
        if n == 0:
            return np.zeros(0, np.int64)
        last = (self.count - 1) % self.t_s.size
        keep = self.t_s[:n] > self.t_s[last] - window_s
        return np.flatnonzero(keep)

    def gpu_hours(self, window_s: float) -> np.ndarray:
        """GPU-hours per team over the last ``window_s`` seconds (samples × step)."""
        rows = self._window(window_s)
        return self.gpus[rows].sum(axis=0) * HISTORY_STEP_S / 3600.0

    def preemptions(self, window_s: float) -> np.ndarray:
        """Preemptions per team over the last ``window_s`` seconds."""
        rows = self._window(window_s)
        if rows.size == 0:
            return np.zeros(self.gpus.shape[1], np.int64)
        order = rows[np.argsort(self.t_s[rows])]
        return self.preempted[order[-1]] - self.preempted[order[0]]

    def series(self, window_s: float) -> tuple[np.ndarray, np.ndarray]:
        """(times, GPUs per team) over the last ``window_s`` seconds, oldest first."""
        rows = self._window(window_s)
        order = rows[np.argsort(self.t_s[rows])]
        return self.t_s[order], self.gpus[order]


def live_workload(state, mix: LiveMix = LIVE_MIX) -> wrun.Workload:
    """The generator's LLM-lab jobs for ``state`` (pretraining from the site's default job file)."""
    mix = mix.scaled(state.n_gpus)
    pretrain = ctfile.job_file(state.default_job) if state.default_job and mix.n_pretrain > 0 else None
    spec = generator.MixSpec(
        jobs=max(1, int(mix.jobs_per_day * mix.days)),
        days=mix.days,
        seed=mix.seed,
        teams=mix.teams,
        n_pretrain=mix.n_pretrain if pretrain is not None else 0,
        pretrain_job=pretrain,
        site_gpus=state.n_gpus,
        median_run_s=mix.median_run_s,
        mean_run_s=mix.mean_run_s,
    )
    jobs, quotas, qos = generator.generate(spec, jobgoodput.site_storage(state))
    # the first pretraining run is the one already running when the hub starts: its team's quota holds
    # it (else the cohort would reclaim the twin's own job), and as the twin runs its GPUs at full power
    # the fleet budgets it so, here and in a fleet what-if of this workload (twin.fleet.power, "pinned")
    jobs = [replace(j, submit_s=0.0, full_power=True) if j.job_id == "pretrain-0" else j for j in jobs]
    first = next((j for j in jobs if j.job_id == "pretrain-0"), None)
    if first is not None:
        quotas = [
            replace(q, nominal_gpus=max(q.nominal_gpus, first.n_gpus)) if q.team == first.team else q for q in quotas
        ]
    res = wrun.ImportResult(source="generate:llm-lab (live)", jobs=jobs, rows_count=len(jobs))
    return wrun.Workload(res, quotas, qos)


class LiveFleet:
    """The fleet model of one live site (see module docstring)."""

    def __init__(
        self,
        state,
        start: datetime,
        *,
        mix: LiveMix = LIVE_MIX,
        placed_gpu_ids: np.ndarray | None = None,
        slurm=None,
        policy: Policy | None = None,
    ) -> None:
        self.state, self.mix, self.slurm = state, mix, slurm
        wl = live_workload(state, mix)
        pol = wrun.build_policy(policy or Policy(), wl, None, state)
        table = job_table(wl.result.jobs, teams=[q.team for q in pol.quotas], qos_names=[q.name for q in pol.qos])
        opts = SimOptions(horizon_s=mix.days * SECONDS_PER_DAY, failures=True, seed=mix.seed)
        self.sim = FleetSim(fleet_topology(state), table, pol, opts)
        self.origin_s = start.timestamp() - mix.warmup_s
        self.history = TeamHistory(len(table.team_names))
        self.gantt: dict[int, tuple[str, str, float, float]] = {}  # row → (hall, pod, start, end) sim s
        self._lock = threading.Lock()
        self._frame: tuple[float, FleetFrame] | None = None
        self._occ_version, self._occ_t = -1, -math.inf
        self.occupancy: Occupancy | None = None
        self._occ = OccupancyBuilder(self.sim.run)
        self._handed_out = False  # whether advance has reported an occupancy yet
        self.last_advance_ms = 0.0
        self._pin_first_pretraining(placed_gpu_ids)
        t0 = time.perf_counter()
        self.sim.run_until(mix.warmup_s, observe=self._sample)
        self.warmup_ms = (time.perf_counter() - t0) * 1e3
        self._refresh_occupancy()

    # --- time --------------------------------------------------------------------------
    def advance(self, ts: datetime) -> bool:
        """Run the model up to ``ts``; True when the occupancy changed (then :attr:`occupancy` is new), and at
        the first call (the warm-up's occupancy, for the plant's first step)."""
        t0 = time.perf_counter()
        t = ts.timestamp() - self.origin_s
        with self._lock:
            if t > self.sim.run.now_s:
                self.sim.run_until(min(t, self.sim.opts.horizon_s), batch_s=LIVE_PASS_EVERY_S, observe=self._sample)
            changed = t - self._occ_t >= OCCUPANCY_EVERY_S and self._refresh_occupancy()
            first, self._handed_out = not self._handed_out, True
        self.last_advance_ms = (time.perf_counter() - t0) * 1e3
        return changed or first

    def _pin_first_pretraining(self, gpu_ids: np.ndarray | None) -> None:
        """Start ``pretrain-0`` at time 0, before the first pass, on the live twin's placed job's GPUs (when
        they are as many as it asks for); the workload holds it at full power (``full_power``)."""
        sim = self.sim
        j = sim.run.table.index.get("pretrain-0")
        if j is None or gpu_ids is None:
            return
        gpu_ids = np.sort(np.asarray(gpu_ids, dtype=np.int64))
        if gpu_ids.size == int(sim.run.table.n_gpus[j]) and sim.run.table.submit_s[j] == 0.0:
            lifecycle.start_running(sim, {j: gpu_ids})

    def _sample(self, t: float) -> None:
        """Team usage once a simulated minute; the large jobs' allocations for the timeline."""
        if not self.history.due(t):
            return
        run = self.sim.run
        pre = np.bincount(run.table.team, weights=run.preemptions, minlength=len(run.table.team_names))
        self.history.sample(t, run.acct.team_gpus.copy(), pre.astype(np.int64))
        self._sample_gantt(t)

    def _sample_gantt(self, t: float) -> None:
        run, state = self.sim.run, self.state
        for j in self.sim.running:
            if run.n_alloc[j] < GANTT_MIN_GPUS:
                continue
            g = int(run.gpus[j][0])
            pod = int(max(state.switch_pod[state.gpu_leaf[g]], 0))
            self.gantt[j] = (state.hall_name[state.rack_hall[state.gpu_rack[g]]], f"pod {pod}", run.last_start_s[j], t)
        if len(self.gantt) > GANTT_KEEP:
            for j, _ in sorted(self.gantt.items(), key=lambda kv: kv[1][3])[: len(self.gantt) - GANTT_KEEP]:
                del self.gantt[j]

    # --- what the twin takes -----------------------------------------------------------
    def _refresh_occupancy(self) -> bool:
        """Bring :attr:`occupancy` up to date when anything changed since (the jobs that changed, per GPU)."""
        if self.sim.changes_count == self._occ_version and self.occupancy is not None:
            return False
        self.occupancy = self._occ.refresh(self.sim.running_rows(), self.sim.changes_count)
        self._occ_version, self._occ_t = self.sim.changes_count, self.sim.run.now_s
        return True

    # --- what the pages read -----------------------------------------------------------
    def gpu_job_now(self) -> np.ndarray:
        """The model's job per GPU now (-1 free; a copy): the allocation the twin's occupancy follows."""
        with self._lock:
            return self.sim.run.cluster.gpu_job.copy()

    def frame(self) -> FleetFrame:
        """The fleet now: Slurm's queue when a Slurm read is there, else the model's (cached per change)."""
        snap = getattr(self.slurm, "latest", None) if self.slurm is not None else None
        if snap is not None:
            from ingest.live.fleet_slurm import frame_from_slurm

            return frame_from_slurm(self.state, snap)
        with self._lock:
            key = float(self.sim.changes_count)
            if self._frame is not None and self._frame[0] == key:
                return self._frame[1]
            teams = team_rows(self.sim, self.history)
            upto = self.sim._next_fail
            frame = frame_from_sim(self.sim, self.origin_s, self.sim.planned_start_s, teams, upto)
            self._frame = (key, frame)
            return frame

    def team_series(self, window_s: float) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(epoch times, GPUs per team, team names) over the last ``window_s`` seconds."""
        with self._lock:
            t, g = self.history.series(window_s)
            return self.origin_s + t, g, list(self.sim.run.table.team_names)

    def gantt_rows(self, window_s: float) -> list[dict]:
        """Allocations of the large jobs over the last ``window_s`` seconds: job, team, hall, pod, start, end."""
        with self._lock:
            run = self.sim.run
            now = run.now_s
            out = []
            for j, (hall, pod, start, seen) in self.gantt.items():
                running = run.status[j] == RUNNING
                end = now if running else seen
                if end < now - window_s:
                    continue
                out.append(
                    {
                        "job_id": run.table.jobs[j].job_id,
                        "team": run.table.team_names[run.table.team[j]],
                        "n_gpus": int(run.table.n_gpus[j]),
                        "hall": hall,
                        "pod": pod,
                        "start_s": self.origin_s + max(start, now - window_s),
                        "end_s": self.origin_s + end,
                        "running_flag": int(running),
                    }
                )
            return out
