"""A site model with one more hall, built like one it has: rows, cooling loop and power chain copied.

"Add a hall like H4" is how a site grows: the same rows, a facility-water loop of its own on the
same plant, and its own switchgear, transformers, UPSs and busways under the same medium-voltage
buses and sources.  :func:`add_hall_like` copies, for the hall it is given, every power element
whose loads all sit in that hall (the chain from the rows' busways up to where it joins the
rest of the site) and every loop only that hall uses; what is shared (the site's MV buses, the
plant, the sources, the fabric's parameters) stays shared, so the new hall draws on the same
generation and chillers.  The copy sits beyond the site's furthest row in y.  Per-rack entries
of the original hall (changed or added racks) are not copied: the new hall is its rows as
designed.  The fabric is built from the racks, so the new hall's racks get leaves and pods of
their own.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import ValidationError

from twin.site.load import POWER_SECTIONS
from twin.site.schema import HallSpec, SiteFile

HALL_GAP_M = 6.0  # between the furthest row of the site and the first row of the new hall [m]
_HALL_NUMBER = re.compile(r"^(.*?)(\d+)$")


class AddHallError(ValueError):
    """The hall to copy is unknown, or the new hall's name is taken; the message says which."""


def next_hall_name(model: SiteFile) -> str:
    """The name after the site's highest-numbered hall ("H4" → "H5"), else "H<n+1>"."""
    taken = {h.name for h in model.halls}
    numbered = [(m.group(1), int(m.group(2))) for h in model.halls if (m := _HALL_NUMBER.match(h.name))]
    prefix, n = max(numbered, key=lambda pn: pn[1]) if numbered else ("H", len(model.halls))
    name = f"{prefix}{n + 1}"
    while name in taken:
        n += 1
        name = f"{prefix}{n + 1}"
    return name


def add_hall_like(model: SiteFile, like: str, name: str | None = None) -> tuple[SiteFile, str]:
    """``model`` with a hall ``name`` (default :func:`next_hall_name`) built like hall ``like``, and its name.

    Raises :class:`AddHallError` for an unknown ``like`` or a ``name`` already taken.
    """
    halls = {h.name: h for h in model.halls}
    if like not in halls:
        raise AddHallError(f"no hall {like!r} to copy (halls: {', '.join(halls)})")
    name = name or next_hall_name(model)
    if name in halls:
        raise AddHallError(f"a hall {name!r} exists already")
    source = halls[like]
    rename = _renamer(like, name)
    elements = _hall_only_elements(model, source)
    hall_loops = _loops_of(source) - {other for h in model.halls if h.name != like for other in _loops_of(h)}
    dy_m = _furthest_y_m(model) + HALL_GAP_M - min(r.y_m for r in source.rows)

    def feed(n: str | None) -> str | None:
        return rename(n) if n is not None and n in elements else n

    def loop(n: str | None) -> str | None:
        return rename(n) if n is not None and n in hall_loops else n

    rows = [
        r.model_copy(
            update={"y_m": r.y_m + dy_m, "feed_a": feed(r.feed_a), "feed_b": feed(r.feed_b), "loop": loop(r.loop)}
        )
        for r in source.rows
    ]
    bounds = source.bounds_m
    if bounds is not None:
        bounds = (bounds[0], bounds[1] + dy_m, bounds[2], bounds[3] + dy_m)
    hall = HallSpec.model_validate(
        source.model_copy(
            update={"name": name, "loop": loop(source.loop), "rows": rows, "bounds_m": bounds}
        ).model_dump()
    )
    power = model.power
    copies = {}
    for kind in POWER_SECTIONS:
        items = getattr(power, kind)
        added = [
            e.model_copy(update={"name": rename(e.name), "parent": feed(e.parent)}) for e in items if e.name in elements
        ]
        copies[kind] = [*items, *added]
    cooling = model.cooling
    new_loops = [lp.model_copy(update={"name": rename(lp.name)}) for lp in cooling.loops if lp.name in hall_loops]
    edited = model.model_copy(
        update={
            "halls": [*model.halls, hall],
            "power": power.model_copy(update=copies),
            "cooling": cooling.model_copy(update={"loops": [*cooling.loops, *new_loops]}),
        }
    )
    try:
        return SiteFile.model_validate(edited.model_dump()), name
    except ValidationError as exc:  # a limit of the site file (halls, loops, elements) run over
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise AddHallError(f"the site with hall {name} is not a valid site file: {where}: {first['msg']}") from None


def _renamer(like: str, name: str) -> Callable[[str], str]:
    """An element's or loop's name for the new hall: the old hall's name in it replaced, else prefixed."""
    token = re.compile(rf"(?<![A-Za-z0-9]){re.escape(like)}(?![A-Za-z0-9])")

    def rename(old: str) -> str:
        new = token.sub(name, old)
        return new if new != old else f"{name}-{old}"

    return rename


def _loops_of(hall: HallSpec) -> set[str]:
    return {hall.loop} | {r.loop for r in hall.rows if r.loop}


def _hall_only_elements(model: SiteFile, hall: HallSpec) -> set[str]:
    """Names of the power elements all of whose loads are in ``hall``: its rows' feeds and the
    ancestors no other hall's row hangs below (per-rack feed changes are not looked at)."""
    power = model.power
    parent = {e.name: e.parent for kind in POWER_SECTIONS for e in getattr(power, kind)}

    def chain(feed: str | None) -> set[str]:
        out: set[str] = set()
        while feed is not None and feed in parent and feed not in out:
            out.add(feed)
            feed = parent[feed]
        return out

    def feeds(h: HallSpec) -> set[str]:
        return {f for r in h.rows for f in chain(r.feed_a) | chain(r.feed_b)}

    others = set().union(*(feeds(h) for h in model.halls if h.name != hall.name))
    return feeds(hall) - others


def _furthest_y_m(model: SiteFile) -> float:
    """The largest y of any row's racks, or of any hall's bounds [m]."""
    ys = [r.y_m + (r.racks - 1) * r.pitch_m * (r.direction == "y") for h in model.halls for r in h.rows]
    ys += [h.bounds_m[3] for h in model.halls if h.bounds_m is not None]
    return max(ys)
