"""Benchmarks of the fleet simulation (``clustertwin bench --only fleet_raps fleet_30day fleet_pass``).

* ``fleet_raps`` — the cross-check against ExaDigiT RAPS [RAPS-2024]: an SWF trace on a
  colossus-shaped site (12,544 nodes of 8 GPUs), FCFS with EASY backfill (RAPS's variant:
  backfilled jobs must end before the shadow time), flat placement, no failures, no power
  limit.  ``CLUSTERTWIN_RAPS_SWF`` names the trace; ``CLUSTERTWIN_RAPS_LOG`` the log of a
  RAPS run on the same trace in the same sitting (its report plus ``/usr/bin/time -v``), from
  which mean wait, mean turnaround, wall and CPU time and peak memory are read; the bench
  reports ours, theirs and the ratios.  RAPS itself is never run or built from here.
* ``fleet_30day`` — 30 days of colossus under the default LLM-lab mix (50,000 jobs and two
  24,576-GPU pretraining runs) with failures, per-job power admission and per-job physics.
* ``fleet_pass`` — one full scheduling pass (priority order, EASY backfill, tree placement,
  team quotas) over 10,000 pending jobs on a full colossus.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from twin.bench import benchmark

_CHILD = """
import json, resource, sys, time
from ingest.workload.benchmarks import _raps_run
t, c = time.perf_counter(), time.process_time()
out = _raps_run(sys.argv[1])
out["sim_wall_s"], out["sim_cpu_s"] = time.perf_counter() - t, time.process_time() - c
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print(json.dumps(out))
"""


def _raps_run(trace: str) -> dict:
    """Our side of the cross-check (in a child process, so its peak memory is its own)."""
    from dataclasses import replace

    from ingest.workload import run as wrun
    from ingest.workload.swf import read_swf
    from twin.fleet.policy import Policy
    from twin.fleet.simulate import SimOptions
    from twin.site.load import load_site

    state = load_site("colossus")
    wl = wrun.Workload(read_swf(trace))
    policy = replace(
        Policy(ordering="fcfs", backfill="easy", placement="flat", power="off", preemption=False),
        bf_interval_s=0.0,  # RAPS schedules at every event
        bf_extra_nodes=False,
    )
    rep = wrun.simulate(state, wl, policy, SimOptions(horizon_s=7 * 86_400.0, failures=False))
    return {
        k: rep[k]
        for k in (
            "jobs_count",
            "jobs_completed_count",
            "jobs_killed_count",
            "mean_wait_s",
            "mean_turnaround_s",
            "area_weighted_response_s",
        )
    }


def parse_raps_log(text: str) -> dict:
    """RAPS's figures from its printed report and ``/usr/bin/time -v`` (missing ones are absent)."""
    patterns = {
        "mean_wait_s": r"Average Wait Time:\s*([0-9.]+)",
        "mean_turnaround_s": r"Average Turnaround Time:\s*([0-9.]+)",
        "area_weighted_response_s": r"Area Weighted Avg Response Time:\s*([0-9.]+)",
        "jobs_completed_count": r"Jobs Completed:\s*([0-9]+)",
        "cpu_user_s": r"User time \(seconds\):\s*([0-9.]+)",
        "cpu_sys_s": r"System time \(seconds\):\s*([0-9.]+)",
        "peak_rss_kb": r"Maximum resident set size \(kbytes\):\s*([0-9]+)",
    }
    out = {k: float(m.group(1)) for k, p in patterns.items() if (m := re.search(p, text))}
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\):\s*([0-9:.]+)", text)
    if m:
        parts = [float(x) for x in m.group(1).split(":")]
        out["wall_s"] = sum(v * 60**i for i, v in enumerate(reversed(parts)))
    return out


@benchmark("fleet_raps")
def fleet_raps() -> dict:
    """Ours against RAPS on one SWF trace (see the module docstring); figures only when the inputs are set."""
    trace = os.environ.get("CLUSTERTWIN_RAPS_SWF")
    if not trace or not Path(trace).is_file():
        return {"skipped": "set CLUSTERTWIN_RAPS_SWF to an SWF trace (and CLUSTERTWIN_RAPS_LOG to RAPS's log)"}
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, trace], cwd=root, capture_output=True, text=True, timeout=3600, check=True
    )
    ours = json.loads(done.stdout.strip().splitlines()[-1])
    out = {f"ours_{k}": v for k, v in ours.items()}
    log = os.environ.get("CLUSTERTWIN_RAPS_LOG")
    if log and Path(log).is_file():
        raps = parse_raps_log(Path(log).read_text(errors="replace"))
        out.update({f"raps_{k}": v for k, v in raps.items()})
        for k in ("mean_wait_s", "mean_turnaround_s", "area_weighted_response_s"):
            if k in raps and raps[k] > 0:
                out[f"{k.removesuffix('_s')}_to_raps_ratio"] = ours[k] / raps[k]
        if "wall_s" in raps:
            out["speed_wall_to_raps_ratio"] = raps["wall_s"] / ours["sim_wall_s"]
        if "cpu_user_s" in raps:
            out["speed_cpu_to_raps_ratio"] = (raps["cpu_user_s"] + raps.get("cpu_sys_s", 0.0)) / ours["sim_cpu_s"]
        if "peak_rss_kb" in raps:
            out["memory_to_raps_ratio"] = ours["peak_rss_mb"] / (raps["peak_rss_kb"] / 1024.0)
    return out


@benchmark("fleet_30day")
def fleet_30day(days: float = 30.0) -> dict:
    """30 days of colossus under the default LLM-lab mix with failures, power admission and per-job physics."""
    from ingest.workload import run as wrun
    from twin.fleet.policy import Policy
    from twin.fleet.simulate import SimOptions
    from twin.site.load import load_site

    state = load_site("colossus")
    t0 = time.perf_counter()
    wl = wrun.parse_generate("llm-lab", state.n_gpus, days, 0, state)
    gen_s = time.perf_counter() - t0
    policy = wrun.build_policy(Policy(), wl, None, state)
    t, c = time.perf_counter(), time.process_time()
    rep = wrun.simulate(state, wl, policy, SimOptions(horizon_s=days * 86_400.0, failures=True, seed=0))
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    keys = ("jobs_count", "jobs_completed_count", "mean_wait_s", "allocated_frac", "energy_mwh", "tokens_per_mwh")
    out = {k: rep[k] for k in keys}
    out.update(
        generate_s=gen_s,
        sim_wall_s=wall,
        sim_cpu_s=cpu,
        node_failures_count=rep.get("node_failures_count", 0),
        passes_count=rep.get("passes_count", 0),
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    )
    return out


@benchmark("fleet_pass")
def fleet_pass(pending: int = 10_000, repeat: int = 5) -> dict:
    """One full pass over ``pending`` jobs on a colossus that running 256-GPU jobs fill (the first pass
    at the submission fills the rest of the GPUs; the passes after it are timed)."""
    from ingest.workload import generator
    from twin.fleet.policy import Policy
    from twin.fleet.scheduler import schedule_pass
    from twin.fleet.simulate import FleetSim, SimOptions
    from twin.fleet.topology import fleet_topology
    from twin.fleet.workload import FleetJob, job_table
    from twin.site.load import load_site

    state = load_site("colossus")
    mix, quotas, qos = generator.generate(
        generator.MixSpec(jobs=pending, days=1.0, seed=1, n_pretrain=0, site_gpus=state.n_gpus)
    )
    # each team fills its own nominal quota with 256-GPU jobs (no borrowing, so nothing to reclaim)
    fill = [
        FleetJob(f"fill-{q.team}-{i}", q.team, "filler", 0.0, 256, 86_400.0, 80_000.0, kind="finetune")
        for q in quotas
        for i in range(q.nominal_gpus // 256)
    ]
    pend = [FleetJob(j.job_id, j.team, j.user, 1.0, j.n_gpus, j.wall_s, j.run_s, kind=j.kind) for j in mix]
    policy = Policy(quotas=tuple(quotas), qos=tuple(qos), power="off")
    sim = FleetSim(
        fleet_topology(state), job_table(fill + pend), policy, SimOptions(horizon_s=86_400.0, failures=False)
    )
    sim.run_until(1.0)  # the fillers start at 0, the pending jobs arrive at 1 s
    schedule_pass(sim, 1.0, full=True)  # the first full pass over them (untimed)
    times, started = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        res = schedule_pass(sim, 1.0, full=True)
        times.append(time.perf_counter() - t)
        started += len(res.started)
    return {
        "pending_count": int((sim.run.status == 1).sum()),
        "pass_first_ms": times[0] * 1e3,
        "pass_best_ms": min(times) * 1e3,
        "started_count": started,
    }
