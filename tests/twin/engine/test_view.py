"""View keys parse and format both ways; bad keys say which key and why."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from twin.engine.view import LIVE_KEY, REPLAY, SCENARIO, ViewKey, ViewTick, format_view_key, parse_view_key


@pytest.mark.parametrize("text", [None, "", "  ", "live"])
def test_empty_and_live_are_the_live_view(text):
    assert parse_view_key(text) == LIVE_KEY
    assert format_view_key(parse_view_key(text)) == "live"


def test_scenario_key():
    key = parse_view_key("scenario:colossus-cdu-loss")
    assert key == ViewKey(SCENARIO, "colossus-cdu-loss")
    assert str(key) == "scenario:colossus-cdu-loss"


def test_replay_key_is_utc_and_round_trips():
    key = parse_view_key("replay:pump-trip-17@2026-07-15T16:02:10+02:00")
    assert key.kind == REPLAY and key.name == "pump-trip-17"
    assert key.at == datetime(2026, 7, 15, 14, 2, 10, tzinfo=UTC)
    assert format_view_key(key) == "replay:pump-trip-17@2026-07-15T14:02:10Z"
    assert parse_view_key(format_view_key(key)) == key


@pytest.mark.parametrize(
    "text, reason",
    [
        ("livee", "expected 'live'"),
        ("sim:x", "expected 'live'"),
        ("scenario:", "scenario name"),
        ("scenario:../etc/passwd", "scenario name"),
        ("scenario:a/b", "scenario name"),
        ("replay:incident", "needs an instant"),
        ("replay:incident@", "needs an instant"),
        ("replay:incident@yesterday", "not an ISO 8601 time"),
        ("replay:incident@2026-07-15T14:02:10", "needs a zone"),
        ("replay:@2026-07-15T14:02:10Z", "incident name"),
    ],
)
def test_bad_keys_name_the_key(text, reason):
    with pytest.raises(ValueError) as err:
        parse_view_key(text)
    assert repr(text) in str(err.value) and reason in str(err.value)


def test_view_tick_is_frozen():
    tick = ViewTick(None, None)
    with pytest.raises(AttributeError):
        tick.snapshot = 1  # type: ignore[misc]
