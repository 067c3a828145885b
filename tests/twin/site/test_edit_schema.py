"""The edit schema itself: one model per op, one type per field name, errors in one line naming index and field."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from twin.site.edit_schema import (
    EDIT_MODELS,
    FIELD_NAMES,
    MAX_SELECT_NAMES,
    OPS,
    SETPOINT_FIELD,
    EditError,
    edit_json_schema,
    parse_edit,
    parse_edits,
)


def test_one_name_one_type_everywhere():
    """A field name means one thing: the same type and constraints in every op that has it."""
    seen: dict[str, tuple] = {}
    for model in EDIT_MODELS:
        for key, info in model.model_fields.items():
            if key == "op":
                continue
            kind = (info.annotation, tuple(repr(m) for m in info.metadata))
            assert seen.setdefault(key, kind) == kind, f"{key} of {model.__name__} differs from another op's"
    assert set(seen) == set(FIELD_NAMES)
    assert set(SETPOINT_FIELD.values()) == {"supply_setpoint_c", "supply_temp_c"}


def test_every_op_and_field_is_described():
    for model in EDIT_MODELS:
        assert model.__doc__ and model.__doc__.strip(), model.__name__
        for key, info in model.model_fields.items():
            assert key == "op" or info.description, f"{model.__name__}.{key}"
    schema = edit_json_schema()
    assert sorted(schema["discriminator"]["mapping"]) == sorted(OPS)


@pytest.mark.parametrize(
    "raw, message",
    [
        ("fail", "edits[0].op: expected a table with an op"),
        ({"elements": ["GEN-01"]}, "edits[0].op: needs an op (ops: move_rack, add_rack,"),
        ({"op": ["fail"]}, "edits[0].op: unknown op ['fail'] (ops: "),
        ({"op": "fail", "elements": "GEN-01"}, "edits[0].elements: expected a non-empty list of names or globs"),
        ({"op": "fail", "elements": ["GEN-01", 7]}, "edits[0].elements: expected a non-empty list of names or globs"),
        ({"op": "fail", "elements": ["x"] * (MAX_SELECT_NAMES + 1)}, "edits[0].elements: more than 10,000 names"),
        ({"op": "add_rack", "name": ""}, "edits[0].name: expected a name"),
        ({"op": "set_job", "idle_nodes_off": "yes"}, "edits[0].idle_nodes_off: expected true or false"),
        (
            {"op": "set_job", "gpu_util_frac": float("nan")},
            "edits[0].gpu_util_frac: expected a number in [0, 1], got nan",
        ),
        ({"op": "set_cap", "site": True, "gpu_power_limit_w": True}, "edits[0].gpu_power_limit_w: expected a number"),
        ({"op": "set_job"}, "edits[0].job: set_job needs one of job, gpu_util_frac, idle_nodes_off"),
        # an unknown field is named before what it may have left missing
        ({"op": "set_rack_type", "racks": ["H1-*"], "typ": "x"}, "edits[0].typ: unknown field for set_rack_type"),
        ({"op": "fail", "elements": ["a"], "x" * 500: 1}, "edits[0]." + "x" * 80 + "…: unknown field for fail"),
    ],
)
def test_refusals_are_worded_by_the_project_not_by_pydantic(raw, message):
    with pytest.raises(EditError) as err:
        parse_edit(raw, 0)
    assert str(err.value).startswith(message), str(err.value)
    assert "Input should" not in str(err.value) and len(str(err.value)) < 400


def test_an_edit_array_names_the_file_and_its_limits():
    with pytest.raises(EditError, match=r"^h4\.toml: edits\[1\]\.op: unknown op 'x'"):
        parse_edits([{"op": "restore", "elements": ["GEN-01"]}, {"op": "x"}], "h4.toml")
    with pytest.raises(Exception, match=r"^h4\.toml: edits: expected an array of tables"):
        parse_edits({"op": "fail"}, "h4.toml")


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.one_of(st.text(max_size=8), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(
    op=st.sampled_from(OPS + ("nope",)),
    fields=st.dictionaries(st.sampled_from(FIELD_NAMES + ("colour",)), VALUES, max_size=5),
)
@pytest.mark.slow
def test_any_json_edit_is_a_model_that_round_trips_or_one_error_line(op, fields):
    raw = {"op": op, **fields}
    try:
        edit = parse_edit(raw, 3)
    except EditError as exc:
        text = str(exc)
        assert text.startswith("edits[3].") and "\n" not in text and exc.index == 3
        assert exc.field in FIELD_NAMES + ("op", "colour"), text
        return
    assert parse_edit(edit.as_dict(), 3) == edit and edit.as_dict()["op"] == op
    assert edit.model_dump(mode="json") == edit.as_dict()  # the API's answer holds the fields given, no nulls
