"""Availability profile for backfill: free nodes over time, and reservations made in it.

The profile counts whole nodes ([MualemFeitelson-2001] plan on processor counts; here
nodes, since gangs take whole nodes).  A node is free from ``free_at``: now for a free
node, the latest expected end (start + requested wall time, as Slurm plans) of the jobs on
it otherwise; a node that is down, excluded or held by a reservation never is, and a node
a maintenance reservation will take leaves the profile at its start and comes back at its
end.  ``F(t)`` is the number of free nodes at ``t`` (a step function on the breakpoints).

* EASY backfill: the first job that cannot start gets a reservation at the earliest time
  the profile holds its nodes for its whole wall time; a later job may start now only if
  it does not push the profile below zero anywhere while it runs (it ends before the
  reservation, or it uses nodes the reservation leaves over).
* Conservative backfill: every job that cannot start gets such a reservation, in priority
  order (up to ``bf_max_job_test``), and a later job may start only if it delays none.
"""

from __future__ import annotations

import math

import numpy as np


class Profile:
    """Free nodes ``free[i]`` on ``[times[i], times[i+1])`` (the last step lasts for ever)."""

    def __init__(self, now_s: float, node_free_at_s: np.ndarray) -> None:
        at = np.asarray(node_free_at_s, dtype=np.float64)
        finite = np.sort(at[np.isfinite(at)])
        finite = np.maximum(finite, now_s)
        times, counts = np.unique(finite, return_counts=True)
        if times.size == 0 or times[0] > now_s:
            times = np.concatenate(([now_s], times))
            counts = np.concatenate(([0], counts))
        self.times = times
        self.free = np.cumsum(counts).astype(np.int64)

    @classmethod
    def from_releases(cls, now_s: float, times_s: np.ndarray, nodes: np.ndarray) -> Profile:
        """A profile where ``nodes[i]`` nodes become free at ``times_s[i]`` (clipped to now; inf never)."""
        t = np.maximum(np.asarray(times_s, dtype=np.float64), now_s)
        n = np.asarray(nodes, dtype=np.int64)
        ok = np.isfinite(t)
        t, n = t[ok], n[ok]
        order = np.argsort(t, kind="stable")  # equal times make zero-width steps, which every query tolerates
        times, counts = t[order], n[order]
        if times.size == 0 or times[0] > now_s:
            times = np.concatenate(([now_s], times))
            counts = np.concatenate(([0], counts))
        prof = cls.__new__(cls)
        prof.times = times
        prof.free = np.cumsum(counts)
        return prof

    def _split(self, t: float) -> int:
        """Index of the step that starts at ``t`` (inserting a breakpoint if needed)."""
        i = int(np.searchsorted(self.times, t, side="right")) - 1
        if i >= 0 and self.times[i] == t:
            return i
        k = i + 1
        self.times = np.concatenate((self.times[:k], (t,), self.times[k:]))
        self.free = np.concatenate((self.free[:k], (self.free[max(i, 0)],), self.free[k:]))
        return k

    def take(self, start_s: float, end_s: float, nodes: int) -> None:
        """Hold ``nodes`` on ``[start_s, end_s)``."""
        if nodes <= 0 or end_s <= start_s:
            return
        a = self._split(start_s)
        b = self._split(end_s) if math.isfinite(end_s) else self.times.size
        self.free[a:b] -= nodes

    def min_free(self, start_s: float, end_s: float) -> int:
        """Fewest free nodes over ``[start_s, end_s)``."""
        a = max(int(np.searchsorted(self.times, start_s, side="right")) - 1, 0)
        b = int(np.searchsorted(self.times, end_s, side="left")) if math.isfinite(end_s) else self.times.size
        return int(self.free[a : max(b, a + 1)].min())

    def earliest(self, now_s: float, duration_s: float, nodes: int) -> float:
        """Earliest start ≥ ``now_s`` at which ``nodes`` stay free for ``duration_s`` (inf if never)."""
        ok = self.free >= nodes
        if not ok.any():
            return math.inf
        times = self.times
        # runs of consecutive ok steps: a run starting at step a and ending before step b fits if
        # times[b] - max(times[a], now) >= duration (the last run is open-ended)
        starts = np.flatnonzero(ok & ~np.concatenate(([False], ok[:-1])))
        bad = np.flatnonzero(~ok)
        nxt = np.searchsorted(bad, starts)  # the first step too small after each run's start
        end_t = np.full(starts.size, math.inf)
        has = nxt < bad.size
        end_t[has] = times[bad[nxt[has]]]
        begin = np.maximum(times[starts], now_s)
        fits = np.flatnonzero(end_t - begin >= duration_s)
        return float(begin[fits[0]]) if fits.size else math.inf


def node_free_at(
    now_s: float,
    gpu_job: np.ndarray,
    node_first_gpu: np.ndarray,
    job_end_s: np.ndarray,
    usable: np.ndarray,
) -> np.ndarray:
    """Per node, when it is wholly free: now if no job, the latest job end on it, inf if not usable."""
    if gpu_job.size == 0:
        return np.zeros(0)
    ends = np.where(gpu_job >= 0, job_end_s[np.maximum(gpu_job, 0)], now_s)
    per_node = np.maximum.reduceat(ends, node_first_gpu)
    return np.where(usable, np.maximum(per_node, now_s), math.inf)
