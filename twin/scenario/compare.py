"""The what-if answer: baseline and scenario projections side by side, their differences, and blast radius.

:func:`compare` runs the twin on the baseline site and on the scenario (its edited site
when edits change the layout) at the same instant and settling time, and returns
``{"baseline", "scenario", "diff"}``: each side is the ``clustertwin project`` report plus
cooling use (CDUs, loops), every power element's load, fabric ports and the design
findings; ``diff`` marks every headline figure, rack and element that changed as
``worse`` or ``better`` (or ``changed`` where neither applies) with the amount.  Racks and
elements are matched by name, so added, removed and moved racks show as such.

:func:`blast_radius` says what an element's trip takes down: the racks it feeds or cools
(by topology), and, from a twin run with it failed, racks gone dark, GPUs down or
throttled, and job throughput lost.  Both are pure functions of their arguments.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import replace

import numpy as np

from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_THROTTLED
from twin.errors import InputError
from twin.scenario.conditions import Scenario
from twin.scenario.projection import project_run
from twin.scenario.whatif import add_failures
from twin.site.tables import POWER_KINDS, TIER_LEAF, SiteTables
from twin.site.topology import find_element, racks_exposed

TEMP_TOLERANCE_K = 0.5  # a rack's hottest GPU changing less than this is "same"
FRAC_TOLERANCE = 0.005  # load fractions changing less than this are "same"
REL_TOLERANCE = 1e-4  # headline figures changing by less than this fraction are "same"
_baseline_cache: dict[tuple, tuple] = {}
_baseline_lock = threading.Lock()

# headline figures: (path in the report, direction): +1 higher is better, -1 higher is worse, 0 neither
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


def compare(baseline: SiteTables, scenario: Scenario) -> dict:
    """``{"baseline", "scenario", "diff"}`` of ``scenario`` against the baseline site at the same instant.

    The baseline side of the last few (site, instant, settling time) is kept: the next edit of
    the same scenario runs the twin once.
    """
    key = (id(baseline), scenario.time, scenario.settle_s)
    with _baseline_lock:
        base = _baseline_cache.get(key)
    if base is None or base[1] is not baseline:
        base = _side(baseline, Scenario(name="baseline", time=scenario.time, settle_s=scenario.settle_s))
        with _baseline_lock:
            _baseline_cache[key] = base
            while len(_baseline_cache) > 4:
                _baseline_cache.pop(next(iter(_baseline_cache)))
    scen_state = scenario.state if scenario.state is not None else baseline
    scen = _side(scen_state, scenario)
    return {"baseline": copy.deepcopy(base[0]), "scenario": scen[0], "diff": _diff(base, scen)}


def _side(state: SiteTables, scenario: Scenario):
    report, snap, detail, _ = project_run(state, scenario)
    cdu_frac = np.where(snap.cdu_capacity_kw > 0, snap.cdu_heat_kw / np.maximum(snap.cdu_capacity_kw, 1e-9), 0.0)
    loop_frac = snap.loop_heat_kw / state.loop_capacity_kw
    leaves = np.flatnonzero(state.switch_tier == TIER_LEAF)
    leaf_nics = np.bincount(state.gpu_leaf, minlength=leaves.size)
    down = _leaf_down_ports(state)
    findings = [f.as_dict() for f in state.design_findings]
    report.update(
        cooling={
            "cdu_max_load_frac": float(cdu_frac.max()) if cdu_frac.size else 0.0,
            "loop_max_load_frac": float(loop_frac.max()) if loop_frac.size else 0.0,
            "loops": [
                {"loop": n, "loop_heat_kw": float(h), "loop_capacity_kw": float(c), "loop_load_frac": float(f)}
                for n, h, c, f in zip(state.loop_name, snap.loop_heat_kw, state.loop_capacity_kw, loop_frac)
            ],
            "busiest_cdus": [
                {
                    "cdu": state.cdu_name[i],
                    "cdu_heat_kw": float(snap.cdu_heat_kw[i]),
                    "cdu_capacity_kw": float(snap.cdu_capacity_kw[i]),
                    "cdu_load_frac": float(cdu_frac[i]),
                }
                for i in np.argsort(-cdu_frac, kind="stable")[:10]
            ],
        },
        design_findings=findings,
        n_design_errors=sum(f["severity"] == "error" for f in findings),
        n_design_warnings=sum(f["severity"] == "warning" for f in findings),
        hottest_gpu_temp_c=float(np.nanmax(snap.gpu_temp_c)) if snap.gpu_temp_c.size else 0.0,
        n_dark_racks=len(report["dark_racks"]),
        n_overloaded_elements=len(report["overloaded_elements"]),
        n_n1_violations=int((snap.power_n1_load_frac > 1.0).sum()),
    )
    report["fabric"].update(
        leaf_ports_used_count=int(leaf_nics.sum()),
        leaf_ports_available_count=int(down * leaves.size),
        leaf_ports_over_count=int(np.maximum(leaf_nics - down, 0).sum()),
    )
    return report, state, snap, detail, cdu_frac, loop_frac


def _leaf_down_ports(state: SiteTables) -> int:
    """Downlink ports of one leaf: the radix split by the leaf oversubscription (as the fabric generator)."""
    model = state.site_model
    radix = model.fabric.radix if model is not None else int(state.switch_ports.max())
    over = state.fabric_leaf_oversubscription
    return int(np.floor(radix * over / (1 + over)))


def _get(report: dict, path: tuple):
    value = report
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _verdict(delta: float, direction: int, tolerance: float) -> str:
    if abs(delta) <= tolerance:
        return "same"
    if direction == 0:
        return "changed"
    return "better" if delta * direction > 0 else "worse"


def _diff(base, scen) -> dict:
    b_rep, b_state, b_snap, _, b_cdu, b_loop = base
    s_rep, s_state, s_snap, _, s_cdu, s_loop = scen
    headline = {}
    for path, direction in HEADLINE:
        b, s = _get(b_rep, path), _get(s_rep, path)
        if b is None and s is None:
            continue
        entry = {"baseline": b, "scenario": s}
        if b is not None and s is not None and np.isfinite(b) and np.isfinite(s):
            delta = float(s) - float(b)
            entry.update(delta=delta, change=_verdict(delta, direction, REL_TOLERANCE * max(abs(b), abs(s), 1.0)))
        else:
            entry["change"] = "changed"
        headline[".".join(path)] = entry
    ttt = {}
    for key in sorted(set(b_rep["time_to_throttle_s"]) | set(s_rep["time_to_throttle_s"])):
        b = (b_rep["time_to_throttle_s"].get(key) or {}).get("min_s")
        s = (s_rep["time_to_throttle_s"].get(key) or {}).get("min_s")
        entry = {"baseline": b, "scenario": s}
        if b is not None and s is not None and np.isfinite(b) and np.isfinite(s):
            entry.update(delta=s - b, change=_verdict(s - b, 1, 1e-3))
        else:
            entry["change"] = "same" if b == s else ("better" if s is None or not np.isfinite(s) else "worse")
        ttt[key] = entry
    b_findings = {(f["check"], f["element"]) for f in b_rep["design_findings"]}
    s_findings = {(f["check"], f["element"]) for f in s_rep["design_findings"]}
    return {
        "headline": headline,
        "time_to_throttle_s": ttt,
        "racks": _rack_diff(b_state, b_snap, s_state, s_snap),
        "power_elements": _element_diff(
            b_state.power_name, b_snap.power_load_frac, s_state.power_name, s_snap.power_load_frac, b_state, s_state
        ),
        "cdus": _frac_diff("cdu", b_state.cdu_name, b_cdu, s_state.cdu_name, s_cdu),
        "loops": _frac_diff("loop", b_state.loop_name, b_loop, s_state.loop_name, s_loop),
        "design_findings": {
            "new": [f for f in s_rep["design_findings"] if (f["check"], f["element"]) not in b_findings],
            "resolved": [f for f in b_rep["design_findings"] if (f["check"], f["element"]) not in s_findings],
        },
    }


def _rack_diff(b_state, b_snap, s_state, s_snap) -> list[dict]:
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
                {
                    "rack": name,
                    "change": "added",
                    "layout": ["added"],
                    "rack_max_gpu_temp_c": _f(s_snap.rack_max_gpu_temp_c[j]),
                    "rack_power_kw": _f(s_snap.rack_power_kw[j]),
                }
            )
            continue
        layout = []
        if (
            abs(b_state.rack_x_m[i] - s_state.rack_x_m[j]) > 1e-9
            or abs(b_state.rack_y_m[i] - s_state.rack_y_m[j]) > 1e-9
        ):
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
        dt = float(s_snap.rack_max_gpu_temp_c[j] - b_snap.rack_max_gpu_temp_c[i])
        dp = float(s_snap.rack_power_kw[j] - b_snap.rack_power_kw[i])
        dt = dt if np.isfinite(dt) else 0.0
        worse = (dt > TEMP_TOLERANCE_K) or (s_dark[j] and not b_dark[i])
        better = (dt < -TEMP_TOLERANCE_K) or (b_dark[i] and not s_dark[j])
        if not (layout or worse or better or abs(dp) > 0.5):
            continue
        change = "worse" if worse else "better" if better else "changed"
        out.append(
            {
                "rack": name,
                "change": change,
                "layout": layout,
                "rack_max_gpu_temp_c": _f(s_snap.rack_max_gpu_temp_c[j]),
                "rack_max_gpu_temp_delta_k": dt,
                "rack_power_kw": _f(s_snap.rack_power_kw[j]),
                "rack_power_delta_kw": dp,
                "dark_flag": bool(s_dark[j]),
            }
        )
    out += [{"rack": name, "change": "removed", "layout": ["removed"]} for name in b_index if name not in s_index]
    return out


def _dark(state, snap) -> np.ndarray:
    dark = np.zeros(state.n_racks, dtype=bool)
    gpu_dark = (snap.gpu_state == GPU_DOWN) | (snap.gpu_state == GPU_OFF)
    counts = np.bincount(state.gpu_rack, minlength=state.n_racks)
    down = np.bincount(state.gpu_rack, weights=gpu_dark, minlength=state.n_racks)
    dark[(counts > 0) & (down == counts)] = True
    return dark


def _feed_names(state, i) -> tuple:
    b = state.rack_feed_b[i]
    return state.power_name[state.rack_feed_a[i]], state.power_name[b] if b >= 0 else None


def _f(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def _element_diff(b_names, b_frac, s_names, s_frac, b_state, s_state) -> list[dict]:
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
            {
                "element": name,
                "kind": POWER_KINDS[s_state.power_kind[j]],
                "load_frac": float(s_frac[j]),
                "load_delta_frac": delta,
                "change": "worse" if delta > 0 else "better",
                "overloaded_flag": bool(s_frac[j] > 1.0),
            }
        )
    return out


def _frac_diff(kind, b_names, b_frac, s_names, s_frac) -> list[dict]:
    b_index = {n: i for i, n in enumerate(b_names)}
    out = []
    for j, name in enumerate(s_names):
        i = b_index.get(name)
        before = float(b_frac[i]) if i is not None else 0.0
        delta = float(s_frac[j]) - before
        if i is not None and abs(delta) <= FRAC_TOLERANCE:
            continue
        out.append(
            {
                kind: name,
                "change": "added" if i is None else ("worse" if delta > 0 else "better"),
                f"{kind}_load_frac": float(s_frac[j]),
                "load_delta_frac": delta,
            }
        )
    present = set(s_names)
    out += [{kind: n, "change": "removed"} for n in b_names if n not in present]
    return out


# ---------------------------------------------------------------- blast radius
def blast_radius(state: SiteTables, element: str, scenario: Scenario | None = None) -> dict:
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
    job_b, job_a = before.get("job"), after.get("job")
    jobs = []
    if job_b is not None:
        lost = job_b["tokens_per_s"] - (job_a["tokens_per_s"] if job_a else 0.0)
        jobs.append(
            {
                "name": job_b["name"],
                "tokens_per_s": job_b["tokens_per_s"],
                "after_tokens_per_s": job_a["tokens_per_s"] if job_a else 0.0,
                "lost_tokens_per_s": lost,
            }
        )
    return {
        "element": element,
        "kind": ref.label,
        "site": run_state.name,
        "racks_fed": [run_state.rack_name[r] for r in fed],
        "n_racks_fed": int(fed.size),
        "racks_dark": [run_state.rack_name[r] for r in newly_dark],
        "n_racks_dark": int(newly_dark.size),
        "racks_throttled": [run_state.rack_name[r] for r in throttled_racks],
        "n_gpus_fed": int(np.isin(run_state.gpu_rack, fed).sum()),
        "n_gpus_down": int(down.sum()),
        "n_gpus_throttled": int(throttled.sum()),
        "n_gpus_off": int(off.sum()),
        "jobs": jobs,
        "lost_tokens_per_s": sum(j["lost_tokens_per_s"] for j in jobs),
        "it_power_lost_mw": before["it_power_mw"] - after["it_power_mw"],
    }
