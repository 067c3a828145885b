"""Schema of a site file (TOML): what an operator writes to describe a site.

TOML because site files are edited by hand and must carry comments citing where each
number comes from; Python reads it with the standard library (``tomllib``), and the
schema below (pydantic) turns every mistake into an error naming file, entity and field.
Semantic checks (references, design overloads, fabric port budgets) live in
:mod:`twin.site.load`, which expands the file into :class:`twin.site.tables.SiteTables`.
"""

from __future__ import annotations

import math
import tomllib
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from twin.site.errors import SiteError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SiteInfo(_Strict):
    name: str
    description: str = ""
    sources: str = ""  # where the numbers come from
    latitude_deg: float = Field(0.0, ge=-90, le=90)
    longitude_deg: float = Field(0.0, ge=-180, le=180)
    weather: str = "memphis"
    site_overhead_mw: float = Field(0.0, ge=0)
    hostname_pattern: str = "h{hall}-r{row:02d}-k{rack:02d}-n{slot}"
    rack_name_pattern: str = "H{hall}-R{row:02d}-K{rack:02d}"
    default_job: str = ""  # job file in data/jobs/ that the live twin places from GPU 0


class FabricEndpoint(_Strict):
    name: str
    kind: Literal["storage", "frontend", "management"]
    gbps: float = Field(gt=0)
    switch: str  # name of the switch it attaches to


class FabricSpec(_Strict):
    radix: int = Field(128, gt=1)  # 400G ports per switch (SN5600: 128 × 400G)
    link_gbps: float = Field(400.0, gt=0)
    rails: int = Field(8, gt=0)
    racks_per_array: int = Field(8, gt=0)
    pod_arrays: int = Field(8, gt=0)
    leaf_oversubscription: float = Field(1.0, ge=1.0)
    spine_oversubscription: float = Field(1.0, ge=1.0)
    leaf_spine_parallel: int = Field(1, gt=0)  # parallel links from each leaf to each spine
    endpoints: list[FabricEndpoint] = []


class PlantSpec(_Strict):
    name: str
    chillers: int = Field(gt=0)
    chiller_kw: float = Field(gt=0)
    cop: float = Field(gt=0)
    supply_setpoint_c: float = Field(ge=2, le=60)
    design_wet_bulb_c: float
    tower_approach_k: float = Field(ge=0)


class LoopSpec(_Strict):
    name: str
    plant: str
    capacity_kw: float = Field(gt=0)
    flow_lpm: float = Field(gt=0)


class CoolingSpec(_Strict):
    plants: list[PlantSpec]
    loops: list[LoopSpec]


class SourceSpec(_Strict):
    name: str
    kind: Literal["grid", "generator", "battery"]
    units: int = Field(1, gt=0)  # identical units expand to NAME-01, NAME-02, …
    unit_mw: float = Field(gt=0)
    energy_mwh: float = Field(0.0, ge=0)
    ramp_mw_per_s: float = Field(gt=0)
    bus: str

    @model_validator(mode="after")
    def _battery_has_energy(self):
        if self.kind == "battery" and self.energy_mwh <= 0:
            raise ValueError("a battery needs energy_mwh > 0")
        return self


class PowerElementSpec(_Strict):
    name: str
    parent: str | None = None
    side: Literal["A", "B"]
    rating_kw: float | None = Field(None, gt=0)
    voltage_v: float = Field(gt=0)
    amps: float | None = Field(None, gt=0)
    phases: Literal[1, 3] = 3
    power_factor: float = Field(0.95, gt=0, le=1)
    max_util_frac: float = Field(0.8, gt=0, le=1)
    efficiency_frac: float = Field(0.99, gt=0.5, le=1)

    @model_validator(mode="after")
    def _rating_known(self):
        if self.rating_kw is None and self.amps is None:
            raise ValueError("give rating_kw or amps")
        return self

    @property
    def usable_rating_kw(self) -> float:
        return self.nameplate_kw * self.max_util_frac

    @property
    def nameplate_kw(self) -> float:
        """Rating in kW; from V·A (·√3 for three-phase) · power factor when only amps are given."""
        if self.rating_kw is not None:
            return self.rating_kw
        phase_factor = math.sqrt(3.0) if self.phases == 3 else 1.0
        return phase_factor * self.voltage_v * self.amps * self.power_factor / 1000.0


class PowerSpec(_Strict):
    sources: list[SourceSpec]
    switchgear: list[PowerElementSpec]
    transformers: list[PowerElementSpec]
    ups: list[PowerElementSpec]
    busways: list[PowerElementSpec]


class RowSpec(_Strict):
    name: str
    x_m: float  # centre of the first rack
    y_m: float
    racks: int = Field(gt=0)
    pitch_m: float = Field(0.6, gt=0)  # rack-to-rack spacing along the row
    direction: Literal["x", "y"] = "x"  # the row runs along this axis
    orientation_deg: float = 0.0  # 0 = fronts face +y
    rack_type: str
    feed_a: str
    feed_b: str | None = None
    loop: str | None = None  # defaults to the hall's loop
    cdu_type: str | None = None  # for racks without an in-rack CDU
    racks_per_cdu: int | None = Field(None, gt=0)


class HallSpec(_Strict):
    name: str
    loop: str
    rows: list[RowSpec]


class StorageSpec(_Strict):
    """Shared checkpoint storage; defaults are Meta Tectonic's figures for Llama 3 [Llama3-2024]."""

    write_gbps: float = Field(16_000.0, gt=0)  # aggregate sustained write [Gbit/s] (2 TB/s)
    read_gbps: float = Field(56_000.0, gt=0)  # aggregate peak read [Gbit/s] (7 TB/s)
    node_gbps: float = Field(400.0, gt=0)  # storage/front-end NIC per node [Gbit/s]
    share_frac: float = Field(1.0, gt=0, le=1)  # share of the storage one job gets beside other jobs


class SiteFile(_Strict):
    site: SiteInfo
    fabric: FabricSpec
    cooling: CoolingSpec
    power: PowerSpec
    halls: list[HallSpec]
    storage: StorageSpec = StorageSpec()


def _entity_at(raw: dict, loc: tuple) -> tuple[str, str]:
    """Turn a pydantic error location into (entity description, field)."""
    node, entity = raw, "site file"
    for i, key in enumerate(loc):
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
            section = ".".join(str(k) for k in loc[:i] if not isinstance(k, int))
            label = node.get("name", f"#{key + 1}") if isinstance(node, dict) else f"#{key + 1}"
            entity = f"{section} {label!r}"
        else:
            return entity, ".".join(str(k) for k in loc[i:])
    return entity, str(loc[-1]) if loc else "-"


def parse_site_file(text: str, file: str) -> tuple[SiteFile, dict]:
    """Parse and schema-check site TOML; returns the model and the raw dict."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SiteError(file, "site file", "-", f"not valid TOML: {exc}") from None
    try:
        return SiteFile.model_validate(raw), raw
    except ValidationError as exc:
        err = exc.errors()[0]
        entity, field = _entity_at(raw, tuple(err["loc"]))
        more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
        raise SiteError(file, entity, field, f"{err['msg']}{more}") from None
