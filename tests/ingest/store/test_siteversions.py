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


def test_processes_starting_at_once_record_one_version(db_url):
    """Shards of one site start together: every racer gets the same single version."""
    import threading

    from ingest.store.db import open_database
    from ingest.store.siteversions import record_site_version

    engine = open_database(db_url)
    results, errors = [], []

    def race():
        try:
            results.append(record_site_version(engine, "racy", "[site]\nname = 'racy'\n").version)
        except Exception as exc:  # noqa: BLE001 — collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=race) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    engine.dispose()
    assert errors == [] and results == [1] * 6
