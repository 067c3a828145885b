"""What-if edits as the browser builds them, and how they turn into a site and conditions.

An edit is a plain dict as in a scenario file's ``[[edits]]`` array: ``op`` and its
fields, entities by exact name or glob (``racks = ["H4-*"]``).  :data:`OPS` lists the
fields of every op the editor offers.  :func:`apply_edits` checks each edit in order and
returns the edited site tables and the scenario conditions; the first bad edit raises
:class:`EditRejected` naming its index and field, so the page can show the message next
to the control that made it.

Rack edits (``move_rack``, ``add_rack``, ``remove_rack``, ``set_rack_type``,
``set_rack_feeds``, ``set_rack_cdu``) become the site file's per-rack entries
(``[[racks]]``, :class:`twin.site.schema.RackEntry`) on a copy of the parsed site, which is
built again with the site loader's checks (hall bounds, overlaps, feeds, CDUs, loops) and
its design checks (ratings, ports; ``design_limits``: refused under ``strict``, reported
in ``SiteTables.design_findings`` under ``warn``).  The baseline is never touched.
Conditions (``fail``, ``restore``, ``set_cap``, ``set_setpoint``, ``set_weather``,
``set_job``) then become the scenario's tick inputs on the built site.
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
    "add_rack": (("name", "row", "x_m", "y_m", "type", "feed_a", "feed_b"), "add a rack"),
    "remove_rack": (("racks",), "remove racks"),
    "set_rack_type": (("racks", "type"), "change the rack type"),
    "set_rack_feeds": (("racks", "feed_a", "feed_b"), "reassign the A/B busways"),
    "set_rack_cdu": (("racks", "cdu", "loop"), "cool racks from another in-row CDU or facility loop"),
    "fail": (("kind", "elements"), "fail elements"),
    "restore": (("kind", "elements"), "restore failed elements"),
    "set_cap": (("scope", "racks", "gpu_power_limit_w"), "GPU power cap"),
    "set_setpoint": (("target", "elements", "supply_temp_c"), "facility supply setpoint"),
    "set_weather": (("outdoor_dry_bulb_c", "outdoor_wet_bulb_c"), "outdoor weather"),
    "set_job": (("job",), "job mix: the job placed on the site"),
}
RACK_OPS = ("move_rack", "add_rack", "remove_rack", "set_rack_type", "set_rack_feeds", "set_rack_cdu")


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
        "set_rack_cdu": lambda: f"{shown} cooled by {edit.get('cdu') or 'loop ' + str(edit.get('loop'))}",
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


def apply_edits(base: SiteTables, edits: list[dict], settle_s: float = 600.0,
                design_limits: str = "warn") -> tuple[Applied, Scenario]:
    """Check and apply ``edits`` in order on a copy of ``base``; :class:`EditRejected` on the first bad one."""
    if not isinstance(edits, list):
        raise EditRejected(None, "edits", "expected a list of edits")
    if len(edits) > MAX_EDITS:
        raise EditRejected(None, "edits", f"{len(edits)} edits (at most {MAX_EDITS})")
    for index, edit in enumerate(edits):
        if not isinstance(edit, dict):
            raise EditRejected(index, "op", "an edit must be a table with an op")
        op = edit.get("op")
        if op not in OPS:
            raise EditRejected(index, "op", f"unknown op {op!r} (ops: {', '.join(OPS)})")
        unknown = set(edit) - {"op", *OPS[op][0]}
        if unknown:
            raise EditRejected(index, sorted(unknown)[0], f"not a field of {op} (fields: {', '.join(OPS[op][0])})")
    out = Applied(state=base, inputs=TickInputs())
    rack_edits = [(i, e) for i, e in enumerate(edits) if e["op"] in RACK_OPS]
    if rack_edits:
        out.state, touched = _edited_site(base, rack_edits, design_limits)
        out.touched_racks = set(touched)
    failed = _Failures(out.state)
    for index, edit in enumerate(edits):
        if edit["op"] not in RACK_OPS:
            _APPLY[edit["op"]](out, failed, edit, index)
    inputs = failed.inputs(out.state, out.inputs)
    busy = np.zeros(out.state.n_nodes, dtype=bool)  # as the live twin runs: nodes without a GPU of the job off
    gpu_ids = placed_job_gpus(out.state, out.job)
    if gpu_ids is not None:
        busy[out.state.gpu_node[gpu_ids]] = True
    failed_nodes = inputs.nodes_off if inputs.nodes_off is not None else False
    inputs = replace(inputs, nodes_off=~busy | failed_nodes)
    scenario = Scenario(name="what-if", settle_s=min(settle_s, MAX_SETTLE_S), inputs=inputs, job=out.job)
    return out, scenario


# ------------------------------------------------------------------ rack edits → site entries
_SITE_FIELD = {"rack_type": "type", "position": "x_m", "removed": "racks", "name": "racks"}  # site field → edit field


def _site_spec(base: SiteTables):
    """The parsed site file ``base`` was built from (cached per file)."""
    from twin.site.load import read_site_text, site_path
    from twin.site.schema import parse_site_file

    spec = _SPECS.get(base.name)
    if spec is None:
        path = site_path(base.name)  # the reference site of that name
        spec, _ = parse_site_file(read_site_text(path), path.name)
        _SPECS[base.name] = spec
    return spec


_SPECS: dict[str, object] = {}


def _build_edited_site(base: SiteTables, rack_edits: list[tuple[int, dict]], design_limits: str):
    """The site built with the rack edits as per-rack entries, and the names of the racks they touched."""
    from twin.site.catalogue import load_catalogue
    from twin.site.errors import SiteError
    from twin.site.load import build_site_model
    from twin.site.schema import RackEntry

    spec = _site_spec(base)
    entries: dict[str, dict] = {e.name: e.model_dump(exclude_defaults=True) for e in spec.racks}
    names = list(base.rack_name)
    rows = list(base.row_name)
    touched: set[str] = set()
    for index, edit in rack_edits:
        _RACK_ENTRY[edit["op"]](entries, names, rows, edit, index, touched)

    def build(upto: int):
        picked: dict[str, dict] = {e.name: e.model_dump(exclude_defaults=True) for e in spec.racks}
        scratch_names: list[str] = list(base.rack_name)
        for index, edit in rack_edits[:upto]:
            _RACK_ENTRY[edit["op"]](picked, scratch_names, rows, edit, index, set())
        return _build(picked)

    def _build(chosen: dict[str, dict]):
        try:
            racks = [RackEntry(**fields) for fields in chosen.values()]
        except ValueError as exc:  # pydantic: a value outside the site schema's range
            raise _SchemaProblem(str(exc).splitlines()[-1][:160]) from None
        edited = spec.model_copy(update={"racks": racks})
        return build_site_model(edited, base.source_file, load_catalogue(), design_limits)

    try:
        return _build(entries), touched
    except (SiteError, _SchemaProblem) as exc:
        culprit = rack_edits[-1][0]
        for k in range(1, min(len(rack_edits), 20)):  # the first edit whose prefix fails is the culprit
            try:
                build(k)
            except (SiteError, _SchemaProblem):
                culprit = rack_edits[k - 1][0]
                break
        field_name = _SITE_FIELD.get(getattr(exc, "field", ""), getattr(exc, "field", "racks"))
        problem = getattr(exc, "problem", str(exc))
        entity = getattr(exc, "entity", "")
        raise EditRejected(culprit, field_name, f"{entity}: {problem}" if entity else problem) from None


_SITES: dict[tuple, tuple] = {}  # (base id, policy, rack edits) → (base, edited tables, touched racks)


def _edited_site(base: SiteTables, rack_edits: list[tuple[int, dict]], design_limits: str):
    """:func:`_build_edited_site`, cached: a condition edit after rack edits reuses the built site."""
    import json

    key = (id(base), design_limits, json.dumps(rack_edits, sort_keys=True, default=str))
    hit = _SITES.get(key)
    if hit is not None and hit[0] is base:
        return hit[1], hit[2]
    state, touched = _build_edited_site(base, rack_edits, design_limits)
    if len(_SITES) > 16:
        _SITES.pop(next(iter(_SITES)))
    _SITES[key] = (base, state, frozenset(touched))
    return state, touched


class _SchemaProblem(ValueError):
    """A rack entry the site schema refuses."""


def _entry(entries: dict[str, dict], name: str) -> dict:
    return entries.setdefault(name, {"name": name})


def _select(names: list[str], edit: dict, index: int) -> list[str]:
    return [names[i] for i in match_names(edit.get("racks"), names, index, "racks")]


def _entry_move(entries, names, _rows, edit, index, touched) -> None:
    racks = _select(names, edit, index)
    if len(racks) != 1:
        raise EditRejected(index, "racks", f"move one rack at a time ({len(racks)} selected)")
    x = _number(edit, "x_m", index, -1e4, 1e4, "m")
    y = _number(edit, "y_m", index, -1e4, 1e4, "m")
    _entry(entries, racks[0]).update(x_m=x, y_m=y)
    touched.add(racks[0])


def _rack_type(edit: dict, index: int) -> str:
    from twin.site.catalogue import load_catalogue

    value = edit.get("type")
    types = sorted(load_catalogue().racks)
    if not isinstance(value, str) or value not in types:
        raise EditRejected(index, "type", f"{str(value)[:40]!r} is not a rack type of the catalogue ({', '.join(types)})")
    return value


def _entry_type(entries, names, _rows, edit, index, touched) -> None:
    racks = _select(names, edit, index)
    rack_type = _rack_type(edit, index)
    for name in racks:
        _entry(entries, name)["rack_type"] = rack_type
    touched.update(racks)


def _entry_remove(entries, names, _rows, edit, index, touched) -> None:
    racks = _select(names, edit, index)
    for name in racks:
        entry = _entry(entries, name)
        if "hall" in entry and "row" in entry:  # a rack added by an earlier edit: forget it
            del entries[name]
        else:
            entries[name] = {"name": name, "removed": True}
        names.remove(name)
    touched.difference_update(racks)


def _entry_add(entries, names, rows, edit, index, touched) -> None:
    name = edit.get("name")
    if not isinstance(name, str) or not name or len(name) > 64:
        raise EditRejected(index, "name", "a new rack needs a name (at most 64 characters)")
    if name in names:
        raise EditRejected(index, "name", f"a rack named {name!r} exists already")
    row = edit.get("row")
    if row not in rows:
        raise EditRejected(index, "row", f"no row named {str(row)[:40]!r} at this site")
    hall = row.split("-", 1)[0]
    fields = {"name": name, "hall": hall, "row": row.split("-", 1)[1] if "-" in row else row,
              "x_m": _number(edit, "x_m", index, -1e4, 1e4, "m"), "y_m": _number(edit, "y_m", index, -1e4, 1e4, "m"),
              "rack_type": _rack_type(edit, index), "feed_a": _text(edit, "feed_a", index)}
    if edit.get("feed_b") is not None:
        fields["feed_b"] = _text(edit, "feed_b", index, empty=True)
    entries[name] = fields
    names.append(name)
    touched.add(name)


def _text(edit: dict, key: str, index: int, empty: bool = False) -> str:
    value = edit.get(key)
    if not isinstance(value, str) or (not value and not empty) or len(value) > 64:
        raise EditRejected(index, key, "expected a name")
    return value


def _entry_feeds(entries, names, _rows, edit, index, touched) -> None:
    racks = _select(names, edit, index)
    feed_a = _text(edit, "feed_a", index)
    feed_b = edit.get("feed_b")
    for name in racks:
        entry = _entry(entries, name)
        entry["feed_a"] = feed_a
        if feed_b is not None:
            entry["feed_b"] = _text(edit, "feed_b", index, empty=True)
    touched.update(racks)


def _entry_cdu(entries, names, _rows, edit, index, touched) -> None:
    racks = _select(names, edit, index)
    cdu, loop = edit.get("cdu"), edit.get("loop")
    if bool(cdu) == bool(loop):
        raise EditRejected(index, "cdu", "give either an in-row CDU (cdu) or a facility loop (loop)")
    key, value = ("cdu", _text(edit, "cdu", index)) if cdu else ("loop", _text(edit, "loop", index))
    for name in racks:
        _entry(entries, name)[key] = value
    touched.update(racks)


_RACK_ENTRY = {"move_rack": _entry_move, "set_rack_type": _entry_type, "remove_rack": _entry_remove,
               "add_rack": _entry_add, "set_rack_feeds": _entry_feeds, "set_rack_cdu": _entry_cdu}


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
    "fail": _fail,
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
    key = (id(state), state.n_gpus, name)
    if key not in _PLACEMENTS:
        if len(_PLACEMENTS) > 64:
            _PLACEMENTS.clear()
        spec = load_job(JOBS_DIR / f"{name}.toml")
        _PLACEMENTS[key] = (state, contiguous_placement(state, spec.parallel.n_gpus))
    return _PLACEMENTS[key][1]


_PLACEMENTS: dict[tuple, tuple[SiteTables, np.ndarray]] = {}  # the tables are kept so their id stays theirs


def job_names() -> list[str]:
    """Job files the job-mix choice offers."""
    from twin.site.load import JOBS_DIR

    return sorted(p.stem for p in JOBS_DIR.glob("*.toml"))
