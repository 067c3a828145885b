"""A site of several identical campuses, generated from one site file (e.g. ten colossus-class campuses).

Each campus is a copy of the base site with every name prefixed by ``C<k>-`` (halls,
power sources and switchgear, cooling plants and loops, fabric endpoints) and its halls
shifted east by the base site's width plus a gap, so the copies never overlap.  The
campuses share the site's one fabric description, its storage endpoints and storage;
each keeps its own grid,
generators, power chain and cooling plant.  The result is a plain site document (a dict
in the site-file format, written out with ``tomli_w``), validated by the ordinary loader.
"""

from __future__ import annotations

import copy
import tomllib
from typing import Any

from twin.site.errors import SiteError

CAMPUS_GAP_M = 200.0  # [E] between neighbouring campuses: far enough that the floor plans never touch
MAX_CAMPUSES = 20  # a 2M-GPU site is the most the generator builds (bounded memory)


def campus_prefix(index: int) -> str:
    return f"C{index + 1:02d}-"


def _rename(entry: dict[str, Any], prefix: str, keys: tuple[str, ...]) -> dict[str, Any]:
    out = dict(entry)
    for key in keys:
        if isinstance(out.get(key), str) and out[key]:
            out[key] = prefix + out[key]
    return out


def _width_m(base: dict[str, Any]) -> float:
    xs = [
        row["x_m"] + row.get("racks", 0) * row.get("pitch_m", 0.0)
        for hall in base.get("halls", [])
        for row in hall.get("rows", [])
    ]
    return max(xs, default=0.0)


def campuses(base: dict[str, Any], n_campuses: int, name: str) -> dict[str, Any]:
    """The site document of ``n_campuses`` copies of ``base`` (a parsed site file) named ``name``."""
    if not 1 <= n_campuses <= MAX_CAMPUSES:
        raise SiteError("<generated>", "campuses", "n_campuses", f"{n_campuses}: expected 1..{MAX_CAMPUSES}")
    for key in ("racks", "calibration"):
        if base.get(key):
            raise SiteError(
                "<generated>",
                key,
                key,
                "per-rack entries and calibrations name single racks and GPUs: generate from a site file without them",
            )
    out = copy.deepcopy({k: v for k, v in base.items() if k not in ("power", "cooling", "halls")})
    out["site"] = {
        **base["site"],
        "name": name,
        "description": f"{n_campuses} campuses like {base['site']['name']}: {base['site'].get('description', '')}",
        "site_overhead_mw": base["site"].get("site_overhead_mw", 0.0) * n_campuses,
    }
    # lists of named entities are copied per campus; scalar settings (e.g. the shortfall policy) once
    power = {key: [] if isinstance(v, list) else v for key, v in base.get("power", {}).items()}
    cooling = {key: [] if isinstance(v, list) else v for key, v in base.get("cooling", {}).items()}
    halls = []
    shift_m = _width_m(base) + CAMPUS_GAP_M
    for k in range(n_campuses):
        p = campus_prefix(k)
        for key, entries in base.get("power", {}).items():
            if isinstance(entries, list):
                power[key] += [_rename(e, p, ("name", "parent", "bus")) for e in entries]
        for key, entries in base.get("cooling", {}).items():
            if isinstance(entries, list):
                cooling[key] += [_rename(e, p, ("name", "plant")) for e in entries]
        for hall in base.get("halls", []):
            rows = [
                {**_rename(r, p, ("feed_a", "feed_b")), "x_m": r["x_m"] + k * shift_m} for r in hall.get("rows", [])
            ]
            halls.append({**_rename(hall, p, ("name", "loop")), "rows": rows})
    out["power"], out["cooling"], out["halls"] = power, cooling, halls
    return out


def campuses_text(base_text: str, n_campuses: int, name: str) -> dict[str, Any]:
    """:func:`campuses` of a site file's text."""
    return campuses(tomllib.loads(base_text), n_campuses, name)
