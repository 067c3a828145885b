"""Bad Slurm input against the real cluster: one line each, in bounded time and memory, the rest kept.

A hung or flooding ``squeue`` is a script put first on ``PATH`` (the real ``sinfo`` and
``scontrol`` still answer, so the nodes of the same read are kept); slurmrestd is the
real one on a Unix socket, and the live poller reads the real controller, then a dead one.
"""

from __future__ import annotations

import os
import time
import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest
from servers import slurm as peer
from servers.readiness import load_scaled_s

from ingest.live.runtime import build_hub
from ingest.sources.inventory import Inventory
from ingest.sources.slurm import SlurmTarget, read_slurm
from twin.site.load import load_site

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module")
def inventory():
    return Inventory.from_site(load_site("demo"))


@pytest.fixture
def fake_squeue(tmp_path, monkeypatch):
    """``fake_squeue(script)``: a ``squeue`` first on PATH running ``script`` (sh); returns its pid file."""

    def make(script: str):
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        pidfile = tmp_path / "squeue.pid"
        (bindir / "squeue").write_text(f"#!/bin/sh\necho $$ > {pidfile}\n{script}\n")
        (bindir / "squeue").chmod(0o755)
        monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
        return pidfile

    return make


def _gone(pidfile) -> bool:
    return not os.path.exists(f"/proc/{int(pidfile.read_text())}")


def test_hung_squeue_is_killed_at_the_deadline_and_the_nodes_kept(slurm_cluster, fake_squeue, inventory):
    pidfile = fake_squeue("exec sleep 600")
    t0 = time.monotonic()
    result = read_slurm(SlurmTarget(slurm_conf=str(slurm_cluster.conf), timeout_s=2.0, accounting="none"), inventory)
    elapsed = time.monotonic() - t0
    assert not result.ok and result.error == "squeue --all --json: no complete answer within 2 s; killed"
    assert result.parts_s["squeue"] < 2.0 + load_scaled_s(1.0) and elapsed < load_scaled_s(15.0)
    assert len(result.snapshot.nodes) == 30 and result.snapshot.jobs == []  # the rest of the read is kept
    assert _gone(pidfile)


def test_a_100_mb_answer_is_cut_at_the_cap_in_bounded_memory(slurm_cluster, fake_squeue, inventory):
    pidfile = fake_squeue('yes \'{"job_id": 1, "name": "padding-padding-padding"},\' | head -c 104857600')
    cap = 8 * 2**20
    tracemalloc.start()
    try:
        result = read_slurm(
            SlurmTarget(slurm_conf=str(slurm_cluster.conf), timeout_s=30.0, max_bytes=cap, accounting="none"), inventory
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.error == "squeue --all --json: output exceeded the 8 MiB cap; killed"
    assert peak < 4 * cap  # never the 100 MB
    assert len(result.snapshot.nodes) == 30
    assert _gone(pidfile)


@pytest.mark.parametrize(
    "script, message",
    [
        ("echo 'Segmentation fault'", "squeue: not JSON: "),
        (
            "echo 'squeue: error: Invalid user' >&2; exit 1",
            "squeue --all --json: exited 1: squeue: error: Invalid user",
        ),
    ],
)
def test_broken_squeue_output_is_one_line(slurm_cluster, fake_squeue, script, message):
    fake_squeue(script)
    result = read_slurm(SlurmTarget(slurm_conf=str(slurm_cluster.conf), accounting="none"))
    assert not result.ok and result.error.startswith(message) and "\n" not in result.error
    assert len(result.snapshot.nodes) == len(peer.NODES)


def test_missing_slurm_clients_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = read_slurm(SlurmTarget(accounting="none"))
    assert result.error.startswith("squeue --all --json: squeue not found on PATH")


@pytest.fixture(scope="module")
def slurmrestd(slurm_cluster):
    restd = peer.start_restd(slurm_cluster)
    yield restd
    restd.stop()


def test_slurmrestd_reads_the_same_cluster(slurm_cluster, slurmrestd, inventory):
    rest = read_slurm(SlurmTarget.from_spec(slurmrestd.url), inventory)
    assert rest.ok, rest.error
    assert rest.snapshot.slurm_version.startswith("22.05")
    cli = read_slurm(SlurmTarget(slurm_conf=str(slurm_cluster.conf), accounting="none"), inventory)
    key = lambda j: (j.job_id, j.state, j.reason, j.n_gpus_requested, j.node_ids)  # noqa: E731
    assert sorted(map(key, rest.snapshot.jobs)) == sorted(map(key, cli.snapshot.jobs))
    nodes = lambda s: sorted((n.name, n.state, n.reason, n.n_gpus_allocated) for n in s.nodes)  # noqa: E731
    assert nodes(rest.snapshot) == nodes(cli.snapshot)
    assert {p.name for p in rest.snapshot.partitions} == {"train", "debug"}


def test_slurmrestd_socket_gone_is_one_line(tmp_path):
    url = "http+unix://" + str(tmp_path / "none.sock").replace("/", "%2F")
    t0 = time.monotonic()
    result = read_slurm(SlurmTarget.from_spec(url, timeout_s=2.0))
    assert not result.ok and "connection failed" in result.error and "\n" not in result.error
    assert time.monotonic() - t0 < load_scaled_s(10.0)


def test_live_poller_keeps_the_snapshot_then_goes_stale_when_the_controller_dies(slurm_cluster, tmp_path):
    hub = build_hub("demo", f"sqlite:///{tmp_path / 'slurm.db'}", sources=(f"slurm={slurm_cluster.conf}",))
    poller = hub.ticker.pollers[0]
    assert (poller.name, poller.interval_s) == ("slurm", 10.0)
    poller.run(hub.ticker.buffer)
    assert poller.failures == 0 and poller.latest is not None
    assert poller.latest.nodes_by_state()["drained"] == 1 and len(poller.latest.jobs) >= 9
    now = datetime.now(UTC)
    hub.step(now)
    assert not [a for a in hub.view.alerts() if a["entity_kind"] == "source"]  # fresh
    hub.step(now + timedelta(seconds=5))  # the hub charges the jobs holding GPUs for the 5 s tick
    owned_gpus = int((poller.ledger.owners.gpu_row >= 0).sum())
    assert owned_gpus > 0 and poller.ledger.usage().gpu_s.sum() == pytest.approx(5.0 * owned_gpus)
    # the fleet page reads the scheduler's own queue, job for job
    from ingest.live.fleet_slurm import PENDING_STATES, RUNNING_STATES

    frame = hub.view.fleet().frame()
    queued = {j.display_id for j in poller.latest.jobs if j.state in RUNNING_STATES | PENDING_STATES}
    assert frame.source == "slurm" and len(queued) >= 2 and set(frame.jobs["job_id"]) == queued
    assert frame.count("running") == sum(j.state in RUNNING_STATES for j in poller.latest.jobs)
    # the same poller, its controller gone (a configuration naming a port nobody listens on)
    dead = tmp_path / "dead.conf"
    port = peer._free_port_block(1)
    dead.write_text(
        slurm_cluster.conf.read_text().replace(f"SlurmctldPort={slurm_cluster.ctld_port}", f"SlurmctldPort={port}")
    )
    hub_dead = build_hub("demo", f"sqlite:///{tmp_path / 'dead.db'}", sources=(f"slurm={dead}",))
    for _ in range(2):
        hub_dead.ticker.pollers[0].run(hub_dead.ticker.buffer)
    assert hub_dead.ticker.pollers[0].failures == 2 and hub_dead.ticker.pollers[0].latest is None
    hub_dead.step(now)
    hub_dead.step(now + timedelta(seconds=1))
    stale = [a for a in hub_dead.view.alerts() if a["entity_kind"] == "source"]
    assert len(stale) == 1 and stale[0]["entity_name"] == "slurm" and stale[0]["message"] == "no reading yet"
