"""Alert rules over a snapshot, and the tracker that records transitions once."""

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from sqlmodel import Session, select

from ingest.live.alerts import AlertTracker, evaluate
from ingest.store.db import open_database
from ingest.store.models import Event
from twin.engine.tick import TwinEngine
from twin.site.load import load_site

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def demo():
    return load_site("demo")


@pytest.fixture(scope="module")
def nominal(demo):
    return TwinEngine(demo).tick(1.0)


def keys(conditions):
    return {c.key for c in conditions}


def test_a_nominal_site_raises_only_the_supply_alert_it_deserves(demo, nominal):
    got = keys(evaluate(demo, nominal))
    expected = {"supply:site:0"} if nominal.facility_power_mw > nominal.generation_capacity_mw else set()
    assert got == expected


def test_hot_gpus_are_aggregated_per_rack_with_severity_by_threshold(demo, nominal):
    temp = nominal.gpu_temp_c.copy()
    temp[np.flatnonzero(demo.gpu_rack == 2)[:3]] = 88.0  # above max operating 87 °C
    temp[np.flatnonzero(demo.gpu_rack == 5)[0]] = 90.0  # above slowdown 89 °C
    rack_max = np.array([temp[demo.gpu_rack == r].max() for r in range(demo.n_racks)])
    conds = {c.key: c for c in evaluate(demo, replace(nominal, gpu_temp_c=temp, rack_max_gpu_temp_c=rack_max))}
    assert conds["gpu_hot:rack:2"].severity == "warning" and "3 GPU(s)" in conds["gpu_hot:rack:2"].message
    assert conds["gpu_hot:rack:5"].severity == "critical"
    assert not any(k.startswith("gpu_hot:rack:0") for k in conds)


def test_pumps_power_links_and_stale_sources(demo, nominal):
    pumps = nominal.pumps_running_count.copy()
    pumps[1], pumps[2] = 1, 0
    frac = nominal.power_load_frac.copy()
    frac[5] = 1.2
    n1 = nominal.power_n1_load_frac.copy()
    n1[6] = 1.1
    link_up_flag = nominal.link_up_flag.copy()
    link_up_flag[np.flatnonzero(demo.link_a == 0)[:2]] = False
    snap = replace(nominal, pumps_running_count=pumps, power_load_frac=frac, power_n1_load_frac=n1, link_up_flag=link_up_flag,
                   source_age_s={"dcgm": 45.0, "synthetic": 0.0, "redfish": float("inf")})
    conds = {c.key: c for c in evaluate(demo, snap)}
    assert conds["pump:cdu:1"].severity == "warning" and conds["pump:cdu:2"].severity == "critical"
    assert conds["overload:power:5"].severity == "critical"
    assert conds["n1:power:6"].severity == "warning" and "n1:power:5" not in conds
    assert conds["links_down:switch:0"].value == 2
    assert "stale:source:dcgm" in conds and "stale:source:redfish" in conds
    assert "stale:source:synthetic" not in conds


def test_tracker_writes_only_transitions(demo, nominal, tmp_path):
    engine = open_database(f"sqlite:///{tmp_path / 'a.db'}")
    tracker = AlertTracker(engine, "demo")
    pumps = nominal.pumps_running_count.copy()
    pumps[3] = 0
    broken = evaluate(demo, replace(nominal, pumps_running_count=pumps))
    assert tracker.update(T0, broken)[0] >= 1
    assert tracker.update(T0 + timedelta(seconds=1), broken) == (0, 0)
    restarted = AlertTracker(engine, "demo")  # a restarted process picks up the open alerts
    assert "pump:cdu:3" in restarted.open
    raised, cleared = restarted.update(T0 + timedelta(seconds=2), evaluate(demo, nominal))
    assert raised == 0 and cleared >= 1
    with Session(engine) as session:
        rows = session.exec(select(Event).where(Event.key == "pump:cdu:3")).all()
    assert len(rows) == 1 and rows[0].cleared_at == T0 + timedelta(seconds=2)
