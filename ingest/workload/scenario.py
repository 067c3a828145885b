"""Fleet scenario files: the policy and the events a simulation runs under (TOML, ``docs/fleet.md``).

Sections (all optional; unknown sections and keys are errors)::

    [policy]            ordering, backfill, placement, power, bf_interval_s, bf_extra_nodes, preemption,
                        reclaim, power_floor_frac, cooling_overhead_frac, idle_nodes_off, queue_depth
    [weights]           age, fairshare, job_size, qos
    [[qos]]             name, priority, preempt = [...], grp_gpus, max_gpus_per_user, min_power_cap_w
    [[quotas]]          team, nominal_gpus, cohort, borrowing_limit_gpus, shares
    [quota_series]      helios = "FILE.csv", scale = 1.0      (Helios per-team quotas over time)
    [[reservations]]    name, start_h, end_h, halls = [...] | racks = [...] (fnmatch) | nodes = [...], users = [...]
    [[demand_response]] start_h, duration_h, cut_mw | target_mw
    [failures]          rate_per_1000_node_days = { "H100-SXM5-80GB" = 3.2 }, lemon_frac, lemon_rate_ratio,
                        lemon_failures, health_check_s
    [tariff]            usd_per_mwh = [hourly values, repeated]
    [carbon]            kg_per_mwh = [hourly values, repeated]
"""

from __future__ import annotations

import fnmatch
import math
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from ingest.workload.common import WorkloadInputError, read_capped
from ingest.workload.helios import read_helios_quotas
from twin.fleet import failures
from twin.fleet.metrics import HourlySeries
from twin.fleet.policy import DemandResponse, Policy, PolicyError, PriorityWeights, QosSpec, Reservation, TeamQuota

MAX_SCENARIO_BYTES = 4 << 20
MAX_SERIES_HOURS = 24 * 366 * 2
SECTIONS = {
    "policy",
    "weights",
    "qos",
    "quotas",
    "quota_series",
    "reservations",
    "demand_response",
    "failures",
    "tariff",
    "carbon",
}
POLICY_KEYS = {f.name for f in fields(Policy)} - {
    "weights",
    "qos",
    "quotas",
    "reservations",
    "demand_response",
    "quota_changes",
}


@dataclass
class FleetScenario:
    """What a scenario file sets (None: keep the default)."""

    policy: dict = field(default_factory=dict)
    weights: PriorityWeights | None = None
    qos: list[QosSpec] = field(default_factory=list)
    quotas: list[TeamQuota] = field(default_factory=list)
    quota_changes: list[tuple[float, str, int]] = field(default_factory=list)
    reservations: list[dict] = field(default_factory=list)
    demand_response: list[DemandResponse] = field(default_factory=list)
    failure_model: failures.FailureModel | None = None
    tariff: HourlySeries | None = None
    carbon: HourlySeries | None = None


def _err(path, what: str) -> WorkloadInputError:
    return WorkloadInputError(f"{path}: {what}")


def _keys(table: dict, allowed: set, where: str, path) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _err(path, f"{where}: unknown key {unknown[0]!r}")


def _series(table: dict, key: str, path) -> HourlySeries:
    values = table.get(key)
    if not isinstance(values, list) or not values or len(values) > MAX_SERIES_HOURS:
        raise _err(path, f"{key} must be a list of 1 to {MAX_SERIES_HOURS} hourly values")
    try:
        arr = np.array([float(v) for v in values])
    except (TypeError, ValueError):
        raise _err(path, f"{key}: every value must be a number") from None
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise _err(path, f"{key}: values must be finite and >= 0")
    return HourlySeries(arr)


def read_scenario(path: Path | str) -> FleetScenario:
    """Parse a fleet scenario file (one-line errors naming the file and the key)."""
    p = Path(path)
    try:
        doc = tomllib.loads(read_capped(p, MAX_SCENARIO_BYTES).decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _err(p, f"not a TOML scenario ({exc})") from None
    _keys(doc, SECTIONS, "top level", p)
    sc = FleetScenario()
    pol = doc.get("policy", {})
    _keys(pol, POLICY_KEYS, "[policy]", p)
    sc.policy = dict(pol)
    if "weights" in doc:
        _keys(doc["weights"], {"age", "fairshare", "job_size", "qos"}, "[weights]", p)
        sc.weights = PriorityWeights(**{k: float(v) for k, v in doc["weights"].items()})
    for q in doc.get("qos", []):
        _keys(q, {f.name for f in fields(QosSpec)}, "[[qos]]", p)
        sc.qos.append(QosSpec(**{**q, "preempt": tuple(q.get("preempt", ()))}))
    for q in doc.get("quotas", []):
        _keys(q, {f.name for f in fields(TeamQuota)}, "[[quotas]]", p)
        sc.quotas.append(TeamQuota(**q))
    if "quota_series" in doc:
        qs = doc["quota_series"]
        _keys(qs, {"helios", "scale"}, "[quota_series]", p)
        res = read_helios_quotas((p.parent / qs["helios"]).resolve(), float(qs.get("scale", 1.0)))
        sc.quota_changes = res.quotas
    for r in doc.get("reservations", []):
        _keys(r, {"name", "start_h", "end_h", "halls", "racks", "nodes", "users"}, "[[reservations]]", p)
        sc.reservations.append(r)
    for d in doc.get("demand_response", []):
        _keys(d, {"start_h", "duration_h", "cut_mw", "target_mw"}, "[[demand_response]]", p)
        sc.demand_response.append(
            DemandResponse(
                start_s=float(d["start_h"]) * 3600.0,
                duration_s=float(d["duration_h"]) * 3600.0,
                cut_mw=float(d.get("cut_mw", 0.0)),
                target_mw=float(d.get("target_mw", math.inf)),
            )
        )
    if "failures" in doc:
        f = doc["failures"]
        allowed = {x.name for x in fields(failures.FailureModel)}
        _keys(f, allowed, "[failures]", p)
        sc.failure_model = failures.FailureModel(**f)
    if "tariff" in doc:
        _keys(doc["tariff"], {"usd_per_mwh"}, "[tariff]", p)
        sc.tariff = _series(doc["tariff"], "usd_per_mwh", p)
    if "carbon" in doc:
        _keys(doc["carbon"], {"kg_per_mwh"}, "[carbon]", p)
        sc.carbon = _series(doc["carbon"], "kg_per_mwh", p)
    return sc


def reservation_nodes(state, spec: dict, where: str) -> tuple[int, ...]:
    """Node ids a reservation names by halls, rack patterns or node ids."""
    nodes: set[int] = set()
    halls = spec.get("halls", [])
    for h in halls:
        if h not in state.hall_name:
            raise WorkloadInputError(f"{where}: unknown hall {h!r}")
        rack_ids = np.flatnonzero(state.rack_hall == state.hall_name.index(h))
        nodes |= set(np.flatnonzero(np.isin(state.node_rack, rack_ids)).tolist())
    for pattern in spec.get("racks", []):
        rack_ids = [i for i, name in enumerate(state.rack_name) if fnmatch.fnmatchcase(name, pattern)]
        if not rack_ids:
            raise WorkloadInputError(f"{where}: no rack matches {pattern!r}")
        nodes |= set(np.flatnonzero(np.isin(state.node_rack, rack_ids)).tolist())
    for n in spec.get("nodes", []):
        if not (isinstance(n, int) and 0 <= n < state.n_nodes):
            raise WorkloadInputError(f"{where}: node {n!r} is not a node id of the site")
        nodes.add(n)
    if not nodes:
        raise WorkloadInputError(f"{where}: names no nodes (give halls, racks or nodes)")
    return tuple(sorted(nodes))


def apply(policy: Policy, sc: FleetScenario, state) -> Policy:
    """``policy`` with the scenario's settings on top (raises WorkloadInputError for a bad combination)."""
    resv = tuple(
        Reservation(
            name=str(r.get("name", f"resv{i}")),
            start_s=float(r["start_h"]) * 3600.0,
            end_s=float(r["end_h"]) * 3600.0,
            nodes=reservation_nodes(state, r, f"reservation {r.get('name', i)!r}"),
            maintenance=not r.get("users"),
            users=tuple(r.get("users", ())),
        )
        for i, r in enumerate(sc.reservations)
    )
    changes: dict = dict(sc.policy)
    if sc.weights:
        changes["weights"] = sc.weights
    if sc.qos:
        changes["qos"] = tuple(sc.qos)
    if sc.quotas:
        changes["quotas"] = tuple(sc.quotas)
    if sc.quota_changes:
        changes["quota_changes"] = tuple(sc.quota_changes)
    if resv:
        changes["reservations"] = resv
    if sc.demand_response:
        changes["demand_response"] = tuple(sc.demand_response)
    try:
        return replace(policy, **changes)
    except (PolicyError, TypeError) as exc:
        raise WorkloadInputError(f"scenario: {exc}") from None
