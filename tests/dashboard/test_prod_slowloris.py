"""Slowloris against a real ``serve --prod``: slow clients cost no request thread and are cut off.

200 connections (half sending headers one line a second, half a body one byte a second)
are held for 30 s against ``serve --prod --threads 4``; meanwhile the API is polled twice a
second and must answer every time within 1 s.  The server closes the slow connections
itself (408 after the header or body deadline), so the attack has to keep reopening them.
"""

from __future__ import annotations

import threading
import time

import pytest
import requests

from tests.dashboard.slowloris import attack
from tests.dashboard.test_prod import _serve, _wait_up

CONNECTIONS = 200
ATTACK_S = 30.0
ANSWER_WITHIN_S = 1.0


def poll_during_attack(url: str, port: int, seconds: float) -> tuple[list[float], object]:
    """The API's response times (s; 10 s for a time-out) while the attack runs, and the attack's report."""
    stop, result = threading.Event(), {}
    attacker = threading.Thread(
        target=lambda: result.setdefault("report", attack("127.0.0.1", port, CONNECTIONS, seconds, stop)), daemon=True
    )
    attacker.start()
    time.sleep(3.0)  # every slow connection open
    times = []
    try:
        while attacker.is_alive():
            t0 = time.monotonic()
            try:
                ok = requests.get(f"{url}/api/v1/live/kpis", timeout=10).status_code == 200
            except requests.RequestException:
                ok = False
            times.append(time.monotonic() - t0 if ok else 10.0)
            time.sleep(0.5)
    finally:
        stop.set()
        attacker.join(timeout=30)
    return times, result.get("report")


@pytest.mark.slow
def test_the_api_answers_within_a_second_during_a_slowloris_attack(tmp_path):
    proc, url, log = _serve(tmp_path)
    try:
        _wait_up(proc, url, log)
        port = int(url.rsplit(":", 1)[1])
        times, report = poll_during_attack(url, port, ATTACK_S)
        assert len(times) > 20
        slow = [round(t, 2) for t in times if t > ANSWER_WITHIN_S]
        assert slow == [], f"{len(slow)} of {len(times)} answers slower than {ANSWER_WITHIN_S} s: {slow[:10]}"
        assert report.closed_by_server_total >= CONNECTIONS  # the server cut every slow connection at least once
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(timeout=60)
