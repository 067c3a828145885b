"""The controller's scheduling settings, from ``scontrol show config``, in the twin's words.

What a prediction of the queue needs to run the scheduler as the controller does
([Slurm-Conf], [Slurm-Sched], [Slurm-Priority], [Slurm-Preempt]): whether the backfill
scheduler runs and how (``SchedulerParameters``: ``bf_interval``, ``bf_window``,
``bf_max_job_test``, ``bf_resolution``, ``default_queue_depth``), the multifactor weights
(``PriorityWeight*``) with ``PriorityMaxAge`` and ``PriorityCalcPeriod``, the preemption
plugin and mode, and the topology plugin.  An unset key keeps Slurm 22.05's default, so
a configuration that could not be read (slurmrestd has no such endpoint) gives Slurm's
defaults and ``source = "defaults"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ingest.sources import slurm_map as sm

# Slurm 22.05 defaults ([Slurm-Conf] slurm.conf(5), SchedulerParameters): bf_interval=30 s,
# bf_window=1440 min, bf_max_job_test=500, bf_resolution=60 s, default_queue_depth=100;
# PriorityMaxAge=7-0, PriorityCalcPeriod=5 min; every PriorityWeight* 0.
BF_INTERVAL_S = 30.0
BF_WINDOW_S = 1440 * 60.0
BF_MAX_JOB_TEST = 500
BF_RESOLUTION_S = 60.0
DEFAULT_QUEUE_DEPTH = 100
PRIORITY_MAX_AGE_S = 7 * 86_400.0
PRIORITY_CALC_PERIOD_S = 300.0
WEIGHT_KEYS = {
    "age": "PriorityWeightAge",
    "fairshare": "PriorityWeightFairShare",
    "job_size": "PriorityWeightJobSize",
    "partition": "PriorityWeightPartition",
    "qos": "PriorityWeightQOS",
    "assoc": "PriorityWeightAssoc",
}


@dataclass(frozen=True)
class SchedulerConfig:
    """How the controller schedules (times in seconds; weights as Slurm's integers)."""

    backfill_flag: int = 1  # SchedulerType=sched/backfill (0: sched/builtin, strict priority order)
    bf_interval_s: float = BF_INTERVAL_S
    bf_window_s: float = BF_WINDOW_S
    bf_max_job_test_count: int = BF_MAX_JOB_TEST
    bf_resolution_s: float = BF_RESOLUTION_S
    queue_depth_count: int = DEFAULT_QUEUE_DEPTH
    multifactor_flag: int = 1  # PriorityType=priority/multifactor (0: priority/basic, FIFO)
    priority_weights: dict[str, float] = field(default_factory=lambda: dict.fromkeys(WEIGHT_KEYS, 0.0))
    priority_max_age_s: float = PRIORITY_MAX_AGE_S
    priority_calc_period_s: float = PRIORITY_CALC_PERIOD_S
    preempt_type: str = "none"  # none | qos | partition_prio
    preempt_mode: str = "off"  # off | requeue | cancel | suspend | gang (lower case, first of the list)
    topology: str = "flat"  # flat (topology/none, default) | tree | block
    limits_enforced_flag: int = 0  # AccountingStorageEnforce has limits (or safe): QoS limits hold
    source: str = "defaults"  # "scontrol show config" when read from the controller

    def as_dict(self) -> dict:
        """JSON-ready (what ``--predict --json`` prints as ``scheduler``)."""
        return {
            "backfill_flag": self.backfill_flag,
            "bf_interval_s": self.bf_interval_s,
            "bf_window_s": self.bf_window_s,
            "bf_max_job_test_count": self.bf_max_job_test_count,
            "bf_resolution_s": self.bf_resolution_s,
            "queue_depth_count": self.queue_depth_count,
            "multifactor_flag": self.multifactor_flag,
            "priority_weights": dict(self.priority_weights),
            "priority_max_age_s": self.priority_max_age_s,
            "priority_calc_period_s": self.priority_calc_period_s,
            "preempt_type": self.preempt_type,
            "preempt_mode": self.preempt_mode,
            "topology": self.topology,
            "limits_enforced_flag": self.limits_enforced_flag,
            "config_source": self.source,
        }


def scheduler_parameters(text: str) -> dict[str, str]:
    """``bf_interval=1,bf_window=60,bf_continue`` → {"bf_interval": "1", "bf_window": "60", "bf_continue": ""}."""
    out: dict[str, str] = {}
    for item in sm.text_value(text).split(","):
        key, _, value = item.strip().partition("=")
        if key:
            out[key.strip().lower()] = value.strip()
    return out


def _seconds(text: str, default: float) -> float:
    """``30 sec``, ``00:05:00``, ``7-00:00:00``, ``5`` (minutes) → seconds; ``default`` if unset or bad."""
    t = sm.text_value(text).lower()
    if t.endswith(" sec"):
        v = sm.number(t[:-4])
        return v if v is not None and math.isfinite(v) else default
    v = sm.duration_s(t)
    return v if v is not None else default


def _param(params: dict[str, str], key: str, default: float, lo: float, hi: float) -> float:
    v = sm.number(params.get(key))
    return min(max(v, lo), hi) if v is not None and math.isfinite(v) else default


def scheduler_config(cfg: dict[str, str]) -> SchedulerConfig:
    """The scheduling settings of a ``scontrol show config`` (``{}``: Slurm's defaults)."""
    if not cfg:
        return SchedulerConfig()
    params = scheduler_parameters(cfg.get("SchedulerParameters", ""))
    weights = {name: float(sm.integer(cfg.get(key), 0)) for name, key in WEIGHT_KEYS.items()}
    preempt = cfg.get("PreemptType", "preempt/none").split("/")[-1].lower() or "none"
    mode = (cfg.get("PreemptMode", "OFF").split(",")[0] or "OFF").lower()
    topology = {"topology/tree": "tree", "topology/block": "block"}.get(cfg.get("TopologyPlugin", ""), "flat")
    enforce = [e.strip().lower() for e in sm.text_value(cfg.get("AccountingStorageEnforce", "")).split(",")]
    return SchedulerConfig(
        backfill_flag=int(cfg.get("SchedulerType", "sched/backfill").endswith("backfill")),
        bf_interval_s=_param(params, "bf_interval", BF_INTERVAL_S, 1.0, 10_800.0),
        bf_window_s=_param(params, "bf_window", BF_WINDOW_S / 60, 1.0, 43_200.0) * 60.0,
        bf_max_job_test_count=int(_param(params, "bf_max_job_test", BF_MAX_JOB_TEST, 1, 1_000_000)),
        bf_resolution_s=_param(params, "bf_resolution", BF_RESOLUTION_S, 1.0, 3600.0),
        queue_depth_count=int(_param(params, "default_queue_depth", DEFAULT_QUEUE_DEPTH, 1, 1_000_000)),
        multifactor_flag=int(cfg.get("PriorityType", "priority/multifactor").endswith("multifactor")),
        priority_weights=weights,
        priority_max_age_s=_seconds(cfg.get("PriorityMaxAge", ""), PRIORITY_MAX_AGE_S),
        priority_calc_period_s=_seconds(cfg.get("PriorityCalcPeriod", ""), PRIORITY_CALC_PERIOD_S),
        preempt_type=preempt if preempt in ("none", "qos", "partition_prio") else "none",
        preempt_mode=mode,
        topology=topology,
        limits_enforced_flag=int(bool({"limits", "safe"} & set(enforce))),
        source="scontrol show config",
    )
