"""Incidents in the database: an import or a recording into the library adds (or updates) the Incident row."""

import json

from ingest.replay.session import RecordSpec, record_synthetic
from ingest.store.db import open_database
from ingest.store.incidents import record_incident, stored_incidents
from twin.cli import main
from twin.quantities import BY_NAME, NOT_QUANTITIES


def test_import_records_the_incident_in_the_database_once(tmp_path, capsys):
    bundle = record_synthetic(RecordSpec("demo", "drill-db", duration_s=20, tick_s=5, title="Drill"), tmp_path / "out")
    db = f"sqlite:///{tmp_path / 'store.db'}"
    lib = str(tmp_path / "lib")
    assert main(["incidents", "--dir", lib, "import", str(bundle), "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"name": "drill-db"}
    assert main(["incidents", "--dir", lib, "import", str(bundle), "--name", "drill-db-2", "--db", db]) == 0
    engine = open_database(db)
    try:
        rows = {r.name: r for r in stored_incidents(engine)}
        assert set(rows) == {"drill-db", "drill-db-2"}
        assert rows["drill-db"].site_name == "demo" and rows["drill-db"].description == "Drill"
        assert (rows["drill-db"].end_at - rows["drill-db"].start_at).total_seconds() == 20
        again = record_incident(
            engine,
            {
                "name": "drill-db",
                "site_name": "demo",
                "title": "Drill, renamed",
                "start": "2024-07-22T15:00:00+00:00",
                "end": "2024-07-22T15:01:00+00:00",
            },
        )
        assert again.id == rows["drill-db"].id and len(stored_incidents(engine)) == 2
    finally:
        engine.dispose()


def test_a_database_that_cannot_be_opened_warns_and_keeps_the_file(tmp_path, capsys):
    bundle = record_synthetic(RecordSpec("demo", "drill-nodb", duration_s=10, tick_s=5), tmp_path / "out")
    bad = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'x.db'}"
    assert main(["incidents", "--dir", str(tmp_path / "lib"), "import", str(bundle), "--db", bad]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "drill-nodb" and "not recorded in the database" in captured.err
    assert (tmp_path / "lib" / "drill-nodb.ctincident").exists()


def test_list_shows_files_and_database_rows_and_where_each_is_kept(tmp_path, capsys):
    spec = RecordSpec("demo", "drill-list", duration_s=10, tick_s=5, title="Drill")
    bundle = record_synthetic(spec, tmp_path / "out")
    db = f"sqlite:///{tmp_path / 'store.db'}"
    lib = str(tmp_path / "lib")
    assert main(["incidents", "--dir", lib, "import", str(bundle), "--db", db]) == 0
    engine = open_database(db)
    try:  # a row whose bundle is not in the library (e.g. recorded on another machine)
        record_incident(
            engine,
            {
                "name": "elsewhere",
                "site_name": "demo",
                "title": "Kept in the database",
                "start": "2024-07-23T15:00:00+00:00",
                "end": "2024-07-23T15:05:00+00:00",
            },
        )
    finally:
        engine.dispose()
    capsys.readouterr()
    assert main(["incidents", "--dir", lib, "list", "--db", db, "--json"]) == 0
    listed = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert listed["drill-list"]["kept"] == "library file + database" and listed["drill-list"]["in_database"] is True
    assert listed["elsewhere"]["kept"] == "database" and listed["elsewhere"]["path"] is None
    assert listed["elsewhere"]["title"] == "Kept in the database" and listed["elsewhere"]["shipped"] is False
    assert listed["colossus-generator-trip"]["kept"] == "shipped file" and listed["colossus-generator-trip"]["shipped"]
    assert list(listed)[-1] == "elsewhere"  # files first, then rows without a file
    keys = {k for e in listed.values() for k in e}
    assert sorted(k for k in keys if k not in BY_NAME and k not in NOT_QUANTITIES) == []
    assert main(["incidents", "--dir", lib, "list", "--db", db]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["NAME", "SITE", "START", "END", "KEPT"]
    row = {line.split()[0]: line for line in lines[1:]}
    assert "library file + database" in row["drill-list"] and " database " in row["elsewhere"]
    assert "shipped file" in row["colossus-cdu-pump-failure"]


def test_list_without_a_readable_database_lists_the_files_with_a_warning(tmp_path, capsys):
    bad = f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'x.db'}"
    assert main(["incidents", "--dir", str(tmp_path / "lib"), "list", "--db", bad, "--json"]) == 0
    captured = capsys.readouterr()
    assert "listing the incident files only" in captured.err
    assert {e["kept"] for e in json.loads(captured.out)} == {"shipped file"}
