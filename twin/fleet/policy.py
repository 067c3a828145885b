"""The scheduling policy of a fleet: ordering, backfill, placement, quotas, limits, preemption, power.

Each field names the scheduler concept it models ([Slurm-Sched], [Slurm-Priority],
[Slurm-QOS], [Kueue-Docs]); ``docs/fleet.md`` gives the semantics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

ORDERINGS = ("fcfs", "priority", "sjf")
BACKFILLS = ("none", "easy", "conservative")
POWER_MODES = ("off", "uniform", "per_job")
# Slurm defaults ([Slurm-Sched], slurm.conf): the backfill scheduler runs every bf_interval = 30 s
# and tests at most bf_max_job_test = 500 jobs per cycle (our conservative-backfill reservation
# depth); the main scheduler tests default_queue_depth = 100 jobs at each event; priorities are
# recomputed every PriorityCalcPeriod = 5 min; fair-share usage decays with a half-life of
# PriorityDecayHalfLife = 7 days ([Slurm-Priority]).
BF_INTERVAL_S = 30.0
BF_MAX_JOB_TEST = 500
DEFAULT_QUEUE_DEPTH = 100
PRIORITY_CALC_PERIOD_S = 300.0
DECAY_HALF_LIFE_S = 7 * 86_400.0
# PriorityMaxAge default 7-0 (7 days): the age factor reaches 1 after a week in the queue.
PRIORITY_MAX_AGE_S = 7 * 86_400.0


class PolicyError(ValueError):
    """An inconsistent policy (names the field)."""


@dataclass(frozen=True)
class PriorityWeights:
    """Slurm multifactor weights (``PriorityWeight*``); a job's priority is their weighted sum."""

    age: float = 1000.0
    fairshare: float = 10_000.0
    job_size: float = 1000.0
    qos: float = 10_000.0


@dataclass(frozen=True)
class QosSpec:
    """A Slurm QoS: its priority, what it may preempt, its group and per-user GPU limits."""

    name: str
    priority: float = 0.0
    preempt: tuple[str, ...] = ()  # QoS names whose running jobs this one may requeue (PreemptType=preempt/qos)
    grp_gpus: int = 0  # GrpTRES=gres/gpu: GPUs all running jobs of this QoS may hold together, 0 = no limit
    max_gpus_per_user: int = 0  # MaxTRESPerUser=gres/gpu, 0 = no limit
    min_power_cap_w: float = 0.0  # power admission: lowest GPU cap its jobs accept, 0 = the GPU's minimum


@dataclass(frozen=True)
class TeamQuota:
    """A Kueue ClusterQueue for one team: nominal GPU quota, cohort and borrowing."""

    team: str
    nominal_gpus: int
    cohort: str = ""  # teams of one cohort lend each other their unused quota
    borrowing_limit_gpus: int = -1  # most it may borrow, -1 = no limit
    shares: float = 0.0  # fair-share shares (Slurm's association shares); 0 = its nominal quota


@dataclass(frozen=True)
class Reservation:
    """Nodes held out of general use between two times (maintenance, a hall taken out)."""

    name: str
    start_s: float
    end_s: float
    nodes: tuple[int, ...] = ()  # node ids
    maintenance: bool = True  # True: nothing runs there (a drained window); False: only its users' jobs
    users: tuple[str, ...] = ()


@dataclass(frozen=True)
class DemandResponse:
    """A grid demand-response event: cut ``cut_mw`` (or hold ``target_mw``) from ``start_s`` for ``duration_s``."""

    start_s: float
    duration_s: float
    cut_mw: float = 0.0
    target_mw: float = math.inf


@dataclass(frozen=True)
class Policy:
    """Everything the scheduler is configured with."""

    ordering: str = "priority"
    backfill: str = "easy"
    placement: str = "tree"
    weights: PriorityWeights = PriorityWeights()
    qos: tuple[QosSpec, ...] = (QosSpec("normal"),)
    quotas: tuple[TeamQuota, ...] = ()
    preemption: bool = True  # QoS preemption and quota reclaim requeue jobs
    reclaim: bool = True  # a team under its nominal quota reclaims it from borrowers (Kueue reclaimWithinCohort)
    bf_interval_s: float = BF_INTERVAL_S
    # EASY's "extra nodes" rule: a job that ends after the reservation may still start on nodes the
    # reserved job leaves over (Lifka's EASY, [MualemFeitelson-2001]); False: only jobs that end
    # before the reservation starts (the stricter variant RAPS implements, [RAPS-2024])
    bf_extra_nodes: bool = True
    bf_max_job_test: int = BF_MAX_JOB_TEST
    queue_depth: int = DEFAULT_QUEUE_DEPTH
    priority_calc_period_s: float = PRIORITY_CALC_PERIOD_S
    decay_half_life_s: float = DECAY_HALF_LIFE_S
    max_age_s: float = PRIORITY_MAX_AGE_S
    power: str = "per_job"  # off | uniform (the site's shortfall policy caps every GPU alike) | per_job
    idle_nodes_off: bool = True  # idle nodes are powered off while a generation limit binds
    power_floor_frac: float = 0.6  # per_job admission: lowest cap a job accepts, as a fraction of TDP [E]
    power_rebalance_s: float = (
        60.0  # per_job/uniform: caps are re-set at most this often (and at once on a budget change) [E]
    )
    power_margin_frac: float = 0.01  # aim this far below the supply (as twin.physics.policy.MARGIN_FRAC)
    cooling_overhead_frac: float = 0.12  # cooling power per IT power for the budget [E]
    reservations: tuple[Reservation, ...] = ()
    demand_response: tuple[DemandResponse, ...] = ()
    quota_changes: tuple[tuple[float, str, int], ...] = field(default=())  # (time, team, nominal GPUs)

    def __post_init__(self) -> None:
        checks = (
            ("ordering", self.ordering, ORDERINGS),
            ("backfill", self.backfill, BACKFILLS),
            ("placement", self.placement, ("flat", "tree", "block")),
            ("power", self.power, POWER_MODES),
        )
        for name, value, allowed in checks:
            if value not in allowed:
                raise PolicyError(f"policy.{name} must be one of {', '.join(allowed)}, got {value!r}")
        names = [q.name for q in self.qos]
        if len(set(names)) != len(names):
            raise PolicyError("policy.qos: a QoS is defined twice")
        for q in self.qos:
            unknown = [p for p in q.preempt if p not in names]
            if unknown:
                raise PolicyError(f"qos {q.name!r} preempts unknown QoS {unknown[0]!r}")
        teams = [t.team for t in self.quotas]
        if len(set(teams)) != len(teams):
            raise PolicyError("policy.quotas: a team has two ClusterQueues")
        for r in self.reservations:
            if not r.end_s > r.start_s:
                raise PolicyError(f"reservation {r.name!r}: end must be after start")
        for period_s, label in ((self.bf_interval_s, "bf_interval_s"), (self.priority_calc_period_s, "calc period")):
            if not (math.isfinite(period_s) and period_s >= 0):
                raise PolicyError(f"policy.{label} must be finite and >= 0")

    def qos_spec(self, name: str) -> QosSpec:
        """The QoS called ``name`` (a QoS the policy does not define has default settings)."""
        for q in self.qos:
            if q.name == name:
                return q
        return QosSpec(name)
