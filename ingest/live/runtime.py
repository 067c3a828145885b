"""Assemble and start the live twin of a site: database, sources, hub and scheduler.

Used by ``clustertwin serve`` (ingest inside the web process, the embedded default of
``make run``) and ``clustertwin ingest run`` (a separate process, optionally one shard of
several writing into one PostgreSQL).  Only one process per database and shard runs the
jobs: a second one on the same machine serves read-only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from apscheduler.schedulers.background import BackgroundScheduler

from ingest.synthetic.faults import parse_fault
from ingest.sources.inventory import Inventory
from ingest.live.hub import LiveHub
from ingest.live.pollers import SourceSpecError, make_poller
from ingest.live.scheduler import LeaderLock, acquire_leader, build_scheduler
from ingest.store.db import open_database, resolve_db_url
from ingest.store.siteversions import record_site_version
from ingest.store.models import utcnow
from ingest.synthetic.plant import SyntheticSource
from twin.site.catalogue import DATA_DIR
from twin.engine.tick import PlacedJob
from twin.training.jobfile import load_job
from twin.site.load import load_site, site_path
from twin.errors import InputError
from twin.training.sitejob import PlacementError, contiguous_placement
from twin.site.tables import SiteTables

log = logging.getLogger(__name__)
JOBS_DIR = DATA_DIR / "jobs"


class LiveSetupError(InputError):
    """The live twin cannot be assembled as asked (bad source, job or fault)."""


@dataclass
class Runtime:
    """A started live twin: the hub, and the scheduler and lock when this process leads."""

    hub: LiveHub
    db_url: str
    scheduler: BackgroundScheduler | None = None
    lock: LeaderLock | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def leading(self) -> bool:
        return self.scheduler is not None

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=True)
            self.scheduler = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        self.hub.db.dispose()


def place_default_job(state: SiteTables, job_name: str | None = None) -> list[PlacedJob]:
    """The site's default job (or ``job_name``) placed on GPUs from id 0; [] when none is named."""
    name = job_name if job_name is not None else state.default_job
    if not name:
        return []
    path = JOBS_DIR / f"{name}.toml" if not name.endswith(".toml") else name
    spec = load_job(path)
    return [PlacedJob(spec=spec, gpu_ids=contiguous_placement(state, spec.parallel.n_gpus))]


def build_hub(site: str, db_url: str | None = None, *, sources: tuple[str, ...] = ("synthetic",),
              faults: tuple[str, ...] = (), seed: int = 0, job: str | None = None, record: bool = True,
              start: datetime | None = None, shard: tuple[int, int] = (0, 1), record_every_s: float = 5.0,
              retention_s: float = 3600.0) -> LiveHub:
    """A hub for ``site`` with the named sources (not yet scheduled).

    ``sources`` holds ``"synthetic"`` and/or real-source specifications ``KIND=TARGET[#HOST]``
    (see :mod:`ingest.live.pollers`).
    """
    state = load_site(site)
    engine = open_database(db_url)
    version = record_site_version(engine, state.name, site_path(site).read_text(encoding="utf-8"))
    log.info("site %s version %d", state.name, version.version)
    start = start or utcnow().replace(microsecond=0)
    try:
        inventory = Inventory.from_site(state)
        pollers = [make_poller(spec, inventory) for spec in sources if spec != "synthetic"]
    except SourceSpecError as exc:
        raise LiveSetupError(str(exc)) from None
    try:
        jobs = place_default_job(state, job)
    except PlacementError as exc:
        raise LiveSetupError(f"default job: {exc}") from None
    synthetic = None
    if "synthetic" in sources:
        job_gpus = np.concatenate([j.gpu_ids for j in jobs]) if jobs else None
        synthetic = SyntheticSource(state, start=start, seed=seed, faults=[parse_fault(state, f) for f in faults],
                                    job_gpu_ids=job_gpus)
    elif faults:
        raise LiveSetupError("faults are injected into the synthetic source; add it to the sources")
    return LiveHub(state, engine, synthetic=synthetic, pollers=pollers, jobs=jobs,
                   record=record, start=start, shard=shard, record_every_s=record_every_s,
                   retention_s=retention_s)


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` → (i, n), naming what is wrong otherwise."""
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and 0 <= int(index) < int(count)):
        raise LiveSetupError(f"shard {text!r}: expected i/n with 0 ≤ i < n, e.g. 0/4")
    return int(index), int(count)


def start_hub(site: str, db_url: str | None = None, sources: tuple[str, ...] = ("synthetic",), *,
              shard: str = "0/1", tick_s: float = 1.0, **hub_kw) -> Runtime:
    """Build the hub and, if no other process on this machine leads for this database, schedule it."""
    url = resolve_db_url(db_url)
    hub = build_hub(site, url, sources=sources, shard=parse_shard(shard), **hub_kw)
    lock = acquire_leader(url, shard)
    runtime = Runtime(hub=hub, db_url=url, lock=lock)
    if lock is None:
        runtime.notes.append("another process runs ingest for this database: serving read-only")
        log.warning("another process runs ingest for %s: this one only serves", url)
        return runtime
    hub.step()  # the first snapshot exists before anyone asks for it
    runtime.scheduler = build_scheduler(hub.jobs_for_scheduler(tick_s))
    runtime.scheduler.start()
    return runtime
