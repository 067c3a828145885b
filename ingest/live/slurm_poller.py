"""The Slurm scheduler as a live source: one read per poll, the latest snapshot kept for the twin.

``--source slurm=TARGET`` (``commands``, a ``slurm.conf`` path, a slurmrestd URL or a
directory of recorded outputs; see :class:`ingest.sources.slurm.SlurmTarget`) makes a
:class:`ingest.live.pollers.Poller` like every other source's: it runs under a
:class:`ingest.live.watchdog.Watchdog`, reports each read to the hub's freshness
(:mod:`ingest.live.freshness`: one warning when reads start failing, one line when they
work again) and counts as good only when the jobs and the nodes were both read, so a
controller that is down ages the source and raises the stale-source alert.  The poll
stores no telemetry samples: the snapshot (jobs, nodes, partitions, QoS, accounts on the
site's node ids) is kept on the poller as ``latest`` for the fleet model to read, and its
job→GPU mapping is handed to ``poller.ledger`` (:class:`ingest.slurm.attribution.Ledger`:
GPU-hours, energy and throttled time per job and team, fed by the hub's ticks).  The
scheduler is only read, never written.
"""

from __future__ import annotations

import logging

from ingest.live.freshness import Freshness
from ingest.live.pollers import Poller
from ingest.live.readings import ReadingsBuffer
from ingest.live.watchdog import PollAbandoned, Watchdog
from ingest.slurm.attribution import Ledger, gpu_owners
from ingest.sources.inventory import Inventory
from ingest.sources.samples import failed
from ingest.sources.slurm import SlurmTarget, read_slurm

log = logging.getLogger(__name__)
DEFAULT_INTERVAL_S = 10.0
COMMAND_SHARE = 0.5  # each command (or request) may take this share of the poll interval
WATCHDOG_POLLS = 3.0  # a poll is abandoned after this many intervals (a few commands in a row)


def slurm_target(spec: str, interval_s: float) -> SlurmTarget:
    """The target of ``slurm=SPEC``: a ``slurm.conf`` file means Slurm's commands with that configuration."""
    return SlurmTarget.from_spec(spec or "commands", timeout_s=max(COMMAND_SHARE * interval_s, 1.0))


def make_slurm_poller(
    spec: str,
    inventory: Inventory,
    interval_s: float | None = None,
    freshness: Freshness | None = None,
    name: str = "slurm",
) -> Poller:
    """A poller reading the scheduler every ``interval_s`` seconds (default 10)."""
    interval_s = interval_s or DEFAULT_INTERVAL_S
    target = slurm_target(spec, interval_s)
    node_gpus = inventory.node_gpu_count
    watchdog = Watchdog(name, WATCHDOG_POLLS * interval_s)

    def poll(buffer: ReadingsBuffer) -> bool:
        try:
            result = watchdog.run(lambda: read_slurm(target, inventory))
        except PollAbandoned as exc:
            if freshness is not None:
                freshness.record(failed("slurm", str(target), str(exc)))
            raise
        if freshness is not None:
            freshness.record(result)
        poller.last_result = result
        if result.ok:
            poller.latest = result.snapshot
            poller.ledger.set_owners(gpu_owners(result.snapshot, node_gpus))
        else:
            log.debug("slurm %s: %s", target, result.error)
        return result.ok

    poller = Poller(name=name, interval_s=interval_s, poll=poll)
    poller.watchdog = watchdog
    poller.latest = None  # the last good SlurmSnapshot
    poller.last_result = None  # the last SlurmResult, good or not
    poller.ledger = Ledger()  # per job and team use; the hub feeds it each tick (Ledger.observe)
    return poller
