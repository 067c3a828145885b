"""What-if edits as the browser builds them, and how they turn into a site and conditions.

An edit is a plain dict as in a scenario file's ``[[edits]]`` array: ``op`` and its
fields, entities by exact name or glob (``racks = ["H4-*"]``).  :data:`OPS` lists the
fields of every op the editor offers.  :func:`apply_edits` checks each edit in order and
returns the edited site tables and the scenario conditions; the first bad edit raises
:class:`EditRejected` naming its index and field, so the page can show the message next
to the control that made it.

The site-model edits (``move_rack``, ``set_rack_feeds``, ``set_rack_cdu``) change the
site's tables (a copy; the baseline is never touched); conditions (``fail``, ``restore``,
``set_cap``, ``set_setpoint``, ``set_weather``, ``set_job``) become the scenario's tick
inputs.  Edits that change the GPU population (``add_rack``, ``remove_rack``,
``set_rack_type``) need the site-file editing backend and are refused with a message
saying so when it is not installed (see :mod:`dashboard.whatif_backend`).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace

import numpy as np

from twin.engine.inputs import TickInputs
from twin.site.scenario import MAX_SETTLE_S, Scenario
from twin.site.tables import POWER_KINDS, SOURCE_KINDS, SiteTables

MAX_EDITS = 500  # a scenario longer than this is not a what-if any more; bounds the work of one projection
MAX_SELECTED = 5_000  # racks (or elements) one edit may name explicitly


class EditRejected(ValueError):
    """An edit that cannot apply; ``index`` (0-based, None for the list) and ``field`` say where."""

    def __init__(self, index: int | None, field_name: str, message: str) -> None:
        self.index, self.field = index, field_name
        where = f"edit {index + 1}" if index is not None else "edits"
        super().__init__(f"{where}: {field_name}: {message}")
        self.message = message


# Element kinds an operator can fail or restore, and where the twin finds them.
FAIL_KINDS = ("pump", "cdu", "loop", "chiller", "feed", "switchgear", "transformer", "ups", "busway",
              "generator", "battery", "grid", "switch", "link", "node")
SETPOINT_TARGETS = ("loop", "plant")
CAP_SCOPES = ("site", "rack", "job")

# op → (fields shown in the editor, one-line meaning)
OPS: dict[str, tuple[tuple[str, ...], str]] = {
    "move_rack": (("racks", "x_m", "y_m"), "move one rack to a floor position"),
    "add_rack": (("name", "row", "x_m", "y_m", "type"), "add a rack"),
    "remove_rack": (("racks",), "remove racks"),
    "set_rack_type": (("racks", "type"), "change the rack type"),
    "set_rack_feeds": (("racks", "feed_a", "feed_b"), "reassign the A/B busways"),
    "set_rack_cdu": (("racks", "cdu"), "cool racks from another CDU"),
    "fail": (("kind", "elements"), "fail elements"),
    "restore": (("kind", "elements"), "restore failed elements"),
    "set_cap": (("scope", "racks", "gpu_power_limit_w"), "GPU power cap"),
    "set_setpoint": (("target", "elements", "supply_temp_c"), "facility supply setpoint"),
    "set_weather": (("outdoor_dry_bulb_c", "outdoor_wet_bulb_c"), "outdoor weather"),
    "set_job": (("job",), "job mix: the job placed on the site"),
}
SITE_FILE_OPS = ("add_rack", "remove_rack", "set_rack_type")  # change the GPU population


def describe(edit: dict) -> str:
    """One line saying what ``edit`` does, e.g. ``fail transformer H1-TX1-A``."""
    op = edit.get("op", "?")
    names = edit.get("racks") or edit.get("elements") or []
    shown = ", ".join(names[:3]) + (f" … ({len(names)})" if len(names) > 3 else "")
    details = {
        "move_rack": lambda: f"move {shown} to x {edit.get('x_m')} m, y {edit.get('y_m')} m",
        "add_rack": lambda: f"add {edit.get('type')} rack {edit.get('name')} in {edit.get('row')}",
        "remove_rack": lambda: f"remove {shown}",
        "set_rack_type": lambda: f"{shown} → {edit.get('type')}",
        "set_rack_feeds": lambda: f"{shown} fed from A {edit.get('feed_a')} / B {edit.get('feed_b') or '–'}",
        "set_rack_cdu": lambda: f"{shown} cooled by {edit.get('cdu')}",
        "fail": lambda: f"fail {edit.get('kind')} {shown}",
        "restore": lambda: f"restore {edit.get('kind')} {shown}",
        "set_cap": lambda: f"cap GPUs at {edit.get('gpu_power_limit_w')} W ({edit.get('scope')}"
                           + (f": {shown})" if edit.get('scope') == 'rack' else ")"),
        "set_setpoint": lambda: f"{edit.get('target')} {shown} supply {edit.get('supply_temp_c')} °C",
        "set_weather": lambda: f"outdoor {edit.get('outdoor_dry_bulb_c')} °C dry / {edit.get('outdoor_wet_bulb_c')} °C wet bulb",
        "set_job": lambda: f"job {edit.get('job') or 'none'}",
    }
    return details.get(op, lambda: op)()


# ------------------------------------------------------------------ name selection
def match_names(patterns, names: list[str], index: int, field_name: str) -> np.ndarray:
    """Ids of ``names`` matching any of ``patterns`` (exact names or globs); every pattern must match."""
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
        raise EditRejected(index, field_name, "expected a list of names or globs")
    if len(patterns) > MAX_SELECTED:
        raise EditRejected(index, field_name, f"{len(patterns)} names (at most {MAX_SELECTED}); use a glob")
    lookup = {n: i for i, n in enumerate(names)}
    out: list[int] = []
    for pattern in patterns:
        if pattern in lookup:
            out.append(lookup[pattern])
            continue
        hits = [i for i, n in enumerate(names) if fnmatch.fnmatchcase(n, pattern)] if any(c in pattern for c in "*?[") else []
        if not hits:
            raise EditRejected(index, field_name, f"{pattern!r} names nothing at this site")
        out += hits
    return np.unique(np.asarray(out, dtype=np.int64))


def _number(edit: dict, key: str, index: int, lo: float, hi: float, unit: str) -> float:
    value = edit.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise EditRejected(index, key, f"expected a number in {unit}, got {value!r}")
    if not lo <= value <= hi:
        raise EditRejected(index, key, f"{value:g} {unit} is outside {lo:g}..{hi:g} {unit}")
    return float(value)


# ------------------------------------------------------------------ application
@dataclass
class Applied:
    """The edited site and the conditions the scenario runs under."""

    state: SiteTables
    inputs: TickInputs
    job: str | None = None
    touched_racks: set[str] = field(default_factory=set)  # racks an edit named (for the floor outline)


def apply_edits(base: SiteTables, edits: list[dict], settle_s: float = 600.0) -> tuple[Applied, Scenario]:
    """Check and apply ``edits`` in order on a copy of ``base``; :class:`EditRejected` on the first bad one."""
    if not isinstance(edits, list):
        raise EditRejected(None, "edits", "expected a list of edits")
    if len(edits) > MAX_EDITS:
        raise EditRejected(None, "edits", f"{len(edits)} edits (at most {MAX_EDITS})")
    out = Applied(state=base, inputs=TickInputs())
    failed = _Failures(base)
    for index, edit in enumerate(edits):
        if not isinstance(edit, dict):
            raise EditRejected(index, "op", "an edit must be a table with an op")
        op = edit.get("op")
        if op not in OPS:
            raise EditRejected(index, "op", f"unknown op {op!r} (ops: {', '.join(OPS)})")
        unknown = set(edit) - {"op", *OPS[op][0]}
        if unknown:
            raise EditRejected(index, sorted(unknown)[0], f"not a field of {op} (fields: {', '.join(OPS[op][0])})")
        if op in SITE_FILE_OPS:
            raise EditRejected(index, "op", f"{op} changes the site file and needs the site-edit backend, "
                                            "which this installation does not have")
        _APPLY[op](out, failed, edit, index)
    inputs = failed.inputs(out.state, out.inputs)
    busy = np.zeros(out.state.n_nodes, dtype=bool)  # as the live twin runs: nodes without a GPU of the job off
    gpu_ids = placed_job_gpus(out.state, out.job)
    if gpu_ids is not None:
        busy[out.state.gpu_node[gpu_ids]] = True
    failed_nodes = inputs.nodes_off if inputs.nodes_off is not None else False
    inputs = replace(inputs, nodes_off=~busy | failed_nodes)
    scenario = Scenario(name="what-if", settle_s=min(settle_s, MAX_SETTLE_S), inputs=inputs, job=out.job)
    return out, scenario


def _copy_state(out: Applied, **arrays) -> None:
    """Replace site-table arrays on a copy (the baseline's arrays are never written)."""
    out.state = replace(out.state, **arrays)


def _one_rack(out: Applied, edit: dict, index: int) -> int:
    racks = match_names(edit.get("racks"), out.state.rack_name, index, "racks")
    if racks.size != 1:
        raise EditRejected(index, "racks", f"move one rack at a time ({racks.size} selected)")
    return int(racks[0])


def _move_rack(out: Applied, _failed, edit: dict, index: int) -> None:
    state = out.state
    rack = _one_rack(out, edit, index)
    hall = state.rack_hall[rack]
    members = np.flatnonzero(state.rack_hall == hall)
    xs, ys = state.rack_x_m[members], state.rack_y_m[members]
    pitch_x = _pitch(xs, 0.6)
    pitch_y = min(_pitch(ys, 1.2), 1.2)
    x = _number(edit, "x_m", index, -1e4, 1e4, "m")
    y = _number(edit, "y_m", index, -1e4, 1e4, "m")
    if not (xs.min() - pitch_x <= x <= xs.max() + pitch_x and ys.min() - pitch_y <= y <= ys.max() + pitch_y):
        raise EditRejected(index, "x_m", f"({x:g}, {y:g}) m is outside hall {state.hall_name[hall]} "
                                         f"(x {xs.min():g}..{xs.max():g} m, y {ys.min():g}..{ys.max():g} m)")
    others = members[members != rack]
    clash = others[(np.abs(state.rack_x_m[others] - x) < pitch_x - 1e-6) & (np.abs(state.rack_y_m[others] - y) < pitch_y - 1e-6)]
    if clash.size:
        raise EditRejected(index, "x_m", f"overlaps rack {state.rack_name[clash[0]]} at "
                                         f"({state.rack_x_m[clash[0]]:g}, {state.rack_y_m[clash[0]]:g}) m")
    rx, ry = state.rack_x_m.copy(), state.rack_y_m.copy()
    rx[rack], ry[rack] = x, y
    _copy_state(out, rack_x_m=rx, rack_y_m=ry)
    out.touched_racks.add(state.rack_name[rack])


def _pitch(values: np.ndarray, default: float) -> float:
    diffs = np.diff(np.unique(np.round(values, 3)))
    return float(diffs.min()) if diffs.size else default


def _set_rack_feeds(out: Applied, _failed, edit: dict, index: int) -> None:
    state = out.state
    racks = match_names(edit.get("racks"), state.rack_name, index, "racks")
    busways = [i for i, k in enumerate(state.power_kind) if POWER_KINDS[k] == "busway"]
    names = [state.power_name[i] for i in busways]
    feed_a, feed_b = state.rack_feed_a.copy(), state.rack_feed_b.copy()
    for key, side, target in (("feed_a", 0, feed_a), ("feed_b", 1, feed_b)):
        value = edit.get(key)
        if value in (None, ""):
            if key == "feed_a":
                raise EditRejected(index, key, "every rack needs an A feed")
            target[racks] = -1
            continue
        if not isinstance(value, str) or value not in names:
            raise EditRejected(index, key, f"no busway named {str(value)[:40]!r} at this site")
        element = busways[names.index(value)]
        if state.power_side[element] != side:
            raise EditRejected(index, key, f"{value} is on the {'AB'[state.power_side[element]]} side, not {'AB'[side]}")
        target[racks] = element
    _check_rating(state, racks, feed_a, index, "feed_a")
    _check_rating(state, racks, feed_b, index, "feed_b")
    _copy_state(out, rack_feed_a=feed_a, rack_feed_b=feed_b)
    out.touched_racks.update(state.rack_name[r] for r in racks)


def _check_rating(state: SiteTables, racks: np.ndarray, feed: np.ndarray, index: int, key: str) -> None:
    """A busway whose racks' nameplate exceeds its usable rating (by design) is refused."""
    for element in np.unique(feed[racks]):
        if element < 0:
            continue
        nameplate_kw = float(state.rack_rated_kw[feed == element].sum())
        usable_kw = float(state.power_rating_kw[element] * state.power_max_util_frac[element])
        if nameplate_kw > usable_kw:
            raise EditRejected(index, key, f"{state.power_name[element]} would carry {nameplate_kw:,.0f} kW of rack "
                                           f"nameplate, over its usable {usable_kw:,.0f} kW")


def _set_rack_cdu(out: Applied, _failed, edit: dict, index: int) -> None:
    state = out.state
    racks = match_names(edit.get("racks"), state.rack_name, index, "racks")
    value = edit.get("cdu")
    if not isinstance(value, str) or value not in state.cdu_name:
        raise EditRejected(index, "cdu", f"no CDU named {str(value)[:40]!r} at this site")
    cdu = state.cdu_name.index(value)
    spec = state.cdu_specs[int(state.cdu_spec[cdu])]
    rack_cdu = state.rack_cdu.copy()
    rack_cdu[racks] = cdu
    nameplate_kw = float(state.rack_rated_kw[rack_cdu == cdu].sum())
    capacity_kw = float(np.max(spec.capacity_curve_kw))
    if nameplate_kw > capacity_kw:
        raise EditRejected(index, "cdu", f"{value} would cool {nameplate_kw:,.0f} kW of rack nameplate, "
                                         f"over its {capacity_kw:,.0f} kW capacity")
    _copy_state(out, rack_cdu=rack_cdu)
    out.touched_racks.update(state.rack_name[r] for r in racks)


class _Failures:
    """Failed elements accumulated over fail/restore edits, and the conditions set by the others."""

    def __init__(self, state: SiteTables) -> None:
        self.failed: dict[str, set[int]] = {kind: set() for kind in FAIL_KINDS}
        self.cap_w: np.ndarray | None = None
        self.loop_supply_c = np.full(len(state.loop_name), np.nan)
        self.weather: dict[str, float] = {}

    def inputs(self, state: SiteTables, base: TickInputs) -> TickInputs:
        f = self.failed
        power = sorted(f["feed"] | f["switchgear"] | f["transformer"] | f["ups"] | f["busway"])
        sources = sorted(f["generator"] | f["battery"] | f["grid"])
        switches = sorted(f["switch"])
        links = np.union1d(np.flatnonzero(np.isin(state.link_a, switches) | np.isin(state.link_b, switches)),
                           np.asarray(sorted(f["link"]), dtype=np.int64))
        pumps = state.cdu_spec_array("pumps").astype(np.int64)
        for cdu in f["pump"]:
            pumps[cdu] = max(pumps[cdu] - 1, 0)
        lost = list(f["cdu"]) + [c for loop in f["loop"] for c in np.flatnonzero(state.cdu_loop == loop)]
        pumps[np.asarray(lost, dtype=np.int64)] = 0
        chillers = state.plant_chiller_count.astype(np.int64).copy()
        for plant in f["chiller"]:
            chillers[plant] = max(chillers[plant] - 1, 0)
        nodes_off = None
        if f["node"]:
            nodes_off = np.zeros(state.n_nodes, dtype=bool)
            nodes_off[sorted(f["node"])] = True
        return replace(base, failed_power=power, failed_sources=sources, failed_links=links.astype(np.int64),
                       pumps_running_count=pumps, plant_chillers_running=chillers, nodes_off=nodes_off,
                       gpu_power_limit_w=self.cap_w, loop_supply_temp_c=self.loop_supply_c,
                       outdoor_dry_bulb_c=self.weather.get("outdoor_dry_bulb_c"),
                       outdoor_wet_bulb_c=self.weather.get("outdoor_wet_bulb_c"))


def kind_names(state: SiteTables, kind: str) -> list[str]:
    """Names of the elements of ``kind`` (one of :data:`FAIL_KINDS`) at the site."""
    if kind in ("feed", "busway", "switchgear", "transformer", "ups"):
        wanted = "busway" if kind == "feed" else kind
        return [n for n, k in zip(state.power_name, state.power_kind) if POWER_KINDS[k] == wanted]
    if kind in ("generator", "battery", "grid"):
        return [n for n, k in zip(state.source_name, state.source_kind) if SOURCE_KINDS[k] == kind]
    return {"pump": state.cdu_name, "cdu": state.cdu_name, "loop": state.loop_name, "chiller": state.plant_name,
            "switch": state.switch_name, "node": state.node_name,
            "link": [f"{state.switch_name[a]}~{state.switch_name[b]}#{i}" for i, (a, b) in
                     enumerate(zip(state.link_a.tolist(), state.link_b.tolist()))]}[kind]


def _element_ids(state: SiteTables, edit: dict, index: int) -> tuple[str, list[int]]:
    kind = edit.get("kind")
    if kind not in FAIL_KINDS:
        raise EditRejected(index, "kind", f"{kind!r} is not one of {', '.join(FAIL_KINDS)}")
    names = kind_names(state, kind)
    ids = match_names(edit.get("elements"), names, index, "elements")
    if kind in ("feed", "busway", "switchgear", "transformer", "ups"):
        ids = np.asarray([state.power_name.index(names[i]) for i in ids])
    elif kind in ("generator", "battery", "grid"):
        ids = np.asarray([state.source_name.index(names[i]) for i in ids])
    return kind, [int(i) for i in ids]


def _fail(_out: Applied, failed: _Failures, edit: dict, index: int) -> None:
    kind, ids = _element_ids(_out.state, edit, index)
    failed.failed[kind].update(ids)


def _restore(_out: Applied, failed: _Failures, edit: dict, index: int) -> None:
    kind, ids = _element_ids(_out.state, edit, index)
    failed.failed[kind].difference_update(ids)


def _set_cap(out: Applied, failed: _Failures, edit: dict, index: int) -> None:
    state = out.state
    lo = min(s.min_power_limit_w for s in state.gpu_specs)
    hi = max(s.tdp_w for s in state.gpu_specs)
    cap = _number(edit, "gpu_power_limit_w", index, lo, hi, "W")
    scope = edit.get("scope", "site")
    if scope not in CAP_SCOPES:
        raise EditRejected(index, "scope", f"{scope!r} is not one of {', '.join(CAP_SCOPES)}")
    caps = failed.cap_w if failed.cap_w is not None else state.gpu_spec_array("tdp_w")
    caps = caps.copy()
    if scope == "site":
        caps[:] = cap
    elif scope == "rack":
        racks = match_names(edit.get("racks"), state.rack_name, index, "racks")
        caps[np.isin(state.gpu_rack, racks)] = cap
        out.touched_racks.update(state.rack_name[r] for r in racks)
    else:
        gpu_ids = placed_job_gpus(state, out.job)
        if gpu_ids is None:
            raise EditRejected(index, "scope", "no job is placed on the site to cap")
        caps[gpu_ids] = cap
    failed.cap_w = np.minimum(caps, state.gpu_spec_array("tdp_w"))


def _set_setpoint(out: Applied, failed: _Failures, edit: dict, index: int) -> None:
    state = out.state
    target = edit.get("target")
    if target not in SETPOINT_TARGETS:
        raise EditRejected(index, "target", f"{target!r} is not one of {', '.join(SETPOINT_TARGETS)}")
    value = _number(edit, "supply_temp_c", index, 2.0, 45.0, "°C")
    names = state.loop_name if target == "loop" else state.plant_name
    ids = match_names(edit.get("elements"), names, index, "elements")
    loops = ids if target == "loop" else np.flatnonzero(np.isin(state.loop_plant, ids))
    failed.loop_supply_c[loops] = value


def _set_weather(_out: Applied, failed: _Failures, edit: dict, index: int) -> None:
    dry = _number(edit, "outdoor_dry_bulb_c", index, -40.0, 60.0, "°C")
    wet = _number(edit, "outdoor_wet_bulb_c", index, -40.0, 60.0, "°C")
    if wet > dry:
        raise EditRejected(index, "outdoor_wet_bulb_c", f"wet bulb {wet:g} °C is above the dry bulb {dry:g} °C")
    failed.weather = {"outdoor_dry_bulb_c": dry, "outdoor_wet_bulb_c": wet}


def _set_job(out: Applied, _failed, edit: dict, index: int) -> None:
    from twin.site.load import JOBS_DIR

    job = edit.get("job")
    if not isinstance(job, str):
        raise EditRejected(index, "job", "expected a job file name")
    if job and not (JOBS_DIR / f"{job}.toml").is_file():
        raise EditRejected(index, "job", f"no job file {job!r}")
    out.job = job


_APPLY = {
    "move_rack": _move_rack, "set_rack_feeds": _set_rack_feeds, "set_rack_cdu": _set_rack_cdu, "fail": _fail,
    "restore": _restore, "set_cap": _set_cap, "set_setpoint": _set_setpoint, "set_weather": _set_weather,
    "set_job": _set_job,
}


def placed_job_gpus(state: SiteTables, job: str | None) -> np.ndarray | None:
    """GPUs of the job the projection places (``job`` None: the site's default job), as the twin places it."""
    from twin.site.load import JOBS_DIR
    from twin.training.jobfile import load_job
    from twin.training.sitejob import contiguous_placement

    name = state.default_job if job is None else job
    if not name:
        return None
    spec = load_job(JOBS_DIR / f"{name}.toml")
    return contiguous_placement(state, spec.parallel.n_gpus)


def job_names() -> list[str]:
    """Job files the job-mix choice offers."""
    from twin.site.load import JOBS_DIR

    return sorted(p.stem for p in JOBS_DIR.glob("*.toml"))
