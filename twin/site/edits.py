"""What-if edits: one change each, applied in order to a site model (never to engine arrays).

An :class:`Edit` is an ``op`` and its fields, as written in a scenario's ``[[edits]]``
(``docs/scenarios.md``).  Layout edits (``move_rack``, ``add_rack``, ``remove_rack``,
``set_rack_type``, ``set_rack_feeds``, ``set_rack_cdu``, ``set_setpoint`` of plants)
change the :class:`twin.site.schema.SiteFile` model: :func:`apply_edits` returns a new
model with per-rack entries (``SiteFile.racks``) and changed plants, and the baseline
model is left as it was.  Condition edits (``fail``, ``restore``, ``set_cap``,
``set_setpoint`` of loops, ``set_weather``, ``set_job``) say what the twin runs under;
:mod:`twin.site.whatif` resolves them against the edited site.

Every error is an :class:`EditError` naming the edit's index and field, e.g.
``edits[3].racks: 'H9-*' matches no rack``.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field

from twin.site.catalogue import Catalogue
from twin.site.errors import ScenarioError
from twin.site.schema import RackEntry, SiteFile

SELECT = ("racks", "rows", "halls")  # rack selection: names or globs of racks, rows (H1-R01), halls (H1)
MAX_EDITS = 10_000
MAX_SELECT_NAMES = 10_000

# field → (kind, low, high) of its value; kinds: names, name, text, number, count, flag
FIELDS: dict[str, tuple] = {
    "racks": ("names",),
    "rows": ("names",),
    "halls": ("names",),
    "elements": ("names",),
    "plants": ("names",),
    "loops": ("names",),
    "cdus": ("names",),
    "name": ("name",),
    "hall": ("name",),
    "row": ("name",),
    "type": ("name",),
    "feed_a": ("name",),
    "feed_b": ("text",),
    "cdu": ("name",),
    "loop": ("name",),
    "job": ("text",),
    "note": ("text",),
    "x_m": ("number", -10_000.0, 10_000.0),
    "y_m": ("number", -10_000.0, 10_000.0),
    "dx_m": ("number", -10_000.0, 10_000.0),
    "dy_m": ("number", -10_000.0, 10_000.0),
    "orientation_deg": ("number", -360.0, 360.0),
    "pumps_count": ("count", 1, 1_000),
    "chillers_count": ("count", 1, 1_000),
    "gpu_power_limit_w": ("number", 1.0, 100_000.0),
    "supply_setpoint_c": ("number", 2.0, 60.0),
    "supply_temp_c": ("number", 2.0, 70.0),
    "outdoor_dry_bulb_c": ("number", -40.0, 60.0),
    "outdoor_wet_bulb_c": ("number", -40.0, 60.0),
    "gpu_util_frac": ("number", 0.0, 1.0),
    "site": ("flag",),
    "idle_nodes_off": ("flag",),
}

# op → (required fields, optional fields, groups of which at least one field is required)
OPS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, ...], ...]]] = {
    "move_rack": (
        (),
        SELECT + ("x_m", "y_m", "dx_m", "dy_m", "orientation_deg"),
        (SELECT, ("x_m", "y_m", "dx_m", "dy_m", "orientation_deg")),
    ),
    "add_rack": (("name", "hall", "row", "x_m", "y_m", "type", "feed_a"), ("feed_b", "orientation_deg"), ()),
    "remove_rack": ((), SELECT, (SELECT,)),
    "set_rack_type": (("type",), SELECT, (SELECT,)),
    "set_rack_feeds": ((), SELECT + ("feed_a", "feed_b"), (SELECT, ("feed_a", "feed_b"))),
    "set_rack_cdu": ((), SELECT + ("cdu", "loop"), (SELECT, ("cdu", "loop"))),
    "fail": (("elements",), ("pumps_count", "chillers_count"), ()),
    "restore": (("elements",), (), ()),
    "set_cap": (("gpu_power_limit_w",), SELECT + ("job", "site"), (SELECT + ("job", "site"),)),
    "set_setpoint": (
        (),
        ("plants", "supply_setpoint_c", "loops", "cdus", "supply_temp_c"),
        (("plants", "loops", "cdus"),),
    ),
    "set_weather": ((), ("outdoor_dry_bulb_c", "outdoor_wet_bulb_c"), (("outdoor_dry_bulb_c", "outdoor_wet_bulb_c"),)),
    "set_job": ((), ("job", "gpu_util_frac", "idle_nodes_off"), (("job", "gpu_util_frac", "idle_nodes_off"),)),
}
LAYOUT_OPS = ("move_rack", "add_rack", "remove_rack", "set_rack_type", "set_rack_feeds", "set_rack_cdu")
# the field an error about an edit's effect names, by op
MAIN_FIELD = {
    "move_rack": "x_m",
    "add_rack": "name",
    "remove_rack": "racks",
    "set_rack_type": "type",
    "set_rack_feeds": "feed_a",
    "set_rack_cdu": "cdu",
    "fail": "elements",
    "restore": "elements",
    "set_cap": "gpu_power_limit_w",
    "set_setpoint": "supply_setpoint_c",
    "set_weather": "outdoor_dry_bulb_c",
    "set_job": "job",
}


class EditError(ScenarioError):
    """An edit is malformed or does not fit the site; names the edit's index and field."""

    def __init__(self, index: int, field_: str, message: str, file: str = "") -> None:
        self.index, self.field, self.problem = index, field_, message
        prefix = f"{file}: " if file else ""
        super().__init__(f"{prefix}edits[{index}].{field_}: {message}")


@dataclass(frozen=True)
class Edit:
    """One edit: ``op`` and its fields (already checked against :data:`OPS` and :data:`FIELDS`)."""

    op: str
    fields: dict = field(default_factory=dict)

    def get(self, key: str, default=None):
        return self.fields.get(key, default)

    def as_dict(self) -> dict:
        """``{"op": …, fields…}`` in the canonical field order (TOML export, JSON storage)."""
        required, optional, _ = OPS[self.op]
        order = ("note",) + SELECT + required + tuple(k for k in optional if k not in required and k not in SELECT)
        return {"op": self.op, **{k: self.fields[k] for k in order if k in self.fields}}


def _check_value(index: int, key: str, value):
    spec = FIELDS[key]
    kind = spec[0]
    if kind == "names":
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise EditError(index, key, "expected a non-empty list of names or globs")
        if len(value) > MAX_SELECT_NAMES:
            raise EditError(index, key, f"more than {MAX_SELECT_NAMES:,} names")
        return list(value)
    if kind in ("name", "text"):
        if not isinstance(value, str) or (kind == "name" and not value) or len(value) > 10_000:
            raise EditError(index, key, "expected a name" if kind == "name" else "expected a string")
        return value
    if kind == "flag":
        if not isinstance(value, bool):
            raise EditError(index, key, "expected true or false")
        return value
    lo, hi = spec[1], spec[2]
    if kind == "count":
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise EditError(index, key, f"expected a whole number in [{lo}, {hi}], got {value!r}")
        return value
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not lo <= value <= hi
    ):
        raise EditError(index, key, f"expected a number in [{lo:g}, {hi:g}], got {value!r}")
    return float(value)


def parse_edit(raw, index: int) -> Edit:
    """Check one ``[[edits]]`` table (a dict with ``op``) and return its :class:`Edit`."""
    if not isinstance(raw, dict):
        raise EditError(index, "op", "expected a table with an op")
    op = raw.get("op")
    if not isinstance(op, str) or op not in OPS:
        raise EditError(index, "op", f"unknown op {op!r} (ops: {', '.join(OPS)})")
    required, optional, groups = OPS[op]
    known = set(required) | set(optional) | {"op", "note"}
    for key in raw:
        if key not in known:
            raise EditError(index, key, f"unknown field for {op} (fields: {', '.join(sorted(known - {'op'}))})")
    for key in required:
        if key not in raw:
            raise EditError(index, key, f"{op} needs {key}")
    for group in groups:
        if not any(k in raw for k in group):
            raise EditError(index, group[0], f"{op} needs one of {', '.join(group)}")
    fields_ = {k: _check_value(index, k, v) for k, v in raw.items() if k != "op"}
    if op == "move_rack":
        absolute, relative = {"x_m", "y_m"} & set(fields_), {"dx_m", "dy_m"} & set(fields_)
        if absolute and relative:
            raise EditError(index, "dx_m", "give a position (x_m, y_m) or a shift (dx_m, dy_m), not both")
        if len(absolute) == 1:
            raise EditError(index, "y_m" if "x_m" in absolute else "x_m", "a position needs both x_m and y_m")
    if op == "set_setpoint":
        if sum(k in fields_ for k in ("plants", "loops", "cdus")) != 1:
            raise EditError(index, "plants", "set_setpoint takes one of plants, loops or cdus")
        value = "supply_setpoint_c" if "plants" in fields_ else "supply_temp_c"
        other = "supply_temp_c" if value == "supply_setpoint_c" else "supply_setpoint_c"
        if other in fields_:
            raise EditError(
                index, other, f"{other} goes with {'loops or cdus' if other == 'supply_temp_c' else 'plants'}"
            )
        if value not in fields_:
            raise EditError(index, value, f"{'plants' if 'plants' in fields_ else 'loops or cdus'} need {value}")
    return Edit(op, fields_)


def parse_edits(raw, file: str = "") -> list[Edit]:
    """Check a scenario's ``edits`` array."""
    if not isinstance(raw, list):
        raise ScenarioError(f"{file + ': ' if file else ''}edits: expected an array of tables [[edits]]")
    if len(raw) > MAX_EDITS:
        raise ScenarioError(f"{file + ': ' if file else ''}edits: more than {MAX_EDITS:,} edits")
    try:
        return [parse_edit(item, i) for i, item in enumerate(raw)]
    except EditError as exc:
        raise EditError(exc.index, exc.field, exc.problem, file) from None


# ------------------------------------------------------------------ rack names
@dataclass
class _RackBook:
    """Racks of a model by name: (hall, row name), in model order; rows by ``<hall>-<row>``."""

    racks: dict[str, tuple[str, str]]
    rows: dict[str, tuple[str, str]]

    @classmethod
    def of(cls, model: SiteFile) -> _RackBook:
        racks, rows = {}, {}
        pattern = model.site.rack_name_pattern
        for h, hall in enumerate(model.halls):
            for row_no, row in enumerate(hall.rows, start=1):
                rows[f"{hall.name}-{row.name}"] = (hall.name, row.name)
                for k in range(row.racks):
                    racks[pattern.format(hall=h + 1, row=row_no, rack=k + 1)] = (hall.name, row.name)
        for e in model.racks:
            if e.removed:
                racks.pop(e.name, None)
            elif e.name not in racks and e.hall is not None:
                racks[e.name] = (e.hall, e.row)
        return cls(racks, rows)

    def select(self, edit: Edit, index: int) -> list[str]:
        """Rack names an edit selects by ``racks``, ``rows`` and ``halls`` (each name or glob must match)."""
        chosen: dict[str, None] = {}
        for key in SELECT:
            for pattern in edit.get(key, []):
                if key == "racks":
                    hits = [n for n in self.racks if fnmatch.fnmatchcase(n, pattern)]
                elif key == "rows":
                    rows = {r for r in self.rows if fnmatch.fnmatchcase(r, pattern)}
                    hits = [n for n, (h, r) in self.racks.items() if f"{h}-{r}" in rows]
                else:
                    hits = [n for n, (h, _) in self.racks.items() if fnmatch.fnmatchcase(h, pattern)]
                if not hits:
                    raise EditError(index, key, f"{pattern!r} matches no {key[:-1]}")
                chosen.update(dict.fromkeys(hits))
        return list(chosen)


# ---------------------------------------------------------------- application
@dataclass
class EditedModel:
    """A site model after the layout edits, and what each edit touched."""

    model: SiteFile
    touched: dict[int, set[str]]  # edit index → names of the racks it changed, added or removed
    layout_edits: list[int]  # indices of the edits that changed the model


def apply_edits(model: SiteFile, edits: list[Edit], catalogue: Catalogue) -> EditedModel:
    """Apply the layout edits (and plant setpoints) of ``edits`` in order; ``model`` is not modified.

    References that the model itself can check (rack names, halls, rows, busways and their
    side, loops, rack types, plants) raise :class:`EditError`; positions, in-row CDU names
    and ratings are checked when the edited model is built (:mod:`twin.site.whatif`).
    """
    book = _RackBook.of(model)
    entries: dict[str, dict] = {e.name: e.model_dump(exclude_defaults=True) for e in model.racks}
    busway_side = {b.name: b.side for b in model.power.busways}
    loops = {lp.name for lp in model.cooling.loops}
    plants = {p.name: p for p in model.cooling.plants}
    touched: dict[int, set[str]] = {}
    layout: list[int] = []

    def feed(i: int, key: str, name: str, side: str) -> None:
        if name not in busway_side:
            raise EditError(i, key, f"{name!r} is not a busway/PDU of this site")
        if busway_side[name] != side:
            raise EditError(i, key, f"{name!r} is on side {busway_side[name]}, not {side}")

    def rack_type(i: int, name: str) -> None:
        if name not in catalogue.racks:
            raise EditError(i, "type", f"unknown rack type {name!r} (catalogue: {', '.join(sorted(catalogue.racks))})")

    def entry(name: str) -> dict:
        return entries.setdefault(name, {"name": name})

    for i, e in enumerate(edits):
        if e.op == "set_setpoint" and "plants" in e.fields:
            for pattern in e.fields["plants"]:
                hits = [p for p in plants if fnmatch.fnmatchcase(p, pattern)]
                if not hits:
                    raise EditError(i, "plants", f"{pattern!r} matches no plant (plants: {', '.join(plants)})")
                for p in hits:
                    plants[p] = plants[p].model_copy(update={"supply_setpoint_c": e.fields["supply_setpoint_c"]})
            layout.append(i)
            continue
        if e.op not in LAYOUT_OPS:
            continue
        layout.append(i)
        if e.op == "add_rack":
            name = e.fields["name"]
            if name in book.racks:
                raise EditError(i, "name", f"a rack {name!r} exists already")
            if (e.fields["hall"], e.fields["row"]) not in set(book.rows.values()):
                field_ = "hall" if e.fields["hall"] not in {h.name for h in model.halls} else "row"
                raise EditError(i, field_, f"no row {e.fields['row']!r} in hall {e.fields['hall']!r}")
            rack_type(i, e.fields["type"])
            feed(i, "feed_a", e.fields["feed_a"], "A")
            if e.get("feed_b"):
                feed(i, "feed_b", e.fields["feed_b"], "B")
            entries[name] = {
                k: v
                for k, v in {
                    "name": name,
                    "hall": e.fields["hall"],
                    "row": e.fields["row"],
                    "x_m": e.fields["x_m"],
                    "y_m": e.fields["y_m"],
                    "rack_type": e.fields["type"],
                    "feed_a": e.fields["feed_a"],
                    "feed_b": e.get("feed_b"),
                    "orientation_deg": e.get("orientation_deg"),
                }.items()
                if v is not None
            }
            book.racks[name] = (e.fields["hall"], e.fields["row"])
            touched[i] = {name}
            continue
        names = book.select(e, i)
        touched[i] = set(names)
        if e.op == "move_rack":
            if "x_m" in e.fields and len(names) != 1:
                raise EditError(
                    i,
                    "racks",
                    f"a position (x_m, y_m) moves one rack, {len(names)} are selected; use dx_m, dy_m to shift many",
                )
            if "dx_m" in e.fields or "dy_m" in e.fields:
                base = _positions(model, names, entries)
                for n in names:
                    x, y = base[n]
                    entry(n).update(x_m=x + e.get("dx_m", 0.0), y_m=y + e.get("dy_m", 0.0))
            elif "x_m" in e.fields:
                entry(names[0]).update(x_m=e.fields["x_m"], y_m=e.fields["y_m"])
            if "orientation_deg" in e.fields:
                for n in names:
                    entry(n)["orientation_deg"] = e.fields["orientation_deg"]
        elif e.op == "remove_rack":
            for n in names:
                if entries.get(n, {}).get("hall") is not None:  # an added rack: forget it
                    del entries[n]
                else:
                    entries[n] = {"name": n, "removed": True}
                del book.racks[n]
        elif e.op == "set_rack_type":
            rack_type(i, e.fields["type"])
            for n in names:
                entry(n)["rack_type"] = e.fields["type"]
        elif e.op == "set_rack_feeds":
            if "feed_a" in e.fields:
                feed(i, "feed_a", e.fields["feed_a"], "A")
            if e.get("feed_b"):
                feed(i, "feed_b", e.fields["feed_b"], "B")
            for n in names:
                entry(n).update({k: e.fields[k] for k in ("feed_a", "feed_b") if k in e.fields})
        elif e.op == "set_rack_cdu":
            if "loop" in e.fields and e.fields["loop"] not in loops:
                raise EditError(
                    i,
                    "loop",
                    f"{e.fields['loop']!r} is not a facility loop of this site (loops: {', '.join(sorted(loops))})",
                )
            for n in names:
                entry(n).update({k: e.fields[k] for k in ("cdu", "loop") if k in e.fields})
    new_cooling = model.cooling.model_copy(update={"plants": list(plants.values())})
    new = model.model_copy(update={"racks": [RackEntry(**d) for d in entries.values()], "cooling": new_cooling})
    return EditedModel(new, touched, layout)


def _positions(model: SiteFile, names: list[str], entries: dict[str, dict]) -> dict[str, tuple[float, float]]:
    """Present floor position of racks (row layout, then entries)."""
    want = set(names)
    out = {}
    pattern = model.site.rack_name_pattern
    for h, hall in enumerate(model.halls):
        for row_no, row in enumerate(hall.rows, start=1):
            for k in range(row.racks):
                n = pattern.format(hall=h + 1, row=row_no, rack=k + 1)
                if n in want:
                    along = k * row.pitch_m
                    out[n] = (
                        row.x_m + (along if row.direction == "x" else 0.0),
                        row.y_m + (along if row.direction == "y" else 0.0),
                    )
    for n in names:
        d = entries.get(n, {})
        x, y = out.get(n, (0.0, 0.0))
        out[n] = (d.get("x_m", x), d.get("y_m", y))
    return out
