"""One scheduling pass: the queue, the nodes and the policy in; starts, preemptions and reasons out.

The pass walks the pending jobs in the policy's order ([Slurm-Sched]):

1. a job waiting on a dependency is skipped (``Dependency``); one over a QoS, user or team
   limit is skipped (``QOSGrpGRES``, ``QOSMaxGRESPerUser``, ``AssocGrpGRES``); one whose power
   the site cannot grant even at its lowest cap is skipped (``PowerCap``); none of these
   holds up the jobs behind it;
2. a job that the placement can put on free GPUs now starts (gang: all its GPUs or none);
3. the first job that cannot start waits with ``Resources``.  Without backfill the pass stops
   there and every job behind it waits with ``Priority``.  With backfill (only in a *full*
   pass; the quick pass at each event stops at the first blocked job, like Slurm's main
   scheduler between backfill cycles) that job gets a reservation in the availability
   profile (:mod:`twin.fleet.backfill`), and so does every later blocked job under
   conservative backfill; a later job starts only if it fits now and delays no reservation,
   else it waits with ``Priority`` (or ``Resources`` when it does not fit now at all);
4. a blocked job whose QoS may preempt, or whose team reclaims lent quota, requeues the
   victims :mod:`twin.fleet.preemption` chooses and starts in their place.

Fragmentation: a blocked job that needs no more GPUs than sit free on usable nodes is
held back by the topology (node boundaries, leaves, blocks); the pass reports those free
GPUs (``fragmented_gpus``).
"""

from __future__ import annotations

import math

import numpy as np

from twin.fleet import backfill, placement, preemption, priority
from twin.fleet.limits import LIMIT_REASONS, SCALAR_BELOW, limit_codes, limit_reason
from twin.fleet.state import REASON_CODE, REASONS, Sim

_PRIORITY, _RESOURCES = REASON_CODE["Priority"], REASON_CODE["Resources"]
_DEPENDENCY, _POWER_CAP = REASON_CODE["Dependency"], REASON_CODE["PowerCap"]
_NO_ROWS, _NO_CODES = np.zeros(0, np.int64), np.zeros(0, np.int8)  # a pass over an empty queue (read-only)
_NO_ROWS.flags.writeable = _NO_CODES.flags.writeable = False
_LIMIT_CODES = np.array([0] + [REASON_CODE[r] for r in LIMIT_REASONS[1:]], np.int8)


class PassResult:
    """What one pass did and why the others wait (*``rows`` ascending when at most one job could be tried).

    A plain class rather than a dataclass of default factories: a week of the fleet makes 50,000 of them.
    """

    __slots__ = ("started", "preempted", "rows", "codes", "expected_start_s", "fragmented_gpus", "tested_count")

    def __init__(self) -> None:
        self.started: list[int] = []
        self.preempted: list[int] = []
        self.rows: np.ndarray = _NO_ROWS  # pending rows, in queue order*
        self.codes: np.ndarray = _NO_CODES  # their reasons (REASONS codes)
        self.expected_start_s: dict[int, float] = {}  # reservations made (squeue --start)
        self.fragmented_gpus = 0
        self.tested_count = 0

    @property
    def reasons(self) -> dict[int, str]:
        """Row → pending reason of every job still pending after the pass."""
        started = set(self.started)
        return {int(j): REASONS[int(c)] for j, c in zip(self.rows.tolist(), self.codes.tolist()) if j not in started}


def _profile(sim: Sim, now: float) -> backfill.Profile:
    """Free whole nodes over time, from the running jobs' planned ends and the upcoming reservations."""
    run = sim.run
    rows = sim.running_rows()
    ends = run.last_start_s[rows] + run.table.wall_s[rows]
    k = sim.job_k[rows]
    gang = k > 0
    node_end = np.full(run.topo.n_nodes, -np.inf)
    np.maximum.at(node_end, sim.job_node0[rows[~gang]], ends[~gang])
    shared_nodes = np.flatnonzero(np.isfinite(node_end))
    times = np.concatenate(([now], ends[gang], node_end[shared_nodes]))
    counts = np.concatenate(([int(run.cluster.free_hist[-1])], k[gang], np.ones(shared_nodes.size, np.int64)))
    prof = backfill.Profile.from_releases(now, times, counts)
    for nodes, start_s, end_s in _upcoming_reservations(sim, now):
        prof.take(max(start_s, now), end_s, int(nodes.size))
    return prof


def _upcoming_reservations(sim: Sim, now: float) -> list[tuple[np.ndarray, float, float]]:
    """(nodes, start, end) of the reservations not yet started at ``now``."""
    return [
        (np.asarray(r.nodes, dtype=np.int64), r.start_s, r.end_s)
        for r in sim.run.policy.reservations
        if r.start_s > now
    ]


def _profile_nodes(sim: Sim, gpus: np.ndarray, k: int, now: float) -> tuple[float, int]:
    """When the placement's nodes would have been free, and how many (for the profile check)."""
    if k:
        return now, k
    node = int(sim.run.topo.site.gpu_node[gpus[0]])
    return max(sim.node_planned_free(node, now), now), 1


def _eligible(sim: Sim, ordered: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Mask of jobs no dependency, limit or power budget holds back (their codes are set)."""
    if ordered.size <= SCALAR_BELOW:
        return _eligible_few(sim, ordered, codes, sim.has_limits)
    run = sim.run
    tab, q, acct = run.table, sim.quota, run.acct
    dep = run.deps_left[ordered] > 0
    codes[dep] = REASON_CODE["Dependency"]
    if not sim.has_limits:
        lim = np.zeros(ordered.size, np.int8)
    else:
        lim = limit_codes(
            q,
            acct.team_gpus,
            acct.user_gpus,
            acct.qos_gpus,
            tab.team[ordered],
            tab.user[ordered],
            tab.qos[ordered],
            tab.n_gpus[ordered],
        )
    codes[lim > 0] = _LIMIT_CODES[lim[lim > 0]]
    pw = sim.power_blocked(ordered)
    codes[pw & (lim == 0) & ~dep] = REASON_CODE["PowerCap"]
    return ~dep & (lim == 0) & ~pw


def _eligible_quick(sim: Sim, ordered: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The quick pass's cheap vectorised filter: dependencies and the power budget (limits are checked per job)."""
    if ordered.size <= SCALAR_BELOW:
        return _eligible_few(sim, ordered, codes, False)
    dep = sim.run.deps_left[ordered] > 0
    codes[dep] = REASON_CODE["Dependency"]
    pw = sim.power_blocked(ordered) & ~dep
    codes[pw] = REASON_CODE["PowerCap"]
    return ~dep & ~pw


def _eligible_few(sim: Sim, rows: np.ndarray, codes: np.ndarray, limits: bool) -> np.ndarray:
    """:func:`_eligible` (``limits``) or :func:`_eligible_quick` job by job, for a short queue: the same
    codes with the same precedence (a limit over a dependency over the power budget)."""
    run = sim.run
    tab, acct, power = run.table, run.acct, sim.power
    elig = np.zeros(rows.size, bool)
    power_on = power.mode != "off"
    if power_on:
        budget_w, floor_w, dr = power.it_budget_w(), power.running_floor_w, power.in_demand_response
    for i, j in enumerate(rows.tolist()):
        why = (
            limit_reason(
                sim.quota,
                acct.team_gpus,
                acct.user_gpus,
                acct.qos_gpus,
                tab.team[j],
                tab.user[j],
                tab.qos[j],
                int(tab.n_gpus[j]),
            )
            if limits
            else ""
        )
        if why:
            codes[i] = REASON_CODE[why]
        elif run.deps_left[j] > 0:
            codes[i] = _DEPENDENCY
        elif power_on and floor_w + float(power.est_floor_w[j]) > budget_w and (dr or not power.pinned[j]):
            codes[i] = _POWER_CAP
        else:
            elig[i] = True
    return elig


def schedule_pass(sim: Sim, now: float, full: bool = True) -> PassResult:
    """Run one pass at ``now`` on ``sim`` (a :class:`twin.fleet.simulate.FleetSim`); starts jobs through it."""
    run = sim.run
    tab, pol = run.table, run.policy
    rows = sim.pending_rows()
    out = PassResult()
    if rows.size == 0:
        return out
    if pol.ordering == "priority":
        sim.note_priorities(now, rows)  # worked out below, only if the queue needs an order
    codes = np.empty(rows.size, np.int8)
    codes.fill(_PRIORITY)
    # the quick pass looks at the head of the queue only: its jobs are checked one by one in try_job
    elig = _eligible(sim, rows, codes) if full else _eligible_quick(sim, rows, codes)
    n_elig = np.count_nonzero(elig)
    if not n_elig:  # every job is held by a dependency, a limit or the power budget: no order to walk
        out.rows, out.codes = rows, codes
        return out
    if n_elig == 1 and pol.queue_depth >= 1:  # one job to try: the order of the others (they keep their codes) is moot
        ordered = rows
    else:
        prio = sim.noted_priorities() if pol.ordering == "priority" else None
        by_order = priority.order_index(pol, rows, tab.submit_s, tab.wall_s, prio)
        ordered, codes, elig = rows[by_order], codes[by_order], elig[by_order]
    out.rows, out.codes = ordered, codes
    backfilling = full and pol.backfill != "none"
    max_resv = 0 if not backfilling else (1 if pol.backfill == "easy" else pol.bf_max_job_test)
    ctx = _Ctx(sim, now, out, codes, ordered, backfilling, max_resv)
    positions = elig.nonzero()[0]
    i = 0
    while i < positions.size:
        p = int(positions[i])
        i += 1
        if ctx.blocked and not backfilling:
            break
        if not full and (out.tested_count >= pol.queue_depth or i > 10 * pol.queue_depth):
            rest = ordered[p:]
            keep = run.reason_code[rest]
            codes[p:] = np.where(keep > 0, keep, codes[p:])
            break
        was_blocked = ctx.blocked
        ctx.try_job(p)
        if ctx.blocked and not was_blocked and pol.backfill == "easy":
            positions = ctx.easy_candidates(positions, i)  # only jobs that may fit now are worth a look
            i = 0
    return out


class _Ctx:
    """State of one pass while it walks the queue."""

    def __init__(
        self,
        sim: Sim,
        now: float,
        out: PassResult,
        codes: np.ndarray,
        ordered: np.ndarray,
        backfilling: bool,
        max_resv: int,
    ) -> None:
        self.sim, self.now, self.out, self.codes, self.ordered = sim, now, out, codes, ordered
        self.backfilling, self.max_resv = backfilling, max_resv
        self.prof: backfill.Profile | None
        self.blocked, self.prof, self.n_resv = False, None, 0
        self.shadow_s = math.inf  # start of the first reservation (EASY's shadow time)
        self.strict = not sim.run.policy.bf_extra_nodes and sim.run.policy.backfill == "easy"
        # shared-node jobs refused by the profile: GPUs → earliest end refused; until the next start, a job of
        # as many GPUs that ends no earlier lands on the same best-fit node and is refused too
        self.shared_refused: dict[int, float] = {}
        self.uniform = sim.run.topo.uniform_nodes

    def easy_candidates(self, positions: np.ndarray, i: int) -> np.ndarray:
        """Positions after the reserved job that may start now: they fit by count (and, under the strict
        variant, end before the shadow time)."""
        rest = positions[i:]
        sim = self.sim
        rows = self.ordered[rest]
        if self.strict:
            rest = rest[self.now + sim.run.table.wall_s[rows] <= self.shadow_s]
            rows = self.ordered[rest]
        if not self.uniform:
            return rest
        k = sim.job_k[rows]
        g = sim.run.table.n_gpus[rows]
        hist = sim.run.cluster.free_hist
        have = np.cumsum(hist[::-1])[::-1]  # usable nodes with at least f free GPUs
        shared_ok = (k == 0) & (g < hist.size) & (have[np.minimum(g, hist.size - 1)] > 0)
        return rest[((k > 0) & (k <= int(hist[-1]))) | shared_ok]

    def try_job(self, p: int) -> None:
        sim, out, now = self.sim, self.out, self.now
        run = sim.run
        tab, pol = run.table, run.policy
        j = int(self.ordered[p])
        if run.deps_left[j] > 0:
            self.codes[p] = REASON_CODE["Dependency"]
            return
        g, k = int(tab.n_gpus[j]), int(sim.job_k[j])
        end = now + float(tab.wall_s[j])
        cl = run.cluster
        count_ok = not self.uniform or sim.special[j] or cl.may_fit(g, k)
        if count_ok and self.prof is not None:
            if self.strict and end > self.shadow_s:
                return  # ends after the shadow time: Priority
            if k and self.prof.min_free(now, end) < k:
                return  # it would delay a reservation: Priority
            if not k and end >= self.shared_refused.get(g, math.inf):
                return
        if sim.has_limits:
            acct = run.acct
            why = limit_reason(
                sim.quota, acct.team_gpus, acct.user_gpus, acct.qos_gpus, tab.team[j], tab.user[j], tab.qos[j], g
            )
            if why:
                self.codes[p] = REASON_CODE[why]
                return
        if not sim.power_admits(j):
            self.codes[p] = REASON_CODE["PowerCap"]
            return
        out.tested_count += 1
        req = sim.request(j)[0] if count_ok or pol.preemption else None
        gpus = placement.place(cl, req, pol.placement) if count_ok and req is not None else None
        if gpus is not None and self.prof is not None and not k:
            start_free, nodes = _profile_nodes(sim, gpus, k, now)
            if start_free < end and self.prof.min_free(start_free, end) < nodes:
                self.shared_refused[g] = min(end, self.shared_refused.get(g, math.inf))
                return  # it would delay a reservation: Priority
        if (
            gpus is None
            and req is not None
            and pol.preemption
            and out.tested_count <= pol.queue_depth
            and sim.may_preempt[j]
        ):
            gpus = _preempt_for(sim, j, req, now, out)
        if gpus is not None:
            self._start(j, gpus, k, end)
            return
        self._blocked(p, j, g, k)

    def _start(self, j: int, gpus: np.ndarray, k: int, end: float) -> None:
        sim, now = self.sim, self.now
        if self.prof is not None and not self.strict:  # strict EASY: backfilled jobs end before the shadow
            start_free, nodes = _profile_nodes(sim, gpus, k, now)
            if start_free < end:
                self.prof.take(start_free, end, nodes)
        sim.start(j, gpus, now)
        self.out.started.append(j)
        self.shared_refused.clear()

    def _blocked(self, p: int, j: int, g: int, k: int) -> None:
        sim, now, out = self.sim, self.now, self.out
        cl = sim.run.cluster
        free_gpus = int((np.arange(cl.free_hist.size) * cl.free_hist).sum())
        if g <= free_gpus:
            out.fragmented_gpus = max(out.fragmented_gpus, free_gpus)
        if not self.blocked:
            self.codes[p] = _RESOURCES
        self.blocked = True
        if self.backfilling and self.n_resv < self.max_resv:
            if self.prof is None:
                self.prof = _profile(sim, now)
            wall = float(sim.run.table.wall_s[j])
            nodes = max(k, 1)
            at = self.prof.earliest(now, wall, nodes)
            if math.isfinite(at):
                self.prof.take(at, at + wall, nodes)
                out.expected_start_s[j] = at
            self.shadow_s = min(self.shadow_s, at)
            self.n_resv += 1


def _preempt_for(sim: Sim, j: int, req: placement.Request, now: float, out: PassResult) -> np.ndarray | None:
    """Requeue the victims that make room for ``j`` and place it; None (nobody requeued) if there are none
    or the placement would still fail on their GPUs (node counts suffice, the topology does not)."""
    victims = preemption.victims(sim, j, now)
    if not victims:
        return None
    cl, mode = sim.run.cluster, sim.run.policy.placement
    held = [(v, sim.run.gpus[v]) for v in victims]
    for _, gpus in held:
        cl.release(gpus)
    try:
        trial = placement.place(cl, req, mode)
    finally:
        for v, gpus in held:
            cl.allocate(v, gpus)
    if trial is None:
        return None
    for v in victims:
        sim.preempt(v, now)
        out.preempted.append(v)
    return placement.place(cl, req, mode)
