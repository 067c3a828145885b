"""Fuzz the API with schemathesis against its own OpenAPI document, on a live app served on 127.0.0.1.

Every operation gets valid and invalid inputs generated from the document; every answer
must be a 2xx/4xx the document declares, in its declared media type and schema, never a
500.  Examples per operation are bounded so the test runs in about a minute.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

START = datetime(2026, 7, 15, 14, 0, 0, tzinfo=UTC)
EXAMPLES_PER_OPERATION = 20
WHATIF = '[scenario]\nname = "a"\n\n[[edits]]\nop = "fail"\nelements = ["H1-R01-K01-CDU"]\n'
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture(scope="module")
def live_api(tmp_path_factory):
    from dashboard.app import app_for_hub
    from ingest.live.runtime import build_hub
    from tests.dashboard.conftest import ServedApp

    db = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    hub = build_hub("demo", f"sqlite:///{db}", faults=("xid:h1-r01-k01-n0/0=79",), start=START)
    for k in range(3):
        hub.step(START + timedelta(seconds=k + 1))
    with pytest.MonkeyPatch.context() as mp:  # imports the fuzzer manages to make land here, not in var/
        mp.setenv("CLUSTERTWIN_INCIDENTS", str(tmp_path_factory.mktemp("fuzz-incidents")))
        app = app_for_hub(hub)
        # a scenario with an edit, so that generated requests to scenario "a" find one to change
        assert app.server.test_client().post("/api/v1/whatif/scenarios", json={"toml": WHATIF}).status_code == 200
        served = ServedApp(app)
        yield served
        served.stop()
    hub.db.dispose()


def _operations(with_inputs: bool = False) -> list[tuple[str, str]]:
    """(method, path) of the routes (``with_inputs``: those taking parameters or a body, which can be negated)."""
    from dashboard.api.routing import API_PREFIX, api

    return [(r.method, API_PREFIX + r.path) for r in api.routes if not with_inputs or r.params or r.query or r.body]


@pytest.fixture(scope="module")
def api_schema(live_api):
    return schemathesis.openapi.from_url(live_api.url("/api/v1/openapi.json"))


@pytest.mark.slow
def test_document_is_loaded_with_every_route(api_schema):
    loaded = {(op.ok().method.upper(), op.ok().path) for op in api_schema.get_all_operations()}
    assert loaded == set(_operations())


@pytest.mark.parametrize(
    "method, path, mode",
    [(*op, GenerationMode.POSITIVE) for op in _operations()]
    + [(*op, GenerationMode.NEGATIVE) for op in _operations(with_inputs=True)],
)
@pytest.mark.slow
def test_api_never_fails_and_answers_as_documented(api_schema, live_api, method, path, mode):
    operation = api_schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    def run(case):
        case.call_and_validate(base_url=live_api.base_url, checks=CHECKS, timeout=60)

    run()
