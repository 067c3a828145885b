"""What-if edits: one change each, applied in order to a site model (never to engine arrays).

An :class:`Edit` is an ``op`` and its fields, as written in a scenario's ``[[edits]]``
(``docs/scenarios.md``), checked by its op's model (:mod:`twin.site.edit_schema`, whose
names this module re-exports).  Layout edits (``move_rack``, ``add_rack``, ``remove_rack``,
``set_rack_type``, ``set_rack_feeds``, ``set_rack_cdu``, ``set_setpoint`` of plants)
change the :class:`twin.site.schema.SiteFile` model: :func:`apply_edits` returns a new
model with per-rack entries (``SiteFile.racks``) and changed plants, and the baseline
model is left as it was.  Condition edits (``fail``, ``restore``, ``set_cap``,
``set_setpoint`` of CDUs and loops, ``set_weather``, ``set_job``) say what the twin runs under;
:mod:`twin.scenario.whatif` resolves them against the edited site.

Every error is an :class:`EditError` naming the edit's index and field, e.g.
``edits[3].racks: 'H9-*' matches no rack``.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

from twin.site.catalogue import Catalogue
from twin.site.edit_schema import (
    LAYOUT_OPS,
    MAIN_FIELD,
    MAX_EDITS,
    MAX_SELECT_NAMES,
    SELECT,
    SETPOINT_FIELD,
    Edit,
    EditError,
    parse_edit,
    parse_edits,
    upgrade_edit,
)
from twin.site.schema import RackEntry, SiteFile

__all__ = [
    "LAYOUT_OPS",
    "MAIN_FIELD",
    "MAX_EDITS",
    "MAX_SELECT_NAMES",
    "SELECT",
    "SETPOINT_FIELD",
    "Edit",
    "EditError",
    "EditedModel",
    "apply_edits",
    "parse_edit",
    "parse_edits",
    "upgrade_edit",
]


# ------------------------------------------------------------------ rack names
@dataclass
class _RackBook:
    """Racks of a model by name: (hall, row name), in model order; rows by ``<hall>-<row>``."""

    racks: dict[str, tuple[str, str | None]]  # an added rack of a model not yet checked may lack its row
    rows: dict[str, tuple[str, str]]

    @classmethod
    def of(cls, model: SiteFile) -> _RackBook:
        racks: dict[str, tuple[str, str | None]] = {}
        rows: dict[str, tuple[str, str]] = {}
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
    and ratings are checked when the edited model is built (:mod:`twin.scenario.whatif`).
    """
    book = _RackBook.of(model)
    entries: dict[str, dict[str, Any]] = {e.name: e.model_dump(exclude_defaults=True) for e in model.racks}
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

    def entry(name: str) -> dict[str, Any]:
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


def _positions(model: SiteFile, names: list[str], entries: dict[str, dict[str, Any]]) -> dict[str, tuple[float, float]]:
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
