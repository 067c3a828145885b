"""The jobs and teams a recorded incident hit: named equipment, impaired racks, the fleet's jobs table."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from ingest.replay.bundle import SCHEMAS, Bundle, BundleError, bundle_bytes, parse_bundle
from ingest.replay.hits import entity_racks, jobs_hit, recorded_jobs, teams_hit
from ingest.replay.library import validate
from ingest.replay.recording import load_recording
from twin.site.tables import TIER_LEAF, TIER_SPINE

INCIDENTS = Path(__file__).resolve().parents[3] / "data" / "incidents"


@pytest.fixture(scope="module")
def pump():
    bundle = parse_bundle((INCIDENTS / "colossus-cdu-pump-failure.ctincident").read_bytes())
    state = validate(bundle)
    return bundle, state, load_recording(bundle, state)


def test_the_pump_failure_hit_the_job_on_the_cdus_rack(pump):
    bundle, state, rec = pump
    (hit,) = jobs_hit(bundle, state, rec)
    assert hit.job_id == state.default_job and hit.team == "" and hit.n_gpus == 24_576
    assert hit.racks_hit_count == 1 and hit.racks_count == 384  # the CDU cools one rack
    assert hit.first_hit.isoformat() == "2024-07-22T15:01:00+00:00"  # the pump fault's instant
    assert hit.causes[0].startswith("CDU H1-R01-K01-CDU lost")
    assert teams_hit([hit]) == [{"team": "", "jobs_count": 1, "gpus_count": 24_576, "first_hit": hit.first_hit}]


def test_equipment_names_its_racks(pump):
    _, state, _ = pump
    assert entity_racks(state, "rack", 5).tolist() == [5]
    assert entity_racks(state, "gpu", 64 * 3 + 1).tolist() == [3]
    assert entity_racks(state, "cdu", 0).tolist() == np.flatnonzero(state.rack_cdu == 0).tolist()
    leaf = int(np.flatnonzero(state.switch_tier == TIER_LEAF)[0])
    assert entity_racks(state, "switch", leaf).tolist() == np.unique(state.gpu_rack[state.gpu_leaf == leaf]).tolist()
    spine = int(np.flatnonzero(state.switch_tier == TIER_SPINE)[0])
    in_pod = state.switch_pod[state.gpu_leaf] == state.switch_pod[spine]
    assert entity_racks(state, "switch", spine).tolist() == np.unique(state.gpu_rack[in_pod]).tolist()
    assert entity_racks(state, "power", 0).size == entity_racks(state, "site", 0).size == 0


def _with_jobs(bundle: Bundle, rows: list[tuple]) -> Bundle:
    schema = SCHEMAS["jobs"]
    cols = list(zip(*rows))
    ts = lambda v: pa.array(np.array(v, dtype="datetime64[ms]"), type=schema.field("first_ts").type)  # noqa: E731
    table = pa.Table.from_arrays(
        [
            pa.array(cols[0]),
            pa.array(cols[1]),
            pa.array(cols[2], pa.int32()),
            pa.array(cols[3], schema.field("rack_ids").type),
            ts(cols[4]),
            ts(cols[5]),
        ],
        schema=schema,
    )
    return parse_bundle(bundle_bytes(replace(bundle, tables={**bundle.tables, "jobs": table})))


def test_a_fleet_recording_names_the_jobs_and_teams_on_the_hit_racks(pump):
    bundle, state, rec = pump
    start = int(rec.ts[0].timestamp() * 1000)
    end = int(rec.ts[-1].timestamp() * 1000)
    fault = start + 60_000
    jobs = _with_jobs(
        bundle,
        [
            ("ft-1", "alpha", 64, [0], start, end),  # on the CDU's rack: hit at the fault
            ("ev-2", "beta", 128, [200, 201], start, end),  # elsewhere, nothing changed there: not hit
            ("dbg-3", "alpha", 8, [0], fault + 30_000, end),  # started on the rack after the alert opened
            ("old-4", "gamma", 8, [0], start, fault - 5_000),  # left the rack before the fault
        ],
    )
    assert validate(jobs).name == state.name
    assert [j.job_id for j in recorded_jobs(jobs, state, rec)] == ["ft-1", "ev-2", "dbg-3", "old-4"]
    hits = jobs_hit(jobs, state, rec)
    by_job = {h.job_id: h for h in hits}
    assert set(by_job) == {"ft-1", "dbg-3"}  # dbg-3 ran on a rack whose GPUs throttled while it ran there
    assert by_job["ft-1"].first_hit.timestamp() * 1000 == fault
    assert by_job["ft-1"].causes[0].startswith("CDU H1-R01-K01-CDU lost")
    assert "CDU" not in " ".join(by_job["dbg-3"].causes)  # the alert opened before it started
    assert teams_hit(hits) == [
        {"team": "alpha", "jobs_count": 2, "gpus_count": 72, "first_hit": by_job["ft-1"].first_hit}
    ]


@pytest.mark.slow
def test_a_jobs_table_naming_a_rack_the_site_lacks_is_refused(pump):
    bundle, state, rec = pump
    start = int(rec.ts[0].timestamp() * 1000)
    bad = _with_jobs(bundle, [("x", "t", 8, [state.n_racks], start, start)])
    with pytest.raises(BundleError, match=f"names rack {state.n_racks}, the site has {state.n_racks} racks"):
        validate(bad)
    backwards = _with_jobs(bundle, [("x", "t", 8, [0], start + 5000, start)])
    with pytest.raises(BundleError, match="last_ts is before its first_ts"):
        validate(backwards)
