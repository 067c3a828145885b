"""How long a Slurm job will run: its history, else its time limit.

Slurm's backfill plans every job with its time limit ([Slurm-Sched]); users' limits are
loose, so the controller's own estimates (``squeue --start``) start late.  The twin runs
the scheduler forward with a run-time estimate instead, as Tsafrir, Etsion and Feitelson
propose ([Tsafrir-TPDS07]): the mean run time of the user's last two completed jobs —
here of the same user *and* job name, which on a cluster of many job kinds keys the same
program.  A job without such history is planned with its time limit, exactly as Slurm
does; an estimate is never longer than the limit (the job is killed there).

The history is the finished jobs a read holds (``sacct`` over the last hour, or the
jobcomp file's tail).  :func:`estimator` returns a function of one :class:`SlurmJob`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ingest.sources.slurm_records import SlurmJob

MODES = ("history", "limit")
HISTORY_JOBS = 2  # the last two runs ([Tsafrir-TPDS07]: the average of the two most recent)
MIN_RUN_S = 1.0  # Slurm's times are whole seconds

RunTimes = Callable[[SlurmJob], "float | None"]


def history(jobs: Iterable[SlurmJob], keep: int = HISTORY_JOBS) -> dict[tuple[str, str], float]:
    """(user, name) → mean run time [s] of the last ``keep`` completed jobs of that key."""
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for j in jobs:
        if j.state != "completed" or j.started_at is None or j.ended_at is None:
            continue
        run_s = (j.ended_at - j.started_at).total_seconds()
        if run_s >= 0:
            runs.setdefault((j.user, j.name), []).append((j.ended_at.timestamp(), run_s))
    out = {}
    for key, items in runs.items():
        last = sorted(items)[-keep:]
        out[key] = max(sum(r for _, r in last) / len(last), MIN_RUN_S)
    return out


def estimator(jobs: Iterable[SlurmJob], mode: str = "history") -> RunTimes:
    """A function giving a job's expected run time [s] (``None``: plan with its time limit).

    ``mode`` is ``history`` (the mean of the last two completed runs of the same user and
    name, capped at the job's limit) or ``limit`` (every job as Slurm plans it).
    """
    if mode not in MODES:
        raise ValueError(f"run-time mode {mode!r}: expected one of {', '.join(MODES)}")
    if mode == "limit":
        return lambda job: None
    table = history(jobs)

    def run_time_s(job: SlurmJob) -> float | None:
        est = table.get((job.user, job.name))
        if est is None:
            return None
        return min(est, job.time_limit_s) if job.time_limit_s else est

    return run_time_s
