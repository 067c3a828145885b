"""Node and GPU state of a fleet: what is free, allocated, drained, down, reserved.

Struct of arrays over nodes plus the per-GPU job index ``gpu_job`` (``-1`` = no job), the
array the tick engine reads to know which GPUs run which job.  Allocation and release are
fancy-index assignments over a job's GPU ids (no Python loop over GPUs).

Node states (``node_state``):

* ``UP`` — in service (free or running jobs);
* ``DOWN`` — failed: its jobs were stopped, it waits for repair;
* ``CHECK`` — repaired, running its health checks before it takes jobs again;
* ``EXCLUDED`` — a lemon kept out of service after failing again and again;
* ``DRAIN`` — taking no new jobs (a reservation about to start, an operator's drain); its
  running jobs go on.

A reservation holds nodes for its owner between two times (``node_resv``: reservation id,
``-1`` none); only jobs of that reservation may use them while it is active.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twin.fleet.topology import FleetTopology

UP, DOWN, CHECK, EXCLUDED, DRAIN = range(5)
_FEW_GPUS = 16  # up to this many GPU ids, a change of free GPUs is sorted out in Python
_FEW_NODES = 8  # up to this many nodes changing state, the free-GPU histogram is updated, not recounted
NODE_STATES = ("up", "down", "check", "excluded", "drain")


@dataclass
class ClusterState:
    """Mutable state of the nodes; ``topo`` is the static layout."""

    topo: FleetTopology
    node_state: np.ndarray  # int8 [n_nodes]
    node_free: np.ndarray  # int16 [n_nodes], GPUs not allocated (any state)
    node_resv: np.ndarray  # int32 [n_nodes], active reservation holding the node, -1 none
    gpu_job: np.ndarray  # int32 [n_gpus], running job row, -1 none
    node_since_s: np.ndarray  # float64 [n_nodes], time of the last state change
    node_reason: list[str] = field(default_factory=list)  # why a node is not up ("" when up)
    node_failures: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # failures so far
    node_resv_next_s: np.ndarray = field(default_factory=lambda: np.zeros(0))  # next reservation start, inf none
    node_resv_next: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))  # its id, -1 none
    # usable nodes by free GPUs (index = free GPUs), kept up to date on every change: lets the
    # scheduler skip placements that cannot succeed without a pass over the nodes
    free_hist: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n_alloc_gpus: int = 0
    resv_next_min_s: float = -np.inf  # earliest of node_resv_next_s (set with it; -inf: not known)
    _usable: np.ndarray | None = None
    _max_free: int = -1  # most free GPUs on one usable node (-1: not known since the last change)
    _no_fit: dict[int, np.ndarray] = field(default_factory=dict)  # see no_fit_mask
    _no_fit_of: np.ndarray | None = None  # the usable mask _no_fit was made from

    @property
    def n_nodes(self) -> int:
        return self.topo.n_nodes

    def usable(self, resv: int = -1, end_s: float = -np.inf) -> np.ndarray:
        """Nodes a job may start on: up, not held by a reservation other than ``resv``, and (for a job
        that would run until ``end_s``) not taken by another reservation before then.

        The mask may be the cached :meth:`usable_mask` itself: callers must not change it in place.
        """
        ok = (
            self.usable_mask()
            if resv < 0
            else (self.node_state == UP) & ((self.node_resv < 0) | (self.node_resv == resv))
        )
        if end_s > self.resv_next_min_s and self.node_resv_next_s.size:
            ok = ok & ((self.node_resv_next_s >= end_s) | (self.node_resv_next == resv))
        return ok

    def whole_free(self, resv: int = -1) -> np.ndarray:
        """Usable nodes with every GPU free (mask)."""
        return self.usable(resv) & (self.node_free == self.topo.node_gpus)

    def free_gpus_usable(self) -> int:
        """Free GPUs on usable nodes (count)."""
        return int(self.node_free[self.usable()].sum())

    def allocate(self, job: int, gpu_ids: np.ndarray) -> None:
        """Give ``gpu_ids`` to ``job`` (they must be free)."""
        self.gpu_job[gpu_ids] = job
        self._change_free(self.topo.site.gpu_node[gpu_ids], -1)
        self.n_alloc_gpus += gpu_ids.size

    def release(self, gpu_ids: np.ndarray) -> None:
        """Free ``gpu_ids`` (their job ended, failed or was preempted)."""
        self.gpu_job[gpu_ids] = -1
        self._change_free(self.topo.site.gpu_node[gpu_ids], +1)
        self.n_alloc_gpus -= gpu_ids.size

    def _change_free(self, gpu_nodes: np.ndarray, sign: int) -> None:
        gpu_nodes = np.asarray(gpu_nodes)
        if 0 < gpu_nodes.size <= _FEW_GPUS:  # a job's GPUs on one node, most often: checked in Python
            nodes = gpu_nodes.tolist()
            if nodes.count(nodes[0]) == len(nodes):
                self._change_free_one(nodes[0], sign * len(nodes))
                return
        elif gpu_nodes.size and np.minimum.reduce(gpu_nodes) == np.maximum.reduce(gpu_nodes):
            self._change_free_one(int(gpu_nodes[0]), sign * int(gpu_nodes.size))  # GPUs of one node
            return
        if gpu_nodes.size > 1 and np.any(gpu_nodes[1:] < gpu_nodes[:-1]):
            gpu_nodes = np.sort(gpu_nodes)
        starts = np.flatnonzero(np.concatenate(([True], gpu_nodes[1:] != gpu_nodes[:-1])))
        nodes = gpu_nodes[starts]
        counts = np.diff(np.append(starts, gpu_nodes.size))
        ok = self.usable_mask()[nodes]
        np.subtract.at(self.free_hist, self.node_free[nodes[ok]], 1)
        self.node_free[nodes] += (sign * counts).astype(self.node_free.dtype)
        np.add.at(self.free_hist, self.node_free[nodes[ok]], 1)
        self._max_free = -1

    def _change_free_one(self, node: int, delta: int) -> None:
        """``delta`` more free GPUs on ``node`` (the histogram of usable nodes follows)."""
        before = int(self.node_free[node])
        self.node_free[node] = before + delta
        if self.usable_mask()[node]:
            self.free_hist[before] -= 1
            self.free_hist[before + delta] += 1
        self._max_free = -1

    def usable_mask(self) -> np.ndarray:
        """Nodes up and not held by a reservation (cached until a state or reservation changes)."""
        if self._usable is None:
            self._usable = (self.node_state == UP) & (self.node_resv < 0)
        return self._usable

    def no_fit_mask(self, gpu_type: int) -> np.ndarray:
        """uint32 per node: 0 on usable nodes of ``gpu_type`` (-1: any type), the largest uint32 elsewhere
        (the placement's best fit takes the maximum with it; cached with :meth:`usable_mask`)."""
        usable = self.usable_mask()
        if self._no_fit_of is not usable:
            self._no_fit, self._no_fit_of = {}, usable
        mask = self._no_fit.get(gpu_type)
        if mask is None:
            ok = usable if gpu_type < 0 else usable & self.topo.type_mask(gpu_type)
            mask = np.where(ok, 0, np.iinfo(np.uint32).max).astype(np.uint32)
            mask.flags.writeable = False
            self._no_fit[gpu_type] = mask
        return mask

    def states_changed(self) -> None:
        """Call after changing ``node_state`` or ``node_resv``: rebuilds the cached mask and histogram."""
        self._usable = None
        mask = self.usable_mask()
        top = int(self.topo.node_gpus.max()) if self.n_nodes else 0
        self.free_hist = np.bincount(self.node_free[mask], minlength=top + 1).astype(np.int64)
        self._max_free = -1

    def may_fit(self, n_gpus: int, whole_nodes: int) -> bool:
        """Whether usable nodes could hold the request by count (whole nodes, or one node with free GPUs)."""
        if whole_nodes:
            return int(self.free_hist[-1]) >= whole_nodes
        if self._max_free < 0:
            nz = np.flatnonzero(self.free_hist)
            self._max_free = int(nz[-1]) if nz.size else 0
        return 0 < n_gpus <= self._max_free

    def set_state(self, nodes: np.ndarray, state: int, now_s: float, reason: str = "") -> None:
        """Move ``nodes`` to ``state`` at ``now_s`` with ``reason`` (kept for the isolation report)."""
        nodes = np.atleast_1d(np.asarray(nodes, dtype=np.int64))
        few = nodes.size <= _FEW_NODES and self._usable is not None
        was = self.usable_mask()[nodes].tolist() if few else []
        self.node_state[nodes] = state
        self.node_since_s[nodes] = now_s
        for n in nodes.tolist():
            self.node_reason[n] = reason if state != UP else ""
        if not few:
            self.states_changed()
            return
        self._usable = None  # a node or two: the histogram follows them instead of being counted again
        now = self.usable_mask()[nodes].tolist()
        for n, before, after in zip(nodes.tolist(), was, now):
            if before != after:
                self.free_hist[self.node_free[n]] += 1 if after else -1
        self._max_free = -1

    def jobs_on_nodes(self, nodes: np.ndarray) -> np.ndarray:
        """Rows of the jobs running on ``nodes`` (sorted, unique)."""
        ids = self.topo.node_gpu_ids(nodes)
        jobs = self.gpu_job[ids]
        return np.unique(jobs[jobs >= 0])

    def isolation(self) -> list[dict[str, Any]]:
        """Every node out of service: name, state, reason and since when [s]."""
        out = np.flatnonzero(self.node_state != UP)
        names = self.topo.site.node_name
        return [
            {
                "node": names[n] if n < len(names) else str(n),
                "node_state": NODE_STATES[int(self.node_state[n])],
                "reason": self.node_reason[n],
                "since_s": float(self.node_since_s[n]),
                "failures_count": int(self.node_failures[n]),
            }
            for n in out.tolist()
        ]


def new_cluster(topo: FleetTopology) -> ClusterState:
    """Every node up and free."""
    n = topo.n_nodes
    cl = ClusterState(
        topo=topo,
        node_state=np.zeros(n, np.int8),
        node_free=topo.node_gpus.copy(),
        node_resv=np.full(n, -1, np.int32),
        gpu_job=np.full(topo.n_gpus, -1, np.int32),
        node_since_s=np.zeros(n),
        node_reason=[""] * n,
        node_failures=np.zeros(n, np.int32),
        node_resv_next_s=np.full(n, np.inf),
        node_resv_next=np.full(n, -1, np.int32),
    )
    cl.states_changed()
    return cl
