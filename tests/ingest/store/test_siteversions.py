"""Site-file versions on SQLite and PostgreSQL."""

from ingest.store.db import open_database
from ingest.store.siteversions import record_site_version


def test_versions_count_distinct_contents_per_site(db_url):
    engine = open_database(db_url)
    first = record_site_version(engine, "demo", "[site]\nname = 'demo'\n")
    again = record_site_version(engine, "demo", "[site]\nname = 'demo'\n")
    edited = record_site_version(engine, "demo", "[site]\nname = 'demo'  # edited\n")
    other = record_site_version(engine, "colossus", "[site]\nname = 'colossus'\n")
    assert (first.version, again.id, edited.version, other.version) == (1, first.id, 2, 1)
    assert edited.content.endswith("# edited\n") and edited.content_sha256 != first.content_sha256
    engine.dispose()
