"""The API's bodies and answers as pydantic models: field names carry their units like the twin's.

Inputs are strict and bounded (names ≤ 200 characters, pages ≤ 1000 items, no unknown
keys); answers use the canonical quantity names of :mod:`twin.quantities`, and a number
the twin does not know (NaN, a time to throttle that never comes) is ``null``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation, StringConstraints

from twin.site.edit_schema import AnyEdit

MAX_PAGE = 1000
MAX_OFFSET = 10_000_000
MAX_NAME_CHARS = 200
MAX_LIST_ITEMS = 2000  # names in one scenario condition (colossus has 1,536 racks/CDUs)

Name = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS, pattern=r"^[\w.:@+-]+$")]
OptFloat = float | None


class Strict(BaseModel):
    """Inputs: unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")


class Answer(BaseModel):
    """Answers."""


# ------------------------------------------------------------------ inputs
class Page(Strict):
    """Paging of a list: ``limit`` items from ``offset``."""

    limit: int = Field(100, ge=1, le=MAX_PAGE, description="items per page")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="items skipped")


class RackQuery(Page):
    hall: Name | None = Field(None, description="only the racks of this hall")
    sort: Literal["name", "rack_power_kw", "rack_max_gpu_temp_c", "rack_time_to_throttle_s"] = Field(
        "name", description="order: by name, or the largest power / hottest / soonest to throttle first"
    )


class AlertQuery(Page):
    active_only: bool = Field(True, description="only alerts not cleared yet")
    severity: Literal["critical", "warning", "info"] | None = None


class AlertId(Strict):
    alert_id: int = Field(ge=1, le=2**62)


class EntityKindParam(Strict):
    kind: Literal["halls", "rows", "racks", "nodes", "cdus", "loops", "power", "sources", "switches"]


class NameParam(Strict):
    name: Name


class Acknowledge(Strict):
    comment: str = Field("", max_length=500, description="the operator's note")


class Silence(Strict):
    duration_s: float = Field(gt=0, le=7 * 24 * 3600.0, description="how long the alert stays silenced (≤ 7 days)")


MAX_MUTE_S = 7 * 24 * 3600.0


class ScopeBody(Strict):
    """What a scoped silence or a maintenance window covers (see docs/api.md)."""

    kind: Literal["entity", "group", "hall"] = Field(
        description="entity: a glob over entity names; group: a cause group's key; hall: a hall name"
    )
    value: str = Field(min_length=1, max_length=MAX_NAME_CHARS, description="the glob, the group key or the hall")
    rule: str = Field("", max_length=100, description="only alerts of this rule (alertname), '' any")
    metric: str = Field("", max_length=100, description="only alerts on this metric, '' any")


class SilenceScopeBody(Strict):
    scope: ScopeBody
    duration_s: float = Field(gt=0, le=MAX_MUTE_S, description="how long from now (≤ 7 days)")
    comment: str = Field(min_length=1, max_length=500, description="why (required, as Alertmanager's)")


class MaintenanceBody(Strict):
    scope: ScopeBody
    starts_at: datetime = Field(description="start (ISO 8601 with a zone; a past start is now)")
    ends_at: datetime = Field(description="end (ISO 8601 with a zone), at most 7 days after the start")
    reason: str = Field(min_length=1, max_length=500, description="what the maintenance is, shown on each alert")


class MuteId(Strict):
    mute_id: int = Field(ge=1, le=2**62)


class MuteQuery(Strict):
    ended_within_s: float = Field(0.0, ge=0, le=MAX_MUTE_S, description="also those that ended this long ago")


class ScenarioHead(Strict):
    name: Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS)] = "api"
    description: Annotated[str, StringConstraints(max_length=2000)] = ""
    time: datetime | None = Field(None, description="instant projected (UTC, ISO 8601 with a zone)")
    settle_s: float = Field(600.0, ge=0, le=3600.0, description="twin run under the conditions first (≤ 1 h here)")


NameList = Annotated[list[Name], Field(max_length=MAX_LIST_ITEMS)]


class ScenarioConditions(Strict):
    """The ``[conditions]`` of a scenario file (see docs/api.md); names are the site's entity names."""

    gpu_util_frac: float | None = Field(None, ge=0, le=1)
    gpu_power_limit_w: float | None = Field(None, ge=0, le=5000)
    outdoor_dry_bulb_c: float | None = Field(None, ge=-40, le=60)
    outdoor_wet_bulb_c: float | None = Field(None, ge=-40, le=60)
    failed_power: NameList = []
    failed_sources: NameList = []
    failed_switches: NameList = []
    pumps_failed: NameList = []
    cdus_failed: NameList = []
    loop_supply_temp_c: dict[Name, Annotated[float, Field(ge=2, le=70)]] = Field({}, max_length=MAX_LIST_ITEMS)
    job: Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS, pattern=r"^[\w.-]*$")] | None = None
    idle_nodes_off: bool | None = None


class ProjectBody(Strict):
    """A what-if scenario as JSON: the two tables of a scenario file."""

    scenario: ScenarioHead = ScenarioHead()
    conditions: ScenarioConditions = ScenarioConditions()


# what-if scenarios of the editor (the database, or memory on a server without one)
StoredName = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$")
]
MAX_TOML_CHARS = 256 * 1024


class StoredNameParam(Strict):
    name: StoredName = Field(description="scenario name: 1–64 letters, digits, spaces or . _ -")


class CreateScenarioBody(Strict):
    """A new scenario of the server's site: empty, or the edits of a scenario file (validated on the site first)."""

    name: StoredName | None = Field(None, description="its name (default: the file's [scenario] name)")
    toml: Annotated[str, StringConstraints(max_length=MAX_TOML_CHARS)] | None = Field(
        None, description="a scenario file whose [[edits]] the scenario starts with"
    )


class RenameBody(Strict):
    name: StoredName = Field(description="the new name")


# One edit as in a scenario file's ``[[edits]]`` array: the op models of twin.site.edit_schema (docs/scenarios.md).
# The document shows their schema; a request's edit is validated by the same models in the handler
# (dashboard.whatif.edits.resolve_edits), so that a refused edit is 422 in the editor's words
# (``edit.x_m: expected a number in [-10000, 10000], got 1e+06``), not a generic 400.
EditBody = Annotated[AnyEdit, SkipValidation]


class AppendEditBody(Strict):
    edit: EditBody = Field(description="the edit: op and its fields")
    design_limits: Literal["warn", "strict"] = Field(
        "warn", description="strict: refuse an edit that exceeds a design rating (as the editor's choice)"
    )


class ImportQuery(Strict):
    """How to read an uploaded incident: a bundle, or a recording of another system (docs/incidents.md)."""

    format: Literal["bundle", "nvidia-smi-csv", "nvidia-smi-xml", "dcgmi-dmon", "mlperf-power"] = Field(
        "bundle", description="the upload's format (prometheus is pulled from a server: CLI only)"
    )
    name: (
        Annotated[str, StringConstraints(min_length=1, max_length=120, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@+-]*$")]
        | None
    ) = Field(None, description="incident name (default: the bundle's, or derived from the format)")
    replace: bool = Field(False, description="replace a stored incident of the same name")
    site: Annotated[str, StringConstraints(min_length=1, max_length=80, pattern=r"^[A-Za-z0-9][\w-]*$")] = Field(
        "auto", description="reference site of a recording, or auto to size one from it"
    )
    host: Annotated[str, StringConstraints(min_length=1, max_length=120, pattern=r"^[A-Za-z0-9][\w.-]*$")] = Field(
        "node0", description="host of a one-file recording (a zip of files names each host by its file name)"
    )
    start: datetime | None = Field(None, description="start of a dcgmi dmon recording (ISO 8601 with a zone)")
    step_s: float = Field(5.0, gt=0, le=3600, description="seconds between frames of a recording")


# ------------------------------------------------------------------ answers
class PageInfo(Answer):
    total_count: int
    offset: int
    limit: int


class SiteSummary(Answer):
    site: str
    description: str
    n_halls: int
    n_racks: int
    n_nodes: int
    n_gpus: int
    n_cdus: int
    n_cooling_loops: int
    n_power_elements: int
    n_power_sources: int
    n_switches: int
    n_links: int
    default_job: str
    gpu_types: list[str]


class Entity(Answer):
    entity_id: int
    name: str
    parent: str | None = Field(
        None,
        description="hall of a row or rack, rack of a node, loop of a CDU, "
        "upstream element of a power element, bus of a source",
    )
    kind: str | None = Field(None, description="kind of power element, source or switch tier")


class EntityPage(PageInfo):
    items: list[Entity]


class SiteKpis(Answer):
    site: str
    ts: datetime | None
    snapshot_age_s: OptFloat
    it_power_mw: OptFloat
    cooling_power_mw: OptFloat
    facility_power_mw: OptFloat
    generation_capacity_mw: OptFloat
    generation_n1_capacity_mw: OptFloat
    generation_n1_headroom_mw: OptFloat
    pue_ratio: OptFloat
    outdoor_dry_bulb_c: OptFloat
    outdoor_wet_bulb_c: OptFloat
    swing_amplitude_mw: OptFloat
    swing_ramp_mw_per_s: OptFloat
    n_gpus: int
    n_gpus_throttled: int
    n_gpus_down: int
    n_gpus_off: int
    n_alerts_critical: int
    n_alerts_warning: int
    n_alerts_info: int
    database_reachable_flag: bool = Field(
        True, description="false while the database cannot be reached: figures from memory, alerts as last read"
    )


class RackState(Answer):
    rack_id: int
    rack: str
    hall: str
    cdu: str
    rack_power_kw: OptFloat
    rack_max_gpu_temp_c: OptFloat
    rack_time_to_throttle_s: OptFloat


class RackPage(PageInfo):
    ts: datetime | None
    items: list[RackState]


class CduState(Answer):
    cdu_id: int
    cdu: str
    loop: str
    coolant_supply_temp_c: OptFloat
    coolant_return_temp_c: OptFloat
    coolant_flow_lpm: OptFloat
    cdu_heat_kw: OptFloat
    cdu_capacity_kw: OptFloat
    cdu_capacity_use_frac: OptFloat
    pumps_running_count: int | None


class CduPage(PageInfo):
    ts: datetime | None
    items: list[CduState]


class PowerState(Answer):
    element_id: int
    element: str
    kind: str
    feed_power_kw: OptFloat
    load_frac: OptFloat
    power_n1_load_frac: OptFloat


class PowerPage(PageInfo):
    ts: datetime | None
    items: list[PowerState]


class GenerationState(Answer):
    source_id: int
    source: str
    kind: str
    source_power_mw: OptFloat
    source_capacity_mw: float
    battery_soc_frac: OptFloat


class GenerationPage(PageInfo):
    ts: datetime | None
    items: list[GenerationState]


class TelemetrySource(Answer):
    source: str
    source_age_s: OptFloat


class TelemetrySources(Answer):
    items: list[TelemetrySource]


class JobState(Answer):
    name: str
    n_gpus: int
    restart_phase: str
    step_time_s: OptFloat
    tokens_per_s: OptFloat
    goodput_tokens_per_s: OptFloat
    mfu_frac: OptFloat
    ettr_frac: OptFloat
    checkpoint_age_s: OptFloat
    lost_work_s: OptFloat
    interruptions_total: int


class JobPage(PageInfo):
    ts: datetime | None
    items: list[JobState]


class Impact(Answer):
    gpus: int
    jobs: list[str]
    tokens_per_s: OptFloat
    power_mw: OptFloat


class MuteMark(Answer):
    """The maintenance window or scoped silence an alert is under."""

    id: int
    kind: str
    scope: str
    comment: str
    created_by: str
    starts_at: datetime
    ends_at: datetime


class Mute(Answer):
    """A scoped silence or a maintenance window."""

    id: int
    kind: Literal["silence", "maintenance"]
    scope_kind: str
    scope_value: str
    rule_name: str
    metric: str
    scope: str = Field(description="the scope as pages show it (H1, H4-R0*-K*, cause pump:cdu:1 …)")
    comment: str
    created_by: str
    created_at: datetime
    starts_at: datetime
    ends_at: datetime = Field(description="when it ends, or ended when expired or cancelled early")
    expired_at: datetime | None
    expired_by: str
    state: Literal["upcoming", "active", "ended"]


class MuteList(Answer):
    items: list[Mute]


class Alert(Answer):
    id: int | str
    key: str
    severity: str
    source: str
    entity_kind: str
    entity_name: str
    metric: str
    value: OptFloat
    message: str
    group: str
    impact: Impact
    runbook: str
    raised_at: datetime | None
    updated_at: datetime | None
    cleared_at: datetime | None
    acknowledged: bool
    acknowledged_at: datetime | None
    acknowledged_by: str
    ack_comment: str
    silenced_until: datetime | None
    silence: MuteMark | None = Field(None, description="the scoped silence muting the alert now")
    maintenance: MuteMark | None = Field(None, description="the maintenance window the alert is in now")


class AlertPage(PageInfo):
    items: list[Alert]
    database_reachable_flag: bool = Field(
        True, description="false while the database cannot be read: the list is the last one read"
    )


class ScenarioEntry(Answer):
    name: str
    title: str
    description: str


class ScenarioList(Answer):
    items: list[ScenarioEntry]


class ScenarioText(ScenarioEntry):
    toml: str


class IncidentEntry(Answer):
    name: str
    title: str
    site: str
    start: str
    end: str
    tags: list[str]
    shipped_flag: bool


class IncidentPage(PageInfo):
    items: list[IncidentEntry]


class StoredScenarioEntry(Answer):
    name: str
    site: str
    position: int = Field(description="edits applied (undo goes back one)")
    can_undo: bool
    can_redo: bool


class StoredScenarioList(Answer):
    persistent_flag: bool = Field(description="kept in the database (false: in the server's memory only)")
    items: list[StoredScenarioEntry]


class StoredScenario(StoredScenarioEntry):
    edits: list[AnyEdit] = Field(description="the applied edits in order, as in a scenario file's [[edits]]")


class ImportedIncident(Answer):
    name: str
    site: str
    start: str
    end: str
    replaced: bool = Field(description="an incident of the same name was replaced")
    skipped: list[str] = Field(description="what of a recording could not be placed on the site")


class Projection(Answer):
    """The report of ``clustertwin project --json`` (its keys: docs/api.md and ``twin/quantities.py``)."""

    model_config = ConfigDict(extra="allow")
    site: str
    scenario: str
    ts: str
    it_power_mw: OptFloat
    facility_power_mw: OptFloat
