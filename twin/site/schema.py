"""Schema of a site file (TOML): what an operator writes to describe a site.

TOML because site files are edited by hand and must carry comments citing where each
number comes from; Python reads it with the standard library (``tomllib``), and the
schema below (pydantic) turns every mistake into an error naming file, entity and field.
Semantic checks (references, design overloads, fabric port budgets) live in
:mod:`twin.site.load`, which expands the file into :class:`twin.site.tables.SiteTables`.
"""

from __future__ import annotations

import math
import re
import string
import tomllib
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from twin.site import cooling_defaults, limits
from twin.site.errors import SiteError

# A short name of an entity or a type; every numeric field below has a finite range.
Name = Annotated[str, Field(min_length=1, max_length=limits.MAX_NAME_CHARS)]
_PATTERN_SPEC = re.compile(r"0?\d{0,2}[dxX]?")  # e.g. "02d": no width that could allocate much


def _name_pattern(fields: tuple[str, ...]) -> AfterValidator:
    """Validator of a ``str.format`` pattern that may use only ``fields`` with short integer specs."""

    def check(pattern: str) -> str:
        try:
            parts = list(string.Formatter().parse(pattern))
        except ValueError as exc:
            raise ValueError(f"not a valid pattern: {exc}") from None
        for _, field, spec, conversion in parts:
            if field is None:
                continue
            if field not in fields:
                raise ValueError(f"unknown field {{{field}}} (fields: {', '.join(fields)})")
            if conversion or not _PATTERN_SPEC.fullmatch(spec or ""):
                raise ValueError(f"format of {{{field}}} must be like {{{field}:02d}}, got {spec!r}")
        pattern.format(**{f: 1 for f in fields})
        return pattern

    return AfterValidator(check)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, str_max_length=limits.MAX_TEXT_CHARS)


class SiteInfo(_Strict):
    name: Name
    description: str = ""
    sources: str = ""  # where the numbers come from
    latitude_deg: float = Field(0.0, ge=-90, le=90)
    longitude_deg: float = Field(0.0, ge=-180, le=180)
    weather: Name = "memphis"
    site_overhead_mw: float = Field(0.0, ge=0, le=1_000)
    hostname_pattern: Annotated[
        str, Field(max_length=limits.MAX_NAME_CHARS), _name_pattern(("hall", "row", "rack", "slot"))
    ] = "h{hall}-r{row:02d}-k{rack:02d}-n{slot}"
    rack_name_pattern: Annotated[
        str, Field(max_length=limits.MAX_NAME_CHARS), _name_pattern(("hall", "row", "rack"))
    ] = "H{hall}-R{row:02d}-K{rack:02d}"
    default_job: Annotated[str, Field(max_length=limits.MAX_NAME_CHARS)] = ""  # job in data/jobs/, from GPU 0


class FabricEndpoint(_Strict):
    name: Name
    kind: Literal["storage", "frontend", "management"]
    gbps: float = Field(gt=0, le=1e6)
    switch: Name  # name of the switch it attaches to


class FabricSpec(_Strict):
    radix: int = Field(128, gt=1, le=1024)  # 400G ports per switch (SN5600: 128 × 400G)
    link_gbps: float = Field(400.0, gt=0, le=10_000)
    rails: int = Field(8, gt=0, le=64)
    racks_per_array: int = Field(8, gt=0, le=limits.MAX_RACKS)
    pod_arrays: int = Field(8, gt=0, le=limits.MAX_RACKS)
    leaf_oversubscription: float = Field(1.0, ge=1.0, le=64)
    spine_oversubscription: float = Field(1.0, ge=1.0, le=64)
    leaf_spine_parallel: int = Field(1, gt=0, le=1024)  # parallel links from each leaf to each spine
    endpoints: list[FabricEndpoint] = Field([], max_length=limits.MAX_ENDPOINTS)


class PlantSpec(_Strict):
    name: Name
    chillers: int = Field(gt=0, le=1_000)
    chiller_kw: float = Field(gt=0, le=100_000)
    cop: float = Field(gt=0, le=100)
    supply_setpoint_c: float = Field(ge=2, le=60)
    design_wet_bulb_c: float = Field(ge=-40, le=45)
    tower_approach_k: float = Field(ge=0, le=30)  # at design heat and design wet bulb
    volume_l: float | None = Field(None, gt=0, le=1e9)  # headers and storage; default 7 min of flow
    chiller_restart_s: float = Field(cooling_defaults.CHILLER_RESTART_S, ge=0, le=86_400)  # after a chiller comes back


class LoopSpec(_Strict):
    name: Name
    plant: Name
    capacity_kw: float = Field(gt=0, le=1e7)
    flow_lpm: float = Field(gt=0, le=1e8)
    pipe_length_m: float = Field(cooling_defaults.LOOP_PIPE_LENGTH_M, gt=0, le=1e5)  # one-way run plant → hall
    pipe_id_mm: float | None = Field(None, gt=0, le=1e4)  # default: sized for 2.5 m/s
    volume_l: float | None = Field(None, gt=0, le=1e9)  # default: supply and return runs


class CoolingSpec(_Strict):
    plants: list[PlantSpec] = Field(min_length=1, max_length=limits.MAX_PLANTS)
    loops: list[LoopSpec] = Field(min_length=1, max_length=limits.MAX_LOOPS)


class SourceSpec(_Strict):
    name: Name
    kind: Literal["grid", "generator", "battery"]
    units: int = Field(1, gt=0, le=limits.MAX_SOURCE_UNITS)  # identical units expand to NAME-01, NAME-02, …
    unit_mw: float = Field(gt=0, le=10_000)
    energy_mwh: float = Field(0.0, ge=0, le=1e6)
    ramp_mw_per_s: float = Field(gt=0, le=1e5)
    bus: Name
    # generators: ISO 8528-5 performance class and load acceptance (largest sudden step, of unit_mw);
    # without them a unit takes any step (site files recorded before these fields)
    iso_8528_class: Literal["G1", "G2", "G3"] | None = None
    load_step_frac: float | None = Field(None, gt=0, le=1)
    # output falls by derate_frac_per_k of unit_mw per kelvin of outdoor air above rated_ambient_c
    derate_frac_per_k: float = Field(0.0, ge=0, le=0.1)
    rated_ambient_c: float = Field(15.0, ge=-40, le=60)
    roundtrip_efficiency_frac: float = Field(0.9, gt=0.5, le=1)  # batteries: energy out / energy in
    # generators: the island's frequency model (twin.physics.island); defaults there
    inertia_h_s: float | None = Field(None, gt=0, le=30)  # inertia constant H [MW·s/MW]
    droop_frac: float | None = Field(None, gt=0, le=0.2)  # governor droop
    governor_s: float | None = Field(None, gt=0, le=60)  # governor and engine lag
    overspeed_trip_frac: float | None = Field(None, gt=0, le=0.5)  # overspeed shutdown above rated speed
    # grid: the connection's contract (unit_mw is the import limit, ramp_mw_per_s the contract's ramp limit)
    export_limit_mw: float = Field(0.0, ge=0, le=10_000)  # largest export allowed (0: reverse power trips)
    short_circuit_mva: float | None = Field(None, gt=0, le=1e6)  # at the point of common coupling
    voltage_change_max_frac: float | None = Field(None, gt=0, le=0.5)  # contract limit of ΔS / S_sc

    @model_validator(mode="after")
    def _battery_has_energy(self) -> Self:
        if self.kind == "battery" and self.energy_mwh <= 0:
            raise ValueError("a battery needs energy_mwh > 0")
        return self


class PowerElementSpec(_Strict):
    name: Name
    parent: Name | None = None
    side: Literal["A", "B"]
    rating_kw: float | None = Field(None, gt=0, le=1e7)
    voltage_v: float = Field(gt=0, le=1e6)
    amps: float | None = Field(None, gt=0, le=1e6)
    phases: Literal[1, 3] = 3
    power_factor: float = Field(0.95, gt=0, le=1)
    max_util_frac: float = Field(0.8, gt=0, le=1)
    efficiency_frac: float = Field(0.99, gt=0.5, le=1)
    ride_through_s: float = Field(
        300.0, ge=0, le=36_000
    )  # UPS only: battery seconds at rated load [Est-UPS-Ride-Through]

    @model_validator(mode="after")
    def _rating_known(self) -> Self:
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
        assert self.amps is not None  # _rating_known: amps are given when rating_kw is not
        return phase_factor * self.voltage_v * self.amps * self.power_factor / 1000.0


_Elements = Annotated[list[PowerElementSpec], Field(max_length=limits.MAX_POWER_ELEMENTS)]


class PowerSpec(_Strict):
    sources: list[SourceSpec] = Field(min_length=1, max_length=limits.MAX_SOURCE_UNITS)
    switchgear: _Elements
    transformers: _Elements
    ups: _Elements
    busways: _Elements
    # what acts when demand exceeds what the sources and batteries deliver, and how fast
    shortfall_policy: Literal["cap", "power_brake", "shed"] = "cap"
    policy_response_s: float = Field(5.0, gt=0, le=3600)
    # the operator powers off nodes without work (projections honour it; the live twin reads node states)
    idle_nodes_off: bool = False
    nominal_frequency_hz: float = Field(60.0, ge=16, le=400)


class RowSpec(_Strict):
    name: Name
    x_m: float = Field(ge=-10_000, le=10_000)  # centre of the first rack
    y_m: float = Field(ge=-10_000, le=10_000)
    racks: int = Field(gt=0, le=limits.MAX_RACKS)
    pitch_m: float = Field(0.6, gt=0, le=100)  # rack-to-rack spacing along the row
    direction: Literal["x", "y"] = "x"  # the row runs along this axis
    orientation_deg: float = Field(0.0, ge=-360, le=360)  # 0 = fronts face +y
    rack_type: Name
    feed_a: Name
    feed_b: Name | None = None
    loop: Name | None = None  # defaults to the hall's loop
    cdu_type: Name | None = None  # only for racks without an in-rack CDU
    racks_per_cdu: int | None = Field(None, gt=0, le=limits.MAX_RACKS)  # idem


class HallSpec(_Strict):
    name: Name
    loop: Name
    rows: list[RowSpec] = Field(min_length=1, max_length=limits.MAX_ROWS)
    # floor area racks may stand on [x_min, y_min, x_max, y_max] in metres; default: the rows'
    # footprint grown by HALL_MARGIN_M (see twin.site.racks)
    bounds_m: tuple[float, float, float, float] | None = None

    @model_validator(mode="after")
    def _bounds_ordered(self) -> Self:
        b = self.bounds_m
        if b is not None and not (b[0] < b[2] and b[1] < b[3]):
            raise ValueError("bounds_m must be [x_min, y_min, x_max, y_max] with min < max")
        return self


_Coord = Field(None, ge=-10_000, le=10_000)


class RackEntry(_Strict):
    """One rack that differs from its row, or that no row has: only the keys given change.

    A name a row expands to overrides that rack (``removed = true`` takes it out); any
    other name adds a rack, which needs ``hall``, ``row``, ``x_m``, ``y_m``, ``rack_type``
    and ``feed_a`` (and ``feed_b`` when the type is dual-fed).  ``feed_b = ""`` makes a
    rack single-fed.  ``cdu`` names an in-row CDU of the site for a rack without an
    in-rack CDU; ``loop`` is the facility loop of a rack's in-rack CDU.
    """

    name: Name
    hall: Name | None = None
    row: Name | None = None
    x_m: float | None = _Coord
    y_m: float | None = _Coord
    orientation_deg: float | None = Field(None, ge=-360, le=360)
    rack_type: Name | None = None
    feed_a: Name | None = None
    feed_b: Annotated[str, Field(max_length=limits.MAX_NAME_CHARS)] | None = None
    loop: Name | None = None
    cdu: Name | None = None
    removed: bool = False


class StorageSpec(_Strict):
    """Shared checkpoint storage; defaults are Meta Tectonic's figures for Llama 3 [Llama3-2024]."""

    write_gbps: float = Field(16_000.0, gt=0, le=10_000_000)  # aggregate sustained write [Gbit/s] (2 TB/s)
    read_gbps: float = Field(56_000.0, gt=0, le=10_000_000)  # aggregate peak read [Gbit/s] (7 TB/s)
    node_gbps: float = Field(400.0, gt=0, le=10_000)  # storage/front-end NIC per node [Gbit/s]
    share_frac: float = Field(1.0, gt=0, le=1)  # share of the storage one job gets beside other jobs


class CalibrationSpec(_Strict):
    """Parameters fitted by replaying recorded incidents (:mod:`twin.site.calibration`, docs/sites.md)."""

    fitted_on: str = ""  # what they were fitted on (incident, frames)
    heat_capacity_factor: float = Field(1.0, ge=0.1, le=10)
    # the two-node die model's split (twin.physics.thermal): junction share of the heat capacity and
    # convective share of the die resistance; None: the catalogue's
    junction_heat_frac: float | None = Field(None, gt=0, lt=1)
    r_th_conv_frac: float | None = Field(None, gt=0, lt=1)
    cdus: list[Name] = Field(default_factory=list, max_length=limits.MAX_CALIBRATED_CDUS)
    cdu_approach_delta_k: list[Annotated[float, Field(ge=-20, le=20)]] = Field(
        default_factory=list, max_length=limits.MAX_CALIBRATED_CDUS
    )
    gpus: list[Name] = Field(default_factory=list, max_length=limits.MAX_CALIBRATED_GPUS)
    gpu_r_th_factor: list[Annotated[float, Field(ge=0.1, le=10)]] = Field(
        default_factory=list, max_length=limits.MAX_CALIBRATED_GPUS
    )
    # PSU efficiency at the load points 10, 20, 50, 100 % (twin.physics.power); empty: the catalogue's
    psu_efficiency_points_frac: list[Annotated[float, Field(ge=0.5, le=1.0)]] = Field(
        default_factory=list, max_length=4
    )

    @model_validator(mode="after")
    def _paired(self) -> Self:
        if self.psu_efficiency_points_frac and len(self.psu_efficiency_points_frac) != 4:
            raise ValueError(
                f"psu_efficiency_points_frac: 4 values (at 10, 20, 50, 100 % load), "
                f"got {len(self.psu_efficiency_points_frac)}"
            )
        if len(self.cdus) != len(self.cdu_approach_delta_k):
            raise ValueError(f"{len(self.cdus)} cdus but {len(self.cdu_approach_delta_k)} cdu_approach_delta_k")
        if len(self.gpus) != len(self.gpu_r_th_factor):
            raise ValueError(f"{len(self.gpus)} gpus but {len(self.gpu_r_th_factor)} gpu_r_th_factor")
        if len(set(self.cdus)) != len(self.cdus) or len(set(self.gpus)) != len(self.gpus):
            raise ValueError("a CDU or GPU is named twice")
        return self


class SiteFile(_Strict):
    site: SiteInfo
    fabric: FabricSpec
    cooling: CoolingSpec
    power: PowerSpec
    halls: list[HallSpec] = Field(min_length=1, max_length=limits.MAX_HALLS)
    storage: StorageSpec = StorageSpec()
    racks: list[RackEntry] = Field([], max_length=limits.MAX_RACKS)  # per-rack changes and added racks
    calibration: CalibrationSpec | None = None


def _entity_at(raw: dict[str, Any], loc: tuple[int | str, ...]) -> tuple[str, str]:
    """Turn a pydantic error location into (entity description, field)."""
    node, entity, in_list = raw, "site file", False
    for i, key in enumerate(loc):
        if isinstance(node, dict) and key in node:
            node = node[key]
            if not in_list and isinstance(node, dict):  # a table such as [site] or [fabric]
                entity = ".".join(str(k) for k in loc[: i + 1])
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
            section = ".".join(str(k) for k in loc[:i] if not isinstance(k, int))
            label = node.get("name", f"#{key + 1}") if isinstance(node, dict) else f"#{key + 1}"
            entity, in_list = f"{section} {label!r}", True
        else:
            return entity, ".".join(str(k) for k in loc[i:])
    return entity, str(loc[-1]) if loc else "-"


def parse_site_file(text: str, file: str) -> tuple[SiteFile, dict[str, Any]]:
    """Parse and schema-check site TOML; returns the model and the raw dict."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SiteError(file, "site file", "-", f"not valid TOML: {exc}") from None
    except RecursionError:
        raise SiteError(file, "site file", "-", "arrays or tables nested too deeply") from None
    try:
        return SiteFile.model_validate(raw), raw
    except ValidationError as exc:
        err = exc.errors()[0]
        entity, field = _entity_at(raw, tuple(err["loc"]))
        more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
        message = err["msg"].removeprefix("Value error, ")
        raise SiteError(file, entity, field, f"{message}{more}") from None
