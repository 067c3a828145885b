"""Global search: exact, prefix and substring hits across every kind of entity, case-insensitive."""

import time

from dashboard.shell.search import SearchIndex
from tests.dashboard import page_snapshots


def test_finds_every_kind_case_insensitively(demo_state):
    index = SearchIndex(demo_state)
    s = demo_state
    rack = s.rack_name[3]
    assert index.find(rack.lower())[0].href == f"/floor?rack={rack}"
    assert index.find(s.node_name[5].upper())[0].kind == "node"
    assert index.find(f"{s.node_name[5]}/gpu3")[0].kind == "gpu"
    assert index.find(s.cdu_name[2])[0].href == f"/cdu?cdu={s.cdu_name[2]}"
    assert index.find(s.power_name[4])[0].href.startswith("/power?element=")
    assert index.find(s.switch_name[1])[0].href.startswith("/fabric?switch=")
    assert index.find("405b", jobs=["colossus-405b-24k"])[0].href == "/jobs?job=colossus-405b-24k"


def test_exact_beats_prefix_beats_substring_and_limits_apply(demo_state):
    index = SearchIndex(demo_state)
    hits = index.find(demo_state.rack_name[0])
    assert hits[0].name == demo_state.rack_name[0]
    assert len(index.find("h1")) == 10
    assert index.find("") == [] and index.find("x" * 101) == [] and index.find("no-such-thing") == []


def test_a_query_on_colossus_is_fast_enough_to_type(benchmark=None):
    state = page_snapshots.site("colossus")
    index = SearchIndex(state)
    start = time.perf_counter()
    hits = index.find("gpu7")
    assert hits and (time.perf_counter() - start) < 5.0  # a sanity bound, not a benchmark
