"""A conservative-backfill plan of one group of partitions: every pending job's start in one pass.

The cheap predictor for a large queue (:func:`ingest.slurm.predict.predict` uses it when
an event simulation would take too long).  It is the plan Slurm's backfill makes
([Slurm-Sched]: a lower-priority job may start only where it delays no higher-priority
job), made on expected run times instead of time limits ([Tsafrir-TPDS07]), on the
fleet's availability profile of whole nodes (:class:`twin.fleet.backfill.Profile`,
[MualemFeitelson-2001]):

* the usable nodes of the group become free when the running jobs on them are expected to
  end; nodes out of service never do; a reservation's nodes leave the profile for its window;
* jobs are planned in Slurm's queue order (tier, priority, job id), each at the earliest
  time its nodes stay free for its expected run time; a job waiting on others (a
  dependency, an array throttle) is planned once they are, from their planned end, ahead
  of every lower-priority job not yet planned;
* a job that shares a node (fewer GPUs than a node holds) takes a whole node here.

What it does not do that the simulation does: limit-based backfill decisions (a job Slurm
would not backfill because its *time limit* crosses a reservation is planned where its
expected run fits), the main scheduler's head-of-line rule, and packing of sub-node jobs.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ingest.slurm.fleet import FleetGroup
from twin.fleet.backfill import Profile
from twin.fleet.topology import FleetTopology


def plan_group(group: FleetGroup, topo: FleetTopology, ends: dict[str, float]) -> tuple[dict, dict]:
    """(start, end) [s from now] of every job of ``group``; ``ends`` holds other groups' planned ends."""
    prof = _profile(group, topo)
    keys = [row.key for row in group.rows]
    index = {k: i for i, k in enumerate(keys)}
    starts: dict[str, float] = {}
    finish: dict[str, float] = {}
    for i, row in enumerate(group.rows):
        if row.running:
            starts[row.key], finish[row.key] = 0.0, group.jobs[i].run_s
    waits: dict[int, list[int]] = {}
    missing: dict[int, int] = {}
    ready: list[tuple[float, int, int]] = []
    for i, (row, job) in enumerate(zip(group.rows, group.jobs)):
        if row.running:
            continue
        deps = [index[d] for d in job.after_ok if d in index and not group.rows[index[d]].running]
        missing[i] = len(deps)
        for d in deps:
            waits.setdefault(d, []).append(i)
        if not deps:
            heapq.heappush(ready, (-job.priority, row.job.job_id, i))
    gpn = int(topo.node_gpus[group.nodes].max()) if group.nodes.size else int(topo.node_gpus.max())
    while ready:
        _, _, i = heapq.heappop(ready)
        job = group.jobs[i]
        release = max([job.submit_s] + [finish.get(d, 0.0) for d in job.after_ok] + _cross(group, i, ends))
        k = max(-(-job.n_gpus // gpn), 1)
        at = prof.earliest(release, job.run_s, k) if math.isfinite(release) else math.inf
        if math.isfinite(at):
            prof.take(at, at + job.run_s, k)
        starts[keys[i]], finish[keys[i]] = at, at + job.run_s
        for w in waits.get(i, ()):
            missing[w] -= 1
            if missing[w] == 0:
                heapq.heappush(ready, (-group.jobs[w].priority, group.rows[w].job.job_id, w))
    return starts, finish


def _cross(group: FleetGroup, i: int, ends: dict[str, float]) -> list[float]:
    """Planned ends of the other groups' jobs row ``i`` waits on (inf for one that never ends)."""
    return [ends.get(k, 0.0) if math.isfinite(ends.get(k, 0.0)) else math.inf for k in group.cross_deps.get(i, ())]


def _profile(group: FleetGroup, topo: FleetTopology) -> PlanProfile:
    """Whole usable nodes of the group over time: free now, or when their running jobs are expected to end."""
    usable = np.zeros(topo.n_nodes, bool)
    usable[group.nodes] = True
    for nodes, _, _ in group.out_of_service:
        usable[nodes] = False
    free_at = np.zeros(topo.n_nodes)
    for i, gpus in group.running.items():
        nodes = np.unique(topo.site.gpu_node[gpus])
        free_at[nodes] = np.maximum(free_at[nodes], group.jobs[i].run_s)
    times, counts = np.unique(free_at[usable], return_counts=True)  # one step per distinct release time
    prof = PlanProfile.from_releases(0.0, times, counts.astype(np.int64))
    for r in group.policy.reservations:
        held = int(usable[np.asarray(r.nodes, dtype=np.int64)].sum()) if r.nodes else 0
        if held:
            prof.take(r.start_s, r.end_s, held)
    return prof


class PlanProfile:
    """Free whole nodes over time, as :class:`twin.fleet.backfill.Profile`, built for thousands of takes.

    ``free[i]`` nodes are free on ``[times[i], times[i+1])`` (the last step lasts for ever).
    The arrays have spare room at their ends, so a take moves the steps after it in place
    instead of building new arrays, and :meth:`earliest` finds the runs of enough free
    nodes from the edges of one comparison.  Same answers as the fleet's profile
    (``tests/ingest/slurm/test_plan_profile.py`` checks them against each other).
    """

    def __init__(self, times_s: np.ndarray, free: np.ndarray) -> None:
        self.n = int(times_s.size)
        cap = max(2 * self.n + 64, 1024)
        self._times = np.empty(cap)
        self._free = np.empty(cap, np.int64)
        self._times[: self.n], self._free[: self.n] = times_s, free

    @classmethod
    def from_releases(cls, now_s: float, times_s: np.ndarray, nodes: np.ndarray) -> PlanProfile:
        """``nodes[i]`` nodes become free at ``times_s[i]`` (clipped to now; inf never)."""
        prof = Profile.from_releases(now_s, times_s, nodes)
        t, f = prof.times, prof.free
        keep = np.concatenate((t[1:] != t[:-1], [True]))  # equal times: the last step holds the total
        return cls(t[keep], f[keep])

    @property
    def times(self) -> np.ndarray:
        return self._times[: self.n]

    @property
    def free(self) -> np.ndarray:
        return self._free[: self.n]

    def _split(self, t: float) -> int:
        """Index of the step that starts at ``t``, inserting a breakpoint if needed."""
        times = self._times[: self.n]
        i = int(np.searchsorted(times, t, side="right")) - 1
        if i >= 0 and times[i] == t:
            return i
        if self.n == self._times.size:
            self._times = np.concatenate((self._times, np.empty(self.n)))
            self._free = np.concatenate((self._free, np.empty(self.n, np.int64)))
        k = i + 1
        self._times[k + 1 : self.n + 1] = self._times[k : self.n]
        self._free[k + 1 : self.n + 1] = self._free[k : self.n]
        self._times[k], self._free[k] = t, self._free[max(i, 0)]
        self.n += 1
        return k

    def take(self, start_s: float, end_s: float, nodes: int) -> None:
        """Hold ``nodes`` on ``[start_s, end_s)``."""
        if nodes <= 0 or end_s <= start_s:
            return
        a = self._split(start_s)
        b = self._split(end_s) if math.isfinite(end_s) else self.n
        self._free[a:b] -= nodes

    def earliest(self, release_s: float, duration_s: float, nodes: int) -> float:
        """Earliest start ≥ ``release_s`` at which ``nodes`` stay free for ``duration_s`` (inf if never)."""
        times, free = self.times, self.free
        i = max(int(np.searchsorted(times, release_s, side="right")) - 1, 0)
        ok = np.empty(self.n - i + 2, np.int8)
        ok[0] = ok[-1] = 0
        np.greater_equal(free[i:], nodes, out=ok[1:-1].view(bool))
        edges = np.flatnonzero(np.diff(ok))  # run k covers steps [edges[2k], edges[2k+1]) of the window
        if edges.size == 0:
            return math.inf
        first, after = edges[0::2] + i, edges[1::2] + i
        end_t = np.full(first.size, math.inf)
        closed = after < self.n
        end_t[closed] = times[after[closed]]
        begin = np.maximum(times[first], release_s)
        fits = np.flatnonzero(end_t - begin >= duration_s)
        return float(begin[fits[0]]) if fits.size else math.inf
