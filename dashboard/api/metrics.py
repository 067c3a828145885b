"""``/metrics``: the twin's own figures in the Prometheus exposition format.

What only the twin knows, for an existing Prometheus and Grafana to alert on: generation
balance and N-1 headroom, the power cap that fits, time to throttle or shut down per
failure kind (soonest rack of the site and of each hall), job throughput, goodput and MFU,
CDU capacity use, GPU counts by state and open alerts by severity.  Names follow the
Prometheus conventions (base units: ``_watts``, ``_seconds``, ``_celsius``; fractions as
``_ratio``; counters ``_total``), so ``promtool check metrics`` accepts them.  The values
are read from the live view's latest tick at each scrape by a collector (``prometheus_client``),
in a registry of the app's own: nothing else of the process is exported.
"""

from __future__ import annotations

import math

import flask
import numpy as np
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from dashboard.shell.status import alert_counts
from twin.engine.snapshot import GPU_DOWN, GPU_OFF, GPU_OK, GPU_THROTTLED

PREFIX = "clustertwin"
METRICS_PATH = "/metrics"
MW_TO_W, KW_TO_W = 1e6, 1e3
GPU_STATES = {"ok": GPU_OK, "throttled": GPU_THROTTLED, "down": GPU_DOWN, "off": GPU_OFF}


def _gauge(name: str, doc: str, value: float, labels: dict | None = None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=list(labels or {}))
    family.add_metric(list((labels or {}).values()), float(value))
    return family


def _by_label(name: str, doc: str, label_names: list[str], rows) -> GaugeMetricFamily:
    family = GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=label_names)
    for labels, value in rows:
        family.add_metric(list(labels), float(value))
    return family


def _finite(value: float) -> bool:
    return value is not None and math.isfinite(value)


class TwinCollector:
    """Reads the live view of an app at each scrape (see module docstring)."""

    def __init__(self, view) -> None:
        self.view = view

    def describe(self):
        return []  # the families depend on the site; nothing to check at registration

    def collect(self):
        view, s = self.view, self.view.state
        site = {"site": s.name}
        check = getattr(view, "database_reachable", None)
        reachable = bool(check()) if callable(check) else True
        yield _gauge(
            "database_reachable", "1 while the server reaches its database, 0 during an outage", reachable, site
        )
        counts = alert_counts(view.alerts(True))
        yield _by_label(
            "alerts_open",
            "Open alerts by severity",
            ["site", "severity"],
            [((s.name, sev), counts.get(sev, 0)) for sev in ("critical", "warning", "info")],
        )
        yield _gauge(
            "alerts_need_attention",
            "Open alerts neither acknowledged, silenced nor in maintenance",
            counts.get("need_attention", 0),
            site,
        )
        yield _gauge(
            "alerts_in_maintenance", "Open alerts under a maintenance window", counts.get("in_maintenance", 0), site
        )
        tick = view.latest_tick()
        snap, detail = tick.snapshot, tick.detail
        if snap is None:
            return
        yield _gauge(
            "snapshot_timestamp_seconds", "Time of the latest twin tick (Unix seconds)", snap.ts.timestamp(), site
        )
        yield from self._power(s.name, snap, detail)
        yield from self._cooling(s, snap, detail)
        yield from self._jobs(s.name, snap)
        yield _by_label(
            "gpus",
            "GPUs by state",
            ["site", "state"],
            [((s.name, name), int((snap.gpu_state == code).sum())) for name, code in GPU_STATES.items()],
        )

    def _power(self, site: str, snap, detail):
        labels = {"site": site}
        rows = [
            ("it_power_watts", "IT power of the racks", snap.it_power_mw * MW_TO_W),
            ("cooling_power_watts", "Power of pumps, fans and chillers", snap.cooling_power_mw * MW_TO_W),
            ("facility_power_watts", "Facility power drawn from the sources", snap.facility_power_mw * MW_TO_W),
            ("generation_capacity_watts", "Capacity of the live power sources", snap.generation_capacity_mw * MW_TO_W),
            (
                "generation_balance_watts",
                "Generation capacity minus facility power (negative: shortfall)",
                (snap.generation_capacity_mw - snap.facility_power_mw) * MW_TO_W,
            ),
            ("pue_ratio", "Power usage effectiveness", snap.pue_ratio),
            (
                "power_swing_amplitude_watts",
                "Peak-to-peak swing of the training power",
                snap.swing_amplitude_mw * MW_TO_W,
            ),
            ("outdoor_dry_bulb_celsius", "Outdoor dry-bulb temperature", snap.outdoor_dry_bulb_c),
            ("outdoor_wet_bulb_celsius", "Outdoor wet-bulb temperature", snap.outdoor_wet_bulb_c),
        ]
        if detail is not None:
            bal = detail.balance
            rows += [
                (
                    "generation_n1_capacity_watts",
                    "Generation capacity after losing the largest live source",
                    bal.generation_n1_capacity_mw * MW_TO_W,
                ),
                (
                    "generation_n1_headroom_watts",
                    "N-1 generation capacity minus facility power (negative: a single source trip sheds load)",
                    (bal.generation_n1_capacity_mw - bal.facility_mw) * MW_TO_W,
                ),
                (
                    "power_cap_for_all_gpus_watts",
                    "Per-GPU power limit that fits every running GPU in the generation",
                    bal.power_cap_w,
                ),
                (
                    "gpus_runnable_at_full_power",
                    "GPUs that can run at TDP within the generation",
                    bal.gpus_at_full_power,
                ),
            ]
            headroom = detail.power_n1_headroom_kw
            if headroom.size:
                rows.append(
                    (
                        "power_n1_headroom_min_watts",
                        "Smallest N-1 headroom of the power-tree elements "
                        "(usable rating minus worst single-failure load)",
                        float(np.nanmin(headroom)) * KW_TO_W,
                    )
                )
        rows.append(
            (
                "power_n1_violations",
                "Power-tree elements overloaded after a single failure",
                int((snap.power_n1_load_frac > 1.0).sum()),
            )
        )
        for name, doc, value in rows:
            if _finite(value):
                yield _gauge(name, doc, value, labels)

    def _cooling(self, s, snap, detail):
        halls = s.hall_name
        cap = snap.cdu_capacity_kw
        use = np.where(cap > 0, snap.cdu_heat_kw / np.where(cap > 0, cap, 1.0), np.nan)
        cdu_hall = np.zeros(s.n_cdus, dtype=np.int64)
        cdu_hall[s.rack_cdu] = s.rack_hall  # a CDU cools racks of one hall
        rows = []
        for h, hall in enumerate(halls):
            values = use[(cdu_hall == h) & np.isfinite(use)]
            if values.size:
                rows.append(((s.name, hall), float(values.max())))
        yield _by_label(
            "cdu_capacity_used_max_ratio", "Largest CDU heat load over its capacity, per hall", ["site", "hall"], rows
        )
        if detail is None:
            return
        for kind, word in (("throttle", "throttles"), ("shutdown", "shuts down")):
            site_rows, hall_rows = [], []
            for key, values in detail.projections_s.items():
                if not key.endswith(f"_{kind}_s"):
                    continue
                failure = key[: -len(f"_{kind}_s")]
                site_rows.append(((s.name, failure), float(np.min(values)) if values.size else math.inf))
                for h, hall in enumerate(halls):
                    in_hall = values[s.rack_hall == h]
                    if in_hall.size:
                        hall_rows.append(((s.name, hall, failure), float(np.min(in_hall))))
            yield _by_label(
                f"time_to_{kind}_seconds",
                f"Time until the first rack {word} after a failure of this kind, now (+Inf: never)",
                ["site", "failure"],
                site_rows,
            )
            yield _by_label(
                f"hall_time_to_{kind}_seconds",
                f"Time until the first rack of a hall {word} after a failure of this kind, now (+Inf: never)",
                ["site", "hall", "failure"],
                hall_rows,
            )

    def _jobs(self, site: str, snap):
        gauges = (
            ("job_tokens_per_second", "Training throughput of a job", "tokens_per_s"),
            ("job_goodput_tokens_per_second", "Throughput net of restarts and lost work", "goodput_tokens_per_s"),
            ("job_mfu_ratio", "Model FLOPs utilisation of a job", "mfu_frac"),
            ("job_ettr_ratio", "Effective training time ratio of a job", "ettr_frac"),
            ("job_step_time_seconds", "Step time of a job", "step_time_s"),
        )
        for name, doc, field in gauges:
            yield _by_label(
                name,
                doc,
                ["site", "job"],
                [((site, j.name), getattr(j, field)) for j in snap.jobs if _finite(getattr(j, field))],
            )
        interruptions = CounterMetricFamily(
            f"{PREFIX}_job_interruptions", "Interruptions of a job since the twin started", labels=["site", "job"]
        )
        for j in snap.jobs:
            interruptions.add_metric([site, j.name], float(j.interruptions_total))
        yield interruptions


def register_metrics(server: flask.Flask, view) -> CollectorRegistry:
    """Serve ``/metrics`` on ``server`` from the live ``view``; returns the app's registry."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TwinCollector(view))

    @server.route(METRICS_PATH)
    def metrics():
        # the text format 0.0.4, which every Prometheus 2.x scrapes (the names are plain ASCII)
        return flask.Response(generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4})

    return registry
