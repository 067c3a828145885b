"""The incident bundle: round trip, pandas without ClusterTwin, and refusal of truncated, foreign or tampered files."""

import json
import zipfile
from datetime import timedelta

import numpy as np
import pandas as pd
import pytest

from ingest.replay.bundle import BundleError, read_bundle
from ingest.replay.session import T0, RecordSpec, record_synthetic


@pytest.fixture(scope="module")
def bundle_path(tmp_path_factory):
    spec = RecordSpec(
        "demo",
        "pump-and-xid",
        faults=("pump:H1-R01-K01-CDU@30", "xid:h1-r01-k02-n0/3@60"),
        duration_s=120,
        tick_s=5,
        title="Pump and XID",
        tags=("test",),
        notes="two faults",
        max_detail_racks=2,
    )
    return record_synthetic(spec, tmp_path_factory.mktemp("incidents"))


@pytest.mark.slow
def test_round_trip_keeps_metadata_window_and_tables(bundle_path):
    b = read_bundle(bundle_path)
    assert b.metadata["title"] == "Pump and XID" and b.metadata["tags"] == ["test"]
    assert b.metadata["start"] == T0.isoformat() and b.metadata["end"] == (T0 + timedelta(seconds=120)).isoformat()
    assert 'name = "demo"' in b.site_toml
    site = b.frame("site")
    assert len(site) == 25 and site["ts"].is_monotonic_increasing
    rack = b.frame("rack")
    assert len(rack) == 25 * 16 and rack["rack_power_kw"].gt(0).all()
    # detail kept for the two affected racks only: the pump's rack (CDU K01) and the XID's rack (K02)
    assert b.metadata["detail_racks"] == ["H1-R01-K01", "H1-R01-K02"]
    gpu = b.frame("gpu")
    assert gpu["gpu_id"].nunique() == 128 and (gpu["last_xid_code"] == 79).any()
    events = b.frame("events")
    assert (
        any(m.startswith("1 of 64 GPUs down") for m in events["message"]) and (events["severity"] == "critical").any()
    )
    cdu = b.frame("cdu")
    assert cdu.loc[cdu["cdu_id"] == 0, "pumps_running_count"].min() == 1


@pytest.mark.slow
def test_pandas_reads_a_table_with_nothing_but_zipfile(bundle_path):
    with zipfile.ZipFile(bundle_path) as zf:
        gpu = pd.read_parquet(zf.open("gpu.parquet"))
        meta = json.loads(zf.read("metadata.json"))
    assert str(gpu["ts"].dt.tz) == "UTC" and meta["site_name"] == "demo"
    assert np.isfinite(gpu["gpu_temp_c"]).mean() > 0.9


def test_truncated_file_is_refused(bundle_path, tmp_path):
    data = bundle_path.read_bytes()
    cut = tmp_path / "cut.ctincident"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(BundleError, match="not a zip archive, or truncated"):
        read_bundle(cut)


def test_foreign_zip_is_refused(tmp_path):
    foreign = tmp_path / "foreign.ctincident"
    with zipfile.ZipFile(foreign, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(BundleError, match="without the clustertwin-incident mark"):
        read_bundle(foreign)
    text = tmp_path / "text.ctincident"
    text.write_text("ts,gpu\n")
    with pytest.raises(BundleError, match="not an incident bundle"):
        read_bundle(text)


def _rewrite(src, dst, member, mutate):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            zout.writestr(info, mutate(data) if info.filename == member else data)
        zout.comment = zin.comment


def test_tampered_member_fails_its_checksum(bundle_path, tmp_path):
    bad = tmp_path / "tampered.ctincident"

    _rewrite(bundle_path, bad, "metadata.json", lambda data: data.replace(b"Pump and XID", b"Pump and XYZ"))
    with pytest.raises(BundleError, match="metadata.json fails its checksum"):
        read_bundle(bad)


def test_newer_format_version_is_named(bundle_path, tmp_path):
    newer = tmp_path / "newer.ctincident"
    with zipfile.ZipFile(bundle_path) as zin, zipfile.ZipFile(newer, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, zin.read(info.filename))
        zout.comment = b"clustertwin-incident/9"
    with pytest.raises(BundleError, match="format 'clustertwin-incident/9' is not supported"):
        read_bundle(newer)
