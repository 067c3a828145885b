"""The Slurm source against a real Slurm 22.05 cluster (servers/slurm.py): CLI, Python API, slurmrestd.

What the cluster cannot show without a slurmdbd: QoS names (``--qos`` is accepted but
every job's QoS reads empty), ``sacct``/``sacctmgr`` (accounting storage is disabled; the
jobcomp file stands in for completed jobs), GPUs in ``tres_alloc_str`` (no accounting
TRES: allocated GPUs come from ``gres_detail``).  Those paths are read from Meta's
recorded outputs instead (test_slurm_fixtures.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import pytest
from servers import slurm as peer

from ingest.commands import register
from ingest.sources.inventory import Inventory
from ingest.sources.slurm import SlurmTarget, read_slurm
from twin.site.load import load_site

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def demo_inventory():
    return Inventory.from_site(load_site("demo"))


@pytest.fixture(scope="module")
def snapshot(slurm_cluster, demo_inventory):
    result = read_slurm(SlurmTarget(slurm_conf=str(slurm_cluster.conf)), demo_inventory)
    assert result.ok, result.error
    return result.snapshot


def _job(snapshot, job_id: int):
    return next(j for j in snapshot.jobs if j.job_id == job_id)


def test_running_job_with_gpus_from_gres_on_the_site(slurm_cluster, snapshot, demo_inventory):
    job = _job(snapshot, slurm_cluster.jobs["train"])
    assert (job.state, job.name, job.user, job.account, job.partition) == (
        "running",
        "llm-pretrain",
        "root",
        "team-llm",
        "train",
    )
    assert job.n_nodes_requested == job.n_nodes_allocated == 4
    assert job.n_gpus_requested == job.n_gpus_allocated == 32
    assert job.time_limit_s == 120 * 60 and job.started_at is not None
    assert job.expected_end_at is not None and (job.expected_end_at - job.started_at).total_seconds() == 7200
    assert len(job.node_ids) == 4 and all(n.startswith("h1-r01-k0") for n in job.node_names)
    assert list(job.node_ids) == [demo_inventory.node_id(n) for n in job.node_names]
    assert job.qos == ""  # without slurmdbd Slurm keeps no QoS for a job (--qos=high was accepted)


def test_dependency_pending_reason(slurm_cluster, snapshot):
    job = _job(snapshot, slurm_cluster.jobs["dep"])
    assert (job.state, job.reason) == ("pending", "Dependency")
    assert job.depends_on == (slurm_cluster.jobs["train"],)
    assert job.n_gpus_requested == 4 and job.n_gpus_allocated == 0 and job.node_ids == ()


def test_job_too_big_for_free_nodes_waits_for_resources(slurm_cluster, snapshot):
    job = _job(snapshot, slurm_cluster.jobs["big"])
    assert job.state == "pending" and job.reason in ("Resources", "Priority")
    assert job.n_gpus_requested == 24 * 8
    assert job.expected_start_at is not None  # the backfill scheduler's estimate (bf_interval=1)


def test_array_tasks_running_and_the_rest_held_by_the_task_limit(slurm_cluster, snapshot):
    tasks = [j for j in snapshot.jobs if j.array_job_id == slurm_cluster.jobs["array"]]
    running = sorted(j.array_task_id for j in tasks if j.state == "running")
    held = [j for j in tasks if j.state == "pending"]
    assert len(running) == 2 and all(j.n_gpus_allocated == 2 for j in tasks if j.state == "running")
    assert len(held) == 1 and held[0].reason == "JobArrayTaskLimit" and held[0].array_tasks.endswith("%2")
    assert held[0].display_id == f"{slurm_cluster.jobs['array']}_[{held[0].array_tasks}]"


def test_finished_jobs_from_the_jobcomp_file_or_the_queue(slurm_cluster, snapshot):
    assert _job(snapshot, slurm_cluster.jobs["done"]).state == "completed"
    failed = _job(snapshot, slurm_cluster.jobs["fail"])
    assert failed.state == "failed" and failed.ended_at is not None


def test_drained_and_down_nodes_with_reason_time_and_user(snapshot):
    nodes = {n.name: n for n in snapshot.nodes}
    drained, down = nodes[peer.DRAINED_NODE], nodes[peer.DOWN_NODE]
    assert (drained.state, drained.reason, drained.reason_set_by) == ("drained", peer.DRAIN_REASON, "root")
    assert (down.state, down.reason) == ("down", peer.DOWN_REASON)
    assert drained.reason_set_at is not None and drained.schedulable_flag == 0 and down.schedulable_flag == 0
    assert all(n.n_gpus_configured == 8 and n.gpu_type == "h100" for n in snapshot.nodes)


def test_gpu_counts_from_gres_match_the_running_jobs(slurm_cluster, snapshot):
    on_site = {n.name: n for n in snapshot.nodes}
    for job in (j for j in snapshot.jobs if j.state == "running" and j.job_id != slurm_cluster.jobs["spare"]):
        assert sum(on_site[n].n_gpus_allocated for n in job.node_names) >= job.n_gpus_allocated
    assert sum(n.n_gpus_allocated for n in snapshot.nodes) == sum(
        j.n_gpus_allocated for j in snapshot.jobs if j.state == "running" and j.node_ids
    )


def test_unknown_hosts_counted_and_skipped(slurm_cluster, snapshot):
    assert {n.name for n in snapshot.nodes} == set(peer.TRAIN_NODES + peer.DEBUG_NODES)
    assert snapshot.counts.n_unknown_hosts == 2 and sorted(snapshot.counts.unknown_host_names) == peer.SPARE_NODES
    spare_job = _job(snapshot, slurm_cluster.jobs["spare"])
    assert spare_job.state == "running" and spare_job.node_names == ("spare1",) and spare_job.node_ids == ()


def test_partitions_and_accounts(snapshot):
    parts = {p.name: p for p in snapshot.partitions}
    assert parts["train"].default_flag == 1 and parts["train"].n_nodes == 24 and parts["train"].n_gpus == 192
    assert parts["debug"].max_time_s == 3600 and parts["debug"].priority_tier == 2
    accounts = {a.name: a.users for a in snapshot.accounts}
    assert accounts == {"team-infra": ("root",), "team-llm": ("root",), "team-vision": ("root",)}


def test_scontrol_node_text_gives_the_same_node_states(slurm_cluster, snapshot, demo_inventory):
    target = SlurmTarget(slurm_conf=str(slurm_cluster.conf), nodes_from="scontrol")
    result = read_slurm(target, demo_inventory)
    assert result.ok, result.error
    text_nodes = {n.name: (n.state, n.reason, n.reason_set_by, n.n_gpus_configured) for n in result.snapshot.nodes}
    json_nodes = {n.name: (n.state, n.reason, n.reason_set_by, n.n_gpus_configured) for n in snapshot.nodes}
    assert text_nodes == json_nodes


def _cli(argv, capsys):
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_json_jobs_nodes_and_counts_by_state(slurm_cluster, capsys):
    argv = ["ingest", "once", "--source", "slurm", "--slurm-conf", str(slurm_cluster.conf), "--site", "demo", "--json"]
    code, out, err = _cli(argv, capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["ok"] and doc["slurm_version"].startswith("22.05")
    by_id = {j["job_id"]: j for j in doc["jobs"]}
    assert by_id[slurm_cluster.jobs["dep"]]["state"] == "pending"
    assert by_id[slurm_cluster.jobs["dep"]]["reason"] == "Dependency"
    nodes = {n["name"]: n for n in doc["nodes"]}
    assert nodes[peer.DRAINED_NODE]["state"] == "drained" and nodes[peer.DRAINED_NODE]["reason"] == peer.DRAIN_REASON
    counts = doc["counts"]
    assert counts["nodes_by_state"]["drained"] == 1 and counts["nodes_by_state"]["down"] == 1
    assert sum(counts["jobs_by_state"].values()) == len(doc["jobs"]) == counts["n_jobs"]
    assert counts["n_unknown_hosts"] == 2 and counts["n_nodes"] == 30
    assert by_id[slurm_cluster.jobs["train"]]["started_at"].endswith("Z")


def test_cli_in_a_subprocess_without_site(slurm_cluster):
    """The installed command, as an operator runs it: every Slurm node listed, node ids -1."""
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "twin.cli",
            "ingest",
            "once",
            "--source",
            "slurm",
            "--slurm-conf",
            str(slurm_cluster.conf),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    node_lines = [line for line in r.stdout.splitlines() if line.startswith("node ")]
    assert len(node_lines) == len(peer.NODES)
    assert '"n_unknown_hosts": 0' in r.stderr


def test_controller_down_fails_in_one_line_within_the_deadline(slurm_cluster, tmp_path):
    """A slurm.conf naming a port where no controller listens: one line, within the command deadline."""
    conf = tmp_path / "slurm.conf"
    port = peer._free_port_block(1)
    conf.write_text(
        slurm_cluster.conf.read_text().replace(f"SlurmctldPort={slurm_cluster.ctld_port}", f"SlurmctldPort={port}")
    )
    t0 = time.monotonic()
    result = read_slurm(SlurmTarget(slurm_conf=str(conf), timeout_s=20.0, accounting="none"))
    assert not result.ok and time.monotonic() - t0 < 60
    assert result.error.startswith("squeue JSON: Slurm answered with an error") and "\n" not in result.error
    assert "controller unreachable" in result.warnings[-1]  # no further commands wait on a dead controller
    assert result.snapshot.jobs == [] and result.snapshot.nodes == []
