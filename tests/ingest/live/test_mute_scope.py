"""Scopes of silences and maintenance windows: checked inputs, glob / cause / hall matching, time bounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from ingest.live.alert_actions import RULES
from ingest.live.mute_scope import (
    MAX_PATTERN_CHARS,
    AlertFacts,
    HallIndex,
    MuteRule,
    MuteSet,
    Scope,
    ScopeError,
    alert_facts,
    annotate,
    parse_scope,
)
from twin.site.load import load_site
from twin.site.tables import TIER_CORE, TIER_LEAF

T0 = datetime(2026, 7, 15, 14, 0, tzinfo=UTC)
HALLS = ("H1", "H2", "H3", "H4")


@pytest.fixture(scope="module")
def colossus():
    return load_site("colossus")


@pytest.fixture(scope="module")
def halls(colossus):
    return HallIndex(colossus)


def _facts(key, name, kind="rack", entity_id=0, group="", metric="gpu_temp_c"):
    return AlertFacts(key, group or key, kind, entity_id, name, metric)


def _rule(scope, kind="silence", rule_id=1, start=T0, hours=1.0, comment="swap"):
    return MuteRule(rule_id, kind, scope, comment, "otto", start, start + timedelta(hours=hours))


@pytest.mark.parametrize(
    "kind, value, rule, metric, message",
    [
        ("entity", "", "", "", "entity pattern is empty"),
        ("entity", "  ", "", "", "entity pattern is empty"),
        ("entity", "H" * (MAX_PATTERN_CHARS + 1), "", "", f"is longer than {MAX_PATTERN_CHARS} characters"),
        ("entity", "H1 R01", "", "", "entity pattern 'H1 R01': only printable characters without spaces"),
        ("entity", "H1-R0\x00", "", "", "only printable characters"),
        ("entity", "H1-[R0*", "", "", "entity pattern 'H1-[R0*': a '[' is not closed by ']'"),
        ("entity", "*", "", "", "entity pattern '*' matches every entity"),
        ("entity", "*?**", "", "", "matches every entity"),
        ("entity", "H1-R0[3-1]", "", "", "entity pattern 'H1-R0[3-1]': bad character range 3-1"),
        ("hall", "H9", "", "", "hall 'H9' is not one of the site's halls (H1, H2, H3, H4)"),
        ("group", "", "", "", "cause group is empty"),
        ("rack", "H1", "", "", "scope kind 'rack': expected one of entity, group, hall"),
        ("hall", "H1", "gpu-hot", "", "rule 'gpu-hot' is not an alert rule (known: "),
        ("hall", "H1", "", "GPU temp", "metric 'GPU temp': expected a quantity name"),
    ],
)
def test_a_bad_scope_is_one_line_naming_it(kind, value, rule, metric, message):
    with pytest.raises(ScopeError) as err:
        parse_scope(kind, value, rule, metric, halls=HALLS, rules=RULES)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert len(str(err.value)) < 200  # a long value is cut when named


def test_good_scopes_are_kept_and_halls_spelled_as_the_site_does():
    assert parse_scope("hall", "h4", halls=HALLS) == Scope("hall", "H4")
    assert parse_scope("entity", " H4-R0*-K* ", "gpu_hot", rules=RULES) == Scope("entity", "H4-R0*-K*", "gpu_hot")
    assert parse_scope("group", "pump:cdu:1", metric="pump_running_count") == Scope(
        "group", "pump:cdu:1", "", "pump_running_count"
    )
    assert Scope("group", "pump:cdu:1", "gpu_hot").label() == "cause pump:cdu:1 · gpu_hot alerts"
    assert Scope("hall", "H1").label() == "H1"


def test_a_glob_matches_whole_names_case_insensitively(halls):
    mutes = MuteSet([_rule(Scope("entity", "H4-R0*-K0?"))], halls)
    hit = [
        _facts("gpu_hot:rack:5", "H4-R01-K03"),
        _facts("xid:79:gpu:7", "h4-r02-k07-n1/gpu3", kind="gpu"),  # host names are lower case
        _facts("pump:cdu:5", "H4-R01-K03-CDU", kind="cdu"),  # a rack's name covers what is named under it
    ]
    miss = [
        _facts("gpu_hot:rack:6", "H4-R01-K13"),  # K1x: two characters after K0 would be needed
        _facts("gpu_hot:rack:7", "H4-R11-K03"),
        _facts("gpu_hot:rack:8", "H3-R01-K03"),
        _facts("gpu_hot:rack:9", "XH4-R01-K03"),
    ]
    assert [bool(mutes.matching(f)) for f in hit + miss] == [True] * 3 + [False] * 4
    rack = MuteSet([_rule(Scope("entity", "H1-R01-K02"))], halls)
    assert rack.matching(_facts("pump:cdu:1", "H1-R01-K02-CDU", kind="cdu"))
    assert not rack.matching(_facts("gpu_hot:rack:20", "H1-R01-K021"))  # a name, not a prefix of one
    cdu = MuteSet([_rule(Scope("entity", "H1-R01-K02-CDU"))], halls)
    assert not cdu.matching(_facts("gpu_hot:rack:1", "H1-R01-K02"))
    sets = MuteSet([_rule(Scope("entity", "H1-R0[1-3]-K[!1]?"))], halls)
    assert [bool(sets.matching(_facts(f"r:{n}", n))) for n in ("H1-R02-K22", "H1-R04-K22", "H1-R02-K12")] == [
        True,
        False,
        False,
    ]


def test_a_cause_group_covers_its_root_and_the_alerts_it_explains(halls):
    mutes = MuteSet([_rule(Scope("group", "pump:cdu:1"))], halls)
    assert mutes.matching(_facts("pump:cdu:1", "H1-R01-K02-CDU", kind="cdu"))
    assert mutes.matching(_facts("gpu_hot:rack:1", "H1-R01-K02", group="pump:cdu:1"))
    assert not mutes.matching(_facts("gpu_hot:rack:9", "H1-R01-K10"))


def test_halls_of_every_entity_kind(colossus, halls):
    s = colossus
    rack = int(np.flatnonzero(s.rack_hall == 3)[0])
    assert halls.hall("rack", rack) == "H4"
    gpu = int(np.flatnonzero(s.gpu_rack == rack)[0])
    assert halls.hall("gpu", gpu) == "H4"
    assert halls.hall("cdu", int(s.rack_cdu[rack])) == "H4"
    assert halls.hall("power", int(s.rack_feed_a[rack])) == "H4"  # its busway
    leaf = int(s.gpu_leaf[gpu])
    assert int(s.switch_tier[leaf]) == TIER_LEAF
    leaf_racks = np.unique(s.gpu_rack[s.gpu_leaf == leaf])
    assert halls.hall("switch", leaf) == ("H4" if (s.rack_hall[leaf_racks] == 3).all() else "")
    core = int(np.flatnonzero(s.switch_tier == TIER_CORE)[0])
    assert halls.hall("switch", core) == ""  # a core switch serves every hall
    assert halls.hall("power", s.power_name.index("MV-A")) == ""  # the site's medium-voltage bus
    assert halls.hall("job", 0) == halls.hall("source", 0) == halls.hall("site", 0) == ""
    assert halls.hall("rack", 10**6) == halls.hall("rack", -1) == ""
    # every switchgear of a hall is in it: its busways are
    for name in ("H1-SWGR-A", "H2-SWGR-B"):
        assert halls.hall("power", s.power_name.index(name)) == name[:2]


def test_a_hall_scope_and_its_filters(halls, colossus):
    rack = int(np.flatnonzero(colossus.rack_hall == 0)[0])
    mutes = MuteSet([_rule(Scope("hall", "H1", rule="gpu_hot", metric="rack_max_gpu_temp_c"))], halls)
    hot = _facts("gpu_hot:rack:%d" % rack, colossus.rack_name[rack], entity_id=rack, metric="rack_max_gpu_temp_c")
    assert mutes.matching(hot)
    assert not mutes.matching(_facts(f"gpu_down:rack:{rack}", "x", entity_id=rack, metric="rack_max_gpu_temp_c"))
    other_metric = _facts(f"gpu_hot:rack:{rack}", "x", entity_id=rack, metric="gpu_temp_c")
    assert not MuteSet(mutes.rules, halls).matching(other_metric)


def test_time_bounds_start_inclusive_end_exclusive_and_windows_first(halls):
    scope = Scope("hall", "H1")
    silence = _rule(scope, "silence", 1, T0, hours=2)
    window = _rule(scope, "maintenance", 2, T0 + timedelta(hours=1), hours=0.5, comment="pump swap")
    mutes = MuteSet([silence, window], halls)
    facts = _facts("gpu_hot:rack:0", "H1-R01-K01")
    assert mutes.mute_of(facts, T0 - timedelta(seconds=1)) is None
    assert mutes.mute_of(facts, T0) == silence
    assert mutes.mute_of(facts, T0 + timedelta(hours=1)) == window  # a window outranks a silence
    assert mutes.mutes(facts, T0 + timedelta(hours=1)) == (window, silence)
    assert mutes.mute_of(facts, T0 + timedelta(hours=1.5)) == silence  # the window ended
    assert mutes.mute_of(facts, T0 + timedelta(hours=2)) is None  # so did the silence
    assert MuteSet([], halls).mute_of(facts, T0) is None


def test_alerts_are_marked_with_what_mutes_them_now(halls):
    alerts = [
        {"id": 1, "key": "gpu_hot:rack:0", "group": "gpu_hot:rack:0", "entity_kind": "rack", "entity_id": 0,
         "entity_name": "H1-R01-K01", "metric": "rack_max_gpu_temp_c", "cleared_at": None},
        {"id": 2, "key": "gpu_hot:rack:0", "group": "gpu_hot:rack:0", "entity_kind": "rack", "entity_id": 0,
         "entity_name": "H1-R01-K01", "metric": "rack_max_gpu_temp_c", "cleared_at": T0},
    ]  # fmt: skip
    window = _rule(Scope("entity", "H1-R01-*"), "maintenance", 5, T0, comment="pump swap")
    annotate(alerts, MuteSet([window], halls), T0 + timedelta(minutes=1))
    assert alerts[0]["maintenance"]["comment"] == "pump swap" and alerts[0]["maintenance"]["scope"] == "H1-R01-*"
    assert alerts[0]["silence"] is None
    assert alerts[1]["maintenance"] is None  # a cleared alert is muted by nothing
    assert alert_facts({"id": "a3"}).key == "a3"  # a scenario's alert has its key as id


def test_a_condition_is_matched_as_its_stored_alert_is(halls):
    from ingest.live.alert_rules import Condition

    hot = Condition("gpu_hot:rack:0", "critical", "twin", "rack", 0, "H1-R01-K01", "rack_max_gpu_temp_c", 95.0, "hot")
    window = _rule(Scope("hall", "H1", rule="gpu_hot"), "maintenance", 4, T0)
    mutes = MuteSet([_rule(Scope("entity", "H1-R01-K01"), rule_id=5), window], halls)
    assert mutes.condition_mute(hot, T0) == window  # windows first, computed
    assert mutes.condition_mute(hot, T0) == window  # and remembered
    stored = {"key": hot.key, "group": hot.key, "entity_kind": "rack", "entity_id": 0, "entity_name": hot.entity_name,
              "metric": hot.metric}  # fmt: skip
    assert mutes.mute_of(alert_facts(stored), T0) == window
    assert mutes.condition_mute(hot, T0 + timedelta(hours=2)) is None
    assert MuteSet([], halls).condition_mute(hot, T0) is None


def test_a_reread_of_the_same_rows_keeps_the_remembered_matches(tmp_path, colossus, halls):
    from ingest.live.live_mutes import LiveMutes
    from ingest.store.db import open_database
    from ingest.store.mutes import add_mute

    engine = open_database(f"sqlite:///{tmp_path / 'm.db'}")
    now = datetime.now(UTC)
    scope = ("hall", "H1", "", "")
    add_mute(engine, "c", kind="silence", scope=scope, comment="x", created_by="o", starts_at=now,
             ends_at=now + timedelta(hours=1), now=now)  # fmt: skip
    live = LiveMutes(engine, "c", halls, reload_s=0.0)  # reads on every call
    first = live.current()
    assert len(first) == 1 and live.current() is first  # the same rows: the same set
    add_mute(engine, "c", kind="maintenance", scope=scope, comment="y", created_by="o", starts_at=now,
             ends_at=now + timedelta(hours=1), now=now)  # fmt: skip
    second = live.current()
    assert second is not first and [r.kind for r in second.rules] == ["maintenance", "silence"]
    engine.dispose()
