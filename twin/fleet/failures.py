"""Node failures of a fleet: when, where, why, how long the repair takes, and lemon nodes.

Rates per GPU type in failures per 1,000 node-days.  H100: Llama 3's 54-day snapshot on
16,384 H100 (2,048 nodes) had 419 unexpected interruptions, 63 of them software
([Llama3-2024] Table 5), so 356 hardware failures / (2,048 × 54) = 3.22 [D].  A100: RSC-1's
6.50 ([Kokolis-HPCA25]).  Other GPUs: the H100 figure [E].  A scenario may override them.

Causes and their shares are Table 5's hardware rows ([Llama3-2024]); each cause has a
detection path and a repair-time distribution:

* a GPU, HBM, SRAM, GSP, SDC or thermal-interface fault raises an XID and the job stops within
  ``DEFAULT_XID_DETECTION_S`` (:mod:`twin.training.restart`); the node is repaired by a GPU
  or board swap: log-normal, median 24 h [E] (vendor RMA, hot spares on site);
* a network switch, cable or NIC fault hangs the job's collectives until the NCCL timeout
  (``DEFAULT_HANG_TIMEOUT_S``); repair median 4 h [E] (reseat or replace an optic or cable);
* a host fault (maintenance, SSD, PSU, chassis, IO board, CPU, memory) takes the node down;
  Slurm marks it down after ``SlurmdTimeout`` = 300 s ([Slurm-Conf]); repair median 8 h [E].

Log-normal spread σ = 1.0 for every cause [E].  A repaired node runs its health checks for
``HEALTH_CHECK_S`` before it is up again (Meta runs them every 5 min and around jobs,
[Kokolis-HPCA25]; 15 min [E] for a full check after a repair).  Lemon nodes: Kokolis et al.
find ~1.2 % of nodes failing repeatedly; here 1.2 % of nodes fail ``LEMON_RATE_RATIO`` times
as often [E], and a node with ``LEMON_FAILURES`` failures within ``LEMON_WINDOW_S`` is kept
out (``EXCLUDED``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twin.training import restart

SECONDS_PER_DAY = 86_400.0
# [Llama3-2024] Table 5, hardware rows: interruptions in 54 days on 16,384 H100.
LLAMA3_HARDWARE_CAUSES = {
    "faulty_gpu": 148,
    "gpu_hbm3": 72,
    "network_switch_cable": 35,
    "host_maintenance": 32,
    "gpu_sram": 19,
    "gpu_system_processor": 17,
    "nic": 7,
    "silent_data_corruption": 6,
    "gpu_thermal_interface": 6,
    "ssd": 3,
    "power_supply": 3,
    "server_chassis": 2,
    "io_expansion_board": 2,
    "cpu": 2,
    "system_memory": 2,
}
_GPU = ("faulty_gpu", "gpu_hbm3", "gpu_sram", "gpu_system_processor", "silent_data_corruption", "gpu_thermal_interface")
_NET = ("network_switch_cable", "nic")
# How each cause is seen: "xid" (GPU error), "hang" (collective timeout), "node" (node unreachable).
DETECTION = {c: ("xid" if c in _GPU else "hang" if c in _NET else "node") for c in LLAMA3_HARDWARE_CAUSES}
SLURMD_TIMEOUT_S = 300.0  # [Slurm-Conf] SlurmdTimeout default
DETECTION_S = {"xid": restart.DEFAULT_XID_DETECTION_S, "hang": restart.DEFAULT_HANG_TIMEOUT_S, "node": SLURMD_TIMEOUT_S}
REPAIR_MEDIAN_S = {"xid": 24 * 3600.0, "hang": 4 * 3600.0, "node": 8 * 3600.0}  # [E]
REPAIR_SIGMA = 1.0  # [E]
HEALTH_CHECK_S = 900.0  # [E]
# 356 hardware interruptions / (2,048 nodes × 54 days) × 1,000 [D from Llama3-2024 Table 5]
H100_FAILURES_PER_1000_NODE_DAYS = 356 / (2048 * 54) * 1000
A100_FAILURES_PER_1000_NODE_DAYS = 6.50  # [Kokolis-HPCA25] RSC-1
LEMON_FRAC = 0.012  # [Kokolis-HPCA25]
LEMON_RATE_RATIO = 10.0  # [E]
LEMON_FAILURES = 3  # [E]
LEMON_WINDOW_S = 30 * SECONDS_PER_DAY  # [E]


def default_rate_per_1000_node_days(gpu_name: str) -> float:
    """Failures per 1,000 node-days of a node of GPU type ``gpu_name`` (see module docstring)."""
    return A100_FAILURES_PER_1000_NODE_DAYS if gpu_name.startswith("A100") else H100_FAILURES_PER_1000_NODE_DAYS


@dataclass(frozen=True)
class FailureModel:
    """Rates and rules of node failures (defaults in the module docstring)."""

    rate_per_1000_node_days: dict[str, float] = field(default_factory=dict)  # by GPU type; missing: default
    lemon_frac: float = LEMON_FRAC
    lemon_rate_ratio: float = LEMON_RATE_RATIO
    lemon_failures: int = LEMON_FAILURES
    lemon_window_s: float = LEMON_WINDOW_S
    health_check_s: float = HEALTH_CHECK_S
    repair_sigma: float = REPAIR_SIGMA

    def rate(self, gpu_name: str) -> float:
        return self.rate_per_1000_node_days.get(gpu_name, default_rate_per_1000_node_days(gpu_name))


@dataclass(frozen=True)
class FailureDraw:
    """Failures drawn for a horizon, in time order."""

    time_s: np.ndarray
    node: np.ndarray
    cause: np.ndarray  # index into CAUSES
    repair_s: np.ndarray
    lemon: np.ndarray  # bool per node


CAUSES = tuple(LLAMA3_HARDWARE_CAUSES)
_SHARES = np.array([LLAMA3_HARDWARE_CAUSES[c] for c in CAUSES], dtype=np.float64)
CAUSE_SHARE = _SHARES / _SHARES.sum()


def draw_failures(
    rng: np.random.Generator,
    node_gpu_type: np.ndarray,
    gpu_type_names: list[str],
    horizon_s: float,
    model: FailureModel,
) -> FailureDraw:
    """Poisson failures of every node over ``[0, horizon_s)``: counts, then uniform times and nodes by rate."""
    n = node_gpu_type.size
    per_type = np.array([model.rate(name) for name in gpu_type_names]) / 1000.0 / SECONDS_PER_DAY
    lemon = rng.random(n) < model.lemon_frac
    rate = per_type[node_gpu_type] * np.where(lemon, model.lemon_rate_ratio, 1.0) if n else np.zeros(0)
    total = float(rate.sum()) * horizon_s
    count = int(rng.poisson(total)) if total > 0 else 0
    nodes = rng.choice(n, size=count, p=rate / rate.sum()) if count else np.zeros(0, np.int64)
    times = np.sort(rng.uniform(0.0, horizon_s, count))
    cause = rng.choice(len(CAUSES), size=count, p=CAUSE_SHARE) if count else np.zeros(0, np.int64)
    medians = np.array([REPAIR_MEDIAN_S[DETECTION[c]] for c in CAUSES])
    repair = medians[cause] * np.exp(model.repair_sigma * rng.standard_normal(count)) if count else np.zeros(0)
    return FailureDraw(times, nodes.astype(np.int64), cause.astype(np.int64), repair, lemon)


def detection_s(cause: int) -> float:
    """Seconds from the failure until the job is seen to have stopped."""
    return DETECTION_S[DETECTION[CAUSES[cause]]]


def restart_overhead_s(cause: int, restore_s: float) -> float:
    """Wall time without progress after a failure with a spare at hand: detect, swap, restore, half the warm-up."""
    return detection_s(cause) + restart.DEFAULT_DRAIN_SWAP_S + restore_s + 0.5 * restart.DEFAULT_WARMUP_S


def is_lemon(history_s: list[float], now_s: float, model: FailureModel) -> bool:
    """A node with ``lemon_failures`` failures within the last ``lemon_window_s`` is kept out."""
    recent = [t for t in history_s if now_s - t <= model.lemon_window_s]
    return len(recent) >= model.lemon_failures
