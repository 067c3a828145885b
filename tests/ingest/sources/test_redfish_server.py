"""Crawl Redfish fixture trees served over HTTP at their /redfish/v1 paths."""

from __future__ import annotations

import pytest
from servers.http_threads import redfish_tree_route

from ingest.sources.redfish import ROOT, crawl, fetch_redfish, load_document, parse_tree

TREES = [
    "redfish-dmtf/public-cooling-unit",
    "redfish-dmtf/public-pdu",
    "redfish-dmtf/public-rackmount1",
    "redfish-nvidia-libredfish/nvidia_viking_dgx_h100",
]


def _files_tree(root) -> dict[str, dict]:
    docs = {}
    for p in root.rglob("index.json"):
        doc, _ = load_document(p.read_bytes())
        if doc is not None:
            docs[doc.get("@odata.id", str(p))] = doc
    return docs


@pytest.mark.parametrize("tree", TREES)
@pytest.mark.slow
def test_crawl_matches_reading_the_files(fixtures_dir, http_server, tree):
    root = fixtures_dir / tree
    server = http_server(redfish_tree_route(root))
    result = fetch_redfish(server.url, host="svc", max_pages=5000)
    assert result.ok, result.error
    from_files = parse_tree(_files_tree(root), "svc")
    got = sorted((k, label, m, v) for k, label, m, v, _ in result.batch.rows() if v == v)
    want = sorted((k, label, m, v) for k, label, m, v, _ in from_files.rows() if v == v)
    assert got == want
    assert len(got) > 0


@pytest.mark.slow
def test_dgx_pagination_pages_are_followed(fixtures_dir, http_server):
    root = fixtures_dir / "redfish-nvidia-libredfish/nvidia_viking_dgx_h100"
    server = http_server(redfish_tree_route(root))
    res = crawl(server.url)
    assert ROOT in res.docs
    for skip in (75, 150, 225):
        assert f"/redfish/v1/Chassis/DGX/Sensors?$skip={skip}" in res.docs
    assert server.hits["/redfish/v1/Chassis/DGX/Sensors"] == 4  # first page + 3 nextLinks
    # members the captured tree does not contain come back 404 and are recorded, not fatal
    assert all("404" in e for e in res.errors.values())


def test_page_budget_truncates_and_reports(fixtures_dir, http_server):
    server = http_server(redfish_tree_route(fixtures_dir / "redfish-dmtf/public-pdu"))
    result = fetch_redfish(server.url, max_pages=20)
    assert result.ok
    assert any("budget" in w for w in result.warnings)
    assert sum(server.hits.values()) == 20


def test_missing_root_is_a_failed_result(http_server):
    server = http_server(lambda path, n: None)
    result = fetch_redfish(server.url, retries=0)
    assert not result.ok and "404" in result.error and len(result.batch) == 0
