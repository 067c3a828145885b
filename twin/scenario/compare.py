"""The what-if answer: baseline and scenario projections side by side, their differences, and blast radius.

:func:`compare` runs the twin on the baseline site and on the scenario (its edited site
when edits change the layout) at the same instant and settling time, and returns a
:class:`~twin.scenario.reports.Comparison` (``baseline``, ``scenario``, ``diff``; its JSON
document is ``{"baseline", "scenario", "diff"}``): each side is the ``clustertwin project``
report plus cooling use (CDUs, loops), fabric ports and the design findings; ``diff`` marks every headline figure, rack and element that changed as
``worse`` or ``better`` (or ``changed`` where neither applies) with the amount.  Racks and
elements are matched by name, so added, removed and moved racks show as such.

:func:`blast_radius` says what an element's trip takes down: the racks it feeds or cools
(by topology), and, from a twin run with it failed, racks gone dark, GPUs down or
throttled, and job throughput lost.  Both are pure functions of their arguments.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, replace

import numpy as np

from twin.cache import BoundedCache
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED, Snapshot
from twin.errors import InputError
from twin.scenario.conditions import Scenario
from twin.scenario.projection import project_run
from twin.scenario.reports import (
    BlastRadius,
    CduUse,
    Change,
    Comparison,
    CoolingUse,
    Diff,
    ElementChange,
    FindingChanges,
    JobLoss,
    LoadChange,
    LoopUse,
    ProjectionReport,
    RackChange,
    ScenarioSide,
)
from twin.scenario.whatif import add_failures
from twin.site.tables import POWER_KINDS, TIER_LEAF, SiteTables
from twin.site.topology import find_element, racks_exposed

TEMP_TOLERANCE_K = 0.5  # a rack's hottest GPU changing less than this is "same"
FRAC_TOLERANCE = 0.005  # load fractions changing less than this are "same"
REL_TOLERANCE = 1e-4  # headline figures changing by less than this fraction are "same"
# (id of the baseline site, instant, settling time) → its side; the side holds the site, so an id is checked
_baselines: BoundedCache[_Run] = BoundedCache(4)

# headline figures: (field path in the side's report, direction): +1 higher is better, -1 higher is worse, 0 neither
HEADLINE = (
    (("it_power_mw",), 0),
    (("facility_power_mw",), 0),
    (("cooling_power_mw",), 0),
    (("pue_ratio",), -1),
    (("generation_capacity_mw",), 1),
    (("generation_n1_capacity_mw",), 1),
    (("shortfall_mw",), -1),
    (("n_gpus_runnable_at_full_power",), 1),
    (("power_cap_for_all_gpus_w",), 1),
    (("gpus", "n_gpus"), 0),
    (("gpus", "n_gpus_throttled"), -1),
    (("gpus", "n_gpus_down"), -1),
    (("gpus", "n_gpus_off"), 0),
    (("swing", "swing_amplitude_mw"), -1),
    (("swing", "swing_shortfall_mw"), -1),
    (("fabric", "n_links_down"), -1),
    (("fabric", "nic_injection_tbps"), 1),
    (("fabric", "uplink_capacity_tbps", "leaf_to_spine"), 1),
    (("fabric", "uplink_capacity_tbps", "spine_to_core"), 1),
    (("fabric", "leaf_ports_used_count"), 0),
    (("fabric", "leaf_ports_over_count"), -1),
    (("cooling", "cdu_max_load_frac"), -1),
    (("cooling", "loop_max_load_frac"), -1),
    (("job", "tokens_per_s"), 1),
    (("job", "mfu_frac"), 1),
    (("job", "goodput_tokens_per_s"), 1),
    (("job", "step_time_s"), -1),
    (("job", "dp_busbw_gbps"), 1),
    (("hottest_gpu_temp_c",), -1),
    (("n_dark_racks",), -1),
    (("n_overloaded_elements",), -1),
    (("n_n1_violations",), -1),
    (("n_design_errors",), -1),
    (("n_design_warnings",), -1),
)


def compare(baseline: SiteTables, scenario: Scenario) -> Comparison:
    """``scenario`` against the baseline site at the same instant (:class:`Comparison`).

    The baseline side of the last few (site, instant, settling time) is kept: the next edit of
    the same scenario runs the twin once.  Both sides run at the scenario's instant, settling time
    and fleet load (``fleet_util_frac``: the work on the GPUs outside the job).
    """
    base_scenario = Scenario(
        name="baseline", time=scenario.time, settle_s=scenario.settle_s, fleet_util_frac=scenario.fleet_util_frac
    )
    base = _baselines.get_or_make(
        (id(baseline), scenario.time, scenario.settle_s, scenario.fleet_util_frac),
        lambda: _side(baseline, base_scenario),
        valid=lambda side: side.state is baseline,
    )
    scen_state = scenario.state if scenario.state is not None else baseline
    scen = _side(scen_state, scenario)
    return Comparison(baseline=copy.deepcopy(base.report), scenario=scen.report, diff=_diff(base, scen))


@dataclass
class _Run:
    """One side's report with what the diff reads of its run."""

    report: ScenarioSide
    state: SiteTables
    snap: Snapshot
    cdu_frac: np.ndarray  # [n_cdus] heat over capacity
    loop_frac: np.ndarray  # [n_loops]


def _side(state: SiteTables, scenario: Scenario) -> _Run:
    projection, snap, _detail, _ = project_run(state, scenario)
    cdu_frac = np.where(snap.cdu_capacity_kw > 0, snap.cdu_heat_kw / np.maximum(snap.cdu_capacity_kw, 1e-9), 0.0)
    loop_frac = snap.loop_heat_kw / state.loop_capacity_kw
    leaves = np.flatnonzero(state.switch_tier == TIER_LEAF)
    leaf_nics = np.bincount(state.gpu_leaf, minlength=leaves.size)
    down = _leaf_down_ports(state)
    findings = list(state.design_findings)
    report = ScenarioSide(
        **{f.name: getattr(projection, f.name) for f in dataclasses.fields(ProjectionReport)},
        cooling=_cooling_use(state, snap, cdu_frac, loop_frac),
        design_findings=findings,
        n_design_errors=sum(f.severity == "error" for f in findings),
        n_design_warnings=sum(f.severity == "warning" for f in findings),
        hottest_gpu_temp_c=float(np.nanmax(snap.gpu_temp_c)) if snap.gpu_temp_c.size else 0.0,
        n_dark_racks=len(projection.dark_racks),
        n_overloaded_elements=len(projection.overloaded_elements),
        n_n1_violations=int((snap.power_n1_load_frac > 1.0).sum()),
    )
    report.fabric.leaf_ports_used_count = int(leaf_nics.sum())
    report.fabric.leaf_ports_available_count = int(down * leaves.size)
    report.fabric.leaf_ports_over_count = int(np.maximum(leaf_nics - down, 0).sum())
    return _Run(report, state, snap, cdu_frac, loop_frac)


def _cooling_use(state: SiteTables, snap: Snapshot, cdu_frac: np.ndarray, loop_frac: np.ndarray) -> CoolingUse:
    return CoolingUse(
        cdu_max_load_frac=float(cdu_frac.max()) if cdu_frac.size else 0.0,
        loop_max_load_frac=float(loop_frac.max()) if loop_frac.size else 0.0,
        loops=[
            LoopUse(loop=n, loop_heat_kw=float(h), loop_capacity_kw=float(c), loop_load_frac=float(f))
            for n, h, c, f in zip(state.loop_name, snap.loop_heat_kw, state.loop_capacity_kw, loop_frac)
        ],
        busiest_cdus=[
            CduUse(
                cdu=state.cdu_name[i],
                cdu_heat_kw=float(snap.cdu_heat_kw[i]),
                cdu_capacity_kw=float(snap.cdu_capacity_kw[i]),
                cdu_load_frac=float(cdu_frac[i]),
            )
            for i in np.argsort(-cdu_frac, kind="stable")[:10]
        ],
    )


def _leaf_down_ports(state: SiteTables) -> int:
    """Downlink ports of one leaf: the radix split by the leaf oversubscription (as the fabric generator)."""
    model = state.site_model
    radix = model.fabric.radix if model is not None else int(state.switch_ports.max())
    over = state.fabric_leaf_oversubscription
    return int(np.floor(radix * over / (1 + over)))


def _get(report: ScenarioSide, path: tuple[str, ...]) -> float | None:
    """The number at ``path`` (field names) of ``report``; None where a part is missing or not a number."""
    value: object = report
    for key in path:
        value = getattr(value, key, None)
        if value is None:
            return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _verdict(delta: float, direction: int, tolerance: float) -> str:
    if abs(delta) <= tolerance:
        return "same"
    if direction == 0:
        return "changed"
    return "better" if delta * direction > 0 else "worse"


def _change(b: float | None, s: float | None, direction: int, tolerance: float) -> Change:
    if b is not None and s is not None and np.isfinite(b) and np.isfinite(s):
        delta = float(s) - float(b)
        return Change(b, s, delta=delta, change=_verdict(delta, direction, tolerance))
    return Change(b, s, change="changed")


def _diff(base: _Run, scen: _Run) -> Diff:
    b_rep, s_rep = base.report, scen.report
    headline = {}
    for path, direction in HEADLINE:
        b, s = _get(b_rep, path), _get(s_rep, path)
        if b is None and s is None:
            continue
        headline[".".join(path)] = _change(b, s, direction, REL_TOLERANCE * max(abs(b or 0), abs(s or 0), 1.0))
    ttt = {}
    for key in sorted(set(b_rep.time_to_throttle_s) | set(s_rep.time_to_throttle_s)):
        b = getattr(b_rep.time_to_throttle_s.get(key), "min_s", None)
        s = getattr(s_rep.time_to_throttle_s.get(key), "min_s", None)
        if b is not None and s is not None and np.isfinite(b) and np.isfinite(s):
            ttt[key] = Change(b, s, delta=s - b, change=_verdict(s - b, 1, 1e-3))
        else:
            ttt[key] = Change(
                b, s, change="same" if b == s else ("better" if s is None or not np.isfinite(s) else "worse")
            )
    b_findings = {(f.check, f.element) for f in b_rep.design_findings}
    s_findings = {(f.check, f.element) for f in s_rep.design_findings}
    b_state, s_state = base.state, scen.state
    return Diff(
        headline=headline,
        time_to_throttle_s=ttt,
        racks=_rack_diff(b_state, base.snap, s_state, scen.snap),
        power_elements=_element_diff(
            b_state.power_name, base.snap.load_frac, s_state.power_name, scen.snap.load_frac, s_state
        ),
        cdus=_frac_diff("cdu", b_state.cdu_name, base.cdu_frac, s_state.cdu_name, scen.cdu_frac),
        loops=_frac_diff("loop", b_state.loop_name, base.loop_frac, s_state.loop_name, scen.loop_frac),
        design_findings=FindingChanges(
            new=[f for f in s_rep.design_findings if (f.check, f.element) not in b_findings],
            resolved=[f for f in b_rep.design_findings if (f.check, f.element) not in s_findings],
        ),
    )


def _rack_diff(b_state: SiteTables, b_snap: Snapshot, s_state: SiteTables, s_snap: Snapshot) -> list[RackChange]:
    """Racks that changed: layout (added, removed, moved, type, feeds, CDU) or their hottest GPU and power."""
    b_index = {n: i for i, n in enumerate(b_state.rack_name)}
    s_index = {n: i for i, n in enumerate(s_state.rack_name)}
    b_dark = _dark(b_state, b_snap)
    s_dark = _dark(s_state, s_snap)
    out = []
    for name, j in s_index.items():
        i = b_index.get(name)
        if i is None:
            out.append(
                RackChange(
                    rack=name,
                    change="added",
                    layout=["added"],
                    rack_max_gpu_temp_c=_f(s_snap.rack_max_gpu_temp_c[j]),
                    rack_power_kw=_f(s_snap.rack_power_kw[j]),
                )
            )
            continue
        layout = _layout_changes(b_state, i, s_state, j)
        dt = float(s_snap.rack_max_gpu_temp_c[j] - b_snap.rack_max_gpu_temp_c[i])
        dp = float(s_snap.rack_power_kw[j] - b_snap.rack_power_kw[i])
        dt = dt if np.isfinite(dt) else 0.0
        worse = (dt > TEMP_TOLERANCE_K) or (s_dark[j] and not b_dark[i])
        better = (dt < -TEMP_TOLERANCE_K) or (b_dark[i] and not s_dark[j])
        if not (layout or worse or better or abs(dp) > 0.5):
            continue
        out.append(
            RackChange(
                rack=name,
                change="worse" if worse else "better" if better else "changed",
                layout=layout,
                rack_max_gpu_temp_c=_f(s_snap.rack_max_gpu_temp_c[j]),
                rack_max_gpu_temp_delta_k=dt,
                rack_power_kw=_f(s_snap.rack_power_kw[j]),
                rack_power_delta_kw=dp,
                dark_flag=bool(s_dark[j]),
            )
        )
    out += [RackChange(rack=name, change="removed", layout=["removed"]) for name in b_index if name not in s_index]
    return out


def _layout_changes(b_state: SiteTables, i: int, s_state: SiteTables, j: int) -> list[str]:
    """How rack ``i`` of the baseline and ``j`` of the scenario differ: moved, type, feeds, cdu."""
    layout = []
    if abs(b_state.rack_x_m[i] - s_state.rack_x_m[j]) > 1e-9 or abs(b_state.rack_y_m[i] - s_state.rack_y_m[j]) > 1e-9:
        layout.append("moved")
    if b_state.rack_type[i] != s_state.rack_type[j]:
        layout.append("type")
    if _feed_names(b_state, i) != _feed_names(s_state, j):
        layout.append("feeds")
    if (
        b_state.cdu_name[b_state.rack_cdu[i]] != s_state.cdu_name[s_state.rack_cdu[j]]
        or b_state.cdu_loop[b_state.rack_cdu[i]] != s_state.cdu_loop[s_state.rack_cdu[j]]
    ):
        layout.append("cdu")
    return layout


def _dark(state: SiteTables, snap: Snapshot) -> np.ndarray:
    dark = np.zeros(state.n_racks, dtype=bool)
    gpu_dark = (snap.gpu_state == GPU_DOWN) | (snap.gpu_state == GPU_OFF)
    counts = np.bincount(state.gpu_rack, minlength=state.n_racks)
    down = np.bincount(state.gpu_rack, weights=gpu_dark, minlength=state.n_racks)
    dark[(counts > 0) & (down == counts)] = True
    return dark


def _feed_names(state: SiteTables, i: int) -> tuple[str, str | None]:
    b = state.rack_feed_b[i]
    return state.power_name[state.rack_feed_a[i]], state.power_name[b] if b >= 0 else None


def _f(x: float) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _element_diff(
    b_names: list[str], b_frac: np.ndarray, s_names: list[str], s_frac: np.ndarray, s_state: SiteTables
) -> list[ElementChange]:
    s_index = {n: i for i, n in enumerate(s_names)}
    out = []
    for i, name in enumerate(b_names):
        j = s_index.get(name)
        if j is None:
            continue
        delta = float(s_frac[j] - b_frac[i])
        if abs(delta) <= FRAC_TOLERANCE:
            continue
        out.append(
            ElementChange(
                element=name,
                kind=POWER_KINDS[s_state.power_kind[j]],
                load_frac=float(s_frac[j]),
                load_delta_frac=delta,
                change="worse" if delta > 0 else "better",
                overloaded_flag=bool(s_frac[j] > 1.0),
            )
        )
    return out


def _frac_diff(
    kind: str, b_names: list[str], b_frac: np.ndarray, s_names: list[str], s_frac: np.ndarray
) -> list[LoadChange]:
    b_index = {n: i for i, n in enumerate(b_names)}
    out = []
    for j, name in enumerate(s_names):
        i = b_index.get(name)
        before = float(b_frac[i]) if i is not None else 0.0
        delta = float(s_frac[j]) - before
        if i is not None and abs(delta) <= FRAC_TOLERANCE:
            continue
        change = "added" if i is None else ("worse" if delta > 0 else "better")
        out.append(LoadChange(kind, name, change, load_frac=float(s_frac[j]), load_delta_frac=delta))
    present = set(s_names)
    out += [LoadChange(kind, n, "removed") for n in b_names if n not in present]
    return out


# ---------------------------------------------------------------- blast radius
def blast_radius(state: SiteTables, element: str, scenario: Scenario | None = None) -> BlastRadius:
    """What goes dark or throttles if ``element`` trips, on ``state`` under ``scenario`` (default nominal).

    ``racks_fed`` comes from the topology (racks with a feed, their cooling or their leaf
    under the element); the rest from two twin runs, with and without the element failed.
    """
    ref = find_element(state, element)
    if ref is None:
        raise InputError(f"blast radius: {element!r} is not an element of site {state.name!r}")
    scenario = scenario or Scenario()
    run_state = scenario.state if scenario.state is not None else state
    before, b_snap, _, _ = project_run(run_state, scenario)
    tripped = replace(scenario, inputs=add_failures(scenario.inputs, run_state, [ref]))
    after, a_snap, _, _ = project_run(run_state, tripped)
    fed = racks_exposed(run_state, ref)
    b_dark, a_dark = _dark(run_state, b_snap), _dark(run_state, a_snap)
    newly_dark = np.flatnonzero(a_dark & ~b_dark)
    down = (a_snap.gpu_state == GPU_DOWN) & (b_snap.gpu_state != GPU_DOWN)
    throttled = (a_snap.gpu_state == GPU_THROTTLED) & (b_snap.gpu_state != GPU_THROTTLED)
    off = (a_snap.gpu_state == GPU_OFF) & (b_snap.gpu_state != GPU_OFF)
    throttled_racks = np.unique(run_state.gpu_rack[throttled])
    jobs = []
    if before.job is not None:
        after_tokens = after.job.tokens_per_s if after.job else 0.0
        jobs.append(
            JobLoss(
                name=before.job.name,
                tokens_per_s=before.job.tokens_per_s,
                after_tokens_per_s=after_tokens,
                lost_tokens_per_s=before.job.tokens_per_s - after_tokens,
            )
        )
    return BlastRadius(
        element=element,
        kind=ref.label,
        site=run_state.name,
        racks_fed=[run_state.rack_name[r] for r in fed],
        n_racks_fed=int(fed.size),
        racks_dark=[run_state.rack_name[r] for r in newly_dark],
        n_racks_dark=int(newly_dark.size),
        racks_throttled=[run_state.rack_name[r] for r in throttled_racks],
        n_gpus_fed=int(np.isin(run_state.gpu_rack, fed).sum()),
        n_gpus_down=int(down.sum()),
        n_gpus_throttled=int(throttled.sum()),
        n_gpus_off=int(off.sum()),
        jobs=jobs,
        lost_tokens_per_s=sum(j.lost_tokens_per_s for j in jobs),
        # racks whose draw falls (dark, off, throttled); one that draws a little more on its surviving
        # feed is not "power gained", so the figure is never negative
        it_power_lost_mw=float(np.maximum(b_snap.rack_power_kw - a_snap.rack_power_kw, 0.0).sum()) / 1000.0,
    )
