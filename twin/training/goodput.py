"""Goodput of a synchronous training job: failures, checkpoints, restarts and ETTR.

A synchronous job stops when any of its nodes fails, so its failures form a series
system: job MTTF = node MTTF / nodes (Epoch AI, "Hardware failures won't limit AI
scaling" [EpochAI-Failures]).  Node failure rates are quoted per 1,000 node-days as in Kokolis
et al., "Revisiting Reliability in Large-Scale Machine Learning Research Clusters",
HPCA'25, arXiv:2410.21680 [Kokolis-HPCA25].

Interruptions are summed by cause: the hardware causes (GPU incl. NVLink, HBM, NIC and
optics, host) split the per-node hardware rate in the proportions of Llama 3's root-cause
table; software (bugs, NCCL watchdog timeouts, dependencies) is a rate per node as well, so it
grows with the job (Llama 3's 63 software interruptions in 54 days on 2,048 nodes); a young
fleet's hardware fails more often while it burns in.  A total rate given for a job (all
causes) is split over the five causes in Llama 3's proportions, with nothing added.

ETTR is Daly's exact expectation for exponential failures [Daly-2006]: failures may strike
during the work, the checkpoint write and the restart alike.

Checkpoint write and restore times come from the storage system: the checkpoint crosses
``min(aggregate · share, nodes · node NIC)``, whichever is narrower.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from twin.training import restart

SECONDS_PER_DAY = 86_400.0

# Failures per 1,000 node-days [Kokolis-HPCA25].
# Kokolis et al. HPCA'25 (arXiv:2410.21680) [S via secondary notes; abstract P]: RSC-1 16K A100.
RSC1_FAILURES_PER_1000_NODE_DAYS = 6.50
# Same paper, RSC-2 8K A100.
RSC2_FAILURES_PER_1000_NODE_DAYS = 2.34
# Fallback hardware rate for a GPU type the catalogue gives none: the larger, higher-rate fleet
# (conservative).  Catalogue rates per GPU type: ``failures_per_1000_gpu_days`` in data/catalogue.toml.
DEFAULT_FAILURES_PER_1000_NODE_DAYS = RSC1_FAILURES_PER_1000_NODE_DAYS
# Lost time of one interruption beyond the rolled-back progress and the checkpoint read: the
# restart state machine's detection, drain and swap and the tokens its warm-up ramp misses
# (:func:`twin.training.restart.restart_overhead_s`, 30 + 120 + 120/2 = 210 s) — one source of truth.
DEFAULT_RESTART_S = restart.restart_overhead_s()
# Bytes of checkpoint state per parameter under mixed-precision Adam: of the 16 bytes of
# training state per parameter (2 weights + 2 gradients + 12 FP32 master weights and
# moments; Rajbhandari et al., ZeRO, arXiv:1910.02054 §3.1) a checkpoint keeps all but
# the gradients: 2 + 12 = 14.
CHECKPOINT_BYTES_PER_PARAM = 14.0
# Meta Tectonic sustained throughput for Llama 3 checkpoints: 2 TB/s [Llama3-2024] = 16,000 Gbit/s.
DEFAULT_STORAGE_WRITE_GBPS = 16_000.0


# Llama 3 405B, 54-day pre-training snapshot on 16,384 H100 (2,048 nodes): 419 unexpected
# interruptions by root cause (Dubey et al., arXiv:2407.21783, Table 5; the counts of faulty
# GPU 148, HBM3 72, network switch/cable 35, SRAM 19, GPU system processor 17 and CPU 2 are
# confirmed by DatacenterDynamics and Tom's Hardware [S]; the rest as listed in the table,
# summing to 419).  Llama 3 counts NVLink failures under "faulty GPU".
LLAMA3_INTERRUPTIONS_BY_CAUSE = {
    # faulty GPU (incl. NVLink) 148, GPU SRAM 19, GPU system processor 17, silent data
    # corruption 6, GPU thermal interface and sensor 6
    "gpu_nvlink": 196,
    "hbm": 72,
    # network switch/cable 35, NIC 7
    "nic_optics": 42,
    # host maintenance 32, SSD 3, power supply 3, chassis 2, IO expansion board 2, CPU 2, system memory 2
    "host": 46,
    # software bug 54, NCCL watchdog timeouts 7, dependency 2
    "software": 63,
}
LLAMA3_SNAPSHOT_DAYS = 54.0
HARDWARE_CAUSES = ("gpu_nvlink", "hbm", "nic_optics", "host")
_HW_TOTAL = sum(LLAMA3_INTERRUPTIONS_BY_CAUSE[c] for c in HARDWARE_CAUSES)
# Share of each hardware cause in the per-node failure rate [D from the table above].
HARDWARE_CAUSE_SHARE = {c: LLAMA3_INTERRUPTIONS_BY_CAUSE[c] / _HW_TOTAL for c in HARDWARE_CAUSES}
LLAMA3_NODES = 2048  # 16,384 H100 in 8-GPU servers [Llama3-2024 §3.3.4]
LLAMA3_GPUS_PER_NODE = 8
_LLAMA3_KILO_NODE_DAYS = LLAMA3_SNAPSHOT_DAYS * LLAMA3_NODES / 1000.0
# Software interruptions per 1,000 node-days [D]: 63 in 54 days on 2,048 nodes = 0.570
# (Llama 3 Table 5); per 1,000 GPU-days 0.0712.  Scaled with the job's size, like the hardware.
DEFAULT_SOFTWARE_FAILURES_PER_1000_NODE_DAYS = LLAMA3_INTERRUPTIONS_BY_CAUSE["software"] / _LLAMA3_KILO_NODE_DAYS
DEFAULT_SOFTWARE_FAILURES_PER_1000_GPU_DAYS = DEFAULT_SOFTWARE_FAILURES_PER_1000_NODE_DAYS / LLAMA3_GPUS_PER_NODE
# Llama 3's observed hardware rate [D]: 356 hardware interruptions / 110.6 thousand node-days = 3.22.
LLAMA3_HW_FAILURES_PER_1000_NODE_DAYS = _HW_TOTAL / _LLAMA3_KILO_NODE_DAYS
# Share of every cause, software included, in a job's total rate [D from the table above].
ALL_CAUSE_SHARE = {c: n / sum(LLAMA3_INTERRUPTIONS_BY_CAUSE.values()) for c, n in LLAMA3_INTERRUPTIONS_BY_CAUSE.items()}
# Kept for old job files: an extra per-job software term, whatever the job's size (0 by default).
DEFAULT_SOFTWARE_FAILURES_PER_JOB_DAY = 0.0
# [E] burn-in (infant mortality): a new fleet's hardware rate is (1 + excess·e^(−age/τ)) times
# the mature rate; Kokolis et al. (HPCA'25) report a persistent ~1.2 % of "lemon" nodes that
# are removed over the first months.  Excess 1.0 (twice the rate at day 0), τ = 60 days.
BURN_IN_EXCESS_FRAC = 1.0
BURN_IN_TAU_DAYS = 60.0
# Meta Tectonic peak read for Llama 3 checkpoints: 7 TB/s [Llama3-2024] = 56,000 Gbit/s.
DEFAULT_STORAGE_READ_GBPS = 56_000.0
# [P] storage/front-end NIC per node: one 400 GbE per Colossus server [STH-Colossus-2024].
DEFAULT_STORAGE_NODE_GBPS = 400.0


class ReliabilityError(ValueError):
    """Bad reliability input (names the field)."""


def job_mttf_s(n_nodes: int | np.ndarray, failures_per_1000_node_days: float | np.ndarray) -> float | np.ndarray:
    """Mean time to failure of a job on ``n_nodes`` nodes [s].

    ``MTTF = 1000 · 86400 / (rate · n_nodes)`` (series system, exponential failures).
    """
    n = np.asarray(n_nodes, dtype=np.float64)
    rate = np.asarray(failures_per_1000_node_days, dtype=np.float64)
    if np.any(n <= 0):
        raise ReliabilityError(f"job needs at least one node, got {n_nodes}")
    if np.any(rate < 0):
        raise ReliabilityError(
            f"reliability.failures_per_1000_node_days must be >= 0, got {failures_per_1000_node_days}"
        )
    with np.errstate(divide="ignore"):
        out = 1000.0 * SECONDS_PER_DAY / (rate * n)
    return float(out) if np.ndim(out) == 0 else out


def checkpoint_write_s(
    n_params: float, storage_write_gbps: float, bytes_per_param: float = CHECKPOINT_BYTES_PER_PARAM
) -> float:
    """Blocking checkpoint write time [s] = ``n_params · bytes_per_param / bandwidth``."""
    if storage_write_gbps <= 0:
        raise ReliabilityError(f"reliability.storage_write_gbps must be positive, got {storage_write_gbps}")
    return n_params * bytes_per_param * 8.0 / (storage_write_gbps * 1e9)


def checkpoint_transfer_s(
    n_params: float,
    n_nodes: int,
    aggregate_gbps: float,
    node_gbps: float,
    share_frac: float = 1.0,
    bytes_per_param: float = CHECKPOINT_BYTES_PER_PARAM,
) -> float:
    """Time to move one checkpoint between the job and storage [s].

    ``bytes · 8 / min(aggregate_gbps · share_frac, n_nodes · node_gbps)``: the storage
    system's aggregate bandwidth (the part left by other jobs) or the job's own storage
    NICs, whichever is narrower.  Use the write bandwidth for saves and the read
    bandwidth for restores.
    """
    if aggregate_gbps <= 0 or node_gbps <= 0 or not 0 < share_frac <= 1 or n_nodes <= 0:
        raise ReliabilityError(
            f"storage bandwidths and nodes must be positive and share_frac in (0, 1], got "
            f"{aggregate_gbps}, {node_gbps}, {share_frac}, {n_nodes}"
        )
    gbps = min(aggregate_gbps * share_frac, n_nodes * node_gbps)
    return n_params * bytes_per_param * 8.0 / (gbps * 1e9)


def burn_in_factor(fleet_age_days: float) -> float:
    """Hardware failure-rate multiplier of a fleet ``fleet_age_days`` old (inf = mature → 1)."""
    if fleet_age_days < 0:
        raise ReliabilityError(f"reliability.fleet_age_days must be >= 0, got {fleet_age_days}")
    return 1.0 + BURN_IN_EXCESS_FRAC * math.exp(-fleet_age_days / BURN_IN_TAU_DAYS)


def interruptions_per_day_by_cause(
    n_nodes: int,
    failures_per_1000_node_days: float,
    software_failures_per_job_day: float = DEFAULT_SOFTWARE_FAILURES_PER_JOB_DAY,
    fleet_age_days: float = math.inf,
    software_failures_per_1000_node_days: float = 0.0,
) -> dict[str, float]:
    """Expected interruptions per day of one job, by cause.

    Hardware cause ``c``: ``rate · share_c · n_nodes / 1000 · burn_in``; software:
    ``software_failures_per_1000_node_days · n_nodes / 1000`` plus the size-independent
    ``software_failures_per_job_day`` (0 unless a job file sets it).  The hardware causes sum
    to the node rate of :func:`job_mttf_s`.
    """
    rates = (failures_per_1000_node_days, software_failures_per_job_day, software_failures_per_1000_node_days)
    if n_nodes <= 0 or min(rates) < 0:
        raise ReliabilityError(f"need n_nodes > 0 and non-negative rates, got {n_nodes}, {', '.join(map(str, rates))}")
    hw_per_day = failures_per_1000_node_days * n_nodes / 1000.0 * burn_in_factor(fleet_age_days)
    out = {c: hw_per_day * HARDWARE_CAUSE_SHARE[c] for c in HARDWARE_CAUSES}
    out["software"] = software_failures_per_1000_node_days * n_nodes / 1000.0 + software_failures_per_job_day
    return out


def split_total_rate(total_per_1000_node_days: float) -> tuple[float, float]:
    """(hardware, software) parts of a job's total rate in Llama 3's proportions (software 63/419)."""
    software = total_per_1000_node_days * ALL_CAUSE_SHARE["software"]
    return total_per_1000_node_days - software, software


def mttf_from_rates_s(per_day_by_cause: dict[str, float]) -> float:
    """Job mean time to interruption [s] from per-day rates by cause (exponential, series)."""
    total = sum(per_day_by_cause.values())
    return math.inf if total <= 0 else SECONDS_PER_DAY / total


def young_interval_s(write_s: float, mttf_s: float) -> float:
    """Young's optimum checkpoint interval ``τ = √(2·δ·M)`` (Young, CACM 17(9), 1974)."""
    return math.sqrt(2.0 * write_s * mttf_s)


def daly_interval_s(write_s: float, mttf_s: float) -> float:
    """Daly's higher-order optimum [Daly-2006].

    ``τ = √(2δM)·[1 + ⅓·√(δ/2M) + (1/9)·(δ/2M)] − δ`` for ``δ < 2M``, else ``τ = M``.
    """
    if write_s < 0 or mttf_s <= 0:
        raise ReliabilityError(f"need checkpoint_write_s >= 0 and MTTF > 0, got {write_s}, {mttf_s}")
    if write_s >= 2.0 * mttf_s:
        return mttf_s
    x = write_s / (2.0 * mttf_s)
    return math.sqrt(2.0 * write_s * mttf_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - write_s


def ettr_frac(interval_s: float, write_s: float, restart_s: float, mttf_s: float) -> float:
    """Expected effective-training-time ratio for exponential failures, exact [Daly-2006].

    Daly's expected wall time to finish ``T_s`` of work in intervals ``τ`` with checkpoint
    write ``δ``, restart ``R`` and MTTF ``M``, failures striking work, writes and restarts
    alike: ``T_w = M·e^(R/M)·(e^((τ+δ)/M) − 1)·T_s/τ``, so ``ETTR = T_s/T_w =
    τ / (M·e^(R/M)·(e^((τ+δ)/M) − 1))``.  To first order in ``1/M`` this is
    :func:`ettr_first_order_frac`; near an MTTF the size of the restart the two part
    (tests).  In [0, 1].
    """
    if interval_s <= 0:
        raise ReliabilityError(f"reliability.checkpoint_interval_s must be positive, got {interval_s}")
    if not math.isfinite(mttf_s):
        return 1.0 / (1.0 + write_s / interval_s)
    if mttf_s <= 0:
        return 0.0
    exponent = restart_s / mttf_s + math.log(math.expm1((interval_s + write_s) / mttf_s))
    if exponent > 700.0:  # e^700 overflows nothing yet; beyond it the job never finishes an interval
        return 0.0
    return min(1.0, interval_s / (mttf_s * math.exp(exponent)))


def ettr_first_order_frac(interval_s: float, write_s: float, restart_s: float, mttf_s: float) -> float:
    """First-order ETTR ``(1 − (u₀ + τ/2)/M) / (1 + δ/τ)`` (Young's waste model; the form of
    [Kokolis-HPCA25] with ``N·r_f = 1/M``), clipped to [0, 1]; kept for comparison with :func:`ettr_frac`."""
    if interval_s <= 0:
        raise ReliabilityError(f"reliability.checkpoint_interval_s must be positive, got {interval_s}")
    if not math.isfinite(mttf_s):
        return 1.0 / (1.0 + write_s / interval_s)
    value = (1.0 - (restart_s + interval_s / 2.0) / mttf_s) / (1.0 + write_s / interval_s)
    return min(1.0, max(0.0, value))


def expected_interruptions(duration_s: float, mttf_s: float) -> float:
    """Expected failures over ``duration_s`` of wall time: ``duration / MTTF``."""
    return 0.0 if not math.isfinite(mttf_s) else duration_s / mttf_s


def goodput_summary(
    tokens_per_s: float,
    n_nodes: int,
    failures_per_1000_node_days: float,
    write_s: float,
    restart_s: float,
    duration_s: float,
    interval_s: float | None = None,
    software_failures_per_job_day: float = 0.0,
    fleet_age_days: float = math.inf,
    restore_s: float = 0.0,
    software_failures_per_1000_node_days: float = 0.0,
) -> dict[str, Any]:
    """Reliability figures of one job (``interval_s`` None → Daly's optimum).

    Each interruption costs ``restart_s + restore_s`` (Daly's ``R``) plus the work since the
    last checkpoint; ETTR by :func:`ettr_frac`.
    """
    by_cause = interruptions_per_day_by_cause(
        n_nodes,
        failures_per_1000_node_days,
        software_failures_per_job_day,
        fleet_age_days,
        software_failures_per_1000_node_days,
    )
    mttf = mttf_from_rates_s(by_cause)
    restart_s = restart_s + restore_s
    tau = daly_interval_s(write_s, mttf) if interval_s is None else float(interval_s)
    if math.isinf(tau):
        tau = duration_s
    if write_s == 0.0 and interval_s is None:
        tau = max(tau, 1.0)
    ettr = ettr_frac(tau, write_s, restart_s, mttf)
    return {
        "job_mttf_h": mttf / 3600.0,
        "checkpoint_write_s": write_s,
        "checkpoint_interval_s": tau,
        "young_interval_s": young_interval_s(write_s, mttf) if math.isfinite(mttf) else float("inf"),
        "restart_s": restart_s - restore_s,
        "checkpoint_restore_s": restore_s,
        "interruptions_expected_count": expected_interruptions(duration_s, mttf),
        "interruptions_per_day_by_cause": by_cause,
        "ettr_frac": ettr,
        "goodput_tokens_per_s": tokens_per_s * ettr,
    }
