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
    editor = _Editor(model, catalogue)
    for i, e in enumerate(edits):
        editor.apply(i, e)
    return editor.result()


class _Editor:
    """The model's rack entries and plants while edits apply, one edit at a time (see :func:`apply_edits`)."""

    def __init__(self, model: SiteFile, catalogue: Catalogue) -> None:
        self.model, self.catalogue = model, catalogue
        self.book = _RackBook.of(model)
        self.entries: dict[str, dict[str, Any]] = {e.name: e.model_dump(exclude_defaults=True) for e in model.racks}
        self.busway_side = {b.name: b.side for b in model.power.busways}
        self.loops = {lp.name for lp in model.cooling.loops}
        self.plants = {p.name: p for p in model.cooling.plants}
        self.touched: dict[int, set[str]] = {}
        self.layout: list[int] = []

    def apply(self, i: int, e: Edit) -> None:
        """Apply edit ``i`` when it is a layout edit or a plant setpoint (others are conditions: skipped)."""
        if e.op == "set_setpoint" and "plants" in e.fields:
            self._plant_setpoint(i, e)
            self.layout.append(i)
            return
        if e.op not in LAYOUT_OPS:
            return
        self.layout.append(i)
        if e.op == "add_rack":
            self._add_rack(i, e)
            return
        names = self.book.select(e, i)
        self.touched[i] = set(names)
        getattr(self, f"_{e.op}")(i, e, names)

    def result(self) -> EditedModel:
        model = self.model
        new_cooling = model.cooling.model_copy(update={"plants": list(self.plants.values())})
        racks = [RackEntry(**d) for d in self.entries.values()]
        return EditedModel(model.model_copy(update={"racks": racks, "cooling": new_cooling}), self.touched, self.layout)

    # ------------------------------------------------------------ checks
    def _feed(self, i: int, key: str, name: str, side: str) -> None:
        if name not in self.busway_side:
            raise EditError(i, key, f"{name!r} is not a busway/PDU of this site")
        if self.busway_side[name] != side:
            raise EditError(i, key, f"{name!r} is on side {self.busway_side[name]}, not {side}")

    def _rack_type(self, i: int, name: str) -> None:
        if name not in self.catalogue.racks:
            known = ", ".join(sorted(self.catalogue.racks))
            raise EditError(i, "type", f"unknown rack type {name!r} (catalogue: {known})")

    def _entry(self, name: str) -> dict[str, Any]:
        return self.entries.setdefault(name, {"name": name})

    # ------------------------------------------------------------ one method per op
    def _plant_setpoint(self, i: int, e: Edit) -> None:
        for pattern in e.fields["plants"]:
            hits = [p for p in self.plants if fnmatch.fnmatchcase(p, pattern)]
            if not hits:
                raise EditError(i, "plants", f"{pattern!r} matches no plant (plants: {', '.join(self.plants)})")
            for p in hits:
                self.plants[p] = self.plants[p].model_copy(update={"supply_setpoint_c": e.fields["supply_setpoint_c"]})

    def _add_rack(self, i: int, e: Edit) -> None:
        name, hall, row = e.fields["name"], e.fields["hall"], e.fields["row"]
        if name in self.book.racks:
            raise EditError(i, "name", f"a rack {name!r} exists already")
        if (hall, row) not in set(self.book.rows.values()):
            field_ = "hall" if hall not in {h.name for h in self.model.halls} else "row"
            raise EditError(i, field_, f"no row {row!r} in hall {hall!r}")
        self._rack_type(i, e.fields["type"])
        self._feed(i, "feed_a", e.fields["feed_a"], "A")
        if e.get("feed_b"):
            self._feed(i, "feed_b", e.fields["feed_b"], "B")
        values = {
            "name": name,
            "hall": hall,
            "row": row,
            "x_m": e.fields["x_m"],
            "y_m": e.fields["y_m"],
            "rack_type": e.fields["type"],
            "feed_a": e.fields["feed_a"],
            "feed_b": e.get("feed_b"),
            "orientation_deg": e.get("orientation_deg"),
        }
        self.entries[name] = {k: v for k, v in values.items() if v is not None}
        self.book.racks[name] = (hall, row)
        self.touched[i] = {name}

    def _move_rack(self, i: int, e: Edit, names: list[str]) -> None:
        if "x_m" in e.fields and len(names) != 1:
            raise EditError(
                i,
                "racks",
                f"a position (x_m, y_m) moves one rack, {len(names)} are selected; use dx_m, dy_m to shift many",
            )
        if "dx_m" in e.fields or "dy_m" in e.fields:
            base = _positions(self.model, names, self.entries)
            for n in names:
                x, y = base[n]
                self._entry(n).update(x_m=x + e.get("dx_m", 0.0), y_m=y + e.get("dy_m", 0.0))
        elif "x_m" in e.fields:
            self._entry(names[0]).update(x_m=e.fields["x_m"], y_m=e.fields["y_m"])
        if "orientation_deg" in e.fields:
            for n in names:
                self._entry(n)["orientation_deg"] = e.fields["orientation_deg"]

    def _remove_rack(self, _i: int, _e: Edit, names: list[str]) -> None:
        for n in names:
            if self.entries.get(n, {}).get("hall") is not None:  # an added rack: forget it
                del self.entries[n]
            else:
                self.entries[n] = {"name": n, "removed": True}
            del self.book.racks[n]

    def _set_rack_type(self, i: int, e: Edit, names: list[str]) -> None:
        self._rack_type(i, e.fields["type"])
        for n in names:
            self._entry(n)["rack_type"] = e.fields["type"]

    def _set_rack_feeds(self, i: int, e: Edit, names: list[str]) -> None:
        if "feed_a" in e.fields:
            self._feed(i, "feed_a", e.fields["feed_a"], "A")
        if e.get("feed_b"):
            self._feed(i, "feed_b", e.fields["feed_b"], "B")
        for n in names:
            self._entry(n).update({k: e.fields[k] for k in ("feed_a", "feed_b") if k in e.fields})

    def _set_rack_cdu(self, i: int, e: Edit, names: list[str]) -> None:
        if "loop" in e.fields and e.fields["loop"] not in self.loops:
            known = ", ".join(sorted(self.loops))
            raise EditError(i, "loop", f"{e.fields['loop']!r} is not a facility loop of this site (loops: {known})")
        for n in names:
            self._entry(n).update({k: e.fields[k] for k in ("cdu", "loop") if k in e.fields})


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
