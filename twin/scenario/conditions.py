"""What-if scenario files: conditions to project a site under, by entity name.

A scenario is TOML.  Every key is optional; names are the site's own entity names and
an unknown name is an error naming the key and the name::

    [scenario]
    name = "generator trip on a hot afternoon"
    site = "colossus"               # optional: the site it was written for
    time = "2024-07-22T20:00:00Z"   # instant of the projection (weather, UTC)
    settle_s = 600                  # run the twin this long under the conditions first (≤ 1 day)

    [conditions]
    gpu_util_frac = 0.95            # all GPUs
    gpu_power_limit_w = 600         # a site-wide power cap
    outdoor_dry_bulb_c = 36.0
    outdoor_wet_bulb_c = 27.0
    failed_power = ["H1-TX1-A"]     # power elements (switchgear, transformer, UPS, busway)
    failed_sources = ["GEN-A-01"]
    failed_switches = ["leaf-p00-a000-r3"]   # every link of the switch goes down
    pumps_failed = ["H1-R01-K01-CDU"]        # one pump lost per named CDU
    cdus_failed = ["H1-R01-K02-CDU"]         # all pumps lost
    loop_supply_temp_c = { FW-H1 = 32.0 }    # facility supply override per loop
    job = "colossus-405b-98k"                # job file in data/jobs/ ("" for none)
    idle_nodes_off = true                    # power off every node without a GPU of the job
                                             # (default: the site's [power] idle_nodes_off)
    fleet_util_frac = 0.95                   # the GPUs outside the job run the fleet's other work
                                             # (default: none; both sides of a comparison share it)

    [[edits]]                                # ordered what-if edits (docs/scenarios.md)
    op = "set_rack_type"
    racks = ["H4-*"]
    type = "GB200-NVL72"

``[scenario] design_limits`` is ``"strict"`` (default: an edit that exceeds a rating by
design is refused) or ``"warn"`` (it is reported as a warning; see :mod:`twin.site.design`).
:func:`parse_scenario_doc` checks the text alone and :func:`resolve_conditions` resolves its
``[conditions]`` against a site; :func:`twin.scenario.load.parse_scenario` does both and
builds the edited site when edits change the layout (:mod:`twin.scenario.whatif`).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from twin.engine.inputs import DEFAULT_UTIL_FRAC
from twin.engine.tick import START_TS, TickInputs
from twin.scenario.fleetload import FleetLoad
from twin.site.design import POLICIES, STRICT
from twin.site.edits import Edit, parse_edits
from twin.site.errors import ScenarioError
from twin.site.tables import SiteTables
from twin.textfile import read_text

__all__ = [
    "MAX_SETTLE_S",
    "Scenario",
    "ScenarioDoc",
    "ScenarioError",
    "parse_scenario_doc",
    "read_scenario_doc",
    "read_scenario_text",
    "resolve_conditions",
]

_SCENARIO_KEYS = {"name", "description", "site", "time", "settle_s", "design_limits"}
_CONDITION_KEYS = {
    "gpu_util_frac",
    "gpu_power_limit_w",
    "outdoor_dry_bulb_c",
    "outdoor_wet_bulb_c",
    "failed_power",
    "failed_sources",
    "failed_switches",
    "pumps_failed",
    "cdus_failed",
    "loop_supply_temp_c",
    "job",
    "idle_nodes_off",
    "fleet_util_frac",
}


# The browser's what-if (and its stored scenarios) asks what a layout carries when it is used: the fleet's
# other jobs fill the GPUs outside the site's job at the nominal training load.
WHATIF_FLEET_UTIL_FRAC = DEFAULT_UTIL_FRAC


def with_fleet(doc: ScenarioDoc) -> ScenarioDoc:
    """``doc`` with the what-if's fleet load (:data:`WHATIF_FLEET_UTIL_FRAC`) unless it names one."""
    doc.conditions.setdefault("fleet_util_frac", WHATIF_FLEET_UTIL_FRAC)
    return doc


MAX_SETTLE_S = 86_400.0  # one day of minute steps bounds the run time of a projection


@dataclass
class Scenario:
    """A parsed scenario, resolved against one site."""

    name: str = "baseline"
    description: str = ""
    time: datetime = START_TS
    settle_s: float = 600.0
    inputs: TickInputs = field(default_factory=TickInputs)
    job: str | None = None  # None: the site's default job
    idle_nodes_off: bool | None = None  # nodes without a GPU of the job are powered off (None: as the site file says)
    # utilisation of the GPUs outside the job, the fleet's other work: one for all, or a FleetLoad per GPU (None: none)
    fleet_util_frac: float | FleetLoad | None = None
    state: SiteTables | None = None  # the edited site when edits change the layout, else None (the site as given)
    edits: list[Edit] = field(default_factory=list)
    design_limits: str = STRICT


@dataclass
class ScenarioDoc:
    """A scenario file checked on its own, before any site: header, conditions and edits."""

    name: str
    description: str = ""
    site: str | None = None  # the site the scenario was written for (None: any site that has its names)
    time: datetime | None = None  # None: the default instant
    settle_s: float | None = None
    design_limits: str = STRICT
    conditions: dict[str, Any] = field(default_factory=dict)  # the [conditions] table as written
    edits: list[Edit] = field(default_factory=list)
    file: str = "<scenario>"


def _ids(names: object, table: list[str], key: str, file: str) -> list[int]:
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ScenarioError(f"{file}: conditions.{key}: expected a list of names")
    index = {n: i for i, n in enumerate(table)}
    missing = [n for n in names if n not in index]
    if missing:
        raise ScenarioError(f"{file}: conditions.{key}: {missing[0]!r} is not in this site")
    return [index[n] for n in names]


def _number(value: object, key: str, file: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise ScenarioError(f"{file}: {key}: expected a number in [{lo}, {hi}], got {value!r}")
    return float(value)


def parse_scenario_doc(text: str, file: str = "<scenario>") -> ScenarioDoc:
    """Parse and check scenario TOML without a site (``file`` names it in errors)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{file}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{file}: arrays or tables nested too deeply") from None
    unknown = set(raw) - {"scenario", "conditions", "edits"}
    if unknown:
        raise ScenarioError(f"{file}: unknown section {sorted(unknown)[0]!r} (sections: scenario, conditions, edits)")
    head, cond = raw.get("scenario", {}), raw.get("conditions", {})
    for section, table in (("scenario", head), ("conditions", cond)):
        if not isinstance(table, dict):
            raise ScenarioError(f"{file}: {section}: expected a table [{section}]")
    for key in ("name", "description", "site"):
        if not isinstance(head.get(key, ""), str):
            raise ScenarioError(f"{file}: scenario.{key}: expected a string")
    for section, keys, known in (("scenario", head, _SCENARIO_KEYS), ("conditions", cond, _CONDITION_KEYS)):
        bad = set(keys) - known
        if bad:
            raise ScenarioError(f"{file}: {section}.{sorted(bad)[0]}: unknown key (known: {', '.join(sorted(known))})")
    doc = ScenarioDoc(
        name=str(head.get("name", Path(file).stem)),
        description=str(head.get("description", "")),
        site=head.get("site"),
        conditions=cond,
        file=file,
    )
    if "time" in head:
        ts = head["time"]
        if isinstance(ts, str):
            try:
                ts = datetime.fromisoformat(ts.replace("Z", "+00:00"))
            except ValueError:
                raise ScenarioError(f"{file}: scenario.time: not an ISO 8601 time: {head['time']!r}") from None
        if not isinstance(ts, datetime) or ts.tzinfo is None:
            raise ScenarioError(f"{file}: scenario.time: needs a time zone (e.g. 2024-07-22T20:00:00Z)")
        doc.time = ts.astimezone(UTC)
    if "settle_s" in head:
        doc.settle_s = _number(head["settle_s"], "scenario.settle_s", file, 0.0, MAX_SETTLE_S)
    if "design_limits" in head:
        if head["design_limits"] not in POLICIES:
            raise ScenarioError(
                f"{file}: scenario.design_limits: expected one of {', '.join(POLICIES)}, got {head['design_limits']!r}"
            )
        doc.design_limits = head["design_limits"]
    doc.edits = parse_edits(raw.get("edits", []), file)
    return doc


def resolve_conditions(doc: ScenarioDoc, state: SiteTables) -> Scenario:
    """The :class:`Scenario` of ``doc``'s header and ``[conditions]`` on ``state`` (edits aside)."""
    file, cond = doc.file, doc.conditions
    sc = Scenario(name=doc.name, description=doc.description, design_limits=doc.design_limits, edits=list(doc.edits))
    if doc.time is not None:
        sc.time = doc.time
    if doc.settle_s is not None:
        sc.settle_s = doc.settle_s
    inp = TickInputs(ts=sc.time)
    if "gpu_util_frac" in cond:
        inp.gpu_util_frac = _number(cond["gpu_util_frac"], "conditions.gpu_util_frac", file, 0.0, 1.0)
    if "gpu_power_limit_w" in cond:
        lo, hi = min(s.min_power_limit_w for s in state.gpu_specs), max(s.tdp_w for s in state.gpu_specs)
        inp.gpu_power_limit_w = _number(cond["gpu_power_limit_w"], "conditions.gpu_power_limit_w", file, lo, hi)
    for key in ("outdoor_dry_bulb_c", "outdoor_wet_bulb_c"):
        if key in cond:
            setattr(inp, key, _number(cond[key], f"conditions.{key}", file, -40.0, 60.0))
    inp.failed_power = _ids(cond.get("failed_power", []), state.power_name, "failed_power", file)
    inp.failed_sources = _ids(cond.get("failed_sources", []), state.source_name, "failed_sources", file)
    switches = _ids(cond.get("failed_switches", []), state.switch_name, "failed_switches", file)
    inp.failed_links = np.flatnonzero(np.isin(state.link_a, switches) | np.isin(state.link_b, switches))
    pumps = state.cdu_spec_array("pumps").astype(np.int64)
    for cdu in _ids(cond.get("pumps_failed", []), state.cdu_name, "pumps_failed", file):
        pumps[cdu] = max(pumps[cdu] - 1, 0)
    for cdu in _ids(cond.get("cdus_failed", []), state.cdu_name, "cdus_failed", file):
        pumps[cdu] = 0
    inp.pumps_running_count = pumps
    loops = cond.get("loop_supply_temp_c", {})
    if not isinstance(loops, dict):
        raise ScenarioError(f"{file}: conditions.loop_supply_temp_c: expected a table of loop = °C")
    supply = np.full(len(state.loop_name), np.nan)
    for loop_id, name in zip(_ids(list(loops), state.loop_name, "loop_supply_temp_c", file), loops):
        supply[loop_id] = _number(loops[name], f"conditions.loop_supply_temp_c.{name}", file, 2.0, 70.0)
    inp.loop_supply_temp_c = supply
    if "job" in cond:
        if not isinstance(cond["job"], str):
            raise ScenarioError(f"{file}: conditions.job: expected a job file name")
        sc.job = cond["job"]
    if "idle_nodes_off" in cond:
        if not isinstance(cond["idle_nodes_off"], bool):
            raise ScenarioError(f"{file}: conditions.idle_nodes_off: expected true or false")
        sc.idle_nodes_off = cond["idle_nodes_off"]
    if "fleet_util_frac" in cond:
        sc.fleet_util_frac = _number(cond["fleet_util_frac"], "conditions.fleet_util_frac", file, 0.0, 1.0)
    sc.inputs = inp
    return sc


def read_scenario_text(path: str | Path) -> str:
    """The text of a scenario file; unreadable, huge or non-UTF-8 files raise :class:`ScenarioError`."""
    path = Path(path)
    return read_text(path, lambda problem: ScenarioError(f"{path}: {problem}"))


def read_scenario_doc(path: str | Path) -> ScenarioDoc:
    """Read and check a scenario file without a site."""
    return parse_scenario_doc(read_scenario_text(path), Path(path).name)
