"""Design checks of a site: every rating against the nameplate load of what it carries.

The design load of a rack is its GPUs at TDP plus its nodes' full non-GPU power
(``rack_full_kw``).  Each check gives :class:`DesignFinding` records:

* ``cdu_capacity``: a CDU's racks against its capacity at the design secondary supply
  (plant setpoint + CDU approach);
* ``busway_rating``, ``ups_rating``, ``transformer_rating``, ``switchgear_rating``: an
  element's load with both feeds up (each dual-fed rack half on A, half on B; an element
  carries its children's input, i.e. their load over their efficiency) against its usable
  rating (``rating × max_util_frac``);
* ``loop_capacity``, ``plant_capacity``: the racks' heat against a facility loop's
  ``capacity_kw`` and a plant's chillers;
* ``fabric_ports``: the NICs a leaf switch must take against its downlink ports;
* ``n1_rating``: an element's load after the other side of every dual-fed rack is lost
  (the whole rack on this side) against its nameplate;
* ``generation``: the site's design load against all its sources.

The first group are *ratings*: under the ``strict`` policy (site files, and scenarios by
default) an exceeded rating is an error, under ``warn`` a warning.  ``n1_rating`` and
``generation`` are always warnings: a site may run with idle nodes off or capped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from twin.arrays import FloatArray, IntArray

STRICT, WARN = "strict", "warn"
POLICIES = (STRICT, WARN)
ALWAYS_WARNINGS = ("n1_rating", "generation")
ERROR, WARNING = "error", "warning"
_KIND_CHECK = ("switchgear_rating", "transformer_rating", "ups_rating", "busway_rating")


@dataclass(frozen=True)
class DesignFinding:
    """One exceeded rating or design margin (units in the field names; ports as counts)."""

    check: str
    element: str
    severity: str
    message: str
    load_kw: float | None = None
    limit_kw: float | None = None
    ports_needed_count: int | None = None
    ports_available_count: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def _severity(check: str, policy: str) -> str:
    return WARNING if policy == WARN or check in ALWAYS_WARNINGS else ERROR


def cdu_findings(
    rack_full_kw: FloatArray,
    rack_cdu: IntArray,
    cdu_name: list[str],
    cdu_supply_c: FloatArray,
    cdu_capacity_kw: FloatArray,
    policy: str,
) -> list[DesignFinding]:
    """CDUs whose racks at full power exceed their capacity at design secondary supply."""
    heat_kw = np.bincount(rack_cdu, weights=rack_full_kw, minlength=len(cdu_name))
    out = []
    for i in np.flatnonzero(heat_kw > cdu_capacity_kw).tolist():
        out.append(
            DesignFinding(
                "cdu_capacity",
                cdu_name[i],
                _severity("cdu_capacity", policy),
                f"overloaded by design: {heat_kw[i]:.0f} kW of racks at full power vs {cdu_capacity_kw[i]:.0f} kW "
                f"capacity at {cdu_supply_c[i]:.1f} °C secondary supply",
                float(heat_kw[i]),
                float(cdu_capacity_kw[i]),
            )
        )
    return out


def tree_loads_kw(
    rack_kw: FloatArray,
    feed_a: IntArray,
    feed_b: IntArray,
    parent: IntArray,
    efficiency: FloatArray,
    depth: IntArray,
    *,
    n1: bool = False,
) -> FloatArray:
    """Output load of every power element: racks split over their feeds, children's input summed up.

    With ``n1`` each rack's full load is on each of its feeds (the other side lost).
    """
    n = parent.size
    dual = feed_b >= 0
    share = rack_kw if n1 else np.where(dual, rack_kw / 2.0, rack_kw)
    load: FloatArray = np.bincount(feed_a, weights=share, minlength=n)  # type: ignore[assignment]  # numpy stubs: weighted bincount is float64
    load += np.bincount(feed_b[dual], weights=share[dual], minlength=n)
    for d in range(int(depth.max()), 0, -1):  # children before parents
        kids = np.flatnonzero((depth == d) & (parent >= 0))
        load += np.bincount(parent[kids], weights=load[kids] / efficiency[kids], minlength=n)
    return load


def power_findings(
    rack_kw: FloatArray,
    feed_a: IntArray,
    feed_b: IntArray,
    names: list[str],
    kind: IntArray,
    parent: IntArray,
    efficiency: FloatArray,
    depth: IntArray,
    usable_kw: FloatArray,
    nameplate_kw: FloatArray,
    policy: str,
) -> list[DesignFinding]:
    """Elements above their usable rating with both feeds up, and above nameplate after losing a side."""
    out = []
    load = tree_loads_kw(rack_kw, feed_a, feed_b, parent, efficiency, depth)
    for e in np.flatnonzero(load > usable_kw + 1e-9).tolist():
        check = _KIND_CHECK[kind[e]]
        out.append(
            DesignFinding(
                check,
                names[e],
                _severity(check, policy),
                f"overloaded by design: {load[e]:.0f} kW of racks at full power vs {usable_kw[e]:.0f} kW usable",
                float(load[e]),
                float(usable_kw[e]),
            )
        )
    n1 = tree_loads_kw(rack_kw, feed_a, feed_b, parent, efficiency, depth, n1=True)
    for e in np.flatnonzero(n1 > nameplate_kw + 1e-9).tolist():
        out.append(
            DesignFinding(
                "n1_rating",
                names[e],
                WARNING,
                f"after loss of the other side: {n1[e]:.0f} kW of racks at full power vs {nameplate_kw[e]:.0f} kW "
                "nameplate",
                float(n1[e]),
                float(nameplate_kw[e]),
            )
        )
    return out


def cooling_findings(
    rack_kw: FloatArray,
    rack_cdu: IntArray,
    cdu_loop: IntArray,
    loop_names: list[str],
    loop_capacity_kw: FloatArray,
    loop_plant: IntArray,
    plant_names: list[str],
    plant_capacity_kw: FloatArray,
    policy: str,
) -> list[DesignFinding]:
    """Facility loops and plants whose racks' heat at full power exceeds their capacity."""
    loop_kw = np.bincount(cdu_loop[rack_cdu], weights=rack_kw, minlength=len(loop_names))
    plant_kw = np.bincount(loop_plant, weights=loop_kw, minlength=len(plant_names))
    out = []
    for check, names, load, cap in (
        ("loop_capacity", loop_names, loop_kw, loop_capacity_kw),
        ("plant_capacity", plant_names, plant_kw, plant_capacity_kw),
    ):
        for i in np.flatnonzero(load > cap).tolist():
            out.append(
                DesignFinding(
                    check,
                    names[i],
                    _severity(check, policy),
                    f"overloaded by design: {load[i]:.0f} kW of racks at full power vs {cap[i]:.0f} kW capacity",
                    float(load[i]),
                    float(cap[i]),
                )
            )
    return out


def generation_findings(
    site_name: str, rack_kw: FloatArray, overhead_mw: float, source_capacity_mw: FloatArray
) -> list[DesignFinding]:
    """The site's design load (racks at full power + overhead) against every source together."""
    load_kw = float(rack_kw.sum()) + overhead_mw * 1000.0
    cap_kw = float(source_capacity_mw.sum()) * 1000.0
    if load_kw <= cap_kw:
        return []
    return [
        DesignFinding(
            "generation",
            site_name,
            WARNING,
            f"design load {load_kw / 1000:.1f} MW (racks at full power + overhead) exceeds "
            f"generation {cap_kw / 1000:.1f} MW: caps or idle nodes off needed",
            load_kw,
            cap_kw,
        )
    ]


def fabric_findings(leaf_names: list[str], leaf_nics: IntArray, down_ports: int, policy: str) -> list[DesignFinding]:
    """Leaf switches that must take more NICs than they have downlink ports."""
    out = []
    for i in np.flatnonzero(leaf_nics > down_ports).tolist():
        out.append(
            DesignFinding(
                "fabric_ports",
                leaf_names[i],
                _severity("fabric_ports", policy),
                f"needs {int(leaf_nics[i])} NIC ports but has {down_ports} downlinks",
                ports_needed_count=int(leaf_nics[i]),
                ports_available_count=int(down_ports),
            )
        )
    return out


# entity and field a strict design error names, by check (as the site-file errors do)
ERROR_AT: dict[str, Callable[[str], tuple[str, str]]] = {
    "cdu_capacity": lambda name: (f"cdu {name!r}", "capacity"),
    "busway_rating": lambda name: (f"busway {name!r}", "rating_kw"),
    "ups_rating": lambda name: (f"ups {name!r}", "rating_kw"),
    "transformer_rating": lambda name: (f"transformer {name!r}", "rating_kw"),
    "switchgear_rating": lambda name: (f"switchgear {name!r}", "rating_kw"),
    "loop_capacity": lambda name: (f"loop {name!r}", "capacity_kw"),
    "plant_capacity": lambda name: (f"plant {name!r}", "chillers"),
    "fabric_ports": lambda name: (f"fabric leaf {name!r}", "racks_per_array"),
}
