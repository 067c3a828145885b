"""Real sources for the live twin: scheduled fetches whose mapped samples land in the readings buffer.

A source is named on the command line as ``KIND=TARGET[#HOST]``:

- ``dcgm=http://node:9400/metrics`` (several with commas) — dcgm-exporter scrapes;
- ``prometheus=http://prometheus:9090`` — the fleet's DCGM series through the HTTP API;
- ``redfish=https://bmc-or-cdu#H1-R01-K01-CDU`` — a BMC, CDU or rack PDU, crawled;
- ``ipmi=ipmi://user:password@bmc:623#h1-r01-k01-n0`` — ``ipmitool sdr elist``;
- ``slurm=/etc/slurm/slurm.conf`` (or ``commands``, a slurmrestd URL) — the scheduler's
  queue and node states, read-only (:mod:`ingest.live.slurm_poller`).

``#HOST`` names the site entity the target belongs to when its payload does not (a
BMC's sensors, a CDU's tree).  Every fetch goes through the site's inventory; unknown
hosts are counted in the fetch result, never silently dropped.

Every fetch has its own deadline (a poll interval per target); a :class:`Watchdog` is
the second line of defence against what no socket deadline covers (a hung DNS lookup,
a parser on a pathological page): it runs the fetches in a worker thread and abandons
a poll that outlives its deadline.  The abandoned thread cannot be killed, but its
readings are discarded, the next poll may start, and a poller with
``max_abandoned`` threads still stuck starts no more.  An abandoned poll is a failed
poll, so the source's age grows and the stale-source alert
(:mod:`ingest.live.alerts`) is raised as for any dead source.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ingest.live.freshness import Freshness
from ingest.live.readings import TRACKED, ReadingsBuffer
from ingest.live.watchdog import PollAbandoned, Watchdog
from ingest.sources.dcgm import fetch_dcgm
from ingest.sources.inventory import Inventory
from ingest.sources.ipmi import fetch_ipmi
from ingest.sources.prometheus_api import fetch_samples
from ingest.sources.redfish import fetch_redfish
from ingest.sources.samples import KIND_CODE, METRIC_CODE, FetchResult, SampleBatch, failed

log = logging.getLogger(__name__)
SOURCE_KINDS = ("dcgm", "prometheus", "redfish", "ipmi", "slurm")
DEFAULT_INTERVAL_S = {"dcgm": 5.0, "prometheus": 15.0, "redfish": 30.0, "ipmi": 30.0, "slurm": 10.0}
WATCHDOG_MARGIN_S = 5.0  # a poll's watchdog allows this beyond its fetch deadlines (parsing, mapping)


@dataclass
class Poller:
    """A polled source: ``poll(buffer)`` fetches, maps and stores readings; returns True when good."""

    name: str
    interval_s: float
    poll: Callable[[ReadingsBuffer], bool]
    last_ok_s: float = float("-inf")
    failures: int = 0
    stale_logged: bool = False

    def run(self, buffer: ReadingsBuffer) -> None:
        """One poll; failures are counted and logged once per episode, never raised."""
        try:
            ok = bool(self.poll(buffer))
        except Exception as exc:  # noqa: BLE001 — a dead source must not stop the twin
            ok = False
            if not self.stale_logged:
                log.warning("source %s failed: %s", self.name, exc)
        if ok:
            if self.stale_logged:
                log.info("source %s recovered after %d failed polls", self.name, self.failures)
            self.last_ok_s, self.failures, self.stale_logged = time.time(), 0, False
        else:
            self.failures += 1
            self.stale_logged = True


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
                stored += buffer.update(kind, metric, batch.entity_id[rows], batch.value[rows], batch.timestamp_s[rows])
    return stored


def parse_source_spec(spec: str) -> tuple[str, list[str], str]:
    """``KIND=TARGET[,TARGET…][#HOST]`` → (kind, targets, host)."""
    kind, sep, rest = spec.partition("=")
    if not sep or kind not in SOURCE_KINDS or not rest:
        raise SourceSpecError(
            f"source {spec!r}: expected KIND=TARGET[#HOST] with KIND one of {', '.join(SOURCE_KINDS)} (or 'synthetic')"
        )
    targets, _, host = rest.partition("#")
    return kind, [t for t in targets.split(",") if t], host


def fetch_deadline_s(kind: str, interval_s: float) -> float:
    """Seconds one target may take: its poll interval (a Redfish crawl: three)."""
    return 3.0 * interval_s if kind == "redfish" else interval_s


# A live poll reads one instant: the caps of ``ingest once`` for a page (dcgm 32 MiB), not those
# of a history import (a Prometheus range query, 256 MiB, whose decoded JSON takes several times that).
LIVE_PROMETHEUS_MAX_BYTES = 32 * 2**20


def _fetcher(kind: str, target: str, host: str, deadline_s: float) -> Callable[[], FetchResult]:
    if kind == "dcgm":
        return lambda: fetch_dcgm(target, default_host=host, deadline_s=deadline_s)
    if kind == "prometheus":
        return lambda: fetch_samples(
            target, default_host=host, deadline_s=deadline_s, max_bytes=LIVE_PROMETHEUS_MAX_BYTES
        )
    if kind == "redfish":
        return lambda: fetch_redfish(target, host=host or None, crawl_deadline_s=deadline_s)
    return lambda: fetch_ipmi(target, host=host or None, deadline_s=deadline_s)


def make_poller(
    spec: str, inventory: Inventory, interval_s: float | None = None, freshness: Freshness | None = None
) -> Poller:
    """A :class:`Poller` for one telemetry source specification, each fetch bounded and the poll watched.

    A ``slurm=`` source is a scheduler, not telemetry: :func:`ingest.live.slurm_poller.make_slurm_poller`
    makes its poller (it builds on this module; :func:`ingest.live.runtime.source_poller` picks).
    """
    kind, targets, host = parse_source_spec(spec)
    if kind == "slurm":
        raise SourceSpecError(f"source {spec!r}: a Slurm source is polled by ingest.live.slurm_poller")
    interval_s = interval_s or DEFAULT_INTERVAL_S[kind]
    per_target_s = fetch_deadline_s(kind, interval_s)
    fetchers = [(_fetcher(kind, t, host, per_target_s), t) for t in targets]
    name = kind if len(targets) == 1 and not host else f"{kind}:{host or len(targets)}"
    return watched_poller(
        name,
        fetchers,
        inventory,
        interval_s,
        watchdog_s=per_target_s * len(targets) + WATCHDOG_MARGIN_S,
        freshness=freshness,
    )


def watched_poller(
    name: str,
    fetchers: list[tuple[Callable[[], FetchResult], str]],
    inventory: Inventory,
    interval_s: float,
    watchdog_s: float,
    max_abandoned: int = 2,
    freshness: Freshness | None = None,
) -> Poller:
    """A :class:`Poller` running ``fetchers`` under a :class:`Watchdog` of ``watchdog_s`` seconds.

    The fetches and the inventory mapping run in the worker; only a poll that finished in
    time stores its readings, so an abandoned poll's late answer is dropped.
    """
    watchdog = Watchdog(name, watchdog_s, max_abandoned)

    def fetch_all() -> list[FetchResult]:
        results = []
        for fetch, _target in fetchers:
            result = fetch()
            if result.ok:
                result.batch = inventory.map_batch(result.batch)
            results.append(result)
        return results

    def poll(buffer: ReadingsBuffer) -> bool:
        try:
            results = watchdog.run(fetch_all)
        except PollAbandoned as exc:
            if freshness is not None:
                for _, target in fetchers:
                    freshness.record(failed(name.split(":")[0], target, str(exc)))
            raise
        good = 0
        for result in results:
            if freshness is not None:
                freshness.record(result)
            if not result.ok:
                log.debug("%s %s: %s", name, result.target, result.error)
                continue
            store_batch(buffer, result.batch)
            good += 1
        return good > 0

    poller = Poller(name=name, interval_s=interval_s, poll=poll)
    poller.watchdog = watchdog  # for status pages and tests: abandoned_total, stuck
    return poller
