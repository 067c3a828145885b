"""Fault injection for the synthetic stream: what fails, where, when and for how long.

A fault is written ``KIND:TARGET[@START_S][+DURATION_S][=VALUE]`` on the command line
(``--fault pump:H1-R03-K05-CDU@60``) or as a TOML table in a scenario file.  Targets are
entity names of the site (CDU, power element, source, switch, GPU as ``NODE/INDEX``).

Kinds and what ``VALUE`` means:

=================  ==================================  =====================================
kind               target                              value
=================  ==================================  =====================================
``pump``           CDU name                            pumps lost (default 1)
``cdu``            CDU name                            —
``facility_water`` loop name                           supply excursion in K (default: loss)
``feed``           power element name                  —
``source``         source name (generator, grid, …)   —
``link``           switch name (all its uplinks)       —
``link_flap``      switch name                         flap period in s (default 10)
``xid``            GPU ``hostname/index``              XID code (default 79)
``tim``            rack name                           thermal-resistance growth per hour
=================  ==================================  =====================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from twin.site.tables import SiteTables

FAULT_KINDS = ("pump", "cdu", "facility_water", "feed", "source", "link", "link_flap", "xid", "tim")
_SPEC = re.compile(
    r"^(?P<kind>[a-z_]+):(?P<target>[^@+=]+)(?:@(?P<start>[\d.]+))?(?:\+(?P<dur>[\d.]+))?"
    r"(?:=(?P<value>-?[\d.]+))?$"
)


class FaultError(ValueError):
    """A fault specification is malformed or names an entity the site does not have."""


@dataclass(frozen=True)
class Fault:
    """One injected fault, resolved to dense entity ids."""

    kind: str
    target: str
    entity_id: int
    start_s: float = 0.0
    duration_s: float = float("inf")
    value: float | None = None

    def active(self, t_s: float) -> bool:
        """Whether the fault is in effect ``t_s`` seconds after the stream started."""
        return self.start_s <= t_s < self.start_s + self.duration_s


def _resolve(state: SiteTables, kind: str, target: str) -> int:
    tables = {
        "pump": state.cdu_name,
        "cdu": state.cdu_name,
        "facility_water": state.loop_name,
        "feed": state.power_name,
        "source": state.source_name,
        "link": state.switch_name,
        "link_flap": state.switch_name,
        "tim": state.rack_name,
    }
    if kind == "xid":
        host, _, index = target.rpartition("/")
        if host not in state.node_name or not index.isdigit():
            raise FaultError(f"xid fault: {target!r} is not HOSTNAME/GPU_INDEX of this site")
        node = state.node_name.index(host)
        gpus = np.flatnonzero((state.gpu_node == node) & (state.gpu_index == int(index)))
        if gpus.size != 1:
            raise FaultError(f"xid fault: node {host!r} has no GPU {index}")
        return int(gpus[0])
    names = tables[kind]
    try:
        return names.index(target)
    except ValueError:
        raise FaultError(
            f"{kind} fault: no {kind.replace('_', ' ')} target named {target!r} in site {state.name!r}"
        ) from None


def parse_fault(state: SiteTables, spec: str) -> Fault:
    """Parse ``KIND:TARGET[@START_S][+DURATION_S][=VALUE]`` against ``state``."""
    m = _SPEC.match(spec.strip())
    if not m:
        raise FaultError(f"fault {spec!r}: expected KIND:TARGET[@START_S][+DURATION_S][=VALUE]")
    kind = m["kind"]
    if kind not in FAULT_KINDS:
        raise FaultError(f"fault {spec!r}: unknown kind {kind!r} (known: {', '.join(FAULT_KINDS)})")
    return Fault(
        kind=kind,
        target=m["target"],
        entity_id=_resolve(state, kind, m["target"]),
        start_s=float(m["start"] or 0.0),
        duration_s=float(m["dur"]) if m["dur"] else float("inf"),
        value=float(m["value"]) if m["value"] is not None else None,
    )


def fault_from_table(state: SiteTables, table: dict) -> Fault:
    """A fault from a scenario-file table with keys kind, target, start_s, duration_s, value."""
    unknown = set(table) - {"kind", "target", "start_s", "duration_s", "value"}
    if unknown:
        raise FaultError(f"fault table: unknown key(s) {sorted(unknown)}")
    for key in ("kind", "target"):
        if key not in table:
            raise FaultError(f"fault table: missing {key!r}")
    if table["kind"] not in FAULT_KINDS:
        raise FaultError(f"fault table: unknown kind {table['kind']!r} (known: {', '.join(FAULT_KINDS)})")
    return Fault(
        kind=table["kind"],
        target=table["target"],
        entity_id=_resolve(state, table["kind"], table["target"]),
        start_s=float(table.get("start_s", 0.0)),
        duration_s=float(table.get("duration_s", float("inf"))),
        value=None if table.get("value") is None else float(table["value"]),
    )
