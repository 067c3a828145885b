"""Load a workload by format, build the policy, run the fleet simulation, shape the report."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

from ingest.workload import ctfile, gavel, generator, sacct, scenario, swf, tiresias
from ingest.workload.common import ImportResult, WorkloadInputError
from twin.fleet.policy import Policy, QosSpec, TeamQuota
from twin.fleet.simulate import FleetSim, SimOptions
from twin.fleet.topology import fleet_topology
from twin.fleet.workload import WorkloadError, job_table
from twin.training import jobgoodput

FORMATS = ("swf", "sacct", "gavel", "tiresias", "ct")
DEFAULT_PRETRAIN_JOB = "colossus-405b-24k"


@dataclass
class Workload:
    """Jobs with the teams' quotas and the QoS they use."""

    result: ImportResult
    quotas: list[TeamQuota] = field(default_factory=list)
    qos: list[QosSpec] = field(default_factory=list)


def guess_format(path: Path) -> str:
    """The format a file's name suggests (``ct`` for .toml/.parquet, ``gavel`` for a directory or .trace)."""
    if path.is_dir() or path.suffix == ".trace":
        return "gavel"
    return {".swf": "swf", ".toml": "ct", ".parquet": "ct", ".csv": "tiresias"}.get(path.suffix, "sacct")


def load_workload(path: Path | str, fmt: str | None = None, gpus_per_node: int = 8) -> Workload:
    """Read a workload file in ``fmt`` (guessed from the name when None)."""
    p = Path(path)
    fmt = fmt or guess_format(p)
    if fmt not in FORMATS:
        raise WorkloadInputError(f"unknown workload format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if fmt == "swf":
        return Workload(swf.read_swf(p, gpus_per_node=gpus_per_node))
    if fmt == "sacct":
        return Workload(sacct.read_sacct(p))
    if fmt == "gavel":
        return Workload(gavel.read_gavel_dir(p) if p.is_dir() else gavel.read_gavel(p))
    if fmt == "tiresias":
        return Workload(tiresias.read_tiresias(p))
    res, quotas = ctfile.read_ct(p)
    return Workload(res, quotas)


def parse_generate(spec: str, site_gpus: int, days: float, seed: int, state=None) -> Workload:
    """``llm-lab[:key=value,…]`` (keys of :class:`generator.MixSpec`: jobs, teams, n_pretrain, pretrain_job …)."""
    name, _, rest = spec.partition(":")
    if name != "llm-lab":
        raise WorkloadInputError(f"--generate: unknown mix {name!r}; the generator knows 'llm-lab'")
    kw: dict = {"days": days, "seed": seed, "site_gpus": site_gpus}
    job_name = DEFAULT_PRETRAIN_JOB
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        if key == "pretrain_job":
            job_name = value
        elif key in ("jobs", "teams", "n_pretrain"):
            kw[key] = _int(key, value)
        elif key in ("median_run_s", "mean_run_s", "max_run_s"):
            kw[key] = _positive(key, value)
        else:
            raise WorkloadInputError(f"--generate: unknown key {key!r}")
    if not 1 <= kw.get("jobs", 50_000) <= 5_000_000:
        raise WorkloadInputError("--generate: jobs must be within 1 … 5,000,000")
    kw["pretrain_job"] = ctfile.job_file(job_name) if kw.get("n_pretrain", 2) > 0 else None
    storage = jobgoodput.site_storage(state) if state is not None else None
    jobs, quotas, qos = generator.generate(generator.MixSpec(**kw), storage)
    res = ImportResult(source=f"generate:{spec}", jobs=jobs, rows_count=len(jobs))
    return Workload(res, quotas, qos)


def _int(key: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise WorkloadInputError(f"--generate: {key} must be a whole number, got {value!r}") from None


def _positive(key: str, value: str) -> float:
    try:
        v = float(value)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        raise WorkloadInputError(f"--generate: {key} must be a positive number, got {value!r}")
    return v


def build_policy(base: Policy, wl: Workload, sc: scenario.FleetScenario | None, state) -> Policy:
    """The workload's quotas and QoS, then the scenario's settings, over ``base``."""
    changes: dict = {}
    if wl.quotas:
        changes["quotas"] = tuple(wl.quotas)
    if wl.qos:
        changes["qos"] = tuple(wl.qos)
    if wl.result.quotas:
        changes["quota_changes"] = tuple(wl.result.quotas)
    policy = replace(base, **changes)
    return scenario.apply(policy, sc, state) if sc is not None else policy


def simulate(state, wl: Workload, policy: Policy, opts: SimOptions) -> dict:
    """Run ``wl`` on ``state`` and return the JSON report."""
    names = [q.team for q in policy.quotas]
    try:
        table = job_table(wl.result.jobs, teams=names, qos_names=[q.name for q in policy.qos])
    except WorkloadError as exc:
        raise WorkloadInputError(str(exc)) from None
    sim = FleetSim(fleet_topology(state), table, policy, opts)
    res = sim.simulate()
    report = dict(res.fleet)
    report.update(
        site=state.name,
        policy={
            "ordering": policy.ordering,
            "backfill": policy.backfill,
            "placement": policy.placement,
            "power": policy.power,
        },
        workload=wl.result.summary(),
        teams=res.teams,
        isolation=res.isolation[:200],
        nodes_isolated_count=len(res.isolation),
        demand_response=res.demand_response,
    )
    return report


def policy_changes(text: str, base: Policy, flag: str = "--compare") -> Policy:
    """``base`` with ``key=value,…`` changes of its scalar fields (``policy`` means ``ordering``);
    errors name ``flag``."""
    changes: dict = {}
    fields = {f for f in base.__dataclass_fields__ if f not in ("weights", "qos", "quotas", "reservations")}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        key = {"policy": "ordering"}.get(key, key)
        if key not in fields:
            raise WorkloadInputError(f"{flag}: unknown policy key {key!r}")
        current = getattr(base, key)
        if isinstance(current, bool):
            changes[key] = value.lower() in ("1", "true", "on", "yes")
        elif isinstance(current, (int, float)) and not isinstance(current, bool):
            try:
                changes[key] = type(current)(value)
            except ValueError:
                raise WorkloadInputError(f"{flag}: {key} must be a number, got {value!r}") from None
        else:
            changes[key] = value
    try:
        return replace(base, **changes)
    except Exception as exc:  # PolicyError names the field
        raise WorkloadInputError(f"{flag}: {exc}") from None
