"""The schema of what-if edits: one pydantic model per op, the one description of what an edit may say.

An edit is a table with an ``op`` and its fields (``docs/scenarios.md``).  :data:`AnyEdit`
is the discriminated union of the op models (on ``op``); :func:`parse_edit` validates one
table against it and returns the op's model, an :class:`Edit`.  Scenario files
(``[[edits]]``), stored scenarios, the ``/whatif`` editor, the API (its OpenAPI document
shows these models) and the command line all read edits with it, so they accept the same
edits and refuse the others with the same message.

Field types carry the ranges and name-list caps; the rules that join fields (at least one
of a group, a position or a shift, the value that goes with a setpoint's target) are the
models' validators.  A refusal is an :class:`EditError` in the project's one-line form,
naming the edit's index and field: ``edits[3].x_m: expected a number in [-10000, 10000],
got 1e+06``.  pydantic's own messages never reach the user: :func:`_problem` words them.

Older spellings are read through :func:`upgrade_edit` (scenario files and stored rows
written before a field was renamed); edits are only ever written in the current spelling.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Self, get_origin

import annotated_types
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails, PydanticCustomError

from twin.site.errors import ScenarioError

MAX_EDITS = 10_000  # edits in one scenario
MAX_SELECT_NAMES = 10_000  # names or globs in one name list
MAX_TEXT_CHARS = 10_000  # characters of one name or text
SELECT = ("racks", "rows", "halls")  # rack selection: names or globs of racks, rows (H1-R01), halls (H1)
_SHOWN_KEY_CHARS = 80  # an unknown field's name is cut to this in a message


class EditError(ScenarioError):
    """An edit is malformed or does not fit the site; names the edit's index and field."""

    def __init__(self, index: int, field_: str, message: str, file: str = "") -> None:
        self.index, self.field, self.problem = index, field_, message
        prefix = f"{file}: " if file else ""
        super().__init__(f"{prefix}edits[{index}].{field_}: {message}")


# ------------------------------------------------------------------ field types
def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def _optional(description: str) -> Any:
    """An optional field: absent unless given (there is no null; the document shows no default)."""
    return Field(None, description=description, json_schema_extra=_no_default)


Name = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS)]
Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
Names = Annotated[list[Name], Field(min_length=1, max_length=MAX_SELECT_NAMES)]
Count = Annotated[int, Field(ge=1, le=1_000)]
Metres = Annotated[float, Field(ge=-10_000.0, le=10_000.0, allow_inf_nan=False)]
Degrees = Annotated[float, Field(ge=-360.0, le=360.0, allow_inf_nan=False)]
GpuWatts = Annotated[float, Field(ge=1.0, le=100_000.0, allow_inf_nan=False)]
# a plant's or a CDU's supply setpoint [°C]: the range of a site file's plant setpoint
Setpoint = Annotated[float, Field(ge=2.0, le=60.0, allow_inf_nan=False)]
# a loop's facility supply [°C]: the range of [conditions] loop_supply_temp_c
SupplyOverride = Annotated[float, Field(ge=2.0, le=70.0, allow_inf_nan=False)]
Outdoor = Annotated[float, Field(ge=-40.0, le=60.0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


def _refuse(field_: str, message: str) -> PydanticCustomError:
    """A validator's refusal, carrying the field it names (see :func:`_problem`)."""
    return PydanticCustomError("edit", "{message}", {"field": field_, "message": message})


def _document_groups(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """``op`` is required in the document; each group of :attr:`Edit.needs_one_of` is an ``anyOf`` of requirements."""
    schema["properties"]["op"].pop("default", None)
    schema["required"] = ["op"] + [k for k in schema.get("required", []) if k != "op"]
    groups = getattr(cls, "needs_one_of", ())
    if groups:
        schema["allOf"] = [{"anyOf": [{"required": [k]} for k in group]} for group in groups]


# ------------------------------------------------------------------ the models
class Edit(BaseModel):
    """One edit: ``op`` and the fields given (absent fields are not set; see :attr:`fields`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, json_schema_extra=_document_groups)

    op: str
    note: Text = _optional("a person's note on the edit")

    main_field: ClassVar[str] = "op"  # the field an error about the edit's effect names
    needs_one_of: ClassVar[tuple[tuple[str, ...], ...]] = ()  # groups of which at least one field is given

    @property
    def fields(self) -> dict[str, Any]:
        """The fields given (``op`` aside), in the model's order."""
        return {k: getattr(self, k) for k in type(self).model_fields if k != "op" and k in self.model_fields_set}

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    def as_dict(self) -> dict[str, Any]:
        """``{"op": …, fields…}`` in the canonical field order (TOML export, JSON storage)."""
        return {"op": self.op, **self.fields}

    @model_serializer(mode="wrap")
    # no return type: the document shows the model itself (pydantic reads the annotation)
    def _given_only(self, handler: SerializerFunctionWrapHandler):  # type: ignore[no-untyped-def]
        data = handler(self)
        return {k: v for k, v in data.items() if k == "op" or k in self.model_fields_set}

    @model_validator(mode="after")
    def _joined_fields(self) -> Self:
        for group in self.needs_one_of:
            if not set(group) & self.model_fields_set:
                raise _refuse(group[0], f"{self.op} needs one of {', '.join(group)}")
        self.check()
        return self

    def check(self) -> None:
        """Rules joining the op's fields beyond :attr:`needs_one_of` (raise :func:`_refuse`)."""

    def given(self, *keys: str) -> list[str]:
        return [k for k in keys if k in self.model_fields_set]


class _SelectsRacks(Edit):
    racks: Names = _optional("names or globs of racks (H4-R01-K0?)")
    rows: Names = _optional("names or globs of rows, <hall>-<row> (H4-R01)")
    halls: Names = _optional("names or globs of halls (H4)")


class MoveRackEdit(_SelectsRacks):
    """New floor position of the selected racks: one rack to x_m, y_m, or any number shifted by dx_m, dy_m."""

    op: Literal["move_rack"] = "move_rack"
    x_m: Metres = _optional("floor position of the rack's centre, x [m] (one rack; with y_m)")
    y_m: Metres = _optional("floor position of the rack's centre, y [m] (one rack; with x_m)")
    dx_m: Metres = _optional("shift of the selected racks along x [m]")
    dy_m: Metres = _optional("shift of the selected racks along y [m]")
    orientation_deg: Degrees = _optional("rack orientation [°], 0 = front faces +y")
    main_field = "x_m"
    needs_one_of = (SELECT, ("x_m", "y_m", "dx_m", "dy_m", "orientation_deg"))

    def check(self) -> None:
        absolute, relative = self.given("x_m", "y_m"), self.given("dx_m", "dy_m")
        if absolute and relative:
            raise _refuse("dx_m", "give a position (x_m, y_m) or a shift (dx_m, dy_m), not both")
        if len(absolute) == 1:
            raise _refuse("y_m" if "x_m" in absolute else "x_m", "a position needs both x_m and y_m")


class AddRackEdit(Edit):
    """A new rack at the end of a row, in the row's last fabric array."""

    op: Literal["add_rack"] = "add_rack"
    name: Name = Field(description="the new rack's name")
    hall: Name = Field(description="its hall")
    row: Name = Field(description="its row within the hall (R01)")
    x_m: Metres = Field(description="floor position of its centre, x [m]")
    y_m: Metres = Field(description="floor position of its centre, y [m]")
    type: Name = Field(description="a rack type of the catalogue")
    feed_a: Name = Field(description="the busway of its A feed")
    feed_b: Text = _optional("the busway of its B feed (dual-fed types)")
    orientation_deg: Degrees = _optional("rack orientation [°], 0 = front faces +y")
    main_field = "name"


class RemoveRackEdit(_SelectsRacks):
    """The selected racks, their nodes, GPUs and in-rack CDUs are gone."""

    op: Literal["remove_rack"] = "remove_rack"
    main_field = "racks"
    needs_one_of = (SELECT,)


class SetRackTypeEdit(_SelectsRacks):
    """Another catalogue rack type for the selected racks."""

    op: Literal["set_rack_type"] = "set_rack_type"
    type: Name = Field(description="a rack type of the catalogue (GB200-NVL72)")
    main_field = "type"
    needs_one_of = (SELECT,)


class SetRackFeedsEdit(_SelectsRacks):
    """The selected racks' A and/or B feeds."""

    op: Literal["set_rack_feeds"] = "set_rack_feeds"
    feed_a: Name = _optional("a busway on side A")
    feed_b: Text = _optional('a busway on side B ("" for single-fed types)')
    main_field = "feed_a"
    needs_one_of = (SELECT, ("feed_a", "feed_b"))


class SetRackCduEdit(_SelectsRacks):
    """The selected racks' cooling: an in-row CDU, or the facility loop of their in-rack CDU."""

    op: Literal["set_rack_cdu"] = "set_rack_cdu"
    cdu: Name = _optional("an in-row CDU")
    loop: Name = _optional("the facility loop of an in-rack CDU")
    main_field = "cdu"
    needs_one_of = (SELECT, ("cdu", "loop"))


class FailEdit(Edit):
    """Elements out of service (power, sources, plants, loops, CDUs, switches, links, nodes, racks)."""

    op: Literal["fail"] = "fail"
    elements: Names = Field(description="names or globs of elements; links are <switch>/<switch>")
    pumps_count: Count = _optional("pumps lost of a failed CDU (default: all)")
    chillers_count: Count = _optional("chillers lost of a failed plant (default: all)")
    main_field = "elements"


class RestoreEdit(Edit):
    """Undoes an earlier fail of these elements."""

    op: Literal["restore"] = "restore"
    elements: Names = Field(description="names or globs of elements an earlier edit failed")
    main_field = "elements"


class SetCapEdit(_SelectsRacks):
    """A GPU power limit for the selected racks, the scenario's job or the whole site (the lowest wins)."""

    op: Literal["set_cap"] = "set_cap"
    gpu_power_limit_w: GpuWatts = Field(description="GPU power limit [W], clipped to the GPU's TDP")
    job: Text = _optional("the scenario's job")
    site: bool = _optional("every GPU of the site")
    main_field = "gpu_power_limit_w"
    needs_one_of = (SELECT + ("job", "site"),)


# the value field of each setpoint target: one name per meaning
SETPOINT_FIELD = {"plants": "supply_setpoint_c", "cdus": "supply_setpoint_c", "loops": "supply_temp_c"}


class SetSetpointEdit(Edit):
    """A plant's facility-water setpoint, a CDU's secondary supply setpoint, or a loop's facility supply override."""

    op: Literal["set_setpoint"] = "set_setpoint"
    plants: Names = _optional("names or globs of plants (with supply_setpoint_c: a change of the site model)")
    cdus: Names = _optional("names or globs of CDUs (with supply_setpoint_c: their secondary supply setpoint)")
    loops: Names = _optional("names or globs of facility loops (with supply_temp_c)")
    supply_setpoint_c: Setpoint = _optional(
        "supply setpoint [°C] of plants (facility water) or CDUs (secondary coolant; a CDU supplies no colder "
        "than its facility water allows)"
    )
    supply_temp_c: SupplyOverride = _optional("facility supply temperature [°C] of loops, instead of the plant model")
    main_field = "supply_setpoint_c"
    needs_one_of = (tuple(SETPOINT_FIELD),)

    def check(self) -> None:
        targets = self.given(*SETPOINT_FIELD)
        if len(targets) > 1:
            raise _refuse(targets[1], f"give one of {', '.join(SETPOINT_FIELD)}, not {targets[0]} and {targets[1]}")
        target = targets[0]
        value = SETPOINT_FIELD[target]
        for other in self.given("supply_setpoint_c", "supply_temp_c"):
            if other != value:
                goes_with = " or ".join(t for t, f in SETPOINT_FIELD.items() if f == other)
                raise _refuse(other, f"{other} goes with {goes_with}; {target} take {value}")
        if value not in self.model_fields_set:
            raise _refuse(value, f"{target} need {value}")


class SetWeatherEdit(Edit):
    """Outdoor conditions instead of the site's weather curve."""

    op: Literal["set_weather"] = "set_weather"
    outdoor_dry_bulb_c: Outdoor = _optional("outdoor dry-bulb temperature [°C]")
    outdoor_wet_bulb_c: Outdoor = _optional("outdoor wet-bulb temperature [°C]")
    main_field = "outdoor_dry_bulb_c"
    needs_one_of = (("outdoor_dry_bulb_c", "outdoor_wet_bulb_c"),)


class SetJobEdit(Edit):
    """The job mix the twin runs."""

    op: Literal["set_job"] = "set_job"
    job: Text = _optional('a job file of data/jobs ("" for none)')
    gpu_util_frac: Fraction = _optional("GPU utilisation of the job's GPUs")
    idle_nodes_off: bool = _optional("nodes without a GPU of the job are powered off")
    main_field = "job"
    needs_one_of = (("job", "gpu_util_frac", "idle_nodes_off"),)


AnyEdit = Annotated[
    MoveRackEdit
    | AddRackEdit
    | RemoveRackEdit
    | SetRackTypeEdit
    | SetRackFeedsEdit
    | SetRackCduEdit
    | FailEdit
    | RestoreEdit
    | SetCapEdit
    | SetSetpointEdit
    | SetWeatherEdit
    | SetJobEdit,
    Field(discriminator="op"),
]
EDIT_MODELS: tuple[type[Edit], ...] = (
    MoveRackEdit,
    AddRackEdit,
    RemoveRackEdit,
    SetRackTypeEdit,
    SetRackFeedsEdit,
    SetRackCduEdit,
    FailEdit,
    RestoreEdit,
    SetCapEdit,
    SetSetpointEdit,
    SetWeatherEdit,
    SetJobEdit,
)
MODEL_OF: dict[str, type[Edit]] = {m.model_fields["op"].default: m for m in EDIT_MODELS}
OPS: tuple[str, ...] = tuple(MODEL_OF)
LAYOUT_OPS = ("move_rack", "add_rack", "remove_rack", "set_rack_type", "set_rack_feeds", "set_rack_cdu")
MAIN_FIELD = {op: m.main_field for op, m in MODEL_OF.items()}
FIELD_NAMES: tuple[str, ...] = tuple(dict.fromkeys(k for m in EDIT_MODELS for k in m.model_fields if k != "op"))
_ADAPTER: TypeAdapter[Edit] = TypeAdapter(AnyEdit)


def edit_json_schema() -> dict[str, Any]:
    """The JSON Schema of one edit (the union of the op models), as the API's document shows it."""
    return _ADAPTER.json_schema()


# ------------------------------------------------------------------ older spellings
# (op, target, old field, current field): before the split, a CDU's setpoint was written supply_temp_c
RENAMED = (("set_setpoint", "cdus", "supply_temp_c", "supply_setpoint_c"),)


def upgrade_edit(raw: Any) -> Any:
    """``raw`` in the current spelling (a copy; anything else is returned as it is).

    ``set_setpoint`` of ``cdus`` with ``supply_temp_c`` is the CDU's secondary supply setpoint
    as written before ``supply_temp_c`` meant only a loop's facility supply: it reads as
    ``supply_setpoint_c``.  A table that has the current field too is left for the validator.
    """
    if not isinstance(raw, dict):
        return raw
    for op, target, old, new in RENAMED:
        if raw.get("op") == op and target in raw and old in raw and new not in raw:
            raw = {(new if k == old else k): v for k, v in raw.items()}
    return raw


# ------------------------------------------------------------------ parsing
def parse_edit(raw: Any, index: int, upgrade: bool = False) -> Edit:
    """Check one ``[[edits]]`` table (a dict with ``op``) and return its model.

    ``upgrade``: read older spellings (:func:`upgrade_edit`), for files and stored rows; edits
    made now (the editor, the API) are taken in the current spelling only.
    """
    if upgrade:
        raw = upgrade_edit(raw)
    try:
        return _ADAPTER.validate_python(raw)
    except ValidationError as exc:
        field_, message = _problem(exc, raw)
        raise EditError(index, field_, message) from None


def parse_edits(raw: Any, file: str = "", upgrade: bool = True) -> list[Edit]:
    """Check a scenario's ``edits`` array (older spellings read unless ``upgrade`` is False)."""
    prefix = f"{file}: " if file else ""
    if not isinstance(raw, list):
        raise ScenarioError(f"{prefix}edits: expected an array of tables [[edits]]")
    if len(raw) > MAX_EDITS:
        raise ScenarioError(f"{prefix}edits: more than {MAX_EDITS:,} edits")
    try:
        return [parse_edit(item, i, upgrade) for i, item in enumerate(raw)]
    except EditError as exc:
        raise EditError(exc.index, exc.field, exc.problem, file) from None


def _problem(exc: ValidationError, raw: Any) -> tuple[str, str]:
    """(field, message) of the first problem pydantic found, in the project's words (unknown fields first)."""
    errors = exc.errors(include_url=False)
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    kind, loc = err["type"], err["loc"]
    ops = ", ".join(OPS)
    if kind == "union_tag_not_found":
        return "op", f"needs an op (ops: {ops})"
    if kind == "union_tag_invalid":
        return "op", f"unknown op {raw.get('op')!r} (ops: {ops})"
    if not loc or loc[0] not in MODEL_OF:  # not a table at all
        return "op", "expected a table with an op"
    op, model = loc[0], MODEL_OF[loc[0]]
    if kind == "edit":
        return err["ctx"]["field"], err["ctx"]["message"]
    key = str(loc[1]) if len(loc) > 1 else "op"
    if kind == "extra_forbidden":
        shown = key if len(key) <= _SHOWN_KEY_CHARS else key[:_SHOWN_KEY_CHARS] + "…"
        known = ", ".join(sorted(k for k in model.model_fields if k != "op"))
        return shown, f"unknown field for {op} (fields: {known})"
    if kind == "missing":
        return key, f"{op} needs {key}"
    return key, _expected(model.model_fields[key], err)


def field_kind(info: FieldInfo) -> str:
    """What a field takes, from its type and constraints: ``a number in [2, 60]``, ``names``, ``a name``."""
    meta = {type(m): m for m in info.metadata}
    if get_origin(info.annotation) is list:
        return "names"
    if info.annotation is bool:
        return "true or false"
    if info.annotation in (int, float):
        lo, hi = meta[annotated_types.Ge].ge, meta[annotated_types.Le].le
        return f"{'a whole number' if info.annotation is int else 'a number'} in [{lo:g}, {hi:g}]"
    min_length = meta.get(annotated_types.MinLen)
    return "a name" if min_length is not None and min_length.min_length > 0 else "a string"


def _expected(info: FieldInfo, err: ErrorDetails) -> str:
    """The message for a value its field does not take: ``expected a number in [2, 60], got 99``."""
    kind = field_kind(info)
    if kind == "names":
        if err["type"] == "too_long" and len(err["loc"]) == 2:
            return f"more than {MAX_SELECT_NAMES:,} names"
        return "expected a non-empty list of names or globs"
    if info.annotation in (int, float):
        return f"expected {kind}, got {err['input']!r}"
    if err["type"] == "string_too_long":
        return f"longer than {MAX_TEXT_CHARS:,} characters"
    return f"expected {kind}"
