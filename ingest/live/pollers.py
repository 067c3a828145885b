"""Real sources for the live twin: scheduled fetches whose mapped samples land in the readings buffer.

A source is named on the command line as ``KIND=TARGET[#HOST]``:

- ``dcgm=http://node:9400/metrics`` (several with commas) — dcgm-exporter scrapes;
- ``prometheus=http://prometheus:9090`` — the fleet's DCGM series through the HTTP API;
- ``redfish=https://bmc-or-cdu#H1-R01-K01-CDU`` — a BMC, CDU or rack PDU, crawled;
- ``ipmi=ipmi://user:password@bmc:623#h1-r01-k01-n0`` — ``ipmitool sdr elist``.

``#HOST`` names the site entity the target belongs to when its payload does not (a
BMC's sensors, a CDU's tree).  Every fetch goes through the site's inventory; unknown
hosts are counted in the fetch result, never silently dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from ingest.sources.dcgm import fetch_dcgm
from ingest.sources.inventory import Inventory
from ingest.sources.ipmi import fetch_ipmi
from ingest.live.hub import Poller
from ingest.sources.prometheus_api import fetch_samples
from ingest.live.readings import TRACKED, ReadingsBuffer
from ingest.sources.redfish import fetch_redfish
from ingest.sources.samples import KIND_CODE, METRIC_CODE, FetchResult, SampleBatch

log = logging.getLogger(__name__)
SOURCE_KINDS = ("dcgm", "prometheus", "redfish", "ipmi")
DEFAULT_INTERVAL_S = {"dcgm": 5.0, "prometheus": 15.0, "redfish": 30.0, "ipmi": 30.0}


class SourceSpecError(ValueError):
    """A ``KIND=TARGET[#HOST]`` source specification is malformed."""


def store_batch(buffer: ReadingsBuffer, batch: SampleBatch) -> int:
    """Put the mapped samples of ``batch`` that the twin tracks into ``buffer``; returns how many."""
    if batch.entity_id is None or not len(batch):
        return 0
    kinds = batch.entity_kind
    stored = 0
    for kind, metrics in TRACKED.items():
        of_kind = (kinds == KIND_CODE[kind]) & (batch.entity_id >= 0)
        for metric in metrics:
            rows = np.flatnonzero(of_kind & (batch.metric == METRIC_CODE[metric]))
            if rows.size:
                stored += buffer.update(kind, metric, batch.entity_id[rows], batch.value[rows],
                                        batch.timestamp_s[rows])
    return stored


def parse_source_spec(spec: str) -> tuple[str, list[str], str]:
    """``KIND=TARGET[,TARGET…][#HOST]`` → (kind, targets, host)."""
    kind, sep, rest = spec.partition("=")
    if not sep or kind not in SOURCE_KINDS or not rest:
        raise SourceSpecError(f"source {spec!r}: expected KIND=TARGET[#HOST] with KIND one of "
                              f"{', '.join(SOURCE_KINDS)} (or 'synthetic')")
    targets, _, host = rest.partition("#")
    return kind, [t for t in targets.split(",") if t], host


def _fetcher(kind: str, target: str, host: str) -> Callable[[], FetchResult]:
    if kind == "dcgm":
        return lambda: fetch_dcgm(target, default_host=host)
    if kind == "prometheus":
        return lambda: fetch_samples(target, default_host=host)
    if kind == "redfish":
        return lambda: fetch_redfish(target, host=host or None)
    return lambda: fetch_ipmi(target, host=host or None)


def make_poller(spec: str, inventory: Inventory, interval_s: float | None = None) -> Poller:
    """A :class:`Poller` for one source specification."""
    kind, targets, host = parse_source_spec(spec)
    fetchers = [(_fetcher(kind, t, host), t) for t in targets]

    def poll(buffer: ReadingsBuffer) -> bool:
        good = 0
        for fetch, target in fetchers:
            result = fetch()
            if not result.ok:
                log.debug("%s %s: %s", kind, target, result.error)
                continue
            mapped = inventory.map_batch(result.batch)
            store_batch(buffer, mapped)
            good += 1
        return good > 0

    return Poller(name=kind if len(targets) == 1 and not host else f"{kind}:{host or len(targets)}",
                  interval_s=interval_s or DEFAULT_INTERVAL_S[kind], poll=poll)
