"""What-if edits as the browser builds them, checked and resolved by the twin's what-if pipeline.

An edit is a plain dict as in a scenario file's ``[[edits]]`` array (``docs/scenarios.md``):
``op`` and its fields, racks by exact name or glob (``racks = ["H4-*"]``), elements by
name.  :func:`resolve_edits` hands the list to :func:`twin.scenario.whatif.resolve` (layout
edits change a copy of the site model, which is built again with the loader's and the
design checks; condition edits become the tick inputs) and turns its
:class:`twin.site.edits.EditError` into :class:`EditRejected`, which the page shows beside
the control that made the edit.  The rest of this module is the editor's vocabulary:
what each control offers and how an edit reads in the list.
"""

from __future__ import annotations

import fnmatch

import numpy as np

from twin.scenario.conditions import Scenario, ScenarioDoc, with_fleet
from twin.scenario.fleetload import FleetLoad
from twin.scenario.whatif import resolve
from twin.site import design
from twin.site.edits import MAX_EDITS, SETPOINT_FIELD, EditError, parse_edit, parse_edits
from twin.site.tables import POWER_KINDS, SOURCE_KINDS, SiteTables

MAX_SELECTED = 5_000  # racks the page names one by one in an edit (more are written as row or hall globs)
DESIGN_LIMITS = (design.WARN, design.STRICT)


class EditRejected(ValueError):
    """An edit that cannot apply; ``index`` (0-based, None for the page's own checks) and ``field`` say where."""

    def __init__(self, index: int | None, field_name: str, message: str) -> None:
        self.index, self.field = index, field_name
        where = f"edits[{index}]" if index is not None else "edit"
        super().__init__(f"{where}.{field_name}: {message}")
        self.message = message


# Element kinds the fail/restore and blast-radius choices list, and where their names are.
FAIL_KINDS = (
    "pump",
    "cdu",
    "loop",
    "chiller",
    "busway",
    "switchgear",
    "transformer",
    "ups",
    "generator",
    "battery",
    "grid",
    "switch",
    "node",
)
SETPOINT_TARGETS = ("loops", "plants", "cdus")  # in the form's order; each takes the field SETPOINT_FIELD names
SETPOINT_LABELS = {"loops": "loop (facility supply)", "plants": "plant (setpoint)", "cdus": "CDU (setpoint)"}
CAP_SCOPES = ("racks", "site", "job")


def resolve_edits(
    base: SiteTables, edits: list[dict], design_limits: str = design.WARN, load: FleetLoad | None = None
) -> Scenario:
    """The scenario of ``edits`` on ``base`` (its ``state`` is the edited site, None when the layout is as built).

    ``design_limits``: ``"warn"`` keeps ratings the edits exceed as design findings,
    ``"strict"`` refuses the edit that exceeds one.  Raises :class:`EditRejected`.  The fleet's other
    jobs fill the GPUs outside the site's job, so an edited rack runs work on both sides: as ``load``
    says (the live fleet's occupancy), else at the nominal load
    (:func:`~twin.scenario.conditions.with_fleet`).  Edits are taken in the current spelling only
    (older spellings are read from files and stored rows).
    """
    if len(edits) > MAX_EDITS:
        raise EditRejected(None, "edits", f"a scenario holds at most {MAX_EDITS:,} edits")
    try:
        doc = ScenarioDoc(name="what-if", design_limits=design_limits, edits=parse_edits(edits, upgrade=False))
        scenario = resolve(base, with_fleet(doc))
    except EditError as exc:
        raise EditRejected(exc.index, exc.field, exc.problem) from None
    if load is not None:
        scenario.fleet_util_frac = load
    return scenario


def canonical(edit: dict, index: int = 0) -> dict:
    """``edit`` as the schema writes it (numbers as floats, fields in order); :class:`EditRejected` if invalid."""
    try:
        return parse_edit(edit, index).as_dict()
    except EditError as exc:
        raise EditRejected(exc.index, exc.field, exc.problem) from None


def describe(edit: dict) -> str:
    """One line saying what ``edit`` does, e.g. ``fail H1-TX1-A``."""
    op = edit.get("op", "?")
    names = (
        edit.get("racks")
        or edit.get("rows")
        or edit.get("halls")
        or edit.get("elements")
        or edit.get("loops")
        or edit.get("plants")
        or edit.get("cdus")
        or []
    )
    shown = ", ".join(names[:3]) + (f" … ({len(names)})" if len(names) > 3 else "")
    details = {
        "move_rack": lambda: f"move {shown} to x {_number(edit.get('x_m'))} m, y {_number(edit.get('y_m'))} m",
        "add_rack": lambda: f"add {edit.get('type')} rack {edit.get('name')} in {edit.get('row')}",
        "remove_rack": lambda: f"remove {shown}",
        "set_rack_type": lambda: f"{shown} → {edit.get('type')}",
        "set_rack_feeds": lambda: f"{shown} fed from A {edit.get('feed_a')} / B {edit.get('feed_b') or '–'}",
        "set_rack_cdu": lambda: f"{shown} cooled by {edit.get('cdu') or 'loop ' + str(edit.get('loop'))}",
        "fail": lambda: (
            f"fail {shown}"
            + (f" ({edit['pumps_count']} pump)" if "pumps_count" in edit else "")
            + (f" ({edit['chillers_count']} chiller)" if "chillers_count" in edit else "")
        ),
        "restore": lambda: f"restore {shown}",
        "set_cap": lambda: (
            f"cap GPUs at {_number(edit.get('gpu_power_limit_w'))} W: "
            + ("site" if edit.get("site") else f"job {edit['job']}" if edit.get("job") else shown)
        ),
        "set_setpoint": lambda: _describe_setpoint(edit, shown),
        "set_weather": lambda: (
            f"outdoor {_number(edit.get('outdoor_dry_bulb_c'))} °C dry / {_number(edit.get('outdoor_wet_bulb_c'))} °C "
            "wet bulb"
        ),
        "set_job": lambda: f"job {edit.get('job') or 'none'}",
    }
    return details.get(op, lambda: op)()


SETPOINT_WORDS = {"plants": "facility-water setpoint", "cdus": "secondary supply setpoint", "loops": "facility supply"}


def _describe_setpoint(edit: dict, shown: str) -> str:
    target = next((t for t in SETPOINT_TARGETS if t in edit), None)
    if target is None:
        return "set_setpoint"
    return f"{SETPOINT_WORDS[target]} of {shown} at {_number(edit.get(SETPOINT_FIELD[target]))} °C"


def _number(value) -> str:
    """A number as typed (40, 40.0 → ``40``; 40.5 → ``40.5``), whether the form or the store wrote it."""
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def setpoint_names(state: SiteTables, target: str) -> list[str]:
    """Names a setpoint of ``target`` (one of :data:`SETPOINT_TARGETS`) can name: plants, CDUs or loops."""
    return {"plants": state.plant_name, "cdus": state.cdu_name, "loops": state.loop_name}.get(target, [])


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
        hits = (
            [i for i, n in enumerate(names) if fnmatch.fnmatchcase(n, pattern)]
            if any(c in pattern for c in "*?[")
            else []
        )
        if not hits:
            raise EditRejected(index, field_name, f"{pattern!r} names nothing at this site")
        out += hits
    return np.unique(np.asarray(out, dtype=np.int64))


def kind_names(state: SiteTables, kind: str) -> list[str]:
    """Names of the elements of ``kind`` (one of :data:`FAIL_KINDS`) at the site."""
    if kind in ("busway", "switchgear", "transformer", "ups"):
        wanted = kind
        return [n for n, k in zip(state.power_name, state.power_kind) if POWER_KINDS[k] == wanted]
    if kind in ("generator", "battery", "grid"):
        return [n for n, k in zip(state.source_name, state.source_kind) if SOURCE_KINDS[k] == kind]
    return {
        "pump": state.cdu_name,
        "cdu": state.cdu_name,
        "loop": state.loop_name,
        "chiller": state.plant_name,
        "switch": state.switch_name,
        "node": state.node_name,
        "rack": state.rack_name,
    }[kind]


def job_names() -> list[str]:
    """Job files the job-mix choice offers."""
    from twin.site.load import JOBS_DIR

    return sorted(p.stem for p in JOBS_DIR.glob("*.toml"))
