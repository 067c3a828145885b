"""The incident library and its command line: list, show, export, import with validation that touches nothing on failure."""

import json
import zipfile

import pytest

from ingest.replay.bundle import BundleError, read_bundle
from ingest.replay.library import import_file, list_incidents
from ingest.replay.session import RecordSpec, record_synthetic
from twin.cli import main


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    spec = RecordSpec("demo", "drill", faults=("pump:H1-R01-K01-CDU@10",), duration_s=30, tick_s=5, title="Drill")
    return record_synthetic(spec, tmp_path_factory.mktemp("elsewhere"))


@pytest.mark.slow
def test_import_list_show_export_round_trip(exported, tmp_path, capsys):
    lib = tmp_path / "lib"
    assert main(["incidents", "--dir", str(lib), "import", str(exported), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "drill"}
    assert main(["incidents", "--dir", str(lib), "list", "--json"]) == 0
    listed = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert listed["drill"]["shipped"] is False and listed["drill"]["title"] == "Drill"
    assert main(["incidents", "--dir", str(lib), "show", "drill", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["tables"]["site"] == 7 and "pumps_running_count" in {e["metric"] for e in shown["events"]}
    out = tmp_path / "copy.ctincident"
    assert main(["incidents", "--dir", str(lib), "export", "drill", str(out)]) == 0
    assert out.read_bytes() == exported.read_bytes()
    assert main(["incidents", "--dir", str(lib), "import", str(out), "--name", "drill-2"]) == 0
    assert read_bundle(lib / "drill-2.ctincident").metadata["name"] == "drill-2"


def test_a_bad_file_leaves_the_library_untouched(exported, tmp_path, capsys):
    lib = tmp_path / "lib"
    import_file(exported, lib)
    before = {p.name: p.read_bytes() for p in lib.iterdir()}
    bad = tmp_path / "drill.ctincident"
    data = bytearray(exported.read_bytes())
    start = data.find(b"PAR1", 100)  # inside a Parquet member
    data[start + 40] ^= 0xFF
    bad.write_bytes(bytes(data))
    assert main(["incidents", "--dir", str(lib), "import", str(bad), "--name", "other"]) == 1
    assert "damaged archive (Bad CRC-32 for file" in capsys.readouterr().err
    truncated = tmp_path / "cut.ctincident"
    truncated.write_bytes(exported.read_bytes()[:-200])
    assert main(["incidents", "--dir", str(lib), "import", str(truncated), "--replace"]) == 1
    assert "truncated" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in lib.iterdir()} == before


def test_bundle_whose_tables_do_not_fit_its_site_is_refused(exported, tmp_path):
    """A consistent archive (checksums rewritten) claiming a rack the site does not have."""
    bundle = read_bundle(exported)
    import pyarrow as pa

    from ingest.replay.bundle import write_bundle

    rack = bundle.tables["rack"]
    ids = rack.column("rack_id").to_numpy().copy()
    ids[0] = 999
    bundle.tables["rack"] = rack.set_column(1, "rack_id", pa.array(ids, type=pa.int32()))
    forged = write_bundle(tmp_path / "forged.ctincident", bundle)
    with pytest.raises(BundleError, match="names rack_id 999, the site has 16 rack entities"):
        import_file(forged, tmp_path / "lib")
    assert not (tmp_path / "lib" / "drill.ctincident").exists()
    with zipfile.ZipFile(forged) as zf:
        assert "rack.parquet" in zf.namelist()


def test_list_skips_unreadable_files(exported, tmp_path):
    lib = tmp_path / "lib"
    import_file(exported, lib)
    (lib / "junk.ctincident").write_text("not a bundle")
    names = [e.name for e in list_incidents(lib)]
    assert "drill" in names and "junk" not in names


@pytest.mark.slow
def test_imports_and_recordings_into_the_library_are_audited_as_the_login_name(exported, tmp_path, capsys):
    from ingest.store.audit import cli_user, list_entries
    from ingest.store.db import open_database

    lib, url = tmp_path / "lib", f"sqlite:///{tmp_path / 'twin.db'}"
    assert main(["incidents", "--dir", str(lib), "import", str(exported), "--db", url]) == 0
    assert main(["incidents", "--dir", str(lib), "import", str(exported), "--db", url, "--replace"]) == 0
    bad = tmp_path / "cut.ctincident"
    bad.write_bytes(exported.read_bytes()[:-200])
    assert main(["incidents", "--dir", str(lib), "import", str(bad), "--db", url, "--name", "cut"]) == 1
    assert (
        main(
            [
                "incidents",
                "--dir",
                str(lib),
                "record",
                "--site",
                "demo",
                "--name",
                "pump-drill",
                "--duration",
                "10",
                "--fault",
                "pump:H1-R01-K01-CDU@5",
                "--db",
                url,
            ]
        )
        == 0
    )
    capsys.readouterr()
    engine = open_database(url)
    try:
        entries = list(reversed(list_entries(engine)))
    finally:
        engine.dispose()
    assert [(e["action"], e["target"]) for e in entries] == [
        ("incident.import", "incident drill"),
        ("incident.import", "incident drill"),
        ("incident.record", "incident pump-drill"),
    ]
    assert {e["user_name"] for e in entries} == {cli_user()}
    first, again, recorded = entries
    assert first["before"] is None and again["before"] == {"replaced": True}
    assert first["after"]["site"] == "demo" and first["after"]["format"] == "bundle"
    assert recorded["after"]["faults"] == ["pump:H1-R01-K01-CDU@5"]
