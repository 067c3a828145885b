"""Removing the last user never opens a running server: logins are decided once, at start (or at the first user).

The review's sequence against a real ``serve``: ``users add solo --role admin``, ``serve
--host ::ffff:127.0.0.1`` (an IPv4-mapped loopback address), ``users remove solo``; once the
server has read the user table again (it logs so), an anonymous state-changing request is
still refused with 401.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from dashboard.auth.binding import check_binding, is_loopback
from ingest.store.pgserver import free_port
from tests.ingest.servers.readiness import load_scaled_s

CLI = [sys.executable, "-m", "twin.cli"]
REPO = Path(__file__).resolve().parents[3]
EMPTY_LINE = "the last user was removed: logins stay required"


def test_ipv4_mapped_loopback_is_loopback():
    assert is_loopback("::ffff:127.0.0.1") and is_loopback("[::ffff:127.0.0.2]") and is_loopback("::1")
    assert not is_loopback("::ffff:10.0.0.1") and not is_loopback("0.0.0.0")
    check_binding("::ffff:127.0.0.1", 0, False)  # no user needed on loopback


def _wait_for(predicate, what: str, log: Path, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + load_scaled_s(timeout_s)
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} not seen: {log.read_text()[-2000:]}")


@pytest.mark.slow
def test_removing_the_last_user_keeps_logins_required(tmp_path):
    db = f"sqlite:///{tmp_path / 'solo.db'}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    add = subprocess.run(
        [*CLI, "users", "add", "solo", "--role", "admin", "--db", db],
        input="solo-password-1\n",
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert add.returncode == 0, add.stderr
    port, log = free_port(), tmp_path / "serve.log"
    proc = subprocess.Popen(
        [*CLI, "serve", "--site", "demo", "--db", db, "--host", "::ffff:127.0.0.1", "--port", str(port)],
        cwd=REPO,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    post = lambda: requests.post(f"{url}/api/v1/whatif/scenarios", json={"name": "opened"}, timeout=10)  # noqa: E731

    def answers() -> bool:
        assert proc.poll() is None, log.read_text()[-2000:]
        try:
            return requests.get(f"{url}/api/v1/live/kpis", timeout=2).status_code == 401
        except requests.RequestException:
            return False

    try:
        _wait_for(answers, "serve answering 401", log)
        assert post().status_code == 401
        removed = subprocess.run(
            [*CLI, "users", "remove", "solo", "--db", db],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        assert removed.returncode == 0 and "that was the last user" in removed.stderr
        _wait_for(lambda: answers() and EMPTY_LINE in log.read_text(), "the server reading the empty user table", log)
        r = post()
        assert r.status_code == 401, r.text
        assert requests.get(f"{url}/api/v1/whatif/scenarios", timeout=10).status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)
