"""Incident import through the API: bundles above the JSON cap, its own cap, the CLI's validation, roles and audit."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from dashboard.api.routing import MAX_BODY_BYTES
from dashboard.api.uploads import MAX_BYTES_CONFIG
from ingest.replay import bundle as bundle_module
from ingest.replay.bundle import bundle_bytes, read_bundle
from ingest.store.audit import list_entries
from ingest.store.incidents import stored_incidents
from tests.dashboard.api_hub import bearer_headers, demo_hub_with_users
from twin.site.catalogue import DATA_DIR

URL = "/api/v1/incidents/import"
# the largest shipped bundle (1.3 MB): larger than the API's 1 MB JSON cap
SHIPPED = DATA_DIR / "incidents" / "colossus-hot-afternoon.ctincident"
OCTETS = "application/octet-stream"
# nvidia-smi --query-gpu CSV as in the import tests (written from the documented layout)
CSV = """timestamp, index, name, temperature.gpu, temperature.memory, power.draw [W], utilization.gpu [%], clocks.sm [MHz]
2024/07/22 15:00:00.100, 0, NVIDIA H100 80GB HBM3, 61, 55, 650.12 W, 97 %, 1980 MHz
2024/07/22 15:00:00.100, 1, NVIDIA H100 80GB HBM3, 63, 57, 655.40 W, 98 %, 1980 MHz
2024/07/22 15:00:05.100, 0, NVIDIA H100 80GB HBM3, 62, 55, 648.00 W, 96 %, 1965 MHz
2024/07/22 15:00:05.100, 1, NVIDIA H100 80GB HBM3, 64, 58, 660.00 W, 99 %, 1980 MHz
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    folder = tmp_path_factory.mktemp("library")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CLUSTERTWIN_INCIDENTS", str(folder))
        yield folder


@pytest.fixture(scope="module")
def twin(tmp_path_factory, library):
    hub = demo_hub_with_users(tmp_path_factory.mktemp("api-import"), 2)
    yield hub
    hub.db.dispose()


@pytest.fixture(scope="module")
def tokens(twin) -> dict[str, dict]:
    return bearer_headers(twin)


@pytest.fixture(scope="module")
def app(twin, tokens):
    from dashboard.app import app_for_hub

    return app_for_hub(twin, tick_ms=60_000)


@pytest.fixture
def client(app):
    app.server.config.pop(MAX_BYTES_CONFIG, None)
    yield app.server.test_client()
    app.server.config.pop(MAX_BYTES_CONFIG, None)


def _post(client, data, headers, query="", **kw):
    return client.post(f"{URL}{query}", data=data, content_type=kw.pop("content_type", OCTETS), headers=headers, **kw)


def _library(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.slow
def test_a_bundle_larger_than_the_json_cap_is_imported_recorded_and_audited(client, twin, tokens, library):
    data = SHIPPED.read_bytes()
    assert len(data) > MAX_BODY_BYTES
    r = _post(client, data, tokens["otto"], "?name=trip-copy")
    assert r.status_code == 200, r.get_json()
    assert r.get_json() == {
        "name": "trip-copy",
        "site": "colossus",
        "start": "2024-07-22T20:00:00+00:00",
        "end": "2024-07-22T20:10:00+00:00",
        "replaced": False,
        "skipped": [],
    }
    assert read_bundle(library / "trip-copy.ctincident").metadata["name"] == "trip-copy"
    assert "trip-copy" in {
        i["name"] for i in client.get("/api/v1/incidents?limit=1000", headers=tokens["vera"]).get_json()["items"]
    }
    assert "trip-copy" in {row.name for row in stored_incidents(twin.db)}
    entry = next(e for e in list_entries(twin.db) if e["action"] == "incident.import")
    assert (entry["user_name"], entry["target"]) == ("otto", "incident trip-copy")
    assert entry["after"]["site"] == "colossus" and entry["after"]["format"] == "bundle" and entry["before"] is None
    # the same name again: 409 unless replace=true
    assert _post(client, data, tokens["otto"], "?name=trip-copy").status_code == 409
    r = _post(client, data, tokens["otto"], "?name=trip-copy&replace=true")
    assert r.status_code == 200 and r.get_json()["replaced"] is True


def _tampered(data: bytes) -> bytes:
    """The shipped bundle with one byte of a table changed, written as a sound zip (only the manifest can tell)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            member = src.read(info)
            if info.filename == "rack.parquet":
                member = member[:100] + bytes([member[100] ^ 0xFF]) + member[101:]
            dst.writestr(info.filename, member)
        dst.comment = src.comment
    return out.getvalue()


def _foreign() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("readme.txt", "not an incident")
    return out.getvalue()


def _escaping_name(monkeypatch) -> bytes:
    """A well-formed bundle whose metadata names '../../escaped' (bundle_bytes refuses to write one itself)."""
    b = read_bundle(SHIPPED)
    b.metadata["name"] = "../../escaped"
    with monkeypatch.context() as mp:
        mp.setattr(bundle_module, "_check_metadata", lambda meta: None)
        return bundle_bytes(b)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda data, mp: data[: len(data) // 2], "not an incident bundle (not a zip archive, or truncated)"),
        (lambda data, mp: _foreign(), "without the clustertwin-incident mark"),
        (lambda data, mp: _tampered(data), "member rack.parquet fails its checksum"),
        (lambda data, mp: _escaping_name(mp), "is not a usable incident name"),
    ],
)
@pytest.mark.slow
def test_a_damaged_foreign_tampered_or_escaping_bundle_is_422_and_touches_nothing(
    client, twin, tokens, library, monkeypatch, make, message
):
    before, audited, rows = _library(library), len(list_entries(twin.db)), len(stored_incidents(twin.db))
    r = _post(client, make(SHIPPED.read_bytes(), monkeypatch), tokens["otto"])
    assert r.status_code == 422 and message in r.get_json()["error"], r.get_json()
    assert "\n" not in r.get_json()["error"] and "/tmp" not in r.get_json()["error"]
    assert _library(library) == before
    assert not (library.parent / "escaped.ctincident").exists()
    assert len(list_entries(twin.db)) == audited and len(stored_incidents(twin.db)) == rows


class Unreadable(io.RawIOBase):
    """A body that fails the test if the server reads it."""

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return 0

    def seek(self, offset, whence=0):
        return 0

    def readinto(self, buffer):
        raise AssertionError("the server read a body it should have refused by its length")


def test_the_route_has_its_own_cap_refused_before_reading(app, client, tokens, library):
    before = _library(library)
    app.server.config[MAX_BYTES_CONFIG] = 2 * MAX_BODY_BYTES
    r = client.post(
        URL,
        input_stream=Unreadable(),
        content_type=OCTETS,
        headers=tokens["otto"],
        environ_overrides={"CONTENT_LENGTH": str(2 * MAX_BODY_BYTES + 1)},
    )
    assert r.status_code == 413 and "larger than the 2097152 bytes" in r.get_json()["error"], r.get_data()
    app.server.config[MAX_BYTES_CONFIG] = MAX_BODY_BYTES  # the shipped bundle is 1.3 MB
    r = _post(client, SHIPPED.read_bytes(), tokens["otto"], "?name=too-big")
    assert r.status_code == 413
    # a body without a declared length (chunked) is cut off at the cap
    r = client.post(
        URL + "?name=too-big",
        input_stream=io.BytesIO(SHIPPED.read_bytes()),
        content_type=OCTETS,
        headers={**tokens["otto"], "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},
    )
    assert r.status_code == 413, r.get_json()
    assert _library(library) == before


def test_the_apps_2_mb_request_cap_does_not_apply_to_uploads(client, tokens):
    from dashboard.app import MAX_REQUEST_BYTES

    r = _post(client, b"\x01" * (MAX_REQUEST_BYTES + 1), tokens["otto"])
    assert r.status_code == 422 and "not an incident bundle" in r.get_json()["error"]


def test_an_upload_is_not_a_form_and_not_empty(client, tokens):
    r = _post(
        client,
        {"file": (io.BytesIO(SHIPPED.read_bytes()), "x.ctincident")},
        tokens["otto"],
        content_type="multipart/form-data",
    )
    assert r.status_code == 415 and "--data-binary" in r.get_json()["error"]
    assert _post(client, b"", tokens["otto"]).status_code == 400


def test_a_zip_of_recordings_keeps_only_plain_member_names(client, twin, tokens, library):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("../../../h1-r01-k01-n0.csv", CSV)
        zf.writestr("logs/not-in-demo.csv", CSV)
    r = _post(client, out.getvalue(), tokens["otto"], "?format=nvidia-smi-csv&site=demo&name=csv-upload")
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["skipped"] == ["host 'not-in-demo': not a node of site 'demo'"]
    gpu = read_bundle(library / "csv-upload.ctincident").frame("gpu")
    assert sorted(gpu["gpu_id"].unique()) == [0, 1]
    assert not (library.parent / "h1-r01-k01-n0.csv").exists()


def test_a_single_recording_file_is_named_after_its_host(client, tokens, library):
    r = _post(client, CSV.encode(), tokens["otto"], "?format=nvidia-smi-csv&site=demo&host=h1-r01-k01-n0")
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["name"] == "nvidia-smi-csv-h1-r01-k01-n0.csv" and r.get_json()["skipped"] == []


@pytest.mark.parametrize(
    "query, status, message",
    [
        ("?format=prometheus", 400, "query.format: Input should be"),
        ("?format=nvidia-smi-csv&site=..%2Fetc", 400, "query.site: String should match pattern"),
        ("?format=nvidia-smi-csv&site=pyproject", 400, "query.site: no reference site 'pyproject'"),
        ("?format=dcgmi-dmon&site=demo", 400, "query.start: a dcgmi dmon recording needs its start"),
        ("?name=..%2F..%2Fescaped", 400, "query.name: String should match pattern"),
        ("?format=nvidia-smi-csv&site=demo&host=..", 400, "query.host: String should match pattern"),
    ],
)
def test_bad_parameters_are_400(client, tokens, query, status, message):
    r = _post(client, CSV.encode(), tokens["otto"], query)
    assert r.status_code == status and r.get_json()["error"].startswith(message), r.get_json()


def test_a_garbled_recording_is_422(client, tokens, library):
    before = _library(library)
    r = _post(client, b"\x00\xff garbage", tokens["otto"], "?format=nvidia-smi-xml&site=demo")
    assert r.status_code == 422 and "/tmp" not in r.get_json()["error"], r.get_json()
    assert _library(library) == before


def test_only_an_operator_imports(client, tokens, library):
    before = _library(library)
    r = _post(client, SHIPPED.read_bytes(), tokens["vera"], "?name=viewers")
    assert r.status_code == 403 and "operator" in r.get_json()["error"]
    assert _post(client, SHIPPED.read_bytes(), {}, "?name=anonymous").status_code == 401
    assert _library(library) == before


def test_openapi_describes_the_upload(client, tokens):
    doc = client.get("/api/v1/openapi.json", headers=tokens["vera"]).get_json()
    op = doc["paths"][URL]["post"]
    assert "application/octet-stream" in op["requestBody"]["content"]
    assert {"403", "409", "413", "415", "422"} <= set(op["responses"])
    assert json.dumps(op).count("prometheus") >= 1


@pytest.mark.slow
def test_over_http_a_chunked_upload_streams_past_the_json_caps(app, tokens, library):
    import requests

    from dashboard.app import MAX_REQUEST_BYTES
    from tests.dashboard.conftest import ServedApp

    def chunks(total: int):
        for _ in range(total // 2**16):
            yield b"\x02" * 2**16

    served = ServedApp(app)
    try:
        r = requests.post(
            served.url(URL),
            data=chunks(MAX_REQUEST_BYTES + 2**20),
            timeout=60,
            headers={**tokens["otto"], "Content-Type": OCTETS},
        )
        assert r.status_code == 422 and "not an incident bundle" in r.json()["error"]
        r = requests.post(
            served.url(URL + "?name=trip-http"),
            data=SHIPPED.read_bytes(),
            timeout=60,
            headers={**tokens["otto"], "Content-Type": OCTETS},
        )
        assert r.status_code == 200 and r.json()["name"] == "trip-http"
    finally:
        served.stop()


@pytest.mark.parametrize("kind", ["manifest", "rows"])
@pytest.mark.slow
def test_a_bundle_bomb_is_refused_and_not_kept(client, tokens, library, tmp_path, kind):
    from tests.ingest.replay import bombs

    base = SHIPPED.read_bytes()
    if kind == "manifest":
        path = bombs.manifest_bomb(base, tmp_path / "bomb.ctincident", spaces=64 * 2**20)
    else:
        path = bombs.rows_bomb(base, tmp_path / "bomb.ctincident", rows=9_000_000)
    before = _library(library)
    r = _post(client, path.read_bytes(), tokens["otto"], "?name=bomb")
    assert r.status_code == 422, r.get_json()
    assert ("manifest.json is" if kind == "manifest" else "declares 9000000 rows, at most") in r.get_json()["error"]
    assert _library(library) == before
    listed = client.get("/api/v1/incidents?limit=1000", headers=tokens["vera"])
    assert listed.status_code == 200 and "bomb" not in {e["name"] for e in listed.get_json()["items"]}
