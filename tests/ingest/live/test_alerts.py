"""Alert rules over a snapshot, and the tracker that records transitions once and changes as history."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlmodel import Session, select

from ingest.live.alert_rules import evaluate
from ingest.live.alerts import AlertTracker
from ingest.store.db import open_database
from ingest.store.models import Event
from twin.engine.tick import TwinEngine
from twin.site.load import load_site

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


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
    assert conds["gpu_hot:rack:2"].severity == "warning" and "3 of 64 GPUs" in conds["gpu_hot:rack:2"].message
    assert conds["gpu_hot:rack:5"].severity == "critical"
    assert not any(k.startswith("gpu_hot:rack:0") for k in conds)


def test_pumps_power_links_and_stale_sources(demo, nominal):
    pumps = nominal.pumps_running_count.copy()
    pumps[1], pumps[2] = 1, 0
    frac = nominal.load_frac.copy()
    frac[5] = 1.2
    n1 = nominal.power_n1_load_frac.copy()
    n1[6] = 1.1
    link_up_flag = nominal.link_up_flag.copy()
    link_up_flag[np.flatnonzero(demo.link_a == 0)[:2]] = False
    snap = replace(
        nominal,
        pumps_running_count=pumps,
        load_frac=frac,
        power_n1_load_frac=n1,
        link_up_flag=link_up_flag,
        source_age_s={"dcgm": 45.0, "synthetic": 0.0, "redfish": float("inf")},
    )
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


# --- every fault class, through real engine ticks on the demo site ------------------------
from ingest.live.alert_rules import SiteFacts, sort_key  # noqa: E402
from ingest.live.alerts import history  # noqa: E402
from twin.engine.tick import PlacedJob, TickInputs  # noqa: E402
from twin.site.load import DATA_DIR  # noqa: E402
from twin.training.jobfile import load_job  # noqa: E402


@pytest.fixture(scope="module")
def job(demo):
    return PlacedJob(load_job(DATA_DIR / "jobs" / "demo-70b-1k.toml"), np.arange(demo.n_gpus))


def run(demo, job, seconds=1.0, **inputs):
    """Tick a fresh engine under ``inputs`` with the demo job placed; the conditions, sorted, by key."""
    engine = TwinEngine(demo)
    nominal = engine.tick(1.0, TickInputs(jobs=[job]))
    best = {j.name: j.tokens_per_s for j in nominal.jobs}
    snap = engine.tick(seconds, TickInputs(jobs=[job], **inputs))
    facts = SiteFacts(engine.detail.power_live, engine.detail.source_live, best)
    conds = sorted(evaluate(demo, snap, facts), key=sort_key)
    return {c.key: c for c in conds}, conds


def test_busway_loss_is_critical_and_the_partner_has_no_redundancy(demo, job):
    bw = demo.power_name.index("H1-BW-R01-A")
    partner = demo.power_name.index("H1-BW-R01-B")
    by_key, _ = run(demo, job, failed_power=[bw])
    dead = by_key[f"power_dead:power:{bw}"]
    assert dead.severity == "critical" and "8 racks on one feed" in dead.message
    assert dead.runbook and dead.group_key == dead.key
    child = by_key[f"no_redundancy:power:{partner}"]
    assert child.group == dead.key and "carries 8 racks alone" in child.message
    assert child.impact.gpus == 8 * 64


def test_generator_trip_names_the_unit_and_the_lost_supply(demo, job):
    gen = [i for i, n in enumerate(demo.source_name) if n.startswith("GEN")][0]
    by_key, _ = run(demo, job, failed_sources=[gen])
    trip = by_key[f"source_down:source:{gen}"]
    assert demo.source_name[gen] in trip.message and "0.2 MW of supply lost" in trip.message
    assert trip.impact.power_mw == pytest.approx(0.25)


def test_facility_supply_above_setpoint_is_a_cause_of_the_hot_racks(demo, nominal):
    setpoint = float(demo.plant_supply_setpoint_c[0])
    temp = nominal.gpu_temp_c.copy()
    temp[demo.gpu_rack == 3] = 90.0  # the twin throttles before this; a measured rack can still read it
    snap = replace(nominal, loop_supply_temp_c=np.array([setpoint + 10.0]), gpu_temp_c=temp)
    by_key = {c.key: c for c in evaluate(demo, snap)}
    loop = by_key["loop_supply:loop:0"]
    assert loop.severity == "critical" and "5 K above" in loop.message and loop.impact.gpus == demo.n_gpus
    assert by_key["gpu_hot:rack:3"].group == loop.key
    warm = {c.key: c for c in evaluate(demo, replace(nominal, loop_supply_temp_c=np.array([setpoint + 3.0])))}
    assert warm["loop_supply:loop:0"].severity == "warning"


def test_cdu_loss_groups_heat_shutdowns_and_the_stalled_job_under_the_cdu(demo, job):
    pumps = demo.cdu_spec_array("pumps").astype(np.int64)
    pumps[0] = 0
    by_key, conds = run(demo, job, seconds=600.0, pumps_running_count=pumps)
    cdu = by_key["pump:cdu:0"]
    assert cdu.severity == "critical" and "lost" in cdu.message
    rack0 = int(np.flatnonzero(demo.rack_cdu == 0)[0])
    assert by_key[f"gpu_down:rack:{rack0}"].group == cdu.key
    assert all(c.group == cdu.key for c in conds if c.rule == "xid")
    stall = by_key["job_stalled:job:0"]
    assert stall.group == cdu.key and stall.impact.gpus == demo.n_gpus and stall.impact.tokens_per_s > 0
    assert conds[0].key == stall.key  # the stalled job is the most urgent alert


def test_a_leaf_losing_all_uplinks_under_a_job_is_critical(demo, job):
    leaf0 = np.flatnonzero(demo.link_a == 0)
    link_up_failed = list(leaf0)
    by_key, conds = run(demo, job, failed_links=link_up_failed)
    links = by_key["links_down:switch:0"]
    assert links.severity == "critical" and "all" in links.message and links.impact.gpus > 0
    stall = by_key["job_stalled:job:0"]
    assert stall.group == links.key
    one_link, _ = run(demo, job, failed_links=list(leaf0[:1]))
    assert one_link["links_down:switch:0"].severity == "warning"


def test_tracker_updates_an_open_alert_and_keeps_its_history(demo, nominal, tmp_path):
    engine = open_database(f"sqlite:///{tmp_path / 'h.db'}")
    tracker = AlertTracker(engine, "demo")
    temp = nominal.gpu_temp_c.copy()
    rack2 = np.flatnonzero(demo.gpu_rack == 2)
    temp[rack2[:3]] = 88.0
    warm = evaluate(demo, replace(nominal, gpu_temp_c=temp))
    assert tracker.update(T0, warm) == (1, 0)
    temp[rack2] = 93.0
    hot = evaluate(demo, replace(nominal, gpu_temp_c=temp))
    assert tracker.update(T0 + timedelta(seconds=5), hot) == (0, 0)
    with Session(engine) as session:
        row = session.exec(select(Event).where(Event.key == "gpu_hot:rack:2")).one()
    assert row.severity == "critical" and "64 of 64 GPUs at or above slowdown" in row.message
    assert row.updated_at == T0 + timedelta(seconds=5) and row.raised_at == T0 and row.impact_gpus == 64
    changes = history(engine, row.id)
    assert [c["severity"] for c in changes] == ["critical"]
    assert tracker.update(T0 + timedelta(seconds=6), hot) == (0, 0)  # nothing changed: nothing written
    assert len(history(engine, row.id)) == 1
