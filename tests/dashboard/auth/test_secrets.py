"""Secrets never leak: BMC passwords in source URLs, the database password, the session key.

A live twin runs on a real PostgreSQL reached with a password in its URL, with a Redfish
and an IPMI source whose URLs carry BMC passwords (both unreachable, so their failures are
reported).  Every page (as an admin, who sees the most), the error pages, the log at DEBUG
level and the ``--json`` outputs of the commands are searched for the planted secrets.
"""

from __future__ import annotations

import json
import logging
import time

import dash
import pytest
from sqlalchemy.engine import make_url

from ingest.store import audit
from ingest.store.users import add_user
from tests.dashboard.auth.conftest import Client
from tests.dashboard.auth.test_callback_roles import open_page
from twin.cli import main

BMC_SECRETS = ("bmc-secret-ipmi-1234", "bmc-secret-redfish-5678")
DB_SECRET = "db-secret-9012"
SOURCES = (
    "synthetic",
    f"ipmi=ipmi://admin:{BMC_SECRETS[0]}@127.0.0.1:9#h1-r01-k01-n0",
    f"redfish=https://root:{BMC_SECRETS[1]}@127.0.0.1:9/redfish/v1#h1-r01-k01-n1",
)


@pytest.fixture()
def secret_db_url(postgres_url):
    """The test PostgreSQL (trust authentication) reached through a URL that carries a password."""
    from sqlalchemy import create_engine, text

    engine = create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    engine.dispose()
    return make_url(postgres_url).set(password=DB_SECRET).render_as_string(hide_password=False)


def leaks(text: str, secrets: tuple[str, ...]) -> list[str]:
    return [s for s in secrets if s in text]


@pytest.mark.postgres
def test_no_secret_in_pages_errors_logs_or_json(secret_db_url, caplog, capsys):
    from dashboard.app import app_for_hub
    from ingest.live.runtime import start_hub

    caplog.set_level(logging.DEBUG)
    runtime = start_hub("demo", secret_db_url, SOURCES, faults=("xid:h1-r01-k02-n0/5=79",))
    try:
        add_user(runtime.hub.db, "ada", "admin", "admin-password-1")
        app = app_for_hub(runtime.hub, tick_ms=60_000)
        secrets = BMC_SECRETS + (DB_SECRET, app.server.secret_key, "admin-password-1")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not runtime.hub.view.alerts():
            time.sleep(0.5)
        # both BMC pollers have failed at least once (the Redfish one first polls after its 30 s interval)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(
            any(kind in r.getMessage() and "127.0.0.1:9" in r.getMessage() for r in caplog.records)
            for kind in ("redfish", "ipmi")
        ):
            time.sleep(0.5)
        assert all(any(kind in r.getMessage() for r in caplog.records) for kind in ("redfish", "ipmi"))
        audit.record(
            runtime.hub.db,
            "cli:test",
            "source.change",
            "source ipmi",
            None,
            {"target": "ipmi://admin@127.0.0.1:9", "password": BMC_SECRETS[0]},
        )
        anonymous, admin = Client(app), Client(app)
        admin.login("ada")
        seen = []
        for c in (anonymous, admin):
            for path in ("/", "/login", "/_dash-layout", "/_dash-dependencies", "/nowhere", "/assets/nothing.css"):
                seen.append(c.http.get(path).get_data(as_text=True))
            seen.append(
                c.http.post(
                    "/_dash-update-component", data="{not json", headers={"Content-Type": "application/json"}
                ).get_data(as_text=True)
            )
        seen.append(admin.callback({"output": "nonsense", "inputs": []}).get_data(as_text=True))
        seen.append(admin.callback({"output": "nonsense"}, csrf=False).get_data(as_text=True))
        seen.append(anonymous.login("ada", "wrong password!").get_data(as_text=True))
        pages = {}
        for page in dash.page_registry.values():
            response = open_page(admin, page["path"])
            assert response.status_code == 200, page["path"]
            pages[page["path"]] = response.get_data(as_text=True)
        seen += pages.values()
        assert DB_SECRET in runtime.db_url and runtime.hub.view.alerts()  # planted, and the pages have content
        assert "source ipmi" in pages["/audit"] and "***" in pages["/audit"]
        for argv in (
            ["alerts", "list", "--json"],
            ["audit", "list", "--json"],
            ["users", "list", "--json"],
            ["alerts", "list"],
            ["audit", "list"],
        ):
            assert main(argv + ["--db", secret_db_url]) == 0
            out = capsys.readouterr()
            seen.append(out.out + out.err)
        json.loads(seen[-5])  # the JSON outputs are JSON
    finally:
        runtime.stop()
    found = {i: leaks(text, secrets) for i, text in enumerate(seen) if leaks(text, secrets)}
    assert found == {}, found
    log_text = "\n".join(r.getMessage() + (str(r.args) if r.args else "") for r in caplog.records)
    assert leaks(log_text, secrets) == []
    assert "***" in seen[-4]  # the audit entry's planted password is masked, not dropped silently
