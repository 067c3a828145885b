"""From a job's symptom to an action: what stalls or slows it, which hosts to drain, what draining gains.

Pure functions of the site tables, a snapshot and the job.  The jobs page shows them for
a stalled or slowed job: the causes (down GPUs, cut-off leaf switches, slow racks with
the reason each is slow), the hosts to drain in Slurm's hostlist form, and the
throughput expected once they are drained and the job restarts on spares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dashboard.analysis.hostlist import compress
from twin.engine.snapshot import GPU_DOWN, JobStatus, Snapshot
from twin.site.tables import TIER_LEAF, SiteTables
from twin.training.sitejob import evaluate_site_job

SLOW_FRAC = 0.99  # a GPU below this share of full speed slows a synchronous job


@dataclass
class Cause:
    """One reason a job is stalled or slow, on one entity."""

    kind: str  # gpus_down | leaf_cut | slow_rack
    entity_kind: str  # rack | switch
    entity_name: str
    gpus: int  # job GPUs affected
    speed_frac: float  # slowest affected job GPU's speed (0 = down)
    reason: str  # e.g. "3 GPUs down (XID 79)", "all uplinks down", "thermal slowdown at 90.4 °C"


@dataclass
class JobDiagnosis:
    """Causes, hosts to drain and the throughput expected after draining and restarting."""

    condition: str  # running | slowed | stalled
    causes: list[Cause] = field(default_factory=list)
    drain_hosts: list[str] = field(default_factory=list)
    expected_tokens_per_s: float = math.nan  # after draining the hosts and restarting on spares

    @property
    def drain_hostlist(self) -> str:
        return compress(self.drain_hosts)

    @property
    def drain_command(self) -> str:
        if not self.drain_hosts:
            return ""
        return f'scontrol update NodeName={self.drain_hostlist} State=DRAIN Reason="clustertwin: job slowed or stalled"'


def _slow_reason(state: SiteTables, snap: Snapshot, gpus: np.ndarray) -> str:
    """Why the slowest of ``gpus`` is slow, in the words of the GPU's own throttle reasons."""
    temp = snap.gpu_temp_c[gpus]
    worst = gpus[int(np.nanargmin(snap.throttle_frac[gpus]))] if gpus.size else -1
    slowdown = state.gpu_spec_array("slowdown_temp_c")[gpus]
    max_op = state.gpu_spec_array("max_operating_temp_c")[gpus]
    hottest = float(np.nanmax(temp)) if np.isfinite(temp).any() else math.nan
    if np.any(temp >= slowdown):
        return f"thermal slowdown (hottest {hottest:.1f} °C)"
    if np.any(temp >= max_op):
        return f"thermal throttling (hottest {hottest:.1f} °C)"
    tdp = state.gpu_spec_array("tdp_w")[worst] if worst >= 0 else math.nan
    if worst >= 0 and snap.gpu_power_w[worst] < 0.9 * tdp and snap.gpu_util_frac[worst] > 0.5:
        return f"power limited ({snap.gpu_power_w[worst]:.0f} W of {tdp:.0f} W)"
    return "clocks reduced"


def diagnose(state: SiteTables, snap: Snapshot, job: JobStatus) -> JobDiagnosis:
    """Causes of a stalled or slowed ``job`` and the hosts to drain (no throughput estimate)."""
    ids = np.asarray(job.gpu_ids, dtype=np.int64)
    stalled = not (math.isfinite(job.tokens_per_s) and job.tokens_per_s > 0)
    speed = np.clip(np.nan_to_num(snap.throttle_frac[ids], nan=1.0), 0.0, 1.0)
    down = snap.gpu_state[ids] == GPU_DOWN
    causes: list[Cause] = []
    drain_gpus: list[np.ndarray] = []
    # down GPUs, by rack
    for rack in np.unique(state.gpu_rack[ids[down]]):
        gpus = ids[down & (state.gpu_rack[ids] == rack)]
        xids = sorted({int(x) for x in snap.last_xid_code[gpus] if x})
        xid_text = f" (XID {', '.join(map(str, xids))})" if xids else ""
        causes.append(
            Cause(
                "gpus_down",
                "rack",
                state.rack_name[rack],
                int(gpus.size),
                0.0,
                f"{gpus.size} GPU{'s' if gpus.size != 1 else ''} down{xid_text}",
            )
        )
        drain_gpus.append(gpus)
    # leaf switches whose uplinks are all down, under the job's GPUs
    leaves = np.unique(state.gpu_leaf[ids])
    if not snap.link_up_flag.all():
        down_links = np.bincount(state.link_a[~snap.link_up_flag], minlength=state.n_switches)
        installed = np.bincount(state.link_a, minlength=state.n_switches)
        for leaf in leaves:
            if state.switch_tier[leaf] == TIER_LEAF and installed[leaf] and down_links[leaf] >= installed[leaf]:
                gpus = ids[state.gpu_leaf[ids] == leaf]
                causes.append(
                    Cause(
                        "leaf_cut",
                        "switch",
                        state.switch_name[leaf],
                        int(gpus.size),
                        0.0,
                        f"all {int(installed[leaf])} uplinks down: its GPUs cannot reach the job",
                    )
                )
                drain_gpus.append(gpus)
    # slow racks: bottleneck racks that are not down, with why they are slow
    for rack in np.asarray(job.bottleneck_racks, dtype=np.int64):
        in_rack = (state.gpu_rack[ids] == rack) & ~down
        if not in_rack.any():
            continue
        slowest = float(speed[in_rack].min())
        if slowest >= SLOW_FRAC:
            continue
        gpus = ids[in_rack]
        causes.append(
            Cause(
                "slow_rack",
                "rack",
                state.rack_name[rack],
                int(gpus.size),
                slowest,
                _slow_reason(state, snap, gpus[speed[in_rack] < SLOW_FRAC]),
            )
        )
        drain_gpus.append(gpus[speed[in_rack] < SLOW_FRAC])
    causes.sort(key=lambda c: (c.speed_frac, -c.gpus, c.entity_name))
    gpus = np.unique(np.concatenate(drain_gpus)) if drain_gpus else np.zeros(0, dtype=np.int64)
    hosts = sorted({state.node_name[n] for n in state.gpu_node[gpus]})
    condition = "stalled" if stalled else ("slowed" if causes else "running")
    return JobDiagnosis(condition, causes, hosts)


def expected_after_drain(
    state: SiteTables, snap: Snapshot, spec, gpu_ids: np.ndarray, diagnosis: JobDiagnosis
) -> float:
    """Tokens/s once the diagnosis' hosts are drained and the job restarts on full-speed spares.

    The spares are modelled as the drained GPUs running at full speed on healthy leaves: the
    job keeps its size and placement shape, the slow and down GPUs stop setting the pace.
    """
    ids = np.asarray(gpu_ids, dtype=np.int64)
    drained = np.isin(state.gpu_node, [state.node_name.index(h) for h in diagnosis.drain_hosts])
    throttle = np.where(snap.gpu_state == GPU_DOWN, 0.0, np.nan_to_num(snap.throttle_frac, nan=1.0))
    throttle = np.where(drained, 1.0, throttle)
    link_up_flag = snap.link_up_flag.copy()
    cut = [state.switch_name.index(c.entity_name) for c in diagnosis.causes if c.kind == "leaf_cut"]
    if cut:
        link_up_flag[np.isin(state.link_a, cut)] = True
    return float(evaluate_site_job(state, spec, ids, throttle, link_up_flag).status.tokens_per_s)
