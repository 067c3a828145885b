"""The twin's start-time predictions against what a real Slurm 22.05 scheduler did.

The cluster and workload are :mod:`servers.slurm_predict`: 20 nodes of 8 GPUs in two
partitions, ``SchedulerParameters=bf_interval=1,bf_resolution=1``, and 23 jobs (28 with
the array's tasks) of 3–12 s that become schedulable at one instant.  What each job
exercises (its ``case``):

* **mixed sizes** — 1, 2, 3, 4, 6, 8 and 15 nodes, half a node (``half-1``/``half-2``
  share one node), and ``--exclusive`` (``excl``: a whole node for 2 GPUs);
* **a backfill opportunity** — ``pre-b`` (6 nodes) and ``wide`` (the whole partition)
  are blocked at the release; the 1-minute jobs ``eval-*`` and ``bf-*`` of lower
  priority start around them, while ``tail-*`` (3 nodes, a 10-minute limit) may not:
  their limit would delay the reserved jobs, so they wait though nodes are free (the
  twin must plan with limits, as Slurm does, not with the run times it expects);
* **a priority inversion** — ``urgent`` is submitted last with ``--nice=-3000`` and
  starts first, ahead of every job submitted before it; ``wide`` (``--nice=3000``)
  ranks below smaller jobs although the job-size factor favours it;
* **a quota limit** — without slurmdbd Slurm 22.05 enforces no QoS or association
  limits, so the quota is what it does enforce: team-vision's own partition of 4 nodes
  (``vis-*``, the ``sweep`` array) is its node quota, and its jobs queue there while
  ``train`` has free nodes; the partition's ``MaxNodes=2`` and ``MaxTime=5`` hold
  ``vis-big`` (3 nodes) and ``vis-long`` (a 10-minute limit) for ever
  (``PartitionNodeLimit``, ``PartitionTimeLimit``), and the array's ``%2`` throttle lets
  two of its six tasks run at a time;
* **dependencies** — ``dep-eval`` waits for ``pre-a`` (``afterok``), ``vis-after`` in
  partition ``vision`` for ``pre-b`` in ``train`` (across partition groups);
* a drained node (``h1-r01-k02-n7``) the twin must not plan on.

Every job name ran once before (``run_history``): the twin's run-time estimates are the
user's last runs of the same name ([Tsafrir-TPDS07]).  After the release the fixture waits
on the controller's state (every pending job has its reason and, where Slurm gives one,
its backfill estimate), reads the cluster (the Slurm source), takes ``squeue --start``,
predicts, and records the truth: start times from the jobcomp file (whole seconds, so
mid-second) and, as a check on them, when ``squeue`` polled every 0.2 s first showed each
job started.  Order accuracy is Kendall-style (the share of job pairs in the right
order); start error is |predicted − true|.  Targets: order ≥ 90 %, median error ≤ 2 s.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import pytest
from servers import slurm as peer
from servers import slurm_predict as work
from servers import slurm_readonly
from servers.readiness import load_scaled_s, poll_until

from ingest.live.readings import ReadingsBuffer
from ingest.live.slurm_poller import make_slurm_poller
from ingest.slurm.predict import Prediction, order_accuracy, predict, start_errors_s
from ingest.slurm.runtime import estimator
from ingest.sources.inventory import Inventory
from ingest.sources.slurm import SlurmTarget, read_slurm
from ingest.sources.slurm_records import SlurmSnapshot
from twin.fleet.topology import fleet_topology
from twin.site.load import load_site

pytestmark = pytest.mark.slurm
ORDER_TARGET_FRAC = 0.90
MEDIAN_TARGET_S = 2.0
PLANNED_REASONS = ("Dependency", "PartitionNodeLimit", "PartitionTimeLimit", "JobArrayTaskLimit")
TRUNC_SLACK_S = 0.6  # a start logged as second S happened in [S, S+1): polled no earlier than S + 0.5 − 0.5


@dataclass
class Observation:
    ids: dict[str, str]  # workload key → Slurm display id
    snapshot: SlurmSnapshot
    twin: Prediction  # history run times, method auto (the event simulation here)
    limit: Prediction  # time limits only, simulated
    plan: Prediction  # history run times, the one-pass plan
    squeue_start: dict[str, float]  # squeue --start at the read [Unix s]
    truth: dict[str, float]  # jobcomp start [Unix s, mid-second]
    first_seen: dict[str, float]  # squeue polling
    cli: dict  # ingest once --source slurm --predict --json, run at the same state
    calls: list[list[str]]  # every Slurm client call the twin made (logged by shims)
    live: object  # the live Slurm poller after one poll


def _pending_planned(c: peer.SlurmCluster) -> bool:
    """Every pending job has its reason, and its backfill estimate unless it has none to have."""
    rows = [line.split("|") for line in c.run("squeue", "--all", "-h", "-t", "PD", "-o", "%i|%r|%S").stdout.split()]
    if not rows:
        return False
    return all(r[1] not in ("None", "PartitionDown") for r in rows) and all(
        r[2] not in ("N/A", "Unknown") or r[1] in PLANNED_REASONS for r in rows
    )


def _squeue_start(c: peer.SlurmCluster) -> dict[str, float]:
    from datetime import UTC, datetime

    out = {}
    for line in c.run("squeue", "--start", "--all", "-h", "-o", "%i|%S").stdout.split():
        key, _, start = line.partition("|")
        if start[:1].isdigit():
            out[key] = datetime.fromisoformat(start).replace(tzinfo=UTC).timestamp()
    return out


def _cli(c: peer.SlurmCluster, shims) -> dict:
    argv = [sys.executable, "-m", "twin.cli", "ingest", "once", "--source", "slurm", "--slurm-conf", str(c.conf)]
    argv += ["--site", "demo", "--predict", "--json"]
    env = {**c.env, "PATH": f"{shims}{os.pathsep}{c.env.get('PATH', os.environ['PATH'])}"}
    r = subprocess.run(argv, capture_output=True, text=True, timeout=load_scaled_s(60.0), env=env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _read_through_shims(c: peer.SlurmCluster, shims, inventory, site):
    """The Slurm source's read, and one live poll, with the logging shims first on PATH.

    The fixture's own calls (sbatch, scontrol update) are not logged.  Returns the read and
    the live poller after its poll.
    """
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{shims}{os.pathsep}{old}"
    try:
        result = read_slurm(SlurmTarget(slurm_conf=str(c.conf)), inventory)
        poller = make_slurm_poller(str(c.conf), inventory)
        poller.run(ReadingsBuffer(site))
        return result, poller
    finally:
        os.environ["PATH"] = old


@pytest.fixture(scope="module")
def observation(tmp_path_factory):
    site = load_site("demo")
    topo, inventory = fleet_topology(site), Inventory.from_site(site)
    c = peer.start(tmp_path_factory.mktemp("slurm-predict"), work.LAYOUT)
    poller = work.StartPoller(c)
    try:
        work.run_history(c)
        ids = work.submit_held(c)
        poller.start()
        work.release(c)
        if not poll_until(lambda: _pending_planned(c), 30.0, interval_s=0.05):
            raise RuntimeError(f"the scheduler did not plan the queue: {c.squeue('%i %T %r %S')}")
        log = c.work / "slurm-calls.log"
        shims = slurm_readonly.install_shims(c.work / "shims", log)
        result, live = _read_through_shims(c, shims, inventory, site)
        assert result.ok, result.error
        squeue_start = _squeue_start(c)
        cli = _cli(c, shims)
        snap = result.snapshot
        twin = predict(snap, topo)
        limit = predict(snap, topo, run_times=estimator(snap.jobs, "limit"), method="simulate")
        plan = predict(snap, topo, method="plan")
        expected = [ids[k] for k in ids if k not in work.NEVER and k != "sweep"]
        expected += [f"{ids['sweep']}_{t}" for t in range(6)]

        def all_started():
            return all(k in work.jobcomp_starts(c.work / "jobcomp.txt") for k in expected)

        if not poll_until(all_started, 120.0, interval_s=0.5):
            raise RuntimeError(f"the workload did not run: {c.squeue('%i %T %r')}")
        poller.stop()
        truth = {k: v for k, v in work.jobcomp_starts(c.work / "jobcomp.txt").items() if k in expected}
        calls = slurm_readonly.logged_calls(log)
        obs = Observation(ids, snap, twin, limit, plan, squeue_start, truth, dict(poller.first_seen), cli, calls, live)
        yield obs
    finally:
        if poller.is_alive():
            poller.stop()
        c.stop()


def _times(p: Prediction) -> dict[str, float]:
    return {j.key: j.predicted_start_at.timestamp() for j in p.jobs if j.predicted_start_at is not None}


def _figures(predicted: dict[str, float], truth: dict[str, float]) -> dict:
    err = start_errors_s(predicted, truth)
    return {
        "order_frac": order_accuracy(predicted, truth),
        "n_jobs": int(err.size),
        "median_error_s": float(np.median(err)) if err.size else math.nan,
        "p90_error_s": float(np.percentile(err, 90)) if err.size else math.nan,
    }


def _pending_truth(obs: Observation) -> dict[str, float]:
    """Truth of the jobs that were pending at the read (the ones predicted)."""
    pending = {j.key for j in obs.twin.jobs}
    return {k: v for k, v in obs.truth.items() if k in pending}


def test_twin_predicts_start_order_and_times_within_targets(observation):
    obs = observation
    truth = _pending_truth(obs)
    rows = {
        "twin (history, simulated)": _figures(_times(obs.twin), truth),
        "twin (time limits, simulated)": _figures(_times(obs.limit), truth),
        "twin (history, one-pass plan)": _figures(_times(obs.plan), truth),
        "squeue --start": _figures(obs.squeue_start, truth),
    }
    now = obs.twin.now.timestamp()
    print(f"\n{len(truth)} jobs pending at the read; start errors in seconds")
    for name, f in rows.items():
        print(
            f"  {name:<32} order {f['order_frac']:.3f}  n {f['n_jobs']:>2}  median {f['median_error_s']:7.1f}"
            f"  p90 {f['p90_error_s']:7.1f}"
        )
    names = {v: k for k, v in obs.ids.items()}
    for j in obs.twin.jobs:
        t = truth.get(j.key)
        pred = j.predicted_start_at.timestamp() - now if j.predicted_start_at else math.nan
        print(
            f"  {names.get(j.key, names.get(j.key.split('_')[0], '?')):<10} {j.key:<6} {j.reason:<20} "
            f"true {t - now if t else math.nan:6.1f}  twin {pred:6.1f}  slurm "
            f"{obs.squeue_start.get(j.key, math.nan) - now:6.1f}"
        )
    assert obs.twin.sim_counts["simulated_groups_count"] == 2  # both partition groups were simulated
    twin = rows["twin (history, simulated)"]
    assert twin["n_jobs"] >= 20
    assert twin["order_frac"] >= ORDER_TARGET_FRAC
    assert twin["median_error_s"] <= MEDIAN_TARGET_S
    assert twin["median_error_s"] < rows["squeue --start"]["median_error_s"]


def test_jobs_that_cannot_start_are_predicted_never(observation):
    obs = observation
    by_key = {j.key: j for j in obs.twin.jobs}
    for key, reason in (("vis-big", "PartitionNodeLimit"), ("vis-long", "PartitionTimeLimit")):
        job = by_key[obs.ids[key]]
        assert job.predicted_start_at is None and job.why_not == reason
        assert obs.ids[key] not in obs.truth


def test_the_cases_happened_in_slurm(observation):
    """The truth shows each case the workload is built for (else the figures would not test it)."""
    obs, t = observation, observation.truth
    ids = obs.ids
    train = [k for k in ids if not k.startswith(("vis", "sweep"))]
    # priority inversion: the last submission started first in its partition
    assert all(t[ids["urgent"]] <= t[ids[k]] for k in train if ids[k] in t)
    # backfill: lower-priority short jobs started before wide, which outranks them
    assert any(t[ids[k]] < t[ids["wide"]] for k in ("eval-1", "eval-2", "eval-3", "bf-1", "bf-2"))
    # no backfill for the long limits: both tails started after wide
    assert t[ids["tail-1"]] > t[ids["wide"]] and t[ids["tail-2"]] > t[ids["wide"]]
    # dependencies: after the job they wait on
    assert t[ids["dep-eval"]] > t[ids["pre-a"]] and t[ids["vis-after"]] > t[ids["pre-b"]]
    # the throttle: never more than two sweep tasks started within one task's run
    sweep = sorted(v for k, v in t.items() if k.startswith(f"{ids['sweep']}_"))
    assert len(sweep) == 6 and all(b - a >= 3.0 for a, b in zip(sweep, sweep[2:]))


def test_truth_from_jobcomp_agrees_with_squeue_polling(observation):
    obs = observation
    late = {k: obs.first_seen[k] - v for k, v in obs.truth.items() if k in obs.first_seen}
    assert len(late) >= len(obs.truth) - 2  # a job shorter than a poll may be missed
    # seen no earlier than its start second, and within a few polls of it
    assert all(-TRUNC_SLACK_S <= d <= load_scaled_s(3.0) for d in late.values()), late


def test_predict_cli_prints_predictions_beside_slurms_estimates(observation):
    doc = observation.cli
    pred = doc["prediction"]
    assert pred["scheduler"]["bf_interval_s"] == 1.0 and pred["scheduler"]["backfill_flag"] == 1
    assert pred["n_jobs_predicted"] >= 5 and pred["n_jobs_never"] >= 2  # vis-big and vis-long never start
    rows = pred["jobs"]
    assert all("expected_start_at" in r and "predicted_start_at" in r for r in rows)
    orders = [r["predicted_order"] for r in rows if r["predicted_order"] is not None]
    assert orders == list(range(1, len(orders) + 1))
    assert any(r["expected_start_at"] for r in rows)  # Slurm's own estimates, beside the twin's


def test_the_twin_only_ran_read_only_slurm_commands(observation):
    """The source's read and the CLI's read and prediction, through logging shims: no call writes."""
    calls = observation.calls
    names = {argv[0] for argv in calls}
    assert {"squeue", "sinfo", "scontrol"} <= names  # the shims saw the reads
    assert [argv for argv in calls if not slurm_readonly.is_read_only(argv)] == []


def test_the_live_poll_feeds_attribution_per_job_and_team(observation):
    """The poller's ledger holds the running jobs' GPUs; two ticks charge them GPU-hours and energy."""
    from datetime import timedelta

    obs = observation
    ledger = obs.live.ledger
    assert obs.live.failures == 0 and ledger.owners is not None
    owners = ledger.owners
    running = {j.display_id: j for j in obs.live.latest.jobs if j.state == "running" and j.n_gpus_allocated}
    assert set(owners.job_ids) == set(running)
    for row, key in enumerate(owners.job_ids):  # each job holds exactly the GPUs Slurm gave it
        assert int((owners.gpu_row == row).sum()) == running[key].n_gpus_allocated
    n = owners.gpu_row.size
    power, state = np.full(n, 400.0), np.zeros(n, np.int8)
    t0 = obs.live.latest.read_at
    ledger.observe(t0, power, state)
    ledger.observe(t0 + timedelta(seconds=10), power, state)
    report = ledger.report()
    jobs = {r["job_id"]: r for r in report["jobs"]}
    for key, job in running.items():
        assert jobs[key]["allocated_gpu_h"] == pytest.approx(job.n_gpus_allocated * 10 / 3600)
        assert jobs[key]["gpu_energy_kwh"] == pytest.approx(job.n_gpus_allocated * 400 * 10 / 3.6e6)
    teams = {r["team"] for r in report["teams"]}
    assert teams == {j.account for j in running.values()}
    json.dumps(report, allow_nan=False)
