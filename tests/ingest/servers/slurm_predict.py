"""The workload the start-time predictions are checked on: 23 short jobs (28 with array tasks) on 20 nodes.

The cluster (:data:`LAYOUT`, started by :func:`servers.slurm.start`): partition ``train``
of 16 nodes (one drained, so 15 take work) and partition ``vision`` of 4 nodes with
``MaxNodes=2`` and ``MaxTime=5`` (minutes), each node 8 GPUs; multifactor priority with
``PriorityWeightJobSize=10000`` (bigger jobs first) and ``PriorityWeightAge=1000``;
backfill every second at one-second resolution (``bf_interval=1,bf_resolution=1``: Slurm
plans to the second, as the twin does).

What each job exercises is in :data:`JOBS` (``case``).  The run: :func:`run_history` runs
every job name once (the history the twin's run-time estimates come from); then
:func:`submit_held` drains a node, takes both partitions down, submits the workload and
:func:`release` brings the partitions up again, so every job becomes schedulable at
the same instant and the controller places the first wave itself.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .readiness import poll_until
from .slurm import Layout, SlurmCluster

TRAIN = [f"h1-r01-k0{k}-n{n}" for k in (1, 2) for n in range(8)]
VISION = [f"h1-r01-k03-n{n}" for n in range(4)]
DRAINED, DRAIN_REASON = "h1-r01-k02-n7", "xid 79 on gpu3"
LAYOUT = Layout(
    nodes=tuple(TRAIN + VISION),
    partitions=(
        f"PartitionName=train Nodes={','.join(TRAIN)} Default=YES MaxTime=INFINITE State=UP",
        f"PartitionName=vision Nodes={','.join(VISION)} MaxNodes=2 MaxTime=5 State=UP",
    ),
    extra=("PriorityWeightAge=1000", "PriorityWeightJobSize=10000"),
    scheduler_parameters="bf_interval=1,bf_resolution=1",
)
TRUNCATION_S = 0.5  # Slurm's times are whole seconds: "12:00:05" means 12:00:05.5 on average


@dataclass(frozen=True)
class Job:
    """One submission: its name (the history key), sleep, sbatch options and what it exercises."""

    key: str
    name: str
    sleep_s: int
    options: tuple[str, ...]
    case: str
    after: str = ""  # key of the job it depends on (afterok)


def _gpus(n: int) -> str:
    return f"--gres=gpu:{n}"


JOBS = (
    Job("pre-a", "pre-a", 12, ("-A", "team-llm", "-N", "8", _gpus(8), "-t", "5"), "mixed sizes: an 8-node gang"),
    Job("pre-b", "pre-b", 9, ("-A", "team-llm", "-N", "6", _gpus(8), "-t", "5"), "blocked at release (Resources)"),
    Job(
        "wide",
        "wide",
        6,
        ("-A", "team-llm", "-N", "15", _gpus(8), "-t", "5", "--nice=3000"),
        "the whole partition: waits for every node while smaller jobs go around it",
    ),
    *(
        Job(f"eval-{i}", "eval", 4, ("-A", "team-eval", "-N", "2", _gpus(8), "-t", "1"), "backfill: short limit")
        for i in (1, 2, 3)
    ),
    *(
        Job(
            f"tail-{i}",
            "tail",
            5,
            ("-A", "team-eval", "-N", "3", _gpus(8), "-t", "10"),
            "no backfill: a 10-minute limit would delay the reserved jobs, so it waits though nodes are free",
        )
        for i in (1, 2)
    ),
    *(
        Job(f"bf-{i}", "bf", 5, ("-A", "team-infra", "-N", "1", _gpus(8), "-t", "1"), "backfill: one node")
        for i in (1, 2)
    ),
    Job(
        "excl",
        "excl",
        4,
        ("-A", "team-infra", "-N", "1", "--exclusive", _gpus(2), "-t", "1"),
        "--exclusive: a whole node for 2 GPUs",
    ),
    *(
        Job(f"half-{i}", "half", 6, ("-A", "team-infra", "-N", "1", _gpus(4), "-t", "1"), "two jobs share a node")
        for i in (1, 2)
    ),
    Job(
        "dep-eval",
        "dep-eval",
        5,
        ("-A", "team-eval", "-N", "4", _gpus(8), "-t", "1"),
        "dependency: afterok on pre-a",
        after="pre-a",
    ),
    *(
        Job(
            f"vis-{i}",
            f"vis-{i}",
            sleep,
            ("-p", "vision", "-A", "team-vision", "-N", str(nodes), _gpus(8), "-t", "2"),
            "quota limit: team-vision's partition of 4 nodes, its jobs queue while train has free nodes",
        )
        for i, sleep, nodes in ((1, 6, 2), (2, 8, 2), (3, 6, 2), (4, 5, 1))
    ),
    Job(
        "vis-big",
        "vis-big",
        5,
        ("-p", "vision", "-A", "team-vision", "-N", "3", _gpus(8), "-t", "2"),
        "quota limit: over the partition's MaxNodes=2, never starts (PartitionNodeLimit)",
    ),
    Job(
        "vis-long",
        "vis-long",
        5,
        ("-p", "vision", "-A", "team-vision", "-N", "1", _gpus(8), "-t", "10"),
        "quota limit: over the partition's MaxTime=5, never starts (PartitionTimeLimit)",
    ),
    Job(
        "sweep",
        "sweep",
        4,
        ("-p", "vision", "-A", "team-vision", "-N", "1", _gpus(4), "-t", "1", "--array=0-5%2"),
        "quota limit: an array of 6 tasks throttled to 2 at a time (%2)",
    ),
    Job(
        "vis-after",
        "vis-after",
        3,
        ("-p", "vision", "-A", "team-vision", "-N", "1", _gpus(8), "-t", "1"),
        "dependency across partitions: afterok on pre-b",
        after="pre-b",
    ),
    Job(
        "urgent",
        "urgent",
        3,
        ("-A", "team-llm", "-N", "3", _gpus(8), "-t", "5", "--nice=-3000"),
        "priority inversion: submitted last, highest priority (nice -3000), starts first",
    ),
)
NEVER = ("vis-big", "vis-long")
ACTIVE = "pending,running,completing,configuring,suspended"


def run_history(c: SlurmCluster) -> None:
    """One run of every job name (one node each, at once), waited for until the jobcomp file has them all."""
    names = {j.name: j for j in JOBS if j.key not in NEVER}
    ids = []
    for name, job in names.items():
        part = ("-p", "vision") if "vision" in job.options else ()
        ids.append(
            c.sbatch(
                f"history-{name}", "-J", name, *part, "-N", "1", _gpus(1), "-t", "1", command=f"sleep {job.sleep_s}"
            )
        )
    _wait_finished(c, ids, 60.0)


def _wait_finished(c: SlurmCluster, ids: list[int], base_s: float) -> None:
    def done():
        active = set(c.run("squeue", "--all", "-h", "-t", ACTIVE, "-o", "%A", check=False).stdout.split())
        logged = jobcomp_starts(c.work / "jobcomp.txt")
        return not any(str(i) in active for i in ids) and all(str(i) in logged for i in ids)

    if not poll_until(done, base_s, interval_s=0.5):
        raise RuntimeError(f"history jobs did not finish: {c.squeue('%i %T %r')}")


def submit_held(c: SlurmCluster) -> dict[str, str]:
    """Drain a node, take the partitions down, submit :data:`JOBS`; key → Slurm id (array: its id)."""
    c.run("scontrol", "update", f"NodeName={DRAINED}", "State=DRAIN", f"Reason={DRAIN_REASON}")
    for part in ("train", "vision"):
        c.run("scontrol", "update", f"PartitionName={part}", "State=DOWN")
    for job in JOBS:
        dep = (f"--dependency=afterok:{c.jobs[job.after]}",) if job.after else ()
        c.sbatch(job.key, "-J", job.name, *job.options, *dep, command=f"sleep {job.sleep_s}")
    return {key: str(i) for key, i in c.jobs.items() if not key.startswith("history-")}


def release(c: SlurmCluster) -> float:
    """Both partitions up again: every job becomes schedulable now (returns the time, Unix seconds)."""
    for part in ("train", "vision"):
        c.run("scontrol", "update", f"PartitionName={part}", "State=UP")
    return time.time()


_JOBCOMP = re.compile(r"JobId=(\d+) .*?StartTime=(\S+) .*?ArrayJobId=(\d+) ArrayTaskId=(\S+)")
_JOBCOMP_PLAIN = re.compile(r"JobId=(\d+) .*?StartTime=(\S+)")


def jobcomp_starts(path: Path) -> dict[str, float]:
    """Display id (``12``, ``12_3``) → start [Unix s, mid-second] of every job the jobcomp file logged."""
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text(errors="replace").splitlines():
        m = _JOBCOMP.search(line) or _JOBCOMP_PLAIN.search(line)
        if m is None or not m.group(2)[:1].isdigit():
            continue
        start = datetime.fromisoformat(m.group(2)).replace(tzinfo=UTC).timestamp() + TRUNCATION_S
        key = m.group(1)
        if m.re is _JOBCOMP and m.group(3) != "0" and m.group(4).isdigit():
            out[m.group(1)] = start  # a task is logged under its own id too
            key = f"{m.group(3)}_{m.group(4)}"
        out[key] = start
    return out


class StartPoller(threading.Thread):
    """Polls ``squeue`` every ``interval_s`` and keeps when each job (display id) was first seen started."""

    def __init__(self, c: SlurmCluster, interval_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.c, self.interval_s = c, interval_s
        self.first_seen: dict[str, float] = {}
        self.polls = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            out = self.c.run("squeue", "--all", "-h", "-t", "all", "-o", "%i|%T", check=False).stdout
            now = time.time()
            self.polls += 1
            for line in out.splitlines():
                key, _, state = line.partition("|")
                if state in ("RUNNING", "COMPLETING", "COMPLETED") and key not in self.first_seen:
                    self.first_seen[key] = now
            self._halt.wait(self.interval_s)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=30)
