"""Goodput of a parsed job: checkpoint write and restore through the storage system, failures by cause."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twin.training import goodput
from twin.training import steptime as training
from twin.training.jobfile import TrainingJob

if TYPE_CHECKING:
    from twin.site.tables import SiteTables
    from twin.training import restart


@dataclass(frozen=True)
class StorageSystem:
    """Checkpoint storage as a job sees it [Gbit/s]."""

    write_gbps: float
    read_gbps: float
    node_gbps: float
    share_frac: float = 1.0


def job_storage(job: TrainingJob) -> StorageSystem:
    """The storage the job file describes (used without a site)."""
    rel = job.reliability
    return StorageSystem(rel.storage_write_gbps, rel.storage_read_gbps, rel.storage_node_gbps, rel.storage_share_frac)


def site_storage(state: SiteTables) -> StorageSystem:
    """The storage of a site (``[storage]`` of the site file, see :class:`twin.site.tables.SiteTables`)."""
    return StorageSystem(
        state.storage_write_gbps, state.storage_read_gbps, state.storage_node_gbps, state.storage_share_frac
    )


def checkpoint_times_s(job: TrainingJob, n_nodes: int, storage: StorageSystem) -> tuple[float, float]:
    """(write, restore) seconds of one checkpoint; explicit job-file values win."""
    rel = job.reliability
    params = training.parameter_count(job.model)
    write = rel.checkpoint_write_s
    if write is None:
        write = goodput.checkpoint_transfer_s(
            params, n_nodes, storage.write_gbps, storage.node_gbps, storage.share_frac
        )
    restore = rel.checkpoint_restore_s
    if restore is None:
        restore = goodput.checkpoint_transfer_s(
            params, n_nodes, storage.read_gbps, storage.node_gbps, storage.share_frac
        )
    return write, restore


def node_rates_per_1000_node_days(job: TrainingJob) -> tuple[float, float]:
    """(hardware, software) interruptions per 1,000 node-days of the job's nodes.

    An explicit ``reliability.failures_per_1000_node_days`` is the job's total rate, split
    by :func:`twin.training.goodput.split_total_rate` (no software term on top).  Otherwise
    the catalogue's hardware rate of the GPU type (per GPU-day) times the GPUs per node, and
    the job file's software rate or Llama 3's (per GPU-day, times the GPUs per node).
    """
    rel, gpn = job.reliability, job.hardware.gpus_per_node
    if rel.failures_per_1000_node_days is not None:
        return goodput.split_total_rate(rel.failures_per_1000_node_days)
    software = rel.software_failures_per_1000_node_days
    if software is None:
        software = goodput.DEFAULT_SOFTWARE_FAILURES_PER_1000_GPU_DAYS * gpn
    return job.hw_failures_per_1000_gpu_days * gpn, software


def job_goodput(
    job: TrainingJob, tokens_per_s: float, n_nodes: int, storage: StorageSystem | None = None
) -> dict[str, Any]:
    """:func:`twin.training.goodput.goodput_summary` of ``job`` on ``n_nodes`` with its storage."""
    rel = job.reliability
    write_s, restore_s = checkpoint_times_s(job, n_nodes, storage or job_storage(job))
    hardware, software = node_rates_per_1000_node_days(job)
    return goodput.goodput_summary(
        tokens_per_s=tokens_per_s,
        n_nodes=n_nodes,
        failures_per_1000_node_days=hardware,
        software_failures_per_1000_node_days=software,
        write_s=write_s,
        restart_s=rel.restart_s,
        duration_s=rel.duration_days * goodput.SECONDS_PER_DAY,
        interval_s=rel.checkpoint_interval_s,
        software_failures_per_job_day=rel.software_failures_per_job_day,
        fleet_age_days=rel.fleet_age_days,
        restore_s=restore_s,
    )


def restart_timings(
    job: TrainingJob, n_nodes: int, storage: StorageSystem | None = None, tokens_per_s: float = 0.0
) -> restart.RestartTimings:
    """:class:`twin.training.restart.RestartTimings` of ``job``: its checkpoint interval
    (the job file's or Daly's optimum), write and restore times through ``storage``, the
    detection, drain and warm-up scaled to the job's ``restart_s`` (the goodput model's
    restart time), and the GPU idle-to-busy power ratio of its hardware."""
    from twin.training import restart

    good = job_goodput(job, tokens_per_s, n_nodes, storage)
    hw = job.hardware
    return restart.RestartTimings(
        checkpoint_interval_s=good["checkpoint_interval_s"],
        checkpoint_write_s=good["checkpoint_write_s"],
        restore_s=good["checkpoint_restore_s"],
        idle_power_frac=hw.idle_power_w / min(hw.busy_power_w, hw.limit_w),
        **restart.scaled_phase_durations_s(job.reliability.restart_s),
    )
