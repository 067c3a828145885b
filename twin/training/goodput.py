"""Goodput of a synchronous training job: failures, checkpoints, restarts and ETTR.

A synchronous job stops when any of its nodes fails, so its failures form a series
system: job MTTF = node MTTF / nodes (Epoch AI, "Hardware failures won't limit AI
scaling" [EpochAI-Failures]).  Node failure rates are quoted per 1,000 node-days as in Kokolis
et al., "Revisiting Reliability in Large-Scale Machine Learning Research Clusters",
HPCA'25, arXiv:2410.21680 [Kokolis-HPCA25].
"""

from __future__ import annotations

import math

import numpy as np

SECONDS_PER_DAY = 86_400.0

# Failures per 1,000 node-days [Kokolis-HPCA25].
# Kokolis et al. HPCA'25 (arXiv:2410.21680) [S via secondary notes; abstract P]: RSC-1 16K A100.
RSC1_FAILURES_PER_1000_NODE_DAYS = 6.50
# Same paper, RSC-2 8K A100.
RSC2_FAILURES_PER_1000_NODE_DAYS = 2.34
# Default: the larger, higher-rate fleet (conservative for a new H100 build-out).
DEFAULT_FAILURES_PER_1000_NODE_DAYS = RSC1_FAILURES_PER_1000_NODE_DAYS
# [E] re-schedule, NCCL initialisation and checkpoint load after an interruption.
DEFAULT_RESTART_S = 600.0
# Bytes of checkpoint state per parameter under mixed-precision Adam: of the 16 bytes of
# training state per parameter (2 weights + 2 gradients + 12 FP32 master weights and
# moments; Rajbhandari et al., ZeRO, arXiv:1910.02054 §3.1) a checkpoint keeps all but
# the gradients: 2 + 12 = 14.
CHECKPOINT_BYTES_PER_PARAM = 14.0
# Meta Tectonic sustained throughput for Llama 3 checkpoints: 2 TB/s [Llama3-2024] = 16,000 Gbit/s.
DEFAULT_STORAGE_WRITE_GBPS = 16_000.0


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
        raise ReliabilityError(f"reliability.failures_per_1000_node_days must be >= 0, got {failures_per_1000_node_days}")
    with np.errstate(divide="ignore"):
        out = 1000.0 * SECONDS_PER_DAY / (rate * n)
    return float(out) if np.ndim(out) == 0 else out


def checkpoint_write_s(n_params: float, storage_write_gbps: float, bytes_per_param: float = CHECKPOINT_BYTES_PER_PARAM) -> float:
    """Blocking checkpoint write time [s] = ``n_params · bytes_per_param / bandwidth``."""
    if storage_write_gbps <= 0:
        raise ReliabilityError(f"reliability.storage_write_gbps must be positive, got {storage_write_gbps}")
    return n_params * bytes_per_param * 8.0 / (storage_write_gbps * 1e9)


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
    """Expected effective-training-time ratio (first-order model).

    ``ETTR = (1 − (u₀ + τ/2)/M) / (1 + δ/τ)``: checkpoints cost ``δ`` per interval ``τ``;
    each failure (rate ``1/M``) costs the restart ``u₀`` plus on average half an interval
    of lost work.  This is the form of Kokolis et al. HPCA'25 [Kokolis-HPCA25],
    [S]) with ``N·r_f = 1/M``, and Young's first-order waste model.  Clipped to [0, 1].
    """
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
) -> dict[str, float]:
    """Reliability figures of one job (``interval_s`` None → Daly's optimum)."""
    mttf = job_mttf_s(n_nodes, failures_per_1000_node_days)
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
        "restart_s": restart_s,
        "interruptions_expected_count": expected_interruptions(duration_s, mttf),
        "ettr_frac": ettr,
        "goodput_tokens_per_s": tokens_per_s * ettr,
    }
