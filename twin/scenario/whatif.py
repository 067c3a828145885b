"""The what-if pipeline: scenario document → edited site model → built site → resolved inputs.

:func:`resolve` applies a scenario's edits to the baseline's site model
(:func:`twin.site.edits.apply_edits`), builds the edited site with the normal loader when
the layout changed (cached: the same edits on the same baseline build once), refuses
ratings the edits exceed under the ``strict`` policy, and resolves the condition edits
(failures, caps, setpoints, weather, job) against the edited site into the scenario's
:class:`twin.engine.tick.TickInputs`.  Every error is an :class:`twin.site.edits.EditError`
naming the edit's index and field; the baseline is never changed.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from twin.cache import BoundedCache
from twin.scenario.conditions import Scenario, ScenarioDoc, resolve_conditions
from twin.site import design
from twin.site.catalogue import Catalogue, load_catalogue
from twin.site.edits import LAYOUT_OPS, MAIN_FIELD, SELECT, Edit, EditedModel, EditError, apply_edits
from twin.site.errors import SiteError
from twin.site.load import build_site_model
from twin.site.tables import SiteTables
from twin.site.topology import ElementRef, find_element, racks_exposed

if TYPE_CHECKING:
    from twin.engine.tick import TickInputs

# (id of the baseline, design limits, the layout edits as JSON) → (baseline, edited site); the baseline is held
_edited_sites: BoundedCache[tuple[SiteTables, SiteTables]] = BoundedCache(8)
_GLOB = set("*?[")


def resolve(baseline: SiteTables, doc: ScenarioDoc, catalogue: Catalogue | None = None) -> Scenario:
    """The scenario of ``doc`` on ``baseline``: edited site (``Scenario.state``, None if the layout is
    unchanged) and inputs with every condition and edit applied."""
    state = edited_site(baseline, doc, catalogue)
    sc = resolve_conditions(doc, state)
    _apply_conditions(sc, state, doc)
    sc.state = None if state is baseline else state
    return sc


def edited_site(baseline: SiteTables, doc: ScenarioDoc, catalogue: Catalogue | None = None) -> SiteTables:
    """``baseline`` with ``doc``'s layout edits applied (``baseline`` itself when there are none)."""
    if baseline.site_model is None:
        raise EditError(0, "op", "this site was not loaded from a site model; edits cannot apply", doc.file)
    cat = catalogue or load_catalogue()
    try:
        edited = apply_edits(baseline.site_model, doc.edits, cat)
    except EditError as exc:
        raise EditError(exc.index, exc.field, exc.problem, doc.file) from None
    if not edited.layout_edits:
        return baseline
    key = (
        id(baseline),
        doc.design_limits,
        json.dumps([doc.edits[i].as_dict() for i in edited.layout_edits], sort_keys=True, default=str),
    )
    return _edited_sites.get_or_make(
        key, lambda: (baseline, _build(baseline, edited, doc, cat)), valid=lambda hit: hit[0] is baseline
    )[1]


def _build(baseline: SiteTables, edited: EditedModel, doc: ScenarioDoc, cat: Catalogue) -> SiteTables:
    try:
        state = build_site_model(edited.model, baseline.source_file, cat, design.WARN)
    except SiteError as exc:
        raise _blame(edited, doc, exc.entity, exc.field, f"{exc.entity}: {exc.field}: {exc.problem}") from None
    if doc.design_limits == design.STRICT:
        before = {(f.check, f.element) for f in baseline.design_findings}
        for f in state.design_findings:
            if f.check in design.ALWAYS_WARNINGS or (f.check, f.element) in before:
                continue
            entity, field_ = design.ERROR_AT[f.check](f.element)
            ref = find_element(state, f.element)
            racks = {state.rack_name[r] for r in racks_exposed(state, ref)} if ref else set()
            raise _blame(
                edited,
                doc,
                entity,
                field_,
                f'{entity}: {f.message} (design_limits = "strict"; "warn" reports it instead)',
                racks,
            )
    return state


def _blame(
    edited: EditedModel, doc: ScenarioDoc, entity: str, field_: str, message: str, racks: set[str] | None = None
) -> EditError:
    """An :class:`EditError` at the last layout edit that touched the rack named in ``entity`` (or ``racks``)."""
    if racks is None:
        racks = {entity.split("'")[1]} if entity.startswith("rack '") else set()
    index = next(
        (i for i in reversed(edited.layout_edits) if edited.touched.get(i, set()) & racks), edited.layout_edits[-1]
    )
    edit = doc.edits[index]
    if field_ == "position":
        field_ = (
            "x_m"
            if "x_m" in edit.fields or edit.op == "add_rack"
            else ("dx_m" if "dx_m" in edit.fields else "dy_m" if "dy_m" in edit.fields else MAIN_FIELD[edit.op])
        )
    elif field_ == "rack_type":
        field_ = "type"
    if field_ not in edit.fields:
        field_ = MAIN_FIELD[edit.op]
    return EditError(index, field_, message, doc.file)


# ------------------------------------------------------------------ conditions
def _names(state: SiteTables) -> list[str]:
    """Every element name of the site with its reference, for globs (built once per site)."""
    cache: dict[str, list[str]] = state.__dict__.setdefault("_whatif_names", {})
    if "all" not in cache:
        cache["all"] = [
            n
            for names in (
                state.power_name,
                state.source_name,
                state.plant_name,
                state.loop_name,
                state.cdu_name,
                state.switch_name,
                state.rack_name,
                state.node_name,
            )
            for n in names
        ]
    return cache["all"]


def _links(state: SiteTables, pattern: str) -> np.ndarray:
    """Links named ``<switch>/<switch>`` (either order; globs allowed) matching ``pattern``."""
    a_pat, _, b_pat = pattern.partition("/")
    names = np.asarray(state.switch_name)
    a = np.array([fnmatch.fnmatchcase(n, a_pat) for n in names])
    b = np.array([fnmatch.fnmatchcase(n, b_pat) for n in names])
    hit = (a[state.link_a] & b[state.link_b]) | (b[state.link_a] & a[state.link_b])
    return np.flatnonzero(hit)


def _elements(state: SiteTables, edit: Edit, index: int, file: str) -> list[ElementRef]:
    out: list[ElementRef] = []
    for pattern in edit.fields["elements"]:
        if "/" in pattern:
            links = _links(state, pattern)
            if links.size == 0:
                raise EditError(index, "elements", f"{pattern!r} matches no link (links are <switch>/<switch>)", file)
            out += [ElementRef("link", int(k), "link") for k in links]
            continue
        if _GLOB & set(pattern):
            found = [find_element(state, n) for n in _names(state) if fnmatch.fnmatchcase(n, pattern)]
        else:
            found = [find_element(state, pattern)]
        hits = [h for h in found if h is not None]
        if not hits:
            raise EditError(index, "elements", f"{pattern!r} is not an element of this site", file)
        out += hits
    return out


def _racks(state: SiteTables, edit: Edit, index: int, file: str) -> np.ndarray:
    """Rack ids selected by ``racks``/``rows``/``halls`` on the built site."""
    mask = np.zeros(state.n_racks, dtype=bool)
    for key in SELECT:
        for pattern in edit.get(key, []):
            if key == "racks":
                hit = np.array([fnmatch.fnmatchcase(n, pattern) for n in state.rack_name])
            elif key == "rows":
                rows = np.array([fnmatch.fnmatchcase(n, pattern) for n in state.row_name])
                hit = rows[state.rack_row]
            else:
                halls = np.array([fnmatch.fnmatchcase(n, pattern) for n in state.hall_name])
                hit = halls[state.rack_hall]
            if not hit.any():
                raise EditError(index, key, f"{pattern!r} matches no {key[:-1]}", file)
            mask |= hit
    return np.flatnonzero(mask)


@dataclass
class _Book:
    """What the condition edits of a scenario add up to, in edit order."""

    supply: np.ndarray  # [n_loops] facility supply override (NaN: none)
    cdu_setpoint: np.ndarray  # [n_cdus] secondary setpoint (NaN: design)
    failed: dict[tuple[str, int], int | None] = field(
        default_factory=dict
    )  # (kind, id) → units lost (pumps, chillers), None = all
    caps: list[tuple[int, np.ndarray, float]] = field(default_factory=list)  # (edit index, GPU ids, cap W)
    job_caps: list[tuple[int, float]] = field(default_factory=list)  # (edit index, cap W)


def _apply_conditions(sc: Scenario, state: SiteTables, doc: ScenarioDoc) -> None:
    """Apply the condition edits of ``doc`` (in order, after ``[conditions]``) to ``sc``."""
    file, inp = doc.file, sc.inputs
    book = _Book(
        supply=(
            inp.loop_supply_temp_c.copy()
            if inp.loop_supply_temp_c is not None
            else np.full(len(state.loop_name), np.nan)
        ),
        cdu_setpoint=np.full(state.n_cdus, np.nan),
    )
    for i, e in enumerate(doc.edits):
        if e.op in LAYOUT_OPS:
            continue
        if e.op in ("fail", "restore"):
            _fail_or_restore(book, state, e, i, file)
        elif e.op == "set_cap":
            _set_cap(book, sc, state, e, i, file)
        elif e.op == "set_setpoint":
            _set_setpoint(book, state, e, i, file)
        elif e.op == "set_weather":
            for key in ("outdoor_dry_bulb_c", "outdoor_wet_bulb_c"):
                if key in e.fields:
                    setattr(inp, key, e.fields[key])
        elif e.op == "set_job":
            if "job" in e.fields:
                sc.job = e.fields["job"]
            if "gpu_util_frac" in e.fields:
                inp.gpu_util_frac = e.fields["gpu_util_frac"]
            if "idle_nodes_off" in e.fields:
                sc.idle_nodes_off = e.fields["idle_nodes_off"]
    inp.loop_supply_temp_c = book.supply
    if np.isfinite(book.cdu_setpoint).any():
        inp.cdu_supply_setpoint_c = book.cdu_setpoint
    _failures(inp, state, book.failed)
    if book.caps or book.job_caps:
        _caps(sc, state, book.caps, book.job_caps, file)


def _fail_or_restore(book: _Book, state: SiteTables, e: Edit, i: int, file: str) -> None:
    """A ``fail`` edit enters its elements in the failure book (pumps or chillers by count); ``restore``
    takes out elements an earlier edit failed."""
    for ref in _elements(state, e, i, file):
        if e.op == "fail":
            units = (
                e.get("pumps_count") if ref.kind == "cdu" else e.get("chillers_count") if ref.kind == "plant" else None
            )
            book.failed[(ref.kind, ref.id)] = units
            continue
        if (ref.kind, ref.id) not in book.failed:
            raise EditError(i, "elements", f"{_name_of(state, ref)!r} is not failed by an earlier edit", file)
        del book.failed[(ref.kind, ref.id)]


def _set_cap(book: _Book, sc: Scenario, state: SiteTables, e: Edit, i: int, file: str) -> None:
    """A ``set_cap`` edit: a power cap on the site, on selected racks or on the scenario's job."""
    cap = e.fields["gpu_power_limit_w"]
    if e.get("site"):
        book.caps.append((i, np.arange(state.n_gpus), cap))
    if any(k in e.fields for k in SELECT):
        racks = _racks(state, e, i, file)
        book.caps.append((i, np.flatnonzero(np.isin(state.gpu_rack, racks)), cap))
    if "job" in e.fields:
        book.job_caps.append((i, cap))
        job = sc.job if sc.job is not None else state.default_job
        if e.fields["job"] != job:
            raise EditError(i, "job", f"{e.fields['job']!r} is not the scenario's job ({job or 'none'})", file)


def _set_setpoint(book: _Book, state: SiteTables, e: Edit, i: int, file: str) -> None:
    """A ``set_setpoint`` edit: facility supply of loops, or the secondary setpoint of CDUs (globs)."""
    if "loops" in e.fields:
        for pattern in e.fields["loops"]:
            hit = [k for k, n in enumerate(state.loop_name) if fnmatch.fnmatchcase(n, pattern)]
            if not hit:
                raise EditError(
                    i, "loops", f"{pattern!r} matches no facility loop (loops: {', '.join(state.loop_name)})", file
                )
            book.supply[hit] = e.fields["supply_temp_c"]
    if "cdus" in e.fields:
        for pattern in e.fields["cdus"]:
            hit = [k for k, n in enumerate(state.cdu_name) if fnmatch.fnmatchcase(n, pattern)]
            if not hit:
                raise EditError(i, "cdus", f"{pattern!r} matches no CDU", file)
            book.cdu_setpoint[hit] = e.fields["supply_setpoint_c"]


def _name_of(state: SiteTables, ref: ElementRef) -> str:
    if ref.kind == "link":
        return f"{state.switch_name[state.link_a[ref.id]]}/{state.switch_name[state.link_b[ref.id]]}"
    names = {
        "power": state.power_name,
        "source": state.source_name,
        "plant": state.plant_name,
        "loop": state.loop_name,
        "cdu": state.cdu_name,
        "switch": state.switch_name,
        "rack": state.rack_name,
        "node": state.node_name,
    }[ref.kind]
    return names[ref.id]


def add_failures(inputs: TickInputs, state: SiteTables, refs: list[ElementRef]) -> TickInputs:
    """A copy of tick ``inputs`` with the elements ``refs`` failed as well (whole elements)."""
    inp = replace(inputs)
    _failures(inp, state, {(r.kind, r.id): None for r in refs})
    return inp


def _failures(inp: TickInputs, state: SiteTables, failed: dict[tuple[str, int], int | None]) -> None:
    """Turn the failure book into tick inputs (on top of what ``[conditions]`` failed)."""
    by_kind: dict[str, list[tuple[int, int | None]]] = {}
    for (kind, ident), units in failed.items():
        by_kind.setdefault(kind, []).append((ident, units))
    ids: Callable[[str], list[int]] = lambda kind: [i for i, _ in by_kind.get(kind, [])]  # noqa: E731
    inp.failed_power = np.union1d(inp.failed_power, ids("power")).astype(np.int64)
    inp.failed_sources = np.union1d(inp.failed_sources, ids("source")).astype(np.int64)
    switches = ids("switch")
    links = np.flatnonzero(np.isin(state.link_a, switches) | np.isin(state.link_b, switches))
    inp.failed_links = np.union1d(np.union1d(inp.failed_links, links), ids("link")).astype(np.int64)
    if "cdu" in by_kind or "loop" in by_kind:
        pumps = (
            np.asarray(inp.pumps_running_count, dtype=np.int64).copy()
            if inp.pumps_running_count is not None
            else state.cdu_spec_array("pumps").astype(np.int64)
        )
        for cdu, units in by_kind.get("cdu", []):
            pumps[cdu] = 0 if units is None else max(pumps[cdu] - units, 0)
        # a facility loop out of service: its CDUs reject no heat, modelled as their flow lost [E]
        pumps[np.isin(state.cdu_loop, ids("loop"))] = 0
        inp.pumps_running_count = pumps
    if "plant" in by_kind:
        running = (
            np.asarray(inp.plant_chillers_running, dtype=np.int64).copy()
            if inp.plant_chillers_running is not None
            else state.plant_chiller_count.astype(np.int64)
        )
        for plant, units in by_kind["plant"]:
            running[plant] = 0 if units is None else max(running[plant] - units, 0)
        inp.plant_chillers_running = running
    # a failed node or rack stops: modelled as powered off (its GPUs draw nothing and compute nothing)
    nodes = ids("node") + [int(n) for r in ids("rack") for n in np.flatnonzero(state.node_rack == r)]
    if nodes:
        off = (
            np.asarray(inp.nodes_off, dtype=bool).copy()
            if inp.nodes_off is not None
            else np.zeros(state.n_nodes, dtype=bool)
        )
        off[nodes] = True
        inp.nodes_off = off


def _caps(
    sc: Scenario,
    state: SiteTables,
    caps: list[tuple[int, np.ndarray, float]],
    job_caps: list[tuple[int, float]],
    file: str,
) -> None:
    """Per-GPU power limits: the lowest cap that applies to each GPU, within its settable range."""
    tdp = state.gpu_spec_array("tdp_w")
    low = state.gpu_spec_array("min_power_limit_w")
    base = sc.inputs.gpu_power_limit_w
    limit = np.broadcast_to(np.asarray(tdp if base is None else base, dtype=np.float64), tdp.shape).copy()
    if job_caps:
        from twin.site.load import default_job_path
        from twin.training.jobfile import load_job  # training is needed only for a job cap
        from twin.training.sitejob import contiguous_placement

        name = sc.job if sc.job is not None else state.default_job
        spec = load_job(default_job_path(name))
        gpus = contiguous_placement(state, spec.parallel.n_gpus)
        caps = caps + [(i, gpus, cap) for i, cap in job_caps]
    for i, gpus, cap in sorted(caps, key=lambda c: c[0]):
        too_low = gpus[cap < low[gpus]]
        if too_low.size:
            raise EditError(
                i,
                "gpu_power_limit_w",
                f"{cap:g} W is below the minimum power limit "
                f"({low[too_low[0]]:g} W) of {state.gpu_specs[state.gpu_spec[too_low[0]]].name}",
                file,
            )
        limit[gpus] = np.minimum(limit[gpus], np.minimum(cap, tdp[gpus]))
    sc.inputs = replace(sc.inputs, gpu_power_limit_w=limit)
