"""Listing the library reads metadata only: never a bundle's tables, from the database row while the file is unchanged.

Incident names become file names and are printed to terminals and pages: only a safe set
of characters is accepted, from a bundle's metadata as from ``--name``.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from ingest.replay import bundle as bundle_module
from ingest.replay import library
from ingest.replay.bundle import Bundle, BundleError, bundle_bytes, read_bundle
from ingest.replay.session import RecordSpec, record_synthetic
from ingest.store.db import open_database
from ingest.store.incidents import stored_incidents
from tests.ingest.replay import bombs
from twin.cli import main


@pytest.fixture(scope="module")
def drill(tmp_path_factory):
    spec = RecordSpec("demo", "drill-list", duration_s=20, tick_s=5, title="Drill")
    return record_synthetic(spec, tmp_path_factory.mktemp("out"))


def _no_tables(*_a, **_k):
    raise AssertionError("a table was read to list the library")


def test_listing_never_reads_a_table(drill, tmp_path, monkeypatch, capsys):
    lib = tmp_path / "lib"
    assert main(["incidents", "--dir", str(lib), "import", str(drill)]) == 0
    monkeypatch.setattr(bundle_module, "_read_table", _no_tables)
    monkeypatch.setattr(bundle_module, "_footer", _no_tables)
    library._metadata.clear()
    names = [e.name for e in library.list_incidents(lib)]
    assert "drill-list" in names and "colossus-generator-trip" in names  # the user's and the shipped ones


def test_an_imported_bundle_is_listed_from_its_database_row(drill, tmp_path, monkeypatch, capsys):
    lib, db = tmp_path / "lib", f"sqlite:///{tmp_path / 'store.db'}"
    assert main(["incidents", "--dir", str(lib), "import", str(drill), "--db", db]) == 0
    engine = open_database(db)
    try:
        rows = stored_incidents(engine)
    finally:
        engine.dispose()
    (row,) = rows
    stored = lib / "drill-list.ctincident"
    assert row.bundle_file == stored.name and row.bundle_bytes == stored.stat().st_size
    assert json.loads(row.metadata_json)["title"] == "Drill"
    opened = []
    real = bundle_module.read_metadata
    monkeypatch.setattr(library, "read_metadata", lambda p: opened.append(p.name) or real(p))
    library._metadata.clear()
    assert "drill-list" in [e.name for e in library.list_incidents(lib, rows)]
    assert "drill-list.ctincident" not in opened  # the row answered for it
    library._metadata.clear()
    stored.write_bytes(stored.read_bytes())  # same bytes, a new modification time: the file is read again
    assert "drill-list" in [e.name for e in library.list_incidents(lib, rows)]
    assert "drill-list.ctincident" in opened


@pytest.mark.parametrize(
    "name", ["bad\x1b[31mred", "two\nlines", "<b>bold</b>", "a/b", ".hidden", "", "x" * 121, "naïve", "sp ace"]
)
def test_unsafe_names_are_refused(drill, tmp_path, name):
    bundle = read_bundle(drill)
    with pytest.raises(BundleError, match="not a usable incident name"):
        bundle_bytes(Bundle({**bundle.metadata, "name": name}, bundle.site_toml, bundle.tables))
    with pytest.raises(BundleError, match="not a usable incident name"):
        library.library_path(name, tmp_path)


def test_a_bundle_naming_itself_with_escapes_is_refused_and_list_prints_no_escape(drill, tmp_path, capsys):
    bundle = read_bundle(drill)
    meta = {**bundle.metadata, "name": "ok-name", "title": "fine\x1b]0;pwned\x07\ntitle"}
    good = Bundle(meta, bundle.site_toml, bundle.tables)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "ok-name.ctincident").write_bytes(bundle_bytes(good))
    # a hand-made file whose metadata names it with an ANSI escape: checksums fine, name refused
    members, manifest = bombs._members(bundle_bytes(good))
    members["metadata.json"] = json.dumps({**meta, "name": "\x1b[2Jx"}).encode()
    manifest["members"]["metadata.json"] = {
        "bytes": len(members["metadata.json"]),
        "sha256": hashlib.sha256(members["metadata.json"]).hexdigest(),
    }
    text = json.dumps(manifest).encode()
    evil_path = bombs._finish(tmp_path / "evil.ctincident", members, lambda: iter([text]), len(text))
    with pytest.raises(BundleError, match="not a usable incident name"):
        read_bundle(evil_path)
    assert main(["incidents", "--dir", str(lib), "import", str(evil_path)]) == 1
    capsys.readouterr()
    assert main(["incidents", "--dir", str(lib), "list"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "fine\\x1b]0;pwned\\x07\\ntitle" in out
    assert len([line for line in out.splitlines() if "ok-name" in line]) == 1
