"""Expand a site file's rows and per-rack entries into one list of racks with their CDUs.

Rows lay racks out compactly; ``[[racks]]`` entries (:class:`twin.site.schema.RackEntry`)
then change single racks (position, type, feeds, loop, in-row CDU), remove them or add
racks that no row has.  Racks stay grouped by row in row order (an added rack comes after
its row's racks); a rack keeps its number in the row (hence its hostnames) when racks
before it are removed, and an added rack takes the next free number.  CDUs are derived
from the final racks: one per rack with an in-rack CDU, and for the other racks of a row
one in-row CDU per ``racks_per_cdu`` racks, named ``<hall>-<row>-CDU<i>``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from twin.site.errors import SiteError

if TYPE_CHECKING:
    from twin.site.catalogue import Catalogue, RackSpec
    from twin.site.schema import HallSpec, PowerElementSpec, RackEntry, RowSpec, SiteFile

HALL_MARGIN_M = 1.0  # default hall bounds: the rows' rack centres grown by this much on every side
# Footprint of a rack on the floor, width along its row × depth [E]: a 600 mm × 1,200 mm
# cabinet, the common size of deep GPU racks.
RACK_WIDTH_M = 0.6
RACK_DEPTH_M = 1.2
_EPS_M = 1e-6
BUSWAY_KIND = 3  # index of "busway" in twin.site.tables.POWER_KINDS


@dataclass
class Racks:
    """Rack-level columns, then the CDUs derived from them."""

    name: list[str] = field(default_factory=list)
    row: list[int] = field(default_factory=list)
    hall: list[int] = field(default_factory=list)
    x_m: list[float] = field(default_factory=list)
    y_m: list[float] = field(default_factory=list)
    orientation_deg: list[float] = field(default_factory=list)
    array: list[int] = field(default_factory=list)
    type: list[str] = field(default_factory=list)
    feed_a: list[int] = field(default_factory=list)
    feed_b: list[int] = field(default_factory=list)
    loop: list[int] = field(default_factory=list)  # loop id of the rack's row (its in-rack CDU's loop)
    number: list[int] = field(default_factory=list)  # 1-based number in the row (hostnames)
    cdu: list[int] = field(default_factory=list)
    # filled by the layout
    row_name: list[str] = field(default_factory=list)
    row_hall: list[int] = field(default_factory=list)
    row_number: list[int] = field(default_factory=list)  # 1-based number of the row in its hall
    cdu_name: list[str] = field(default_factory=list)
    cdu_loop: list[int] = field(default_factory=list)
    cdu_spec_name: list[str] = field(default_factory=list)

    _COLUMNS = (
        "name",
        "row",
        "hall",
        "x_m",
        "y_m",
        "orientation_deg",
        "array",
        "type",
        "feed_a",
        "feed_b",
        "loop",
        "number",
    )

    def take(self, keep: list[int]) -> None:
        """Keep only the racks ``keep`` (indices), in that order."""
        for col in self._COLUMNS:
            values = getattr(self, col)
            setattr(self, col, [values[i] for i in keep])


class RackLayout:
    """Builds :class:`Racks` for one validated site file (errors raise :class:`SiteError`)."""

    def __init__(
        self,
        spec: SiteFile,
        catalogue: Catalogue,
        file: str,
        power_index: dict[str, int],
        elements: list[tuple[int, PowerElementSpec]],
        loop_index: dict[str, int],
    ) -> None:
        self.spec, self.cat, self.file = spec, catalogue, file
        self.power_index, self.elements, self.loop_index = power_index, elements, loop_index
        self.row_specs: list[tuple[HallSpec, RowSpec]] = []  # (hall spec, row spec) per row id
        self.touched: set[str] = set()  # names of racks changed or added by entries
        self.placed: set[str] = set()  # names of racks added or moved by entries (position checks)

    def fail(self, entity: str, field_: str, message: str) -> SiteError:
        return SiteError(self.file, entity, field_, message)

    def feed(self, entity: str, field_: str, feed: str, side: int) -> int:
        """Power-element id of busway ``feed`` on side A (0) or B (1)."""
        i = self.power_index.get(feed)
        if i is None or self.elements[i][0] != BUSWAY_KIND:
            raise self.fail(entity, field_, f"{feed!r} is not a busway/PDU of this site")
        if self.elements[i][1].side != "AB"[side]:
            raise self.fail(entity, field_, f"{feed!r} is on side {self.elements[i][1].side}")
        return i

    def rack_type(self, entity: str, name: str) -> RackSpec:
        spec = self.cat.racks.get(name)
        if spec is None:
            raise self.fail(
                entity, "rack_type", f"unknown rack type {name!r} (catalogue: {', '.join(sorted(self.cat.racks))})"
            )
        return spec

    # ------------------------------------------------------------------ rows
    def build(self) -> Racks:
        r = Racks()
        self.rows(r)
        if self.spec.racks:
            self.entries(r)
        self.check_feeds_match_types(r)
        self.cdus(r)
        return r

    def rows(self, r: Racks) -> None:
        info, fab = self.spec.site, self.spec.fabric
        array = 0
        for h, hall in enumerate(self.spec.halls):
            if hall.loop not in self.loop_index:
                raise self.fail(f"hall {hall.name!r}", "loop", f"{hall.loop!r} does not exist")
            names = [row.name for row in hall.rows]
            if len(set(names)) != len(names):
                dup = next(n for n in names if names.count(n) > 1)
                raise self.fail(f"hall {hall.name!r} row {dup!r}", "name", "duplicate name")
            for row_no, row in enumerate(hall.rows, start=1):
                entity = f"row {hall.name}/{row.name}"
                rack_spec = self.cat.racks.get(row.rack_type)
                if rack_spec is None:
                    raise self.fail(entity, "rack_type", f"unknown rack type {row.rack_type!r}")
                loop = row.loop or hall.loop
                if loop not in self.loop_index:
                    raise self.fail(entity, "loop", f"{loop!r} does not exist")
                feed_a = self.feed(entity, "feed_a", row.feed_a, 0)
                feed_b = self.feed(entity, "feed_b", row.feed_b, 1) if row.feed_b is not None else -1
                if rack_spec.feeds == 2 and row.feed_b is None:
                    raise self.fail(entity, "feed_b", f"rack type {rack_spec.name!r} is dual-fed (A/B)")
                if rack_spec.feeds == 1 and row.feed_b is not None:
                    raise self.fail(entity, "feed_b", f"rack type {rack_spec.name!r} has a single feed")
                if rack_spec.cdu is not None:
                    for f in ("cdu_type", "racks_per_cdu"):
                        if getattr(row, f) is not None:
                            raise self.fail(
                                entity,
                                f,
                                f"rack type {rack_spec.name!r} has an in-rack CDU "
                                f"({rack_spec.cdu}); {f} applies only to racks cooled in-row",
                            )
                elif row.cdu_type is not None and row.cdu_type not in self.cat.cdus:
                    raise self.fail(
                        entity,
                        "cdu_type",
                        f"unknown CDU type {row.cdu_type!r} (catalogue: {', '.join(sorted(self.cat.cdus))})",
                    )
                row_id = len(r.row_name)
                r.row_name.append(f"{hall.name}-{row.name}")
                r.row_hall.append(h)
                r.row_number.append(row_no)
                self.row_specs.append((hall, row))
                n = row.racks
                k = np.arange(n)
                along = k * row.pitch_m
                xs = row.x_m + (along if row.direction == "x" else 0.0)
                ys = row.y_m + (along if row.direction == "y" else 0.0)
                r.name += [info.rack_name_pattern.format(hall=h + 1, row=row_no, rack=i + 1) for i in k]
                r.row += [row_id] * n
                r.hall += [h] * n
                r.x_m += np.broadcast_to(xs, n).tolist()
                r.y_m += np.broadcast_to(ys, n).tolist()
                r.orientation_deg += [row.orientation_deg] * n
                r.array += (array + k // fab.racks_per_array).tolist()
                array += -(-n // fab.racks_per_array)
                r.type += [row.rack_type] * n
                r.feed_a += [feed_a] * n
                r.feed_b += [feed_b] * n
                r.loop += [self.loop_index[loop]] * n
                r.number += (k + 1).tolist()

    # --------------------------------------------------------------- entries
    def entries(self, r: Racks) -> None:
        index = {n: i for i, n in enumerate(r.name)}
        if len(index) != len(r.name):
            return  # duplicate rack names: reported by the loader's uniqueness check
        row_of = {(self.spec.halls[r.row_hall[i]].name, self.row_specs[i][1].name): i for i in range(len(r.row_name))}
        removed: set[int] = set()
        self.cdu_choice: dict[str, str] = {}
        for e in self.spec.racks:
            entity = f"rack {e.name!r}"
            if e.name in index:
                i = index[e.name]
                hall, row = self.row_specs[r.row[i]]
                if (e.hall is not None and e.hall != hall.name) or (e.row is not None and e.row != row.name):
                    raise self.fail(
                        entity,
                        "hall" if e.hall not in (None, hall.name) else "row",
                        f"the rack stands in {hall.name}/{row.name}; to move it to another hall "
                        "or row, remove it and add a new rack",
                    )
                if e.removed:
                    removed.add(i)
                    self.touched.add(e.name)
                    continue
            else:
                if e.removed:
                    raise self.fail(entity, "removed", "no such rack to remove")
                for key in ("hall", "row", "x_m", "y_m", "rack_type", "feed_a"):
                    if getattr(e, key) is None:
                        raise self.fail(entity, key, "a new rack needs hall, row, x_m, y_m, rack_type and feed_a")
                assert e.hall is not None and e.row is not None and e.x_m is not None and e.y_m is not None
                assert e.rack_type is not None  # all checked just above
                row_id = row_of.get((e.hall, e.row))
                if row_id is None:
                    what = "hall" if e.hall not in {h.name for h in self.spec.halls} else "row"
                    raise self.fail(entity, what, f"no row {e.row!r} in hall {e.hall!r}")
                hall, row = self.row_specs[row_id]
                mine = [j for j in range(len(r.name)) if r.row[j] == row_id]
                i = len(r.name)
                index[e.name] = i
                r.name.append(e.name)
                r.row.append(row_id)
                r.hall.append(r.row_hall[row_id])
                r.x_m.append(e.x_m)
                r.y_m.append(e.y_m)
                r.orientation_deg.append(row.orientation_deg)
                r.array.append(r.array[mine[-1]] if mine else max(r.array, default=-1) + 1)
                r.type.append(e.rack_type)
                r.feed_a.append(-1)
                r.feed_b.append(-1)
                r.loop.append(self.loop_index[row.loop or hall.loop])
                r.number.append(max((r.number[j] for j in mine), default=0) + 1)
                self.placed.add(e.name)
            self.touched.add(e.name)
            self.override(r, i, e)
        if removed:
            if len(removed) == len(r.name):
                raise self.fail("racks", "removed", "a site needs at least one rack")
            r.take([i for i in range(len(r.name)) if i not in removed])
        order = np.argsort(np.asarray(r.row), kind="stable")
        if (order != np.arange(order.size)).any():
            r.take(order.tolist())

    def override(self, r: Racks, i: int, e: RackEntry) -> None:
        entity = f"rack {e.name!r}"
        for key in ("x_m", "y_m", "orientation_deg"):
            if getattr(e, key) is not None:
                getattr(r, key)[i] = float(getattr(e, key))
                self.placed.add(e.name)
        if e.rack_type is not None:
            self.rack_type(entity, e.rack_type)
            r.type[i] = e.rack_type
        if e.feed_a is not None:
            r.feed_a[i] = self.feed(entity, "feed_a", e.feed_a, 0)
        if e.feed_b is not None:
            r.feed_b[i] = self.feed(entity, "feed_b", e.feed_b, 1) if e.feed_b else -1
        if e.loop is not None:
            if e.loop not in self.loop_index:
                raise self.fail(
                    entity,
                    "loop",
                    f"{e.loop!r} is not a facility loop of this site (loops: {', '.join(self.loop_index)})",
                )
            r.loop[i] = self.loop_index[e.loop]
        if e.cdu is not None:
            self.cdu_choice[e.name] = e.cdu

    def check_feeds_match_types(self, r: Racks) -> None:
        """Racks changed by entries: dual-fed types need a B feed, single-fed ones none."""
        index = {n: i for i, n in enumerate(r.name)}
        for name in self.touched:
            if name not in index:
                continue
            i = index[name]
            spec = self.rack_type(f"rack {name!r}", r.type[i])
            if spec.feeds == 2 and r.feed_b[i] < 0:
                raise self.fail(f"rack {name!r}", "feed_b", f"rack type {spec.name!r} is dual-fed (A/B)")
            if spec.feeds == 1 and r.feed_b[i] >= 0:
                raise self.fail(f"rack {name!r}", "feed_b", f"rack type {spec.name!r} has a single feed")

    # ------------------------------------------------------------------ CDUs
    def cdus(self, r: Racks) -> None:
        """One CDU per rack with an in-rack CDU; in-row CDUs for the others, row by row."""
        types = {t: self.cat.racks[t] for t in set(r.type)}
        r.cdu = [0] * len(r.name)
        rows = np.asarray(r.row)
        starts = np.searchsorted(rows, np.arange(len(r.row_name)))
        ends = np.searchsorted(rows, np.arange(len(r.row_name)), side="right")
        for row_id, (a, b) in enumerate(zip(starts.tolist(), ends.tolist())):
            hall, row = self.row_specs[row_id]
            inrow = []
            for i in range(a, b):
                spec = types[r.type[i]]
                if spec.cdu is not None:
                    r.cdu[i] = len(r.cdu_name)
                    r.cdu_name.append(f"{r.name[i]}-CDU")
                    r.cdu_loop.append(r.loop[i])
                    r.cdu_spec_name.append(spec.cdu)
                else:
                    inrow.append(i)
            if not inrow:
                continue
            first_spec = types[r.type[inrow[0]]]
            cdu_type = row.cdu_type or first_spec.row_cdu
            entity = f"row {hall.name}/{row.name}"
            if cdu_type is None:
                raise self.fail(
                    entity,
                    "cdu_type",
                    f"rack type {first_spec.name!r} has no in-rack CDU; name an in-row CDU type from the catalogue",
                )
            per = row.racks_per_cdu or first_spec.racks_per_row_cdu or len(inrow)
            first = len(r.cdu_name)
            n_cdu = -(-len(inrow) // per)
            r.cdu_name += [f"{hall.name}-{row.name}-CDU{k + 1}" for k in range(n_cdu)]
            r.cdu_loop += [self.loop_index[row.loop or hall.loop]] * n_cdu
            r.cdu_spec_name += [cdu_type] * n_cdu
            for j, i in enumerate(inrow):
                r.cdu[i] = first + j // per
        choice = getattr(self, "cdu_choice", {})
        if not choice:
            return
        index = {n: i for i, n in enumerate(r.name)}
        cdu_index = {n: i for i, n in enumerate(r.cdu_name)}
        for name, cdu in choice.items():
            if name not in index:
                continue
            i = index[name]
            entity = f"rack {name!r}"
            if types[r.type[i]].cdu is not None:
                raise self.fail(
                    entity,
                    "cdu",
                    f"rack type {r.type[i]!r} has an in-rack CDU; choose its facility loop (loop) instead",
                )
            c = cdu_index.get(cdu)
            if c is None or self.cat.cdus[r.cdu_spec_name[c]].placement != "in-row":
                raise self.fail(entity, "cdu", f"{cdu!r} is not an in-row CDU of this site")
            r.cdu[i] = c

    # ------------------------------------------------------------- positions
    def hall_bounds(self, r: Racks) -> list[tuple[float, float, float, float]]:
        """Floor area of each hall: ``bounds_m`` or the rows' racks as laid out, grown by the margin."""
        out: list[tuple[float, float, float, float]] = []
        for hall in self.spec.halls:
            if hall.bounds_m is not None:
                out.append(hall.bounds_m)
                continue
            xs, ys = [], []
            for row in hall.rows:
                end = (row.racks - 1) * row.pitch_m
                xs += [row.x_m, row.x_m + (end if row.direction == "x" else 0.0)]
                ys += [row.y_m, row.y_m + (end if row.direction == "y" else 0.0)]
            m = HALL_MARGIN_M
            out.append((min(xs) - m, min(ys) - m, max(xs) + m, max(ys) + m))
        return out

    def check_touched_positions(self, r: Racks) -> None:
        """Racks moved or added by entries stand inside their hall and overlap no other rack."""
        present = set(r.name)
        names = [n for n in self.placed if n in present]
        if not names:
            return
        bounds = self.hall_bounds(r)
        x, y, hall = np.asarray(r.x_m), np.asarray(r.y_m), np.asarray(r.hall)
        quarter = (np.round(np.asarray(r.orientation_deg) / 90.0).astype(int) % 2) == 1
        half_x = np.where(quarter, RACK_DEPTH_M, RACK_WIDTH_M) / 2
        half_y = np.where(quarter, RACK_WIDTH_M, RACK_DEPTH_M) / 2
        index = {n: i for i, n in enumerate(r.name)}
        for name in sorted(names, key=index.__getitem__):
            i = index[name]
            x0, y0, x1, y1 = bounds[hall[i]]
            if not (x0 <= x[i] <= x1 and y0 <= y[i] <= y1):
                raise self.fail(
                    f"rack {name!r}",
                    "position",
                    f"({x[i]:.2f} m, {y[i]:.2f} m) is outside hall {self.spec.halls[hall[i]].name} "
                    f"({x0:.1f}–{x1:.1f} m × {y0:.1f}–{y1:.1f} m)",
                )
            near = (
                (hall == hall[i])
                & (np.abs(x - x[i]) < half_x + half_x[i] - _EPS_M)
                & (np.abs(y - y[i]) < half_y + half_y[i] - _EPS_M)
            )
            near[i] = False
            if near.any():
                j = int(np.flatnonzero(near)[0])
                raise self.fail(
                    f"rack {name!r}",
                    "position",
                    f"({x[i]:.2f} m, {y[i]:.2f} m) overlaps rack {r.name[j]!r} at ({x[j]:.2f} m, {y[j]:.2f} m)",
                )
