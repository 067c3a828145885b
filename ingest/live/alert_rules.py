"""Alert rules over a twin snapshot: what is wrong, how bad, what caused it and what to do.

Rules are vectorised over the snapshot's arrays and aggregated to the entity an operator
acts on (a rack, not its 64 GPUs).  Every :class:`Condition` carries

- a **severity** that follows its impact (a leaf that loses all uplinks and stalls the
  job is critical; one lost uplink of many is a warning), re-evaluated every tick;
- its **impact**: GPUs affected, jobs affected, throughput lost [tokens/s], power [MW];
- the **group**: the key of the root cause it belongs to (a CDU loss, its racks' heat and
  their GPUs going down are one incident) — a root cause is its own group;
- a one-line **runbook**: the first thing to do.

Messages hold counts, not fast-moving readings (those are in ``value``), so that a text
change means the episode changed and is worth a history row.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from twin.engine.snapshot import GPU_DOWN, GPU_OFF, JobStatus, Snapshot
from twin.site.tables import POWER_KINDS, SOURCE_KINDS, TIER_LEAF, SiteTables

# XID severities from NVIDIA's XID catalogue [NVIDIA-XID-Catalog] (79: fallen off the bus, 48: DBE ECC,
# 95: uncontained ECC, 64: row-remap failure, 94: contained ECC, 63: row-remap pending,
# 74: NVLink error, 92: high single-bit ECC rate, 119/120: GSP RPC timeout / error).
XID_SEVERITY = {
    79: "critical",
    48: "critical",
    95: "critical",
    64: "critical",
    94: "warning",
    63: "warning",
    74: "warning",
    92: "info",
    119: "critical",
    120: "critical",
}
XID_SHUTDOWN = 79  # what a GPU that shut down on temperature reports (fallen off the bus)
STALE_AFTER_S = 10.0  # a source without a good reading for this long is stale (5 scrape intervals at 2 s)
# sources read less often than every few seconds: stale after three missed polls (slurm: every 10 s)
STALE_AFTER_S_BY_KIND = {"slurm": 35.0}


def stale_after_s(source: str) -> float:
    """Seconds without a good reading after which ``source`` (``kind`` or ``kind:host``) is stale."""
    return STALE_AFTER_S_BY_KIND.get(source.split(":", 1)[0], STALE_AFTER_S)


SUPPLY_WARN_K = 2.0  # facility supply above setpoint [K] that warns: the CDU approach margin starts to go
SUPPLY_CRIT_K = 5.0  # [K] above setpoint: CDU capacity is derated by roughly a quarter (capacity curves)
JOB_SLOW_WARN_FRAC = 0.9  # throughput below this share of the job's best recent throughput warns
JOB_SLOW_CRIT_FRAC = 0.5  # and below this share is critical
# [E] clear thresholds, below the raise ones (hysteresis): an open episode holds until the
# quantity is back past these, so a value hovering at the threshold raises one episode
JOB_SLOW_CLEAR_FRAC = 0.95  # a slowed job is back at this share of its best throughput
JOB_SLOW_CRIT_CLEAR_FRAC = 0.6  # a critically slowed job is a warning again above this share
SUPPLY_CLEAR_K = 1.5  # [K] above setpoint: the supply excursion is over
SUPPLY_CRIT_CLEAR_K = 4.0  # [K] a critical excursion is a warning again below this
LOAD_CLEAR_FRAC = 0.97  # an overloaded (or N-1 overloaded) element is clear below this load fraction
CDU_HEAT_CLEAR_FRAC = 0.97  # a CDU over capacity is clear below this share of its capacity
GPU_HOT_CLEAR_K = 2.0  # [K] a hot rack is clear once its GPUs are this far below the threshold
HEADROOM_CLEAR_FRAC = 1.1  # headroom short of the swing is clear above this multiple of the swing
SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}

RUNBOOK = {
    "job_stalled": "Drain the causing hosts (jobs page), swap in spares and restart from the last checkpoint.",
    "job_slowed": "Drain the bottleneck racks listed on the jobs page if the expected gain beats the restart cost.",
    "gpu_hot": "Check the rack's CDU flow and supply; cap or drain the rack before GPUs reach 92 °C shutdown.",
    "gpu_down": "Check the hosts' XIDs and BMC logs; drain them from the scheduler and replace or reset the GPUs.",
    "xid": "Drain the host; XID 79/48/95 need a reset or RMA, XID 94/63 a reset at the next checkpoint.",
    "cdu_over": "Raise flow or lower supply temperature; cap the rack's GPUs if heat stays above capacity.",
    "pump": "Restart or replace the failed pump; with no redundancy left, prepare to cap the racks.",
    "loop_supply": "Check chillers and towers of the plant; cap the hottest racks if supply keeps rising.",
    "power_dead": "Find the upstream trip; racks now on one feed have no redundancy — avoid maintenance on the partner.",
    "no_redundancy": "Do not switch or maintain this element: its racks have lost the other feed.",
    "overload": "Shed or cap load on this element now: breakers trip above their rating.",
    "n1": "Rebalance racks across feeds or cap GPUs: one more failure overloads this element.",
    "source_down": "Restart the unit or start a standby; cap GPU power until generation covers load and swing.",
    "headroom": "Cap GPU power or start generation: the training swing can exceed what supply can follow.",
    "supply": "Cap GPU power now: load exceeds generation and the battery is draining.",
    "gen_reserve": "Start a standby unit or cap GPU power: the loss of the largest source would leave load unserved.",
    "gen_step": "Hold new load (job starts, cap releases) until the units recover from their last load step.",
    "gen_rejection": "Stagger checkpoints or add battery absorption: a whole-job drop risks the units' overspeed trip.",
    "gen_surge": "Ramp the job back after checkpoints (power floor) or add batteries: the surge exceeds the load step.",
    "island_frequency": "Smooth the swing (GPU power floor, batteries) or change the step period off the governors' mode.",
    "grid_contract": "Buffer the swing with batteries or smooth it at the GPUs: the grid contract's limits are exceeded.",
    "links_down": "Replace the optics/cables of the down links; reroute or drain the job's ranks under this switch.",
    "stale": "Check the exporter/BMC and the network path; the twin shows modelled values meanwhile.",
}


@dataclass(frozen=True)
class Impact:
    """What a condition costs: GPUs affected, jobs affected, throughput lost, power involved."""

    gpus: int = 0
    jobs: tuple[str, ...] = ()
    tokens_per_s: float = 0.0  # throughput lost [tokens/s]
    power_mw: float = 0.0  # load lost, at risk or over the limit [MW]

    def as_dict(self) -> dict:
        return {
            "gpus": int(self.gpus),
            "jobs": list(self.jobs),
            "tokens_per_s": float(self.tokens_per_s),
            "power_mw": float(self.power_mw),
        }


@dataclass(frozen=True)
class Condition:
    """A condition that holds now for one entity."""

    key: str
    severity: str
    source: str
    entity_kind: str
    entity_id: int
    entity_name: str
    metric: str
    value: float
    message: str
    group: str = ""  # key of the root-cause condition; empty means its own group
    impact: Impact = field(default_factory=Impact)
    runbook: str = ""

    @property
    def rule(self) -> str:
        return self.key.split(":", 1)[0]

    @property
    def group_key(self) -> str:
        return self.group or self.key


@dataclass(frozen=True)
class SiteFacts:
    """Results beyond the Snapshot that some rules need (from the engine's per-tick detail)."""

    power_live: np.ndarray | None = None  # bool per power element
    source_live: np.ndarray | None = None  # bool per source
    job_best_tokens_per_s: dict[str, float] = field(default_factory=dict)  # best recent throughput per job
    generation: object | None = None  # twin.physics.island.GenerationChecks of the tick (None: not known)
    # keys of the open episodes: their conditions hold until the clear threshold, below the raise one
    open_keys: frozenset[str] = frozenset()
    open_critical_keys: frozenset[str] = frozenset()  # those of them open at critical severity


def _cond(
    key: str,
    severity: str,
    kind: str,
    entity_id: int,
    name: str,
    metric: str,
    value: float,
    message: str,
    *,
    impact: Impact = Impact(),
    group: str = "",
    source: str = "twin",
) -> Condition:
    return Condition(
        key,
        severity,
        source,
        kind,
        int(entity_id),
        name,
        metric,
        float(value),
        message,
        group,
        impact,
        RUNBOOK[key.split(":", 1)[0]],
    )


def _gpus_per(group_of_gpu: np.ndarray, mask: np.ndarray | None, n: int) -> np.ndarray:
    if mask is None:
        return np.bincount(group_of_gpu, minlength=n)
    return np.bincount(group_of_gpu, weights=mask, minlength=n).astype(np.int64)


class _Context:
    """Per-evaluation lookups shared by the rules (computed once, vectorised)."""

    def __init__(self, state: SiteTables, snap: Snapshot, facts: SiteFacts) -> None:
        self.state, self.snap, self.facts = state, snap, facts
        self.down = snap.gpu_state == GPU_DOWN
        self.live_gpu = snap.gpu_state != GPU_OFF
        self.rack_live_gpus = _gpus_per(state.gpu_rack, self.live_gpu, state.n_racks)
        self.rack_down = _gpus_per(state.gpu_rack, self.down, state.n_racks)
        self.jobs_by_gpu = self._job_index(snap.jobs, state.n_gpus)
        # jobs per rack (all its GPUs, and its down GPUs), so per-rack rules need no per-GPU mask
        self.rack_jobs = self._jobs_per_rack(np.ones(state.n_gpus, dtype=bool))
        self.rack_down_jobs = self._jobs_per_rack(self.down)

    def _jobs_per_rack(self, gpu_mask: np.ndarray) -> dict[int, tuple[str, ...]]:
        gpus = np.flatnonzero(gpu_mask & (self.jobs_by_gpu >= 0))
        if not gpus.size:
            return {}
        n_jobs = len(self.snap.jobs)
        pairs = np.unique(self.state.gpu_rack[gpus].astype(np.int64) * n_jobs + self.jobs_by_gpu[gpus])
        out: dict[int, tuple[str, ...]] = {}
        for rack, job in zip(pairs // n_jobs, pairs % n_jobs):
            out[int(rack)] = out.get(int(rack), ()) + (self.snap.jobs[int(job)].name,)
        return out

    @staticmethod
    def _job_index(jobs: list[JobStatus], n_gpus: int) -> np.ndarray:
        index = np.full(n_gpus, -1, dtype=np.int32)
        for j, job in enumerate(jobs):
            index[np.asarray(job.gpu_ids, dtype=np.int64)] = j
        return index

    def held(self, key: str) -> bool:
        """Whether ``key`` is an open episode (held to its clear threshold)."""
        return key in self.facts.open_keys

    def held_mask(self, prefix: str, n: int) -> np.ndarray:
        """Bool per entity id (of ``n``): whether ``prefix + id`` (e.g. ``"n1:power:"``) is an open episode."""
        mask = np.zeros(n, dtype=bool)
        for key in self.facts.open_keys:
            if key.startswith(prefix) and key[len(prefix) :].isdigit() and int(key[len(prefix) :]) < n:
                mask[int(key[len(prefix) :])] = True
        return mask

    def jobs_on(self, gpu_mask: np.ndarray) -> tuple[str, ...]:
        hit = np.unique(self.jobs_by_gpu[gpu_mask])
        return tuple(self.snap.jobs[j].name for j in hit if j >= 0)

    def lost_tokens(self, jobs: tuple[str, ...]) -> float:
        """Throughput these jobs lost against their best recent throughput [tokens/s]."""
        lost = 0.0
        for job in self.snap.jobs:
            if job.name in jobs:
                best = self.facts.job_best_tokens_per_s.get(job.name, job.tokens_per_s)
                now = job.tokens_per_s if np.isfinite(job.tokens_per_s) else 0.0
                lost += max(best - now, 0.0)
        return lost

    def impact_of_gpus(self, gpu_mask: np.ndarray, power_mw: float = 0.0) -> Impact:
        jobs = self.jobs_on(gpu_mask)
        return Impact(int(np.count_nonzero(gpu_mask & self.live_gpu)), jobs, self.lost_tokens(jobs), power_mw)

    def impact_of_racks(self, racks: np.ndarray, power_mw: float = 0.0, down_only: bool = False) -> Impact:
        """Impact of the live (or, ``down_only``, the down) GPUs of the racks ``racks`` (ids)."""
        per_rack = self.rack_down_jobs if down_only else self.rack_jobs
        jobs = tuple(sorted({j for r in np.asarray(racks).tolist() for j in per_rack.get(int(r), ())}))
        gpus = (self.rack_down if down_only else self.rack_live_gpus)[racks]
        return Impact(int(np.sum(gpus)), jobs, self.lost_tokens(jobs), power_mw)

    def impact_of_gpu(self, gpu: int) -> Impact:
        job = int(self.jobs_by_gpu[gpu])
        jobs = (self.snap.jobs[job].name,) if job >= 0 else ()
        return Impact(int(self.live_gpu[gpu]), jobs, self.lost_tokens(jobs), 0.0)


# --- root causes ------------------------------------------------------------------------
def _cooling_conditions(ctx: _Context) -> list[Condition]:
    s, snap = ctx.state, ctx.snap
    out = []
    required = s.cdu_spec_array("pumps_required")
    installed = s.cdu_spec_array("pumps")
    held = ctx.held_mask("cdu_over:cdu:", len(installed))
    over = snap.cdu_heat_kw > np.where(held, CDU_HEAT_CLEAR_FRAC, 1.0) * snap.cdu_capacity_kw
    flagged = np.flatnonzero(over | (snap.pumps_running_count < installed))
    for c in flagged:
        impact = ctx.impact_of_racks(np.flatnonzero(s.rack_cdu == c), float(snap.cdu_heat_kw[c]) / 1e3)
        running = int(snap.pumps_running_count[c])
        if running < installed[c]:
            lost = running < required[c]
            text = (
                f"CDU {s.cdu_name[c]} lost: {running} of {int(installed[c])} pumps running, "
                f"{impact.gpus} GPUs without full cooling"
                if lost
                else f"{running} of {int(installed[c])} pumps running (no redundancy left)"
            )
            out.append(
                _cond(
                    f"pump:cdu:{c}",
                    "critical" if lost else "warning",
                    "cdu",
                    c,
                    s.cdu_name[c],
                    "pumps_running_count",
                    running,
                    text,
                    impact=impact,
                )
            )
        elif over[c]:
            out.append(
                _cond(
                    f"cdu_over:cdu:{c}",
                    "critical",
                    "cdu",
                    c,
                    s.cdu_name[c],
                    "cdu_heat_kw",
                    snap.cdu_heat_kw[c],
                    f"heat exceeds capacity {snap.cdu_capacity_kw[c]:.0f} kW",
                    impact=impact,
                )
            )
    return out


def _loop_conditions(ctx: _Context) -> list[Condition]:
    s, snap = ctx.state, ctx.snap
    setpoint = s.plant_supply_setpoint_c[s.loop_plant]
    excess = snap.loop_supply_temp_c - setpoint
    out = []
    held = ctx.held_mask("loop_supply:loop:", len(excess))
    for lp in np.flatnonzero(excess >= np.where(held, SUPPLY_CLEAR_K, SUPPLY_WARN_K)):
        crit_k = SUPPLY_CRIT_CLEAR_K if f"loop_supply:loop:{lp}" in ctx.facts.open_critical_keys else SUPPLY_CRIT_K
        sev = "critical" if excess[lp] >= crit_k else "warning"
        step = SUPPLY_CRIT_K if sev == "critical" else SUPPLY_WARN_K
        out.append(
            _cond(
                f"loop_supply:loop:{lp}",
                sev,
                "loop",
                lp,
                s.loop_name[lp],
                "loop_supply_temp_c",
                snap.loop_supply_temp_c[lp],
                f"facility supply ≥ {step:.0f} K above its {setpoint[lp]:.0f} °C setpoint",
                impact=ctx.impact_of_racks(
                    np.flatnonzero(s.cdu_loop[s.rack_cdu] == lp), float(snap.loop_heat_kw[lp]) / 1e3
                ),
            )
        )
    return out


def _power_conditions(ctx: _Context) -> tuple[list[Condition], dict[int, str]]:
    """Dead, overloaded and N-1 elements; returns the conditions and the dead element's key per dark rack."""
    out, cause_of_rack = _dead_power_conditions(ctx)
    return out + _load_conditions(ctx), cause_of_rack


def _dead_power_conditions(ctx: _Context) -> tuple[list[Condition], dict[int, str]]:
    """De-energised elements (the most upstream dead one of each dead subtree) and the partners left alone.

    Returns the conditions and the dead element's key per dark rack.
    """
    s, facts = ctx.state, ctx.facts
    out: list[Condition] = []
    cause_of_rack: dict[int, str] = {}
    if facts.power_live is None or facts.power_live.all():
        return out, cause_of_rack
    dual = s.rack_feed_b >= 0
    live = np.asarray(facts.power_live, dtype=bool)
    feed_a_live = live[s.rack_feed_a]
    feed_b_live = np.where(dual, live[np.maximum(s.rack_feed_b, 0)], False)
    dark = ~feed_a_live & ~feed_b_live
    # the dead element an operator acts on: the most upstream dead one (its children died with it)
    parent = s.power_parent
    roots = [e for e in np.flatnonzero(~live) if parent[e] < 0 or live[parent[e]]]
    for e in roots:
        subtree = _descendants(parent, e)
        on_a = np.isin(s.rack_feed_a, subtree)
        on_b = dual & np.isin(np.maximum(s.rack_feed_b, 0), subtree)
        key = f"power_dead:power:{e}"
        out.append(_dead_condition(ctx, e, key, on_a | on_b, dark))
        for r in np.flatnonzero((on_a | on_b) & dark):
            cause_of_rack[int(r)] = key
        one_feed = (on_a | on_b) & ~dark
        partners = np.unique(np.concatenate([s.rack_feed_b[on_a & one_feed & dual], s.rack_feed_a[on_b & one_feed]]))
        out += [_partner_condition(ctx, int(p), e, key, one_feed) for p in partners[partners >= 0]]
    return out, cause_of_rack


def _dead_condition(ctx: _Context, e: int, key: str, racks: np.ndarray, dark: np.ndarray) -> Condition:
    """Element ``e`` de-energised: the racks it fed (bool per rack) left on one feed, and those dark."""
    s, snap = ctx.state, ctx.snap
    racks_dark = racks & dark
    kind = POWER_KINDS[int(s.power_kind[e])]
    impact = ctx.impact_of_racks(np.flatnonzero(racks_dark), float(snap.rack_power_kw[racks].sum()) / 1e3)
    n_dark, n_one = int(racks_dark.sum()), int((racks & ~dark).sum())
    text = f"{kind} {s.power_name[e]} de-energised: {n_one} racks on one feed (no redundancy)"
    if n_dark:
        text += f", {n_dark} racks dark"
    severity = "critical" if n_dark or n_one else "warning"
    return _cond(key, severity, "power", e, s.power_name[e], "power_live", 0.0, text, impact=impact)


def _partner_condition(ctx: _Context, p: int, e: int, key: str, one_feed: np.ndarray) -> Condition:
    """Element ``p`` carries alone the racks (of ``one_feed``) whose other feed, below dead ``e``, is down."""
    s, snap = ctx.state, ctx.snap
    carried = one_feed & ((s.rack_feed_a == p) | (s.rack_feed_b == p))
    return _cond(
        f"no_redundancy:power:{p}",
        "warning",
        "power",
        p,
        s.power_name[p],
        "power_live",
        1.0,
        f"no redundancy: carries {int(carried.sum())} racks alone while {s.power_name[e]} is down",
        group=key,
        impact=Impact(int(ctx.rack_live_gpus[carried].sum()), (), 0.0, float(snap.feed_power_kw[p]) / 1e3),
    )


def _load_conditions(ctx: _Context) -> list[Condition]:
    """Elements loaded above their usable rating, and those one more failure would overload (N-1)."""
    s, snap = ctx.state, ctx.snap
    out: list[Condition] = []
    n = len(snap.load_frac)
    limit = np.where(ctx.held_mask("overload:power:", n), LOAD_CLEAR_FRAC, 1.0)
    n1_limit = np.where(ctx.held_mask("n1:power:", n), LOAD_CLEAR_FRAC, 1.0)
    overloaded = snap.load_frac > limit
    for e in np.flatnonzero(overloaded):
        out.append(
            _cond(
                f"overload:power:{e}",
                "critical",
                "power",
                e,
                s.power_name[e],
                "load_frac",
                snap.load_frac[e],
                f"loaded above its usable rating ({snap.load_frac[e]:.0%})",
                impact=Impact(power_mw=float(snap.feed_power_kw[e]) / 1e3),
            )
        )
    n1 = (snap.power_n1_load_frac > n1_limit) & ~overloaded
    for e in np.flatnonzero(n1):
        out.append(
            _cond(
                f"n1:power:{e}",
                "warning",
                "power",
                e,
                s.power_name[e],
                "load_frac",
                snap.power_n1_load_frac[e],
                "N-1: one more failure overloads it",
                impact=Impact(power_mw=float(snap.feed_power_kw[e]) / 1e3),
            )
        )
    return out


def _descendants(parent: np.ndarray, root: int) -> np.ndarray:
    """The element ``root`` and every element below it in the power tree."""
    members = {int(root)}
    grew = True
    while grew:
        children = np.flatnonzero(np.isin(parent, list(members)))
        grew = not set(children.tolist()) <= members
        members.update(children.tolist())
    return np.fromiter(members, dtype=np.int64)


def _source_conditions(ctx: _Context) -> list[Condition]:
    s, snap, facts = ctx.state, ctx.snap, ctx.facts
    out = []
    headroom_mw = snap.generation_capacity_mw - snap.facility_power_mw
    # the swing is peak to peak around the load the snapshot shows: half of it rises above that load
    swing_mw = float(snap.swing_amplitude_mw) / 2.0 if np.isfinite(snap.swing_amplitude_mw) else 0.0
    all_gpus = ctx.live_gpu
    # headroom short of the swing; an open headroom episode (or critical trip) holds until it is well clear
    short_held = ctx.held("headroom:site:0") or any(k.startswith("source_down:") for k in facts.open_keys)
    short = headroom_mw < swing_mw * (HEADROOM_CLEAR_FRAC if short_held else 1.0)
    if facts.source_live is not None:
        for src in np.flatnonzero(~np.asarray(facts.source_live, dtype=bool)):
            kind = SOURCE_KINDS[int(s.source_kind[src])]
            sev = "critical" if short else "warning"
            text = f"{kind} {s.source_name[src]} tripped: {s.source_capacity_mw[src]:.1f} MW of supply lost"
            if short:
                text += "; headroom now below the training swing"
            out.append(
                _cond(
                    f"source_down:source:{src}",
                    sev,
                    "source",
                    src,
                    s.source_name[src],
                    "headroom_mw",
                    headroom_mw,
                    text,
                    impact=Impact(0, ctx.jobs_on(all_gpus) if short else (), 0.0, float(s.source_capacity_mw[src])),
                )
            )
    if snap.facility_power_mw > snap.generation_capacity_mw:
        out.append(
            _cond(
                "supply:site:0",
                "critical",
                "site",
                0,
                s.name,
                "facility_power_mw",
                snap.facility_power_mw,
                f"facility load exceeds generation {snap.generation_capacity_mw:.1f} MW",
                impact=Impact(power_mw=float(snap.facility_power_mw - snap.generation_capacity_mw)),
            )
        )
    elif swing_mw > 0 and short:
        out.append(
            _cond(
                "headroom:site:0",
                "warning",
                "site",
                0,
                s.name,
                "generation_capacity_mw",
                headroom_mw,
                "generation headroom below the training swing",
                impact=Impact(power_mw=float(swing_mw - headroom_mw)),
            )
        )
    return out


def _generation_conditions(ctx: _Context) -> list[Condition]:
    """The generating units and the grid as an engineer tests them (twin/physics/island.py): N-1, load steps,
    and, islanded, load rejection, surge and frequency; with a grid, its contract."""
    g = ctx.facts.generation
    if g is None:
        return []
    s, out = ctx.state, []
    site = lambda rule, sev, metric, value, text, mw: _cond(  # noqa: E731
        f"{rule}:site:0", sev, "site", 0, s.name, metric, value, text, impact=Impact(power_mw=float(mw))
    )
    r = g.reserve
    if not g.reserve_ok and r.largest_source >= 0:
        name = s.source_name[r.largest_source]
        what = "leaves load unserved" if r.n1_deficit_mw > 0 else "is more than the others pick up at once"
        out.append(
            site(
                "gen_reserve",
                "warning",
                "n1_deficit_mw",
                r.n1_deficit_mw,
                f"N-1: the loss of {name} {what}",
                max(r.n1_deficit_mw, r.n1_step_deficit_mw),
            )
        )
    if g.units_step_limited_count:
        text = f"{g.units_step_limited_count} generating units held back while their last load step recovers"
        out.append(site("gen_step", "warning", "units_step_limited_count", g.units_step_limited_count, text, 0.0))
    if g.islanded_flag and not g.rejection_ok:
        over = g.rejection_freq_rise_frac >= g.overspeed_trip_frac
        text = "whole-job drop " + (
            "reaches the units' overspeed trip" if over else "exceeds the class's frequency rise"
        )
        out.append(
            site(
                "gen_rejection",
                "critical" if over else "warning",
                "rejection_freq_rise_frac",
                g.rejection_freq_rise_frac,
                text,
                g.rejection_mw,
            )
        )
    if g.islanded_flag and not g.surge_ok:
        text = "surge after a checkpoint exceeds the units' load step or the class's frequency dip"
        out.append(site("gen_surge", "warning", "surge_frac", g.surge_frac, text, g.surge_mw))
    if g.islanded_flag and not g.frequency_ok:
        sev = "critical" if g.swing_freq_pp_hz > 2.0 * g.freq_band_hz else "warning"
        text = "training swing drives the island's frequency outside the steady-state band"
        out.append(site("island_frequency", sev, "swing_freq_pp_hz", g.swing_freq_pp_hz, text, g.swing_on_units_mw))
    if g.grid is not None and not g.grid.within_contract:
        c, f = g.grid_contract, g.grid
        broken = [
            name
            for name, bad in (
                ("import limit", f.peak_import_mw > c.import_limit_mw),
                ("export (reverse power)", f.min_import_mw < -c.export_limit_mw),
                ("ramp", f.ramp_mw_per_s > c.ramp_limit_mw_per_s),
                ("voltage change", f.voltage_change_frac > c.voltage_change_limit_frac),
            )
            if bad
        ]
        text = "swing and dips at the grid exceed the contract: " + ", ".join(broken)
        excess = max(f.peak_import_mw - c.import_limit_mw, -c.export_limit_mw - f.min_import_mw, 0.0)
        out.append(site("grid_contract", "warning", "peak_import_mw", f.peak_import_mw, text, excess))
    return out


def _link_conditions(ctx: _Context) -> tuple[list[Condition], dict[int, str]]:
    """Switches with down uplinks; severity from the GPUs they cut off.  Returns leaf → key of cut-off leaves."""
    s, snap = ctx.state, ctx.snap
    down = np.flatnonzero(~snap.link_up_flag)
    if not down.size:
        return [], {}
    per_switch = np.bincount(s.link_a[down], minlength=s.n_switches)
    installed = np.bincount(s.link_a, minlength=s.n_switches)
    out, cut_leaves = [], {}
    for sw in np.flatnonzero(per_switch):
        isolated = per_switch[sw] >= installed[sw]
        is_leaf = int(s.switch_tier[sw]) == TIER_LEAF
        gpus = (s.gpu_leaf == sw) if is_leaf else np.zeros(s.n_gpus, dtype=bool)
        impact = ctx.impact_of_gpus(gpus) if isolated and is_leaf else Impact()
        sev = "critical" if isolated and (impact.jobs or impact.gpus) else "warning"
        key = f"links_down:switch:{sw}"
        text = (
            f"all {int(installed[sw])} uplinks down: {impact.gpus} GPUs cut off"
            if isolated and is_leaf
            else f"{int(per_switch[sw])} of {int(installed[sw])} uplinks down"
        )
        out.append(
            _cond(key, sev, "switch", sw, s.switch_name[sw], "link_up_flag", per_switch[sw], text, impact=impact)
        )
        if isolated and is_leaf:
            cut_leaves[int(sw)] = key
    return out, cut_leaves


def _xid_conditions(ctx: _Context) -> list[Condition]:
    s, snap = ctx.state, ctx.snap
    out = []
    for g in np.flatnonzero(snap.last_xid_code > 0):
        code = int(snap.last_xid_code[g])
        name = f"{s.node_name[s.gpu_node[g]]}/gpu{int(s.gpu_index[g])}"
        out.append(
            _cond(
                f"xid:{code}:gpu:{g}",
                XID_SEVERITY.get(code, "warning"),
                "gpu",
                g,
                name,
                "last_xid_code",
                code,
                f"XID {code} on {name}",
                impact=ctx.impact_of_gpu(int(g)),
            )
        )
    return out


def _stale_conditions(ctx: _Context) -> list[Condition]:
    return [
        _cond(
            f"stale:source:{name}",
            "warning",
            "source",
            0,
            name,
            "source_age_s",
            age,
            "no reading yet" if not np.isfinite(age) else f"no good reading for over {stale_after_s(name):.0f} s",
            source=name,
        )
        for name, age in ctx.snap.source_age_s.items()
        if not age <= stale_after_s(name)
    ]


# --- effects, grouped under their cause ---------------------------------------------------
def _rack_conditions(ctx: _Context, cause_of_rack: dict[int, str]) -> list[Condition]:
    s, snap = ctx.state, ctx.snap
    out = []
    max_op = s.gpu_spec_array("max_operating_temp_c")
    slowdown = s.gpu_spec_array("slowdown_temp_c")
    temp = np.where(np.isfinite(snap.gpu_temp_c), snap.gpu_temp_c, -np.inf)
    # an open rack episode counts its GPUs against thresholds GPU_HOT_CLEAR_K lower
    # (the critical threshold only while the episode is critical: a warning rises at the raise threshold)
    held_gpu = ctx.held_mask("gpu_hot:rack:", s.n_racks)[s.gpu_rack] * GPU_HOT_CLEAR_K
    critical = np.zeros(s.n_racks, dtype=bool)
    for key in ctx.facts.open_critical_keys:
        if key.startswith("gpu_hot:rack:") and key[len("gpu_hot:rack:") :].isdigit():
            critical[min(int(key[len("gpu_hot:rack:") :]), s.n_racks - 1)] = True
    crit_gpu = critical[s.gpu_rack] * GPU_HOT_CLEAR_K
    hot = _gpus_per(s.gpu_rack, (temp >= max_op - held_gpu) & ctx.live_gpu, s.n_racks)
    very_hot = _gpus_per(s.gpu_rack, (temp >= slowdown - crit_gpu) & ctx.live_gpu, s.n_racks)
    for r in np.flatnonzero(hot > 0):
        sev = "critical" if very_hot[r] else "warning"
        text = (
            f"{int(very_hot[r])} of {int(ctx.rack_live_gpus[r])} GPUs at or above slowdown temperature"
            if very_hot[r]
            else f"{int(hot[r])} of {int(ctx.rack_live_gpus[r])} GPUs at or above max operating temperature"
        )
        out.append(
            _cond(
                f"gpu_hot:rack:{r}",
                sev,
                "rack",
                r,
                s.rack_name[r],
                "gpu_temp_c",
                snap.rack_max_gpu_temp_c[r],
                text,
                impact=ctx.impact_of_racks(np.array([r])),
                group=cause_of_rack.get(int(r), ""),
            )
        )
    for r in np.flatnonzero(ctx.rack_down > 0):
        out.append(
            _cond(
                f"gpu_down:rack:{r}",
                "critical",
                "rack",
                r,
                s.rack_name[r],
                "gpu_state",
                ctx.rack_down[r],
                f"{int(ctx.rack_down[r])} of {int(ctx.rack_live_gpus[r])} GPUs down",
                impact=ctx.impact_of_racks(np.array([r]), down_only=True),
                group=cause_of_rack.get(int(r), ""),
            )
        )
    return out


def _job_conditions(ctx: _Context, cause_of_gpu: dict[str, np.ndarray]) -> list[Condition]:
    """Stalled and slowed jobs, each in the group of the cause that touches most of its down GPUs."""
    s, snap, facts = ctx.state, ctx.snap, ctx.facts
    out = []
    for j, job in enumerate(snap.jobs):
        ids = np.asarray(job.gpu_ids, dtype=np.int64)
        best = facts.job_best_tokens_per_s.get(job.name, job.tokens_per_s)
        now = job.tokens_per_s if np.isfinite(job.tokens_per_s) else 0.0
        stalled = ids.size > 0 and now <= 0.0
        share = now / best if best > 0 else 1.0
        slowed_held = ctx.held(f"job_slowed:job:{j}")
        if not stalled and share >= (JOB_SLOW_CLEAR_FRAC if slowed_held else JOB_SLOW_WARN_FRAC):
            continue
        in_job = np.zeros(s.n_gpus, dtype=bool) if cause_of_gpu else None
        if in_job is not None:
            in_job[ids] = True
        hits = {k: int(np.count_nonzero(in_job[g])) for k, g in cause_of_gpu.items()} if in_job is not None else {}
        group = max(hits, key=hits.get, default="")
        if group and not hits[group]:
            group = ""
        impact = Impact(int(ids.size) if stalled else 0, (job.name,), max(best - now, 0.0), 0.0)
        if stalled:
            n_down = int(np.count_nonzero(ctx.down[ids]))
            text = f"stalled: 0 tokens/s, {ids.size:,} GPUs idle" + (
                f" ({n_down} GPU{'s' if n_down != 1 else ''} down)" if n_down else ""
            )
            out.append(
                _cond(
                    f"job_stalled:job:{j}",
                    "critical",
                    "job",
                    j,
                    job.name,
                    "tokens_per_s",
                    now,
                    text,
                    impact=impact,
                    group=group,
                )
            )
        else:
            crit_held = f"job_slowed:job:{j}" in facts.open_critical_keys
            sev = "critical" if share < (JOB_SLOW_CRIT_CLEAR_FRAC if crit_held else JOB_SLOW_CRIT_FRAC) else "warning"
            floor_pct = int(round((JOB_SLOW_CRIT_FRAC if sev == "critical" else JOB_SLOW_WARN_FRAC) * 100))
            racks = ", ".join(s.rack_name[r] for r in np.asarray(job.bottleneck_racks)[:3])
            text = f"slowed below {floor_pct} % of its recent throughput" + (f"; bottleneck {racks}" if racks else "")
            out.append(
                _cond(
                    f"job_slowed:job:{j}",
                    sev,
                    "job",
                    j,
                    job.name,
                    "tokens_per_s",
                    now,
                    text,
                    impact=impact,
                    group=group,
                )
            )
    return out


def evaluate(state: SiteTables, snap: Snapshot, facts: SiteFacts | None = None) -> list[Condition]:
    """Every condition that holds in ``snap``, each with its group, impact and runbook line."""
    ctx = _Context(state, snap, facts or SiteFacts())
    cooling = _cooling_conditions(ctx)
    loops = _loop_conditions(ctx)
    power, rack_dark_cause = _power_conditions(ctx)
    links, cut_leaves = _link_conditions(ctx)
    xids = _xid_conditions(ctx)
    # the cause of each rack's trouble: a dead feed, else its CDU, else its facility loop
    rack_cause = np.full(state.n_racks, "", dtype=object)
    for c in loops:
        rack_cause[state.cdu_loop[state.rack_cdu] == c.entity_id] = c.key
    for c in cooling:
        if c.severity == "critical":
            rack_cause[state.rack_cdu == c.entity_id] = c.key
    for r, key in rack_dark_cause.items():
        rack_cause[r] = key
    cause_of_rack = {int(r): rack_cause[r] for r in np.flatnonzero(rack_cause != "")}
    # an XID is its own cause, except the XID 79 a thermal shutdown reports in a rack that has one
    xids = [
        replace(c, group=cause_of_rack.get(int(state.gpu_rack[c.entity_id]), "")) if c.value == XID_SHUTDOWN else c
        for c in xids
    ]
    xid_of_rack = {}
    for c in xids:
        if not c.group and ctx.down[c.entity_id]:
            xid_of_rack.setdefault(int(state.gpu_rack[c.entity_id]), c.key)
    racks = [
        c if c.group or c.entity_id not in xid_of_rack else replace(c, group=xid_of_rack[c.entity_id])
        for c in _rack_conditions(ctx, cause_of_rack)
    ]
    # the GPUs (ids) each root cause takes out, to place job alerts under the cause that hurts them most
    cause_of_gpu: dict[str, np.ndarray] = {}
    down_ids = np.flatnonzero(ctx.down)
    if down_ids.size and cause_of_rack:
        down_cause = rack_cause[state.gpu_rack[down_ids]]
        for key in set(down_cause.tolist()) - {""}:
            cause_of_gpu[key] = down_ids[down_cause == key]
    for leaf, key in cut_leaves.items():
        cause_of_gpu[key] = np.flatnonzero(state.gpu_leaf == leaf)
    for c in xids:
        if not c.group and ctx.down[c.entity_id]:
            cause_of_gpu[c.key] = np.array([c.entity_id])
    for c in racks:
        if c.rule == "gpu_down" and not c.group:
            cause_of_gpu[c.key] = down_ids[state.gpu_rack[down_ids] == c.entity_id]
    jobs = _job_conditions(ctx, cause_of_gpu)
    sources = _source_conditions(ctx) + _generation_conditions(ctx)
    return jobs + cooling + loops + power + sources + links + xids + racks + _stale_conditions(ctx)


def sort_key(c: Condition) -> tuple:
    """Most urgent first: severity, then throughput lost, GPUs affected and power; ties by entity name."""
    return (
        SEVERITY_RANK.get(c.severity, 3),
        -c.impact.tokens_per_s,
        -c.impact.gpus,
        -c.impact.power_mw,
        c.entity_name,
        c.key,
    )
