"""Validation of browser-sent values: each bad value is refused with a one-line reason."""

from __future__ import annotations

import math
from datetime import UTC

import pytest

from dashboard.callbacks import inputs
from dashboard.callbacks.inputs import InputError


@pytest.mark.parametrize(
    "value",
    [1e9, 1e12, "Infinity", "NaN", float("nan"), math.inf, -5, 0, "abc", None, True, [3600], {"s": 1}, "9" * 500],
)
def test_bad_silence_durations_are_refused(value):
    with pytest.raises(InputError, match="silence duration") as info:
        inputs.silence_duration_s(value)
    assert "\n" not in str(info.value)


def test_silence_durations_up_to_seven_days_are_accepted():
    assert inputs.silence_duration_s(3600) == 3600.0
    assert inputs.silence_duration_s("900") == 900.0
    assert inputs.silence_duration_s(7 * 24 * 3600) == inputs.MAX_SILENCE_S
    with pytest.raises(InputError, match="7 days"):
        inputs.silence_duration_s(7 * 24 * 3600 + 1)


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "59", "86401", "x", None, ["60", "120"]])
def test_bad_windows_are_refused(value):
    with pytest.raises(InputError, match="trend window"):
        inputs.window_s(value)


def test_windows_are_whole_seconds_in_range():
    assert inputs.window_s("3600") == 3600 and inputs.window_s(60) == 60 and inputs.window_s("900.7") == 900


def test_query_parameters_must_be_single_short_text():
    assert inputs.single_param("rack", "H1-R01-K01") == "H1-R01-K01"
    assert inputs.single_param("rack", None) is None
    with pytest.raises(InputError, match="'rack' given 2 times"):
        inputs.single_param("rack", ["a", "b"])  # how Dash passes ?rack=a&rack=b
    with pytest.raises(InputError, match="at most 200"):
        inputs.single_param("rack", "r" * 201)


def test_choices_and_entity_names():
    assert inputs.choice("tier", "leaf", ["leaf", "spine"]) == "leaf"
    with pytest.raises(InputError, match="tier 'root' is not one of leaf, spine"):
        inputs.choice("tier", "root", ["leaf", "spine"])
    with pytest.raises(InputError, match="not one of"):
        inputs.choice("tier", ["leaf"], ["leaf", "spine"])
    assert inputs.entity_name("rack", "A", ["A", "B"]) == "A"
    with pytest.raises(InputError, match="no rack named 'C'"):
        inputs.entity_name("rack", "C", ["A", "B"])


def test_alert_ids():
    assert inputs.alert_id(12) == 12 and inputs.alert_id("a-1") == "a-1"
    for bad in (None, True, 1.5, ["1"], "x" * 65):
        with pytest.raises(InputError):
            inputs.alert_id(bad)


def test_query_layout_drops_bad_parameters_and_says_so(find):
    seen = {}

    @inputs.query_layout(tier=inputs.one_of("tier", ["leaf", "spine"]))
    def layout(tier=None, switch=None, **_kwargs):
        seen.update(tier=tier, switch=switch)
        from dash import html

        return html.Div("page", id="page")

    page = layout(tier="spine", switch="S1")
    assert seen == {"tier": "spine", "switch": "S1"} and page.id == "page"
    page = layout(tier="root", switch=["S1", "S2"])
    assert seen == {"tier": None, "switch": None}
    note = page.children[0]
    assert note.className == "input-note"
    text = " ".join(str(c) for c in note.children)
    assert "tier 'root' is not one of leaf, spine" in text and "'switch' given 2 times" in text
    assert find(page, "page") is not None


def test_instants_are_iso_8601_and_utc():
    from datetime import datetime

    assert inputs.instant("2026-07-15T14:02:10Z") == datetime(2026, 7, 15, 14, 2, 10, tzinfo=UTC)
    assert inputs.instant("2026-07-15 16:02:10+02:00") == datetime(2026, 7, 15, 14, 2, 10, tzinfo=UTC)
    assert inputs.instant("2026-07-15T14:02:10").tzinfo is not None
    for bad in ("yesterday", "2026-13-01T00:00:00Z", "", ["2026-07-15T14:02:10Z"], "9" * 41):
        with pytest.raises(InputError, match="time"):
            inputs.instant(bad)
