"""Every page in the replay view: the recorded job on /jobs, and no unknown value printed as nan or inf."""

from __future__ import annotations

import json
import re

import plotly
import pytest

from dashboard import ids

PAGES = ("overview", "floor", "cooling", "power", "fabric", "jobs", "alerts", "cdu")
REPLAY = "replay:colossus-cdu-pump-failure@2024-07-22T15:01:50Z"  # rack H1-R01-K01 throttling


def _text(component) -> str:
    return json.dumps(component, cls=plotly.utils.PlotlyJSONEncoder, ensure_ascii=False)


@pytest.mark.parametrize("page", PAGES)
def test_no_page_prints_an_unknown_value_as_nan_or_inf(page_module, view_request, demo_view, page):
    with view_request(demo_view):
        layout = page_module(page).layout(view=REPLAY)
    text = _text(layout)
    assert "View not available" not in text
    shown = re.findall(r'"(?:children|value|title|text|hovertext)": "([^"]*)"', text)
    shown += [t for texts in re.findall(r'"(?:text|hovertext)": \[([^\]]*)\]', text) for t in texts.split('", "')]
    bad = [s for s in shown if re.search(r"\b(nan|inf)\b", s, re.I)]
    assert bad == [], page


def test_unknown_values_are_a_dash_saying_not_recorded(page_module, view_request, demo_view, find):
    with view_request(demo_view):
        layout = page_module("power").layout(view=REPLAY)
    text = _text(layout)
    assert '"title": "not recorded"' in text
    # the swing is no longer unknown: the recorded job's phases make it (twin.engine.jobs.snapshot_swing)
    swing = find(layout, ids.kpi_value(ids.Power.PAGE, "swing"))
    assert swing is not None and float(swing.children) > 0.0 and getattr(swing, "title", None) is None


def test_the_jobs_page_shows_the_recorded_job_against_the_twin(page_module, view_request, demo_view, find):
    with view_request(demo_view):
        layout = page_module("jobs").layout(view=REPLAY)
    text = _text(layout)
    assert "no training job running" not in text
    assert '"data-replay-job": "colossus-405b-24k"' in text and "recorded" in text and "twin" in text
    kpis = find(layout, ids.Jobs.KPIS)
    assert kpis is not None and len(kpis.children) >= 5
    tokens = find(layout, ids.kpi_value(ids.Jobs.PAGE, "tokens"))
    assert tokens.children.endswith("M")  # the recorded throughput, millions of tokens/s


def test_the_replay_view_places_the_recorded_job_and_scales_its_figures():
    from dashboard.views.registry import resolve

    view = resolve(REPLAY, None)
    job = view.latest().jobs[0]
    twin = view.incident.twin_job(view.index)
    assert view.placed_jobs()[0].spec.name == job.name == twin.name
    recorded_tokens = float(view.incident.rec.site_rows[view.index]["job_tokens_per_s"])
    assert job.tokens_per_s == recorded_tokens
    assert job.mfu_frac == pytest.approx(twin.mfu_frac * recorded_tokens / twin.tokens_per_s)
    rows = {r["quantity"]: r for r in view.job_record(job.name)}
    assert rows["throughput"]["recorded"] == recorded_tokens and rows["throughput"]["twin"] == twin.tokens_per_s


def test_the_replay_library_lists_bundle_files_and_database_rows(page_module, view_request, demo_state, tmp_path):
    from dashboard.pages.replay import library_cards, library_entries
    from ingest.store.db import open_database
    from ingest.store.incidents import record_incident
    from tests.dashboard.standin_hub import StandinView

    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    view = StandinView(demo_state)
    record_incident(
        engine,
        {
            "name": "colossus-cdu-pump-failure",
            "site_name": "colossus",
            "title": "pump",
            "start": "2024-07-22T15:00:00+00:00",
            "end": "2024-07-22T15:10:00+00:00",
        },
    )
    record_incident(
        engine,
        {
            "name": "elsewhere-only",
            "site_name": "colossus",
            "title": "Kept in the database",
            "start": "2024-07-23T15:00:00+00:00",
            "end": "2024-07-23T15:10:00+00:00",
        },
    )
    try:
        with view_request(view, db=engine):
            entries = {e["name"]: e for e in library_entries()}
        assert entries["colossus-cdu-pump-failure"]["file"] and entries["colossus-cdu-pump-failure"]["in_database"]
        assert entries["colossus-spine-failure"]["file"] and not entries["colossus-spine-failure"]["in_database"]
        only = entries["elsewhere-only"]
        assert not only["file"] and only["in_database"] and only["title"] == "Kept in the database"
        text = _text(library_cards(list(entries.values()), None, None))
        assert "file + database" in text and "cannot be replayed here" in text
        assert "replay:elsewhere-only@" not in text  # no link to an incident without its bundle
    finally:
        engine.dispose()


@pytest.mark.slow
def test_the_calibrate_button_saves_a_site_version(tmp_path, monkeypatch):
    from dashboard.pages import replay as page
    from dashboard.views.replay import IncidentRecording
    from ingest.replay.session import RecordSpec, record_synthetic
    from ingest.store.db import open_database
    from ingest.store.siteversions import site_version

    spec = RecordSpec(
        "demo",
        "tim-button",
        faults=("tim:H1-R01-K03@0=3",),
        duration_s=120,
        tick_s=5,
        detail_racks=("H1-R01-K03",),
        max_detail_racks=1,
    )
    rec = IncidentRecording(record_synthetic(spec, tmp_path))
    engine = open_database(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        panel = page.calibration_panel(rec, engine)
        text = _text(panel)
        assert "Saved as version 1 of site demo" in text and "--site-version 1 --heldout 0.5" in text
        assert "[calibration]" in site_version(engine, "demo", 1).content
        assert "PSU efficiency" in text and "% at 10/20/50/100 % load (fitted on" in text
        assert "psu_efficiency_points_frac = [" in site_version(engine, "demo", 1).content
        assert "not saved" in _text(page.calibration_panel(rec, None))
    finally:
        engine.dispose()


def test_the_replay_page_names_the_jobs_and_teams_the_incident_hit(page_module, view_request, demo_view, find):
    with view_request(demo_view):
        layout = page_module("replay").layout(view=REPLAY)
    summary = find(layout, ids.Replay.HITS_SUMMARY)
    assert summary.children == "1 job hit, 24,576 GPUs; the first at 15:01:00 UTC."
    text = _text(find(layout, ids.Replay.HITS))
    assert "colossus-405b-24k" in text and "1 of 384" in text and "CDU H1-R01-K01-CDU lost" in text
