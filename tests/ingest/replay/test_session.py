"""Recording on a variant of a site: sources added after the site's own, under another name."""

import numpy as np
import pytest

from ingest.replay.bundle import read_bundle
from ingest.replay.library import validate
from ingest.replay.session import RecordSpec, record_synthetic, site_with_sources
from twin.site.catalogue import load_catalogue
from twin.site.load import SITES_DIR, build_site, load_site

BATTERY = (
    '{ name = "EXTRA", kind = "battery", units = 2, unit_mw = 0.5, energy_mwh = 1.0, '
    'ramp_mw_per_s = 10.0, bus = "MV-B", roundtrip_efficiency_frac = 0.9 }'
)


def test_variant_keeps_the_site_and_appends_the_sources():
    demo = load_site("demo")
    text = site_with_sources((SITES_DIR / "demo.toml").read_text(), "demo-bess", (BATTERY,))
    variant = build_site(text, "demo-bess.toml", load_catalogue())
    assert variant.name == "demo-bess" and variant.n_gpus == demo.n_gpus
    assert variant.source_name[: demo.n_sources] == demo.source_name  # the site's own keep their ids
    assert variant.source_name[demo.n_sources :] == ["EXTRA-01", "EXTRA-02"]
    assert variant.source_energy_mwh[demo.n_sources :].tolist() == [0.5, 0.5]  # the entry's energy over its units


@pytest.mark.parametrize(
    "entry, name, message",
    [
        ("kind = battery", "demo-bess", "not a TOML inline table"),
        ('"battery"', "demo-bess", "not a TOML inline table"),
        (BATTERY, "Demo BESS", "lower-case letters"),
    ],
)
def test_bad_variant_is_one_clear_line(entry, name, message):
    with pytest.raises(ValueError, match=message):
        site_with_sources((SITES_DIR / "demo.toml").read_text(), name, (entry,))


def test_site_without_a_sources_list_is_refused():
    with pytest.raises(ValueError, match="no 'sources = \\[' … '\\]' list in \\[power\\]"):
        site_with_sources('[site]\nname = "x"\n[power]\n', "y", (BATTERY,))


def test_recording_on_a_variant_keeps_its_site_file(tmp_path):
    spec = RecordSpec(
        site="demo",
        name="demo-trip",
        faults=("source:GEN-01@10",),
        duration_s=30.0,
        site_name="demo-bess",
        add_sources=(BATTERY,),
    )
    bundle = read_bundle(record_synthetic(spec, tmp_path))
    state = validate(bundle)
    assert bundle.metadata["site_name"] == state.name == "demo-bess" and "EXTRA-02" in state.source_name
    soc = bundle.frame("source").dropna(subset=["battery_soc_frac"])
    batteries = {i for i, n in enumerate(state.source_name) if "BESS" in n or "EXTRA" in n}
    assert set(soc["source_id"]) == batteries and len(batteries) == 3


@pytest.mark.parametrize("fleet", [False, True])
@pytest.mark.slow
def test_recordings_run_the_fleet_only_when_asked(tmp_path, monkeypatch, fleet):
    """By default the plant runs the placed job alone (as the shipped incidents do); ``fleet`` adds the live fleet."""
    import ingest.replay.session as session

    hubs = []

    def build(*args, **kw):
        hubs.append(real(*args, **kw))
        return hubs[-1]

    real = session.build_hub
    monkeypatch.setattr(session, "build_hub", build)
    spec = RecordSpec("demo", "plain", duration_s=10, tick_s=5, fleet=fleet)
    bundle = read_bundle(record_synthetic(spec, tmp_path))
    state = validate(bundle)
    assert (hubs[0].ticker.fleet is not None) == fleet
    # with the fleet, the bundle names the jobs that ran, where and when (the replay's jobs hit come from it)
    assert ("jobs" in bundle.tables) == fleet
    if fleet:
        jobs = bundle.frame("jobs")
        frame = hubs[0].view.fleet().frame()
        running = frame.jobs["job_id"][frame.jobs["state"] == "running"]
        assert set(running.tolist()) <= set(jobs["job_id"]) and len(jobs) > 0
        row = jobs.iloc[0]
        held = frame.gpu_job == int(np.flatnonzero(frame.jobs["job_id"] == row["job_id"])[0])
        if held.any():  # still running at the end: its racks are the racks of its GPUs
            assert sorted(row["rack_ids"]) == sorted(set(state.gpu_rack[held].tolist()))
        assert (jobs["first_ts"] <= jobs["last_ts"]).all()
