"""The twin's answer to a what-if: baseline and scenario outcomes, and what changed.

:func:`outcome` settles the twin on a site under a list of edits (cached per site and
edit list: the baseline, an empty list, is computed once per site); :func:`diff_rows`
lists every compared quantity with baseline, scenario and change, worst change first;
:func:`rack_change` gives per rack how much worse (positive) or better (negative) a
floor metric got; :func:`entity_changes` the power elements and CDUs whose load changed
most; :func:`blast_radius` what goes dark or throttles when one more element trips.
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from dashboard.aggregates import FLOOR_METRIC_BY_KEY, rack_metrics
from dashboard.equipment import cdu_lost
from dashboard.whatif_edits import Applied, apply_edits
from twin.engine.projection import run_scenario
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED, Snapshot
from twin.physics import fabric
from twin.site.tables import POWER_KINDS, SiteTables
from twin.training.sitejob import evaluate_site_job

SETTLE_S = 600.0  # the projection settles the twin this long under the scenario's conditions


@dataclass(frozen=True)
class Quantity:
    """One compared number: section, key (unit in the name), label, unit, decimals, higher is worse."""

    section: str
    key: str
    label: str
    unit: str
    digits: int
    higher_is_worse: bool


QUANTITIES: tuple[Quantity, ...] = (
    Quantity("thermals", "hottest_gpu_temp_c", "hottest GPU", "°C", 1, True),
    Quantity("thermals", "gpus_throttled_count", "GPUs throttled", "GPUs", 0, True),
    Quantity("thermals", "gpus_down_count", "GPUs down", "GPUs", 0, True),
    Quantity("thermals", "pump_loss_throttle_s", "time to throttle after a pump loss (worst rack)", "s", 0, False),
    Quantity("thermals", "cdu_loss_throttle_s", "time to throttle after a CDU loss (worst rack)", "s", 0, False),
    Quantity("thermals", "facility_loss_throttle_s", "time to throttle after facility-water loss (worst rack)", "s", 0, False),
    Quantity("thermals", "excursion_throttle_s", "time to throttle after a supply excursion (worst rack)", "s", 0, False),
    Quantity("cooling", "cdu_max_use_frac", "highest CDU capacity use", "%", 1, True),
    Quantity("cooling", "cdus_over_capacity_count", "CDUs over capacity or lost", "CDUs", 0, True),
    Quantity("cooling", "loop_max_use_frac", "highest facility-loop capacity use", "%", 1, True),
    Quantity("power", "gpus_installed_count", "GPUs installed", "GPUs", 0, False),
    Quantity("power", "it_power_mw", "IT power", "MW", 2, True),
    Quantity("power", "facility_power_mw", "facility power", "MW", 2, True),
    Quantity("power", "element_max_load_frac", "highest element load", "%", 1, True),
    Quantity("power", "elements_overloaded_count", "elements over their usable rating", "elements", 0, True),
    Quantity("power", "n1_violations_count", "N-1 violations", "elements", 0, True),
    Quantity("power", "dark_racks_count", "racks dark", "racks", 0, True),
    Quantity("power", "gpus_runnable_count", "GPUs runnable at full power", "GPUs", 0, False),
    Quantity("power", "generation_capacity_mw", "generation capacity", "MW", 1, False),
    Quantity("power", "generation_shortfall_mw", "generation shortfall", "MW", 2, True),
    Quantity("power", "swing_amplitude_mw", "power swing amplitude", "MW", 2, True),
    Quantity("power", "swing_shortfall_mw", "swing beyond ramp limits", "MW", 2, True),
    Quantity("fabric", "links_down_count", "fabric links down", "links", 0, True),
    Quantity("fabric", "leaf_spine_capacity_tbps", "leaf–spine capacity", "Tb/s", 1, False),
    Quantity("fabric", "job_dp_busbw_gbps", "job data-parallel bus bandwidth", "Gb/s", 1, False),
    Quantity("jobs", "job_gpus_count", "job GPUs", "GPUs", 0, False),
    Quantity("jobs", "tokens_per_s", "throughput", "tokens/s", 0, False),
    Quantity("jobs", "mfu_frac", "MFU", "%", 1, False),
    Quantity("jobs", "goodput_tokens_per_s", "goodput", "tokens/s", 0, False),
)
QUANTITY_BY_KEY = {q.key: q for q in QUANTITIES}
SECTIONS = ("thermals", "cooling", "power", "fabric", "jobs")
PERCENT_KEYS = {q.key for q in QUANTITIES if q.unit == "%"}  # fractions shown as percent


@dataclass
class Outcome:
    """The settled twin under one edit list."""

    applied: Applied
    snapshot: Snapshot
    detail: object
    numbers: dict[str, float]
    racks: dict[str, np.ndarray]  # floor metrics per rack of ``applied.state``

    @property
    def state(self) -> SiteTables:
        return self.applied.state


def _numbers(state: SiteTables, snap: Snapshot, detail, job) -> tuple[dict[str, float], Snapshot]:
    """Every :data:`QUANTITIES` number of a settled snapshot (NaN when not defined, e.g. no job)."""
    bal, sw, proj = detail.balance, detail.swing, detail.projections_s
    lost = cdu_lost(state, snap)
    cdu_use = np.where(lost, np.inf, snap.cdu_heat_kw / np.maximum(snap.cdu_capacity_kw, 1e-9))
    loop_use = snap.loop_heat_kw / np.maximum(state.loop_capacity_kw, 1e-9)
    up = snap.link_up_flag
    cap = fabric.tier_capacity_gbps(state, fabric.link_alive(state, up))
    out = {
        "hottest_gpu_temp_c": float(np.nanmax(snap.gpu_temp_c)),
        "gpus_throttled_count": float((snap.gpu_state == GPU_THROTTLED).sum()),
        "gpus_down_count": float((snap.gpu_state == GPU_DOWN).sum()),
        "cdu_max_use_frac": float(np.max(np.where(np.isfinite(cdu_use), cdu_use, 0.0))) if cdu_use.size else math.nan,
        "cdus_over_capacity_count": float((cdu_use > 1.0).sum()),
        "loop_max_use_frac": float(loop_use.max()) if loop_use.size else math.nan,
        "gpus_installed_count": float(state.n_gpus), "it_power_mw": bal.it_mw, "facility_power_mw": bal.facility_mw,
        "element_max_load_frac": float(np.nanmax(snap.power_load_frac)) if state.n_power else math.nan,
        "elements_overloaded_count": float((snap.power_load_frac > 1.0).sum()),
        "n1_violations_count": float((snap.power_n1_load_frac > 1.0).sum()),
        "dark_racks_count": float(len(detail.dark_racks)),
        "gpus_runnable_count": float(bal.gpus_at_full_power),
        "generation_capacity_mw": bal.generation_capacity_mw, "generation_shortfall_mw": bal.shortfall_mw,
        "swing_amplitude_mw": sw.amplitude_mw, "swing_shortfall_mw": sw.shortfall_mw,
        "links_down_count": float((~up).sum()), "leaf_spine_capacity_tbps": cap["leaf_spine"] / 1000.0,
    }
    for key in ("pump_loss_throttle_s", "cdu_loss_throttle_s", "facility_loss_throttle_s", "excursion_throttle_s"):
        values = np.asarray(proj.get(key, []), dtype=np.float64)
        finite = values[np.isfinite(values)]
        out[key] = float(finite.min()) if finite.size else math.inf
    job_numbers = dict.fromkeys(("job_dp_busbw_gbps", "job_gpus_count", "tokens_per_s", "mfu_frac",
                                 "goodput_tokens_per_s"), math.nan)
    if job is not None:
        running = np.where(snap.gpu_state == GPU_DOWN, 0.0, snap.throttle_frac)
        running = np.where(snap.gpu_state == GPU_OFF, 0.0, running)
        result = evaluate_site_job(state, job.spec, job.gpu_ids, running, up)
        st = result.status
        snap.jobs = [st]
        job_numbers = {"job_dp_busbw_gbps": result.fabric["dp"].busbw_gbps, "job_gpus_count": float(st.gpu_ids.size),
                       "tokens_per_s": st.tokens_per_s, "mfu_frac": st.mfu_frac,
                       "goodput_tokens_per_s": st.goodput_tokens_per_s}
    out.update(job_numbers)
    return out, snap


_cache: OrderedDict[tuple, Outcome] = OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 16


def outcome(state: SiteTables, edits: list[dict], design_limits: str = "warn") -> Outcome:
    """The twin settled on ``state`` under ``edits`` (raises ``EditRejected``); cached per site and edit list.

    ``design_limits``: ``"warn"`` keeps exceeded design ratings as findings of the edited
    site, ``"strict"`` refuses the edit that exceeds one.
    """
    key = (id(state), design_limits, json.dumps(edits, sort_keys=True, default=str))
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None and hit.applied.state is not None:
            _cache.move_to_end(key)
            return hit
    applied, scenario = apply_edits(state, edits, SETTLE_S, design_limits)
    snap, detail, job = run_scenario(applied.state, scenario)
    numbers, snap = _numbers(applied.state, snap, detail, job)
    result = Outcome(applied, snap, detail, numbers, rack_metrics(applied.state, snap))
    with _cache_lock:
        _cache[key] = result
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return result


# ------------------------------------------------------------------ differences
@dataclass(frozen=True)
class Row:
    """One compared quantity: baseline, scenario, change and how much worse (+) or better (−)."""

    quantity: Quantity
    baseline: float
    scenario: float
    change: float
    worse: float  # change oriented so that positive is worse; relative to the baseline's size


def _finite(value: float) -> float:
    return value if math.isfinite(value) else math.nan


def diff_rows(base: Outcome, scen: Outcome, section: str | None = None) -> list[Row]:
    """Compared quantities (of ``section``, or all), the largest relative change first."""
    rows = []
    for q in QUANTITIES:
        if section is not None and q.section != section:
            continue
        a, b = base.numbers.get(q.key, math.nan), scen.numbers.get(q.key, math.nan)
        if math.isinf(a) and math.isinf(b):
            change = 0.0
        else:
            change = _finite(b - a) if math.isfinite(a) and math.isfinite(b) else (
                math.nan if not (math.isinf(a) or math.isinf(b)) else (-math.inf if math.isinf(a) else math.inf))
        scale = max(abs(a) if math.isfinite(a) else 0.0, 1e-9)
        oriented = change if q.higher_is_worse else -change
        worse = oriented / scale if math.isfinite(oriented) else (math.copysign(1e9, oriented) if not math.isnan(oriented) else 0.0)
        rows.append(Row(q, a, b, change, worse))
    return sorted(rows, key=lambda r: -abs(r.worse))


def rack_change(base: Outcome, scen: Outcome, metric: str) -> np.ndarray:
    """Per rack of the scenario: how much worse (+) or better (−) ``metric`` is than the same-named baseline rack.

    A rack without a baseline twin (added) compares against nothing: NaN.
    """
    index = {n: i for i, n in enumerate(base.state.rack_name)}
    match = np.array([index.get(n, -1) for n in scen.state.rack_name], dtype=np.int64)
    b = np.where(match >= 0, base.racks[metric][np.maximum(match, 0)], np.nan)
    d = scen.racks[metric] - b
    return d if not FLOOR_METRIC_BY_KEY[metric].higher_is_better else -d


def entity_changes(base: Outcome, scen: Outcome, kind: str, count: int = 12) -> list[tuple[str, float, float]]:
    """(name, baseline, scenario) load fractions of the power elements (``kind="power"``) or CDUs
    (``kind="cdu"``) whose load changed most, largest change first."""
    if kind == "power":
        names_a, a = base.state.power_name, base.snapshot.power_load_frac
        names_b, b = scen.state.power_name, scen.snapshot.power_load_frac
    else:
        names_a, a = base.state.cdu_name, base.snapshot.cdu_heat_kw / np.maximum(base.snapshot.cdu_capacity_kw, 1e-9)
        names_b, b = scen.state.cdu_name, scen.snapshot.cdu_heat_kw / np.maximum(scen.snapshot.cdu_capacity_kw, 1e-9)
    index = {n: i for i, n in enumerate(names_a)}
    rows = []
    for j, name in enumerate(names_b):
        i = index.get(name)
        before = float(a[i]) if i is not None else math.nan
        rows.append((name, before, float(b[j])))
    rows = [r for r in rows if not (math.isfinite(r[1]) and abs(r[2] - r[1]) < 1e-4)]
    rows.sort(key=lambda r: -(abs(r[2] - r[1]) if math.isfinite(r[1] - r[2]) else math.inf))
    return rows[:count]


# ------------------------------------------------------------------ blast radius
BLAST_KINDS = ("rack", "cdu", "pump", "loop", "chiller", "transformer", "busway", "ups", "switchgear", "generator",
               "battery", "grid", "switch", "node")


@dataclass(frozen=True)
class Blast:
    """What tripping one element takes out, against the scenario it trips in."""

    element: str
    kind: str
    dark_racks: list[str]
    throttled_racks: list[str]
    gpus_lost_count: int
    gpus_throttled_count: int
    jobs_hit: list[str]
    tokens_per_s_lost: float


def blast_radius(state: SiteTables, edits: list[dict], kind: str, element: str) -> Blast:
    """Trip ``element`` (a ``kind`` of :data:`BLAST_KINDS`) on top of ``edits`` and list what it takes out."""
    before = outcome(state, edits)
    if kind == "rack":
        names = before.state.rack_name
        if element not in names:
            from dashboard.whatif_edits import EditRejected

            raise EditRejected(None, "element", f"no rack named {element[:40]!r} at this site")
        rack = names.index(element)
        nodes = [before.state.node_name[n] for n in np.flatnonzero(before.state.node_rack == rack)]
        trip = {"op": "fail", "kind": "node", "elements": nodes}
    else:
        trip = {"op": "fail", "kind": kind, "elements": [element]}
    after = outcome(state, list(edits) + [trip])
    s, a, b = before.state, before.snapshot, after.snapshot
    lost = ((b.gpu_state == GPU_DOWN) | (b.gpu_state == GPU_OFF)) & ~((a.gpu_state == GPU_DOWN) | (a.gpu_state == GPU_OFF))
    throttled = (b.gpu_state == GPU_THROTTLED) & (a.gpu_state != GPU_THROTTLED) & ~lost
    lost_per_rack = np.bincount(s.gpu_rack[lost], minlength=s.n_racks)
    gpus_per_rack = np.bincount(s.gpu_rack, minlength=s.n_racks)
    dark = np.flatnonzero((lost_per_rack == gpus_per_rack) & (lost_per_rack > 0))
    hit = np.flatnonzero(np.bincount(s.gpu_rack[throttled | lost], minlength=s.n_racks) > 0)
    throttled_racks = np.setdiff1d(hit, dark)
    tokens_before = before.numbers.get("tokens_per_s", math.nan)
    tokens_after = after.numbers.get("tokens_per_s", math.nan)
    jobs = [j.name for j in a.jobs if np.isin(j.gpu_ids, np.flatnonzero(lost | throttled)).any()]
    lost_tokens = tokens_before - tokens_after if math.isfinite(tokens_before) and math.isfinite(tokens_after) else math.nan
    return Blast(element, kind, [s.rack_name[r] for r in dark], [s.rack_name[r] for r in throttled_racks],
                 int(lost.sum()), int(throttled.sum()), jobs, lost_tokens)


def blast_names(state: SiteTables, kind: str) -> list[str]:
    """Elements of ``kind`` one can trip (racks by name, the rest as :func:`whatif_edits.kind_names`)."""
    from dashboard.whatif_edits import kind_names

    return list(state.rack_name) if kind == "rack" else kind_names(state, kind)


def power_kind_of(state: SiteTables, name: str) -> str | None:
    """The kind of a power element named ``name`` (None when there is none)."""
    try:
        return POWER_KINDS[state.power_kind[state.power_name.index(name)]]
    except ValueError:
        return None


# ------------------------------------------------------------------ design findings
def finding_counts(base: Outcome, scen: Outcome) -> list[tuple[str, int, int]]:
    """(check, baseline count, scenario count) of the design findings, most new findings first."""
    def count(o: Outcome) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in getattr(o.state, "design_findings", []):
            out[f.check] = out.get(f.check, 0) + 1
        return out

    a, b = count(base), count(scen)
    rows = [(check, a.get(check, 0), b.get(check, 0)) for check in sorted(set(a) | set(b))]
    return sorted(rows, key=lambda r: -(r[2] - r[1]))


def new_findings(base: Outcome, scen: Outcome, count: int = 15) -> list:
    """Design findings of the scenario the baseline does not have, the largest overload first."""
    known = {(f.check, f.element) for f in getattr(base.state, "design_findings", [])}
    fresh = [f for f in getattr(scen.state, "design_findings", []) if (f.check, f.element) not in known]

    def excess(f) -> float:
        if f.load_kw is not None and f.limit_kw:
            return f.load_kw / f.limit_kw
        if f.ports_needed_count is not None and f.ports_available_count:
            return f.ports_needed_count / f.ports_available_count
        return 0.0

    return sorted(fresh, key=lambda f: -excess(f))[:count]
