"""The twin's answer to a what-if, as the editor shows it: the numbers of ``clustertwin project``.

:func:`outcome` resolves an edit list (:func:`dashboard.whatif.edits.resolve_edits`) and
runs :func:`twin.scenario.compare.compare` on it: a :class:`~twin.scenario.reports.Comparison`
(``baseline``, ``scenario``, ``diff``), the report ``clustertwin project --scenario FILE --json``
prints, cached per site and edit list (compare keeps the baseline side itself).  The
functions below only pick from it:
:func:`diff_rows` the compared figures of one section, largest relative change first;
:func:`rack_changes` per rack of the scenario site the change of its hottest GPU and its
power, whether it went dark and whether an edit changed it; :func:`entity_changes` the
power elements and CDUs whose load changed most; :func:`blast_radius` what one more
element's trip takes out, as its JSON document (the page shows it as it is).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from dashboard.whatif.edits import EditRejected, resolve_edits
from twin.cache import BoundedCache
from twin.scenario.compare import blast_radius as twin_blast_radius
from twin.scenario.compare import compare
from twin.scenario.conditions import Scenario
from twin.scenario.fleetload import FleetLoad
from twin.scenario.reports import Comparison, ScenarioSide
from twin.site import design
from twin.site.design import DesignFinding
from twin.site.tables import SiteTables
from twin.training.goodput import ReliabilityError
from twin.training.sitejob import PlacementError
from twin.training.steptime import TrainingConfigError


@dataclass(frozen=True)
class Quantity:
    """One compared figure: section, path in the report (``"gpus.n_gpus_down"``), label, unit, decimals."""

    section: str
    path: str
    label: str
    unit: str
    digits: int


QUANTITIES: tuple[Quantity, ...] = (
    Quantity("thermals", "hottest_gpu_temp_c", "hottest GPU", "°C", 1),
    Quantity("thermals", "gpus.n_gpus_throttled", "GPUs throttled", "GPUs", 0),
    Quantity("thermals", "gpus.n_gpus_down", "GPUs down", "GPUs", 0),
    Quantity("thermals", "ttt.pump_loss_throttle_s", "time to throttle after a pump loss (worst rack)", "s", 0),
    Quantity("thermals", "ttt.cdu_loss_throttle_s", "time to throttle after a CDU loss (worst rack)", "s", 0),
    Quantity(
        "thermals", "ttt.facility_loss_throttle_s", "time to throttle after facility-water loss (worst rack)", "s", 0
    ),
    Quantity("thermals", "ttt.excursion_throttle_s", "time to throttle after a supply excursion (worst rack)", "s", 0),
    Quantity("cooling", "cooling.cdu_max_load_frac", "highest CDU capacity use", "%", 1),
    Quantity("cooling", "cooling.loop_max_load_frac", "highest facility-loop capacity use", "%", 1),
    Quantity("cooling", "cooling_power_mw", "cooling power", "MW", 2),
    Quantity("cooling", "pue_ratio", "PUE", "", 3),
    Quantity("power", "gpus.n_gpus", "GPUs installed", "GPUs", 0),
    Quantity("power", "it_power_mw", "IT power", "MW", 2),
    Quantity("power", "facility_power_mw", "facility power", "MW", 2),
    Quantity("power", "n_overloaded_elements", "elements over their usable rating", "elements", 0),
    Quantity("power", "n_n1_violations", "N-1 violations", "elements", 0),
    Quantity("power", "n_dark_racks", "racks dark", "racks", 0),
    Quantity("power", "n_gpus_runnable_at_full_power", "GPUs runnable at full power", "GPUs", 0),
    Quantity("power", "power_cap_for_all_gpus_w", "power cap that fits all GPUs", "W", 0),
    Quantity("power", "generation_capacity_mw", "generation capacity", "MW", 1),
    Quantity("power", "generation_n1_capacity_mw", "generation capacity after the largest unit trips", "MW", 1),
    Quantity("power", "shortfall_mw", "generation shortfall", "MW", 2),
    Quantity("power", "swing.swing_amplitude_mw", "training power swing", "MW", 2),
    Quantity("power", "swing.swing_shortfall_mw", "swing beyond ramp limits", "MW", 2),
    Quantity("power", "n_design_errors", "exceeded design ratings (errors)", "findings", 0),
    Quantity("power", "n_design_warnings", "design warnings", "findings", 0),
    Quantity("fabric", "fabric.n_links_down", "fabric links down", "links", 0),
    Quantity("fabric", "fabric.uplink_capacity_tbps.leaf_to_spine", "leaf–spine capacity", "Tb/s", 1),
    Quantity("fabric", "fabric.uplink_capacity_tbps.spine_to_core", "spine–core capacity", "Tb/s", 1),
    Quantity("fabric", "fabric.nic_injection_tbps", "NIC injection bandwidth", "Tb/s", 1),
    Quantity("fabric", "fabric.leaf_ports_used_count", "leaf ports used", "ports", 0),
    Quantity("fabric", "fabric.leaf_ports_over_count", "leaf ports over budget", "ports", 0),
    Quantity("fabric", "job.dp_busbw_gbps", "job data-parallel bus bandwidth", "Gb/s", 1),
    Quantity("jobs", "job.tokens_per_s", "throughput", "tokens/s", 0),
    Quantity("jobs", "job.mfu_frac", "MFU", "%", 1),
    Quantity("jobs", "job.goodput_tokens_per_s", "goodput", "tokens/s", 0),
    Quantity("jobs", "job.step_time_s", "step time", "s", 2),
)
SECTIONS = ("thermals", "cooling", "power", "fabric", "jobs")


@dataclass
class Outcome:
    """An edit list's answer: the resolved scenario, the site it runs on and ``compare``'s object."""

    scenario: Scenario
    state: SiteTables  # the edited site (the baseline's tables when the layout is as built)
    answer: Comparison  # baseline, scenario, diff: the report of ``clustertwin project --scenario``
    touched_racks: frozenset[str]  # racks an edit moved, added or changed (type, feeds, CDU)
    base: SiteTables  # the baseline it answers against (held: the cache key uses its id)
    load: FleetLoad | None = None  # the fleet's occupancy both sides run (None: the nominal load)


# (id of the baseline, design limits, edits as JSON, id of the fleet load) → answer
_outcomes: BoundedCache[Outcome] = BoundedCache(16)
# (id of the site, period) → the live fleet's occupancy, taken once per LOAD_PERIOD_S
_loads: BoundedCache[tuple[SiteTables, FleetLoad]] = BoundedCache(4)
LOAD_PERIOD_S = 600.0  # a what-if answers against one occupancy for ten minutes, so its answers are cached


def live_load(view, now_s: float | None = None) -> FleetLoad | None:
    """The live fleet's occupancy for the what-if (None without a fleet): per GPU the utilisation of the
    job running there, taken at most every :data:`LOAD_PERIOD_S` so that answers within it agree."""
    get = getattr(view, "fleet", None)
    fleet = get() if callable(get) else None
    occupancy = getattr(fleet, "occupancy", None)
    if occupancy is None:
        return None
    state = view.state
    period = int((time.time() if now_s is None else now_s) // LOAD_PERIOD_S)
    return _loads.get_or_make(
        (id(state), period),
        lambda: (state, FleetLoad(state, np.array(occupancy.gpu_util_frac, dtype=np.float64), datetime.now(UTC))),
        valid=lambda hit: hit[0] is state,
    )[1]


def outcome(
    base: SiteTables, edits: list[dict], design_limits: str = design.WARN, load: FleetLoad | None = None
) -> Outcome:
    """The answer to ``edits`` on ``base`` (raises ``EditRejected``) with the fleet's ``load`` on both sides;
    cached per site, edit list and load."""
    key = (id(base), design_limits, json.dumps(edits, sort_keys=True, default=str), id(load))
    hit = _outcomes.get(key, valid=lambda kept: kept.base is base and kept.load is load)
    if hit is not None:
        return hit
    scenario = resolve_edits(base, edits, design_limits, load)
    try:
        answer = compare(base, scenario)
    except (PlacementError, TrainingConfigError, ReliabilityError, FileNotFoundError) as exc:
        # the edits apply, but the scenario's job cannot run on the edited site (fewer GPUs than it needs):
        # the last edit is refused, as `clustertwin project --scenario` refuses the file
        problem = f"no job file {scenario.job!r}" if isinstance(exc, FileNotFoundError) else str(exc)
        raise EditRejected(
            len(edits) - 1 if edits else None, "job", f"the scenario's job cannot run: {problem} (change the job first)"
        ) from None
    touched = frozenset(r.rack for r in answer.diff.racks if set(r.layout) - {"removed"})
    result = Outcome(scenario, scenario.state if scenario.state is not None else base, answer, touched, base, load)
    return _outcomes.put(key, result)


# ------------------------------------------------------------------ the compared figures
@dataclass(frozen=True)
class Row:
    """One compared figure: baseline, scenario, change and the twin's verdict (worse, better, changed, same)."""

    quantity: Quantity
    baseline: float
    scenario: float
    change: float
    verdict: str
    size: float  # |change| relative to the baseline, for the order

    @property
    def shows_change(self) -> bool:
        """The change is not zero at the figure's printed precision (fractions print as percent)."""
        if not math.isfinite(self.change):
            return not math.isnan(self.change)
        scaled = self.change * 100 if self.quantity.path.endswith("_frac") else self.change
        return round(scaled, self.quantity.digits) != 0


def _number(value) -> float:
    if value is None:
        return math.inf  # a time to throttle of None: never throttles
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def diff_rows(result: Outcome, section: str | None = None) -> list[Row]:
    """The compared figures (of ``section``, or all): the changes that show at their printed precision
    first, each group by the largest relative change."""
    diff = result.answer.diff
    rows = []
    for q in QUANTITIES:
        if section is not None and q.section != section:
            continue
        entry = diff.time_to_throttle_s.get(q.path[4:]) if q.path.startswith("ttt.") else diff.headline.get(q.path)
        if entry is None:
            continue
        a, b = _number(entry.baseline), _number(entry.scenario)
        change = entry.delta
        if change is None:
            change = (
                0.0
                if a == b
                else (
                    b - a
                    if math.isfinite(a) and math.isfinite(b)
                    else math.copysign(math.inf, 1 if b > a else -1)
                    if not (math.isnan(a) or math.isnan(b))
                    else math.nan
                )
            )
        scale = abs(a) if math.isfinite(a) and a != 0 else 1.0
        size = abs(change) / scale if math.isfinite(change) else (math.inf if not math.isnan(change) else 0.0)
        rows.append(Row(q, a, b, float(change), entry.change, size))
    return sorted(rows, key=lambda r: (not r.shows_change, -r.size))


@dataclass(frozen=True)
class RackChanges:
    """Per rack of the scenario site: Δ hottest GPU [K], Δ power [kW] (0 unchanged, NaN added), dark, edited."""

    temp_delta_k: np.ndarray
    power_delta_kw: np.ndarray
    dark: np.ndarray
    edited: np.ndarray  # rack ids
    verdict: dict[str, str]  # rack name → worse / better / changed / added


def rack_changes(result: Outcome) -> RackChanges:
    """The racks of ``diff.racks`` laid on the scenario site's rack order."""
    state = result.state
    index = {n: i for i, n in enumerate(state.rack_name)}
    temp = np.zeros(state.n_racks)
    power = np.zeros(state.n_racks)
    dark = np.zeros(state.n_racks, dtype=bool)
    verdict: dict[str, str] = {}
    for entry in result.answer.diff.racks:
        i = index.get(entry.rack)
        if i is None:
            continue  # removed: not on the scenario's floor
        verdict[entry.rack] = entry.change
        if entry.change == "added":
            temp[i] = power[i] = np.nan
            continue
        temp[i] = entry.rack_max_gpu_temp_delta_k or 0.0
        power[i] = entry.rack_power_delta_kw or 0.0
        dark[i] = bool(entry.dark_flag)
    edited = np.array(sorted(index[n] for n in result.touched_racks if n in index), dtype=np.int64)
    return RackChanges(temp, power, dark, edited, verdict)


def entity_changes(result: Outcome, kind: str, count: int = 12) -> list[tuple[str, float, float]]:
    """(name, baseline, scenario) load fractions of the power elements (``kind="power"``) or CDUs (``"cdu"``)
    whose load changed most, largest change first (NaN baseline: added)."""
    diff = result.answer.diff
    rows = []
    if kind == "power":
        for e in diff.power_elements:
            rows.append((e.element, e.load_frac - e.load_delta_frac, e.load_frac))
    else:
        for e in diff.cdus:
            if e.change == "removed":
                continue
            after = e.load_frac
            rows.append((e.name, math.nan if e.change == "added" else after - e.load_delta_frac, after))
    rows.sort(key=lambda r: -(abs(r[2] - r[1]) if math.isfinite(r[1]) else math.inf))
    return rows[:count]


def finding_counts(result: Outcome) -> list[tuple[str, int, int]]:
    """(check, baseline count, scenario count) of the design findings, most new findings first."""

    def count(report: ScenarioSide) -> dict[str, int]:
        out: dict[str, int] = {}
        for f in report.design_findings:
            out[f.check] = out.get(f.check, 0) + 1
        return out

    a, b = count(result.answer.baseline), count(result.answer.scenario)
    rows = [(check, a.get(check, 0), b.get(check, 0)) for check in sorted(set(a) | set(b))]
    return sorted(rows, key=lambda r: -(r[2] - r[1]))


def new_findings(result: Outcome, count: int = 15) -> list[DesignFinding]:
    """Design findings the edits brought, the largest overload first."""

    def excess(f: DesignFinding) -> float:
        if f.load_kw is not None and f.limit_kw:
            return f.load_kw / f.limit_kw
        if f.ports_needed_count is not None and f.ports_available_count:
            return f.ports_needed_count / f.ports_available_count
        return 0.0

    return sorted(result.answer.diff.design_findings.new, key=lambda f: -excess(f))[:count]


# ------------------------------------------------------------------ blast radius
BLAST_KINDS = (
    "rack",
    "cdu",
    "loop",
    "chiller",
    "transformer",
    "busway",
    "ups",
    "switchgear",
    "generator",
    "battery",
    "grid",
    "switch",
    "node",
)


def blast_radius(base: SiteTables, edits: list[dict], element: str, load: FleetLoad | None = None) -> dict:
    """What tripping ``element`` takes out in the scenario of ``edits``: the JSON document of
    :func:`twin.scenario.compare.blast_radius`'s report, as ``clustertwin blast-radius --json`` prints it."""
    result = outcome(base, edits, load=load)
    return twin_blast_radius(result.state, element, result.scenario).as_dict()


def blast_names(state: SiteTables, kind: str) -> list[str]:
    """Elements of ``kind`` one can trip (see :func:`dashboard.whatif.edits.kind_names`)."""
    from dashboard.whatif.edits import kind_names

    return kind_names(state, kind)
