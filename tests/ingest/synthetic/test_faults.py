"""Fault specifications: parsing, resolution to site entities, activity windows."""

import math

import pytest

from ingest.synthetic.faults import FaultError, fault_from_table, parse_fault
from twin.site.load import load_site


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


def test_full_spec_resolves_to_the_entity(demo):
    f = parse_fault(demo, "pump:H1-R01-K04-CDU@60+30=2")
    assert (f.kind, f.entity_id, f.start_s, f.duration_s, f.value) == ("pump", 3, 60.0, 30.0, 2.0)
    assert not f.active(59.9) and f.active(60.0) and f.active(89.9) and not f.active(90.0)


def test_defaults_and_gpu_targets(demo):
    f = parse_fault(demo, "xid:h1-r01-k02-n1/6")
    assert f.entity_id == 8 * 8 + 8 + 6  # rack 1 (8 nodes before it), node 1, GPU 6
    assert f.start_s == 0.0 and math.isinf(f.duration_s) and f.value is None
    assert parse_fault(demo, "source:GEN-02").entity_id == demo.source_name.index("GEN-02")
    assert parse_fault(demo, "link:leaf-p00-a000-r3").entity_id == demo.switch_name.index("leaf-p00-a000-r3")


@pytest.mark.parametrize(
    "spec, message",
    [
        ("pump", "expected KIND:TARGET"),
        ("volcano:H1", "unknown kind 'volcano'"),
        ("feed:H1-BW-R09-A", "no feed target named 'H1-BW-R09-A'"),
        ("xid:h1-r01-k01-n0/9", "has no GPU 9"),
        ("xid:nohost/1", "not HOSTNAME/GPU_INDEX"),
    ],
)
def test_bad_specs_say_what_is_wrong(demo, spec, message):
    with pytest.raises(FaultError, match=message):
        parse_fault(demo, spec)


def test_scenario_tables(demo):
    f = fault_from_table(demo, {"kind": "facility_water", "target": "FW-H1", "start_s": 5, "value": 8})
    assert (f.entity_id, f.value) == (0, 8.0)
    with pytest.raises(FaultError, match="unknown key"):
        fault_from_table(demo, {"kind": "cdu", "target": "H1-R01-K01-CDU", "when": 3})
    with pytest.raises(FaultError, match="missing 'target'"):
        fault_from_table(demo, {"kind": "cdu"})
