"""Locust users of the load test: live dashboards replaying captured tick requests, and API clients.

Run by :mod:`dashboard.benchmarks.load` (``clustertwin bench --only load_dashboards``) as
``locust -f`` this file, with ``CLUSTERTWIN_LOAD_PAYLOADS`` naming the captured requests
(JSON: page path → list of ``{"body", "path", "referer"}``) and ``CLUSTERTWIN_LOAD_TICK_S`` the
dashboards' tick period.  A dashboard sends every tick request of its page once per
period, as the browser's interval does; API clients poll the live KPIs and alerts and
scrape /metrics.
"""

from __future__ import annotations

import itertools
import json
import os

from locust import FastHttpUser, between, constant_pacing, task

PAYLOADS: dict[str, list[dict]] = json.loads(open(os.environ["CLUSTERTWIN_LOAD_PAYLOADS"], encoding="utf-8").read())
TICK_S = float(os.environ.get("CLUSTERTWIN_LOAD_TICK_S", "2"))
API_USERS = int(os.environ.get("CLUSTERTWIN_LOAD_API_USERS", "0"))
_pages = itertools.cycle(sorted(PAYLOADS))


class Dashboard(FastHttpUser):
    """One open browser tab on a page, polling its live updates."""

    weight = 100
    wait_time = constant_pacing(TICK_S)

    def on_start(self) -> None:
        self.page = next(_pages)
        self.requests = [
            (r["path"], json.dumps(r["body"]).encode(), r["referer"], r["body"]["output"].strip(".").split(".")[0][:40])
            for r in PAYLOADS[self.page]
        ]

    @task
    def tick(self) -> None:
        for path, body, referer, output in self.requests:
            with self.client.post(
                path,
                data=body,
                name=f"tick {self.page} {output}",
                headers={"Content-Type": "application/json", "Referer": referer},
                catch_response=True,
            ) as response:
                if response.status_code not in (200, 204):
                    response.failure(f"HTTP {response.status_code}")


class ApiClient(FastHttpUser):
    """An operator's script or a Grafana panel polling the API and /metrics."""

    fixed_count = API_USERS
    wait_time = between(4, 6)

    @task(3)
    def kpis(self) -> None:
        self.client.get("/api/v1/live/kpis", name="api kpis")

    @task(2)
    def alerts(self) -> None:
        self.client.get("/api/v1/alerts?limit=50", name="api alerts")

    @task(1)
    def hot_racks(self) -> None:
        self.client.get("/api/v1/live/racks?sort=rack_max_gpu_temp_c&limit=20", name="api hot racks")

    @task(1)
    def metrics(self) -> None:
        self.client.get("/metrics", name="metrics")
