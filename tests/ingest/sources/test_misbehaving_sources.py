"""Sources that misbehave: trickled bodies, endless headers, huge bodies, bad labels, garbage, deep JSON.

Every case must end within a bounded time (the deadline plus a second) and bounded
memory, with a clear one-line error or a correct partial result — never a traceback.
Servers are real (threads on 127.0.0.1) and stop writing when the test ends.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import socket
import time

import pytest

from ingest.commands import register
from ingest.sources import http
from ingest.sources.dcgm import fetch_dcgm, parse_dcgm
from ingest.sources.ipmi import fetch_ipmi
from ingest.sources.prometheus_api import fetch_samples, parse_response, to_samples
from ingest.sources.redfish import fetch_redfish, load_document

GOOD = 'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="n1"} 40\nDCGM_FI_DEV_GPU_TEMP{gpu="1",Hostname="n1"} 41\n'


def run_cli(argv: list[str], capsys) -> tuple[int, dict]:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    out = capsys.readouterr().out
    return code, json.loads(out)


def _wait(stopping, seconds: float) -> bool:
    """Sleep ``seconds``; True when the server is stopping (the writer must return)."""
    return stopping.wait(seconds)


def trickle_body(content_length: int):
    def write(wfile, stopping):
        wfile.write(f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {content_length}\r\n\r\n".encode())
        wfile.write(GOOD.encode())
        wfile.flush()
        while not _wait(stopping, 0.05):
            wfile.write(b"#")
            wfile.flush()

    return write


def headers_forever(wfile, stopping):
    wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    wfile.flush()
    while not _wait(stopping, 0.05):  # one byte of one endless header line at a time
        wfile.write(b"a")
        wfile.flush()


def many_headers_slowly(wfile, stopping):
    wfile.write(b"HTTP/1.1 200 OK\r\n")
    i = 0
    while not _wait(stopping, 0.02):
        wfile.write(f"X-H{i}: v\r\n".encode())
        wfile.flush()
        i += 1


def fast_endless_body(wfile, stopping):
    wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
    line = GOOD.encode() * 4096
    while not stopping.is_set():
        wfile.write(line)


def huge_content_length(wfile, stopping):
    wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2000000000\r\n\r\n")
    line = GOOD.encode() * 4096
    while not stopping.is_set():
        wfile.write(line)


@pytest.mark.parametrize(
    "writer",
    [trickle_body(1_000_000), headers_forever, many_headers_slowly],
    ids=["trickled-body", "endless-header-line", "header-after-header"],
)
@pytest.mark.slow
def test_slow_answers_end_at_the_deadline(http_server, writer):
    server = http_server(lambda path, n: writer)
    t0 = time.monotonic()
    result = fetch_dcgm(server.url + "/metrics", timeout_s=1.0, retries=0)
    elapsed = time.monotonic() - t0
    assert not result.ok and "timed out" in result.error, result.error
    assert elapsed < 2.0


@pytest.mark.slow
def test_retries_share_the_overall_deadline(http_server):
    server = http_server(lambda path, n: headers_forever)
    t0 = time.monotonic()
    with pytest.raises(http.FetchError, match="timed out"):
        http.get(server.url + "/", timeout_s=1.0, deadline_s=1.5, retries=5, backoff_s=0.01)
    assert time.monotonic() - t0 < 2.5


@pytest.mark.parametrize("source", ["dcgm", "prometheus", "redfish"])
@pytest.mark.parametrize(
    "writer",
    [trickle_body(2_000_000_000), trickle_body(1_000_000), headers_forever],
    ids=["huge-length-trickled", "trickled", "endless-headers"],
)
@pytest.mark.slow
def test_cli_timeout_bounds_the_whole_read(http_server, capsys, source, writer):
    server = http_server(lambda path, n: writer)
    target = server.url + ("/metrics" if source == "dcgm" else "")
    t0 = time.monotonic()
    code, doc = run_cli(["ingest", "once", "--source", source, "--target", target, "--timeout", "1", "--json"], capsys)
    elapsed = time.monotonic() - t0
    assert code == 1 and not doc["ok"]
    assert "timed out" in doc["error"] or "too large" in doc["error"], doc["error"]
    assert elapsed < 2.0, elapsed


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@pytest.mark.parametrize("writer", [fast_endless_body, huge_content_length], ids=["no-length", "length-2GB"])
def test_huge_bodies_stop_at_the_size_cap(http_server, writer):
    server = http_server(lambda path, n: writer)
    before = _max_rss_mb()
    t0 = time.monotonic()
    result = fetch_dcgm(server.url + "/metrics", timeout_s=10.0, retries=2, max_bytes=8 * 2**20)
    assert time.monotonic() - t0 < 5.0
    assert not result.ok and "too large" in result.error and "8388608-byte cap" in result.error
    assert result.attempts == 1  # a too-large answer is not retried
    assert _max_rss_mb() - before < 200  # the default caps are tens of MB; 15 GB before


def test_cli_max_mb_is_the_cap(http_server, capsys):
    server = http_server(lambda path, n: (200, "text/plain", GOOD * 2000))  # ~100 KB
    code, doc = run_cli(
        ["ingest", "once", "--source", "dcgm", "--target", server.url + "/metrics", "--max-mb", "0.05", "--json"],
        capsys,
    )
    assert code == 1 and "too large" in doc["error"]
    code, doc = run_cli(["ingest", "once", "--source", "dcgm", "--target", server.url + "/metrics", "--json"], capsys)
    assert code == 0 and doc["counts"]["samples"] == 2 and doc["counts"]["duplicates"] == 3998


# --- one bad label loses one series, not the page ------------------------------------------
def test_dcgm_gpu_index_beyond_int32_skips_that_series():
    text = 'DCGM_FI_DEV_GPU_TEMP{gpu="2147483648",Hostname="n1"} 46\n' + GOOD
    batch = parse_dcgm(text)
    assert len(batch) == 2 and sorted(batch.value.tolist()) == [40.0, 41.0]
    assert batch.counts.malformed_lines == 1


def test_prometheus_gpu_index_beyond_int32_skips_that_series():
    def series(gpu: str, value: str) -> dict:
        return {"metric": {"__name__": "DCGM_FI_DEV_GPU_TEMP", "gpu": gpu, "Hostname": "n1"}, "value": [1.0, value]}

    doc = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [series("99999999999999999999", "46"), series("0", "40"), series("1", "41")],
        },
    }
    batch = to_samples(parse_response(json.dumps(doc)))
    assert len(batch) == 2 and sorted(batch.value.tolist()) == [40.0, 41.0]
    assert batch.counts.malformed_lines == 1


# --- garbage is a failed read, with the reason --------------------------------------------
def _garbage_pages() -> dict[str, tuple[bytes, str]]:
    rng = random.Random(13)
    return {
        "random-bytes": (bytes(rng.randrange(256) for _ in range(20_000)), "text/plain"),
        "utf16": (GOOD.encode("utf-16"), "text/plain"),
        "html": (b"<html>\n<body>\n<h1>502 Bad Gateway</h1>\n</body>\n</html>\n", "text/html"),
    }


@pytest.mark.parametrize("name", list(_garbage_pages()))
def test_garbage_pages_are_failed_reads(http_server, capsys, name):
    body, ctype = _garbage_pages()[name]
    server = http_server(lambda path, n: (200, ctype, body))
    result = fetch_dcgm(server.url + "/metrics", retries=0)
    assert not result.ok and "malformed" in result.error and "not a valid page" in result.error
    assert result.counts.malformed_lines > 0  # the counts still say what was seen
    code, doc = run_cli(["ingest", "once", "--source", "dcgm", "--target", server.url + "/metrics", "--json"], capsys)
    assert code == 1 and not doc["ok"] and "malformed" in doc["error"]


def test_a_few_malformed_lines_are_still_a_good_read():
    from ingest.sources.samples import FetchResult, judged

    batch = parse_dcgm(GOOD + "garbage line\n")
    result = judged(FetchResult("dcgm", "x", True, batch))
    assert result.ok and len(result.batch) == 2 and batch.counts.malformed_lines == 1


def test_garbage_file_via_cli(tmp_path, capsys):
    f = tmp_path / "noise.prom"
    f.write_bytes(_garbage_pages()["random-bytes"][0])
    code, doc = run_cli(["ingest", "once", "--source", "dcgm", "--target", str(f), "--json"], capsys)
    assert code == 1 and "malformed" in doc["error"]


# --- JSON nested without end ----------------------------------------------------------------
DEEP = "[" * 200_000 + "]" * 200_000


def test_deep_redfish_document_is_a_clear_error():
    doc, err = load_document('{"a":' * 200_000 + "1" + "}" * 200_000, "/redfish/v1")
    assert doc is None and "nested too deep" in err
    doc, err = load_document('{"a":' * 40 + "1" + "}" * 40, "/redfish/v1")  # decodes, but beyond the cap
    assert doc is None and "nested too deep" in err


def test_deep_prometheus_answer_is_a_clear_error():
    resp = parse_response(DEEP)
    assert not resp.ok and "nested too deep" in resp.error


def test_redfish_service_with_deep_root_fails_cleanly(http_server):
    server = http_server(lambda path, n: (200, "application/json", '{"x":' * 200_000 + "1" + "}" * 200_000))
    result = fetch_redfish(server.url, "bmc", timeout_s=5.0, retries=0)
    assert not result.ok and "nested too deep" in result.error


def test_prometheus_fetch_of_deep_answer_fails_cleanly(http_server):
    server = http_server(lambda path, n: (200, "application/json", DEEP))
    result = fetch_samples(server.url, retries=0)
    assert not result.ok and "nested too deep" in result.error


# --- IPMI obeys --timeout ----------------------------------------------------------------------
@pytest.mark.ipmi
def test_ipmi_timeout_is_the_deadline(capsys):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:  # a BMC that never answers
        silent.bind(("127.0.0.1", 0))
        port = silent.getsockname()[1]
        t0 = time.monotonic()
        result = fetch_ipmi(f"ipmi://admin:pw@127.0.0.1:{port}", "n1", timeout_s=1.0, deadline_s=1.0, retries=3)
        assert time.monotonic() - t0 < 2.0
        assert not result.ok and ("timed out" in result.error or "exited" in result.error)
        t0 = time.monotonic()
        code, doc = run_cli(
            [
                "ingest",
                "once",
                "--source",
                "ipmi",
                "--target",
                f"ipmi://admin:pw@127.0.0.1:{port}",
                "--timeout",
                "1",
                "--json",
            ],
            capsys,
        )
        assert time.monotonic() - t0 < 2.0
        assert code == 1 and not doc["ok"]


# --- shapes the property tests found --------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        '{"status": "success", "data": {"resultType": "vector", "result": []}, "warnings": true}',
        '{"status": "success", "data": {"resultType": "matrix", "result": [null, {"metric": {}, "values": [{}, [0.0, "0"]]}]}}',
        '{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": 7}]}}',
        '{"status": "success", "data": {"resultType": "scalar", "result": [1' + "0" * 400 + ', "1"]}}',
        '{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {"__name__": "DCGM_FI_DEV_GPU_TEMP"},'
        ' "value": [1, 1' + "0" * 400 + "]}]}}",
        '{"status": "success", "data": {"resultType": ["vector"], "result": []}}',
    ],
)
def test_odd_prometheus_answers_never_raise(text):
    resp = parse_response(text)
    if resp.ok:
        to_samples(resp)
    else:
        assert resp.error and len(resp.error) < 300


def test_odd_redfish_shapes_never_raise():
    from ingest.sources.redfish import parse_tree

    docs = {
        "/redfish/v1": {"@odata.type": [None]},
        "/redfish/v1/Systems/1/Processors/GPU" + "9" * 30: {
            "@odata.type": "#Processor.v1.Processor",
            "ProcessorType": "GPU",
            "Id": "GPU" + "9" * 5000,
        },
    }
    batch = parse_tree(docs, "n0")
    assert len(batch) == 0
