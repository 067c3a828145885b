"""A real Slurm 22.05 cluster on 127.0.0.1: one slurmctld and tens of slurmd, each node 8 fake GPUs.

Debian's ``slurmctld``/``slurmd`` are built with multiple-slurmd support: every node is
its own ``slurmd -N NAME`` process on its own port.  ``auth/none`` (no munge on
loopback), ``jobcomp/filetxt`` (completed jobs without slurmdbd), no accounting storage,
``SchedulerParameters=bf_interval=1`` (backfill every second), and GRES ``gpu:h100:8``
on device files that exist on every Linux host (``/dev/tty[0-7]``: a GRES without
``File=`` registers no GPU).  Node names are the demo site's hosts (racks H1-R01-K01…K04),
plus two spares the site does not know.

Every daemon runs in the foreground (``-D``) as a child of the test process, so the
fixture knows each PID.  :meth:`SlurmCluster.stop` cancels the jobs, waits until no job
runs, sends ``scontrol shutdown``, waits for every daemon, kills by PID what is left
(daemons, and job steps found by this cluster's ``SLURM_CONF`` in their environment),
and checks that nothing of this cluster is still running.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .readiness import listening_ports, load_scaled_s, poll_until

TRAIN_NODES = [f"h1-r01-k0{k}-n{n}" for k in (1, 2, 3) for n in range(8)]  # 24 nodes, partition train
DEBUG_NODES = [f"h1-r01-k04-n{n}" for n in range(6)]  # partition debug
SPARE_NODES = ["spare1", "spare2"]  # in debug, unknown to the demo site
NODES = TRAIN_NODES + DEBUG_NODES + SPARE_NODES
DRAINED_NODE, DRAIN_REASON = "h1-r01-k04-n3", "xid 79 on gpu3"
DOWN_NODE, DOWN_REASON = "h1-r01-k04-n4", "bmc unreachable"
GPUS_PER_NODE = 8
START_BASE_S = 30.0
BINARIES = ("slurmctld", "slurmd", "squeue", "sinfo", "scontrol", "sbatch", "scancel")


def _free_port_block(n: int) -> int:
    """A first port of ``n`` consecutive ports that bind on 127.0.0.1 now (checked again after start)."""
    for _ in range(200):
        base = random.randrange(20000, 60000 - n)
        socks = []
        try:
            for p in range(base, base + n):
                s = socket.socket()
                s.bind(("127.0.0.1", p))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no block of {n} free ports on 127.0.0.1")


@dataclass(frozen=True)
class Layout:
    """The nodes and partitions of a cluster, and configuration lines beside the common ones."""

    nodes: tuple[str, ...]
    partitions: tuple[str, ...]  # PartitionName=… lines
    extra: tuple[str, ...] = ()  # more slurm.conf lines (priority weights, scheduler parameters …)
    scheduler_parameters: str = "bf_interval=1"


DEFAULT_LAYOUT = Layout(
    nodes=tuple(NODES),
    partitions=(
        f"PartitionName=train Nodes={','.join(TRAIN_NODES)} Default=YES MaxTime=INFINITE State=UP",
        f"PartitionName=debug Nodes={','.join(DEBUG_NODES + SPARE_NODES)} MaxTime=60 State=UP PriorityTier=2",
    ),
)


def slurm_conf(work: Path, ctld_port: int, node_base_port: int, layout: Layout = DEFAULT_LAYOUT) -> str:
    nodes = []
    for i, name in enumerate(layout.nodes):
        nodes.append(
            f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={node_base_port + i} "
            f"CPUs=8 RealMemory=4000 Gres=gpu:h100:{GPUS_PER_NODE} State=UNKNOWN"
        )
    return "\n".join(
        [
            "ClusterName=ct",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={work}/state",
            f"SlurmdSpoolDir={work}/spool/%n",
            f"SlurmctldPidFile={work}/slurmctld.pid",
            f"SlurmdPidFile={work}/slurmd.%n.pid",
            f"SlurmctldLogFile={work}/log/slurmctld.log",
            f"SlurmdLogFile={work}/log/%n.log",
            "AuthType=auth/none",
            "CredType=cred/none",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SchedulerType=sched/backfill",
            f"SchedulerParameters={layout.scheduler_parameters}",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            "MpiDefault=none",
            "MinJobAge=600",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={work}/jobcomp.txt",
            "AccountingStorageType=accounting_storage/none",
            "PriorityType=priority/multifactor",
            "GresTypes=gpu",
            *layout.extra,
            *nodes,
            *layout.partitions,
            "",
        ]
    )


@dataclass
class SlurmCluster:
    work: Path
    conf: Path
    ctld_port: int
    layout: Layout = DEFAULT_LAYOUT
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf), "TZ": "UTC"}

    def run(self, *argv: str, check: bool = True, timeout_s: float = 30.0) -> subprocess.CompletedProcess:
        r = subprocess.run(list(argv), env=self.env, capture_output=True, text=True, timeout=load_scaled_s(timeout_s))
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip() or r.stdout.strip()}")
        return r

    def sbatch(self, key: str, *options: str, command: str = "sleep 3600") -> int:
        out = self.run("sbatch", "--parsable", f"--chdir={self.work}", "-o", "/dev/null", *options, "--wrap", command)
        self.jobs[key] = int(out.stdout.strip().split(";")[0])
        return self.jobs[key]

    def squeue(self, fmt: str) -> list[str]:
        return self.run("squeue", "--all", "-t", "all", "-h", "-o", fmt).stdout.split("\n")

    def node_states(self) -> dict[str, str]:
        lines = self.run("sinfo", "--all", "-N", "-h", "-o", "%N %T", check=False).stdout.splitlines()
        return dict(line.split(maxsplit=1) for line in lines if " " in line)

    def log_tail(self) -> str:
        log = self.work / "log" / "slurmctld.log"
        return log.read_text(errors="replace")[-3000:] if log.exists() else "(no slurmctld log)"

    # --- stopping ----------------------------------------------------------------------
    def _steps_of_this_cluster(self) -> list[int]:
        """PIDs of processes (job steps) whose environment names this cluster's slurm.conf."""
        mark = f"SLURM_CONF={self.conf}".encode()
        pids = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                if mark in (d / "environ").read_bytes().split(b"\0"):
                    pids.append(int(d.name))
            except OSError:
                continue
        return pids

    def stop(self) -> None:
        if self.procs.get("slurmctld") is not None and self.procs["slurmctld"].poll() is None:
            self.run("scancel", "--full", "--user=root", check=False)
            active = ("squeue", "--all", "-h", "-t", "pending,running,completing,configuring,suspended", "-o", "%i")
            poll_until(lambda: not self.run(*active, check=False).stdout.strip(), 20.0)
            self.run("scontrol", "shutdown", check=False)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=load_scaled_s(20.0))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for pid in self._steps_of_this_cluster():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        left = [p.pid for p in self.procs.values() if p.poll() is None] + self._steps_of_this_cluster()
        if left:
            raise RuntimeError(f"slurm processes of {self.work} still running: {left}")


def _check_binaries() -> None:
    missing = [b for b in BINARIES if shutil.which(b) is None]
    if missing:
        raise RuntimeError(
            f"{', '.join(missing)} not found on PATH: install the Debian packages slurmctld, slurmd and "
            "slurm-client (make test does)"
        )


def start(work: Path, layout: Layout = DEFAULT_LAYOUT) -> SlurmCluster:
    """Write the configuration, start the controller and every node, and wait until all nodes are idle."""
    _check_binaries()
    for sub in ("state", "spool", "log"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    base = _free_port_block(len(layout.nodes) + 1)
    conf = work / "slurm.conf"
    conf.write_text(slurm_conf(work, base, base + 1, layout))
    (work / "gres.conf").write_text(f"NodeName={','.join(layout.nodes)} Name=gpu Type=h100 File=/dev/tty[0-7]\n")
    cluster = SlurmCluster(work, conf, base, layout)
    try:
        log = (work / "log" / "daemons.out").open("w")
        cluster.procs["slurmctld"] = subprocess.Popen(
            ["slurmctld", "-D", "-i", "-f", str(conf)], env=cluster.env, stdout=log, stderr=subprocess.STDOUT
        )
        _wait_controller(cluster)
        for name in layout.nodes:
            cluster.procs[name] = subprocess.Popen(
                ["slurmd", "-D", "-f", str(conf), "-N", name], env=cluster.env, stdout=log, stderr=subprocess.STDOUT
            )
        _wait_nodes_idle(cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_controller(cluster: SlurmCluster) -> None:
    proc = cluster.procs["slurmctld"]

    def probe():
        if proc.poll() is not None:
            raise RuntimeError(f"slurmctld exited {proc.returncode}: {cluster.log_tail()}")
        return cluster.ctld_port in listening_ports(proc.pid)

    if not poll_until(probe, START_BASE_S):
        raise RuntimeError(f"slurmctld does not listen on {cluster.ctld_port}: {cluster.log_tail()}")


def _wait_nodes_idle(cluster: SlurmCluster) -> None:
    nodes = cluster.layout.nodes

    def probe():
        for name in nodes:
            if cluster.procs[name].poll() is not None:
                raise RuntimeError(f"slurmd {name} exited {cluster.procs[name].returncode}: {cluster.log_tail()}")
        states = cluster.node_states()
        return len(states) == len(nodes) and all(s == "idle" for s in states.values())

    if not poll_until(probe, START_BASE_S * 2, interval_s=0.5):
        raise RuntimeError(f"nodes not idle: {cluster.node_states()}: {cluster.log_tail()}")


def submit_workload(cluster: SlurmCluster) -> None:
    """The jobs and node states the tests read (see tests/ingest/sources/test_slurm_cluster.py)."""
    c = cluster
    c.run("scontrol", "update", f"NodeName={DRAINED_NODE}", "State=DRAIN", f"Reason={DRAIN_REASON}")
    # a down node's slurmd is gone (ReturnToService=2 would bring a responding node back)
    c.procs[DOWN_NODE].terminate()
    c.procs[DOWN_NODE].wait(timeout=load_scaled_s(20.0))
    c.run("scontrol", "update", f"NodeName={DOWN_NODE}", "State=DOWN", f"Reason={DOWN_REASON}")
    c.sbatch("done", "-J", "quick", "-A", "team-infra", "-p", "debug", "-w", "h1-r01-k04-n0", command="true")
    c.sbatch("fail", "-J", "broken", "-A", "team-infra", "-p", "debug", "-w", "h1-r01-k04-n0", command="exit 3")
    c.sbatch("train", "-J", "llm-pretrain", "-A", "team-llm", "--qos=high", "-N", "4", "--gres=gpu:8", "-t", "120")
    c.sbatch(
        "dep", "-J", "llm-eval", "-A", "team-llm", "-N", "1", "--gres=gpu:4", f"--dependency=afterok:{c.jobs['train']}"
    )
    c.sbatch("big", "-J", "vision-big", "-A", "team-vision", "-N", "24", "--gres=gpu:8", "-t", "30")
    c.sbatch("array", "-J", "sweep", "-A", "team-vision", "-p", "debug", "--gres=gpu:2", "--array=0-5%2", "-t", "10")
    c.sbatch("spare", "-J", "on-spare", "-A", "team-infra", "-p", "debug", "-w", "spare1", "--gres=gpu:8", "-t", "10")
    _wait_workload(c)


def _wait_workload(c: SlurmCluster) -> None:
    """Until the scheduler has placed what it can (the finished jobs done, the runnable ones running)
    and the backfill pass has given the job too big for the free nodes its expected start and
    its reason (both are set a pass after submission)."""

    def probe():
        rows = [line.split("|") for line in c.squeue("%i|%T|%S|%r") if line.strip()]
        states = {r[0]: r[1] for r in rows if len(r) == 4}
        starts = {r[0]: (r[2], r[3]) for r in rows if len(r) == 4}
        done = all(states.get(str(c.jobs[k])) in ("COMPLETED", "FAILED") for k in ("done", "fail"))
        running = all(states.get(str(c.jobs[k])) == "RUNNING" for k in ("train", "spare"))
        arrays = sum(1 for i, s in states.items() if i.startswith(f"{c.jobs['array']}_") and s == "RUNNING")
        start, reason = starts.get(str(c.jobs["big"]), ("N/A", ""))
        planned = start not in ("N/A", "Unknown") and reason in ("Resources", "Priority")
        return done and running and arrays == 2 and planned and (c.work / "jobcomp.txt").exists()

    if not poll_until(probe, START_BASE_S, interval_s=0.5):
        raise RuntimeError(f"workload not placed: {c.squeue('%i %T %r')}: {c.log_tail()}")


@dataclass
class Slurmrestd:
    """slurmrestd on a Unix socket with ``rest_auth/local`` (Debian's build has no auth/jwt for TCP)."""

    proc: subprocess.Popen
    socket_path: Path

    @property
    def url(self) -> str:
        from urllib.parse import quote

        return "http+unix://" + quote(str(self.socket_path), safe="")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=load_scaled_s(10.0))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.poll() is None:
            raise RuntimeError(f"slurmrestd {self.proc.pid} still running")


def start_restd(cluster: SlurmCluster) -> Slurmrestd:
    """slurmrestd for ``cluster`` (OpenAPI v0.0.38 only: the slurmdbd plugins refuse to load without one)."""
    if shutil.which("slurmrestd") is None:
        raise RuntimeError("slurmrestd not found on PATH: install the Debian package slurmrestd (make test does)")
    sock = cluster.work / "slurmrestd.sock"
    env = {**cluster.env, "SLURMRESTD_SECURITY": "disable_user_check"}  # the tests run as root
    log = (cluster.work / "log" / "slurmrestd.log").open("w")
    proc = subprocess.Popen(
        ["slurmrestd", "-s", "openapi/v0.0.38", "-a", "rest_auth/local", f"unix:{sock}"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    restd = Slurmrestd(proc, sock)

    def probe():
        if proc.poll() is not None:
            raise RuntimeError(
                f"slurmrestd exited {proc.returncode}: {(cluster.work / 'log' / 'slurmrestd.log').read_text()}"
            )
        if not sock.exists():
            return False
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(str(sock))
                return True
            except OSError:
                return False

    if not poll_until(probe, START_BASE_S):
        restd.stop()
        raise RuntimeError(f"slurmrestd does not listen on {sock}")
    return restd
