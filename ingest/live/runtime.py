"""Assemble and start the live twin of a site: database, sources, hub and scheduler.

Used by ``clustertwin serve`` (ingest inside the web process, the embedded default of
``make run``) and ``clustertwin ingest run`` (a separate process, optionally one shard of
several writing into one PostgreSQL).  Only one process per site and shard runs the
jobs: the holder of the ingest lease in the database (:mod:`ingest.store.lease`).  The
leader of shard 0 publishes each tick's live state; every other process is a follower
(:mod:`ingest.live.follower`): its hub shows that state, with no twin work of its own, and
its acknowledgements and silences are written to the database for all to see.  Followers
check the lease every 5 s; when the leader stops renewing it, one of them takes over
within 20 s (unless started with ``follow_only``, as web processes of a larger deployment are).
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy.exc import SQLAlchemyError

from ingest.live.follower import Follower
from ingest.live.hub import LiveHub
from ingest.live.pollers import Poller, SourceSpecError, make_poller, parse_source_spec
from ingest.live.scheduler import build_scheduler
from ingest.live.slurm_poller import make_slurm_poller
from ingest.sources.inventory import Inventory
from ingest.store.db import open_database, resolve_db_url
from ingest.store.lease import LEASE_S, RENEW_S, Lease, lease_name
from ingest.store.models import utcnow
from ingest.store.outage import one_line
from ingest.store.siteversions import record_site_version
from ingest.synthetic.faults import parse_fault
from ingest.synthetic.plant import SyntheticSource
from twin.engine.tick import PlacedJob
from twin.errors import InputError
from twin.site.catalogue import DATA_DIR
from twin.site.load import load_site, site_path
from twin.site.tables import SiteTables
from twin.training.jobfile import load_job
from twin.training.sitejob import PlacementError, contiguous_placement

log = logging.getLogger(__name__)
JOBS_DIR = DATA_DIR / "jobs"


class LiveSetupError(InputError):
    """The live twin cannot be assembled as asked (bad source, job or fault)."""


@dataclass
class Runtime:
    """A started live twin: the hub, its ingest lease, and the scheduler while this process leads."""

    hub: LiveHub
    db_url: str
    lease: Lease | None = None
    tick_s: float = 1.0
    renew_s: float = RENEW_S
    scheduler: BackgroundScheduler | None = None
    follower: Follower | None = None
    follow_only: bool = False  # never take the lease: a web process that only follows
    notes: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lease_error: bool = False

    @property
    def leading(self) -> bool:
        return self.scheduler is not None

    def check_lease(self, now: datetime | None = None) -> bool:
        """Renew (leader) or try to take (follower) the lease, and start or stop ingest to match.

        While the database cannot be reached the leader keeps leading until its own lease
        would have expired, and a follower stays one.  Returns whether this process leads.
        """
        now = now or utcnow()
        if self.follow_only:
            self._start_following()
            return False
        try:
            held = self.lease.try_acquire(now)
        except SQLAlchemyError as exc:
            if not self._lease_error:
                log.error(
                    "ingest lease %s not checked (%s); will retry every %.0f s",
                    self.lease.name,
                    one_line(exc),
                    self.renew_s,
                )
            self._lease_error = True
            until = self.lease.held_until
            held = self.leading and until is not None and now < until
        else:
            if self._lease_error:
                log.warning("ingest lease %s checked again", self.lease.name)
            self._lease_error = False
        if held and not self.leading:
            self._start_ingest()
        elif not held and self.leading:
            log.warning("lost the ingest lease %s to another process: following it", self.lease.name)
            self._stop_ingest()
        if not held:
            self._start_following()
        return held

    def _start_following(self) -> None:
        if self.follower is None:
            self.follower = Follower(self.hub).start()

    def _stop_following(self) -> None:
        if self.follower is not None:
            self.follower.stop()
            self.follower = None

    def _start_ingest(self) -> None:
        log.warning("this process (%s) now runs ingest for %s", self.lease.holder, self.lease.name)
        self._stop_following()
        self.hub.writable = True
        # alerts opened or cleared by the previous leader: continue its episodes, do not raise them again
        self.hub.live_alerts.take_over()
        self.hub.publisher.holder = self.lease.holder if self.hub.shard[0] == 0 else None
        try:
            self.hub.publisher.catch_up_trend()  # the previous leader's trend goes on in this one's
        except SQLAlchemyError as exc:
            log.warning(
                "trend of %s starts empty: the stored trend was not read (%s)", self.hub.site_name, one_line(exc)
            )
        self.hub.step()  # the first snapshot exists before anyone asks for it
        self.scheduler = build_scheduler(self.hub.jobs_for_scheduler(self.tick_s))
        self.scheduler.start()

    def _stop_ingest(self) -> None:
        self.hub.writable = False
        self.hub.publisher.holder = None
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=True)
            self.scheduler = None

    def _keep_lease(self) -> None:
        while not self._stop.wait(self.renew_s):
            try:
                self.check_lease()
            except Exception:  # noqa: BLE001 — the lease thread must outlive a failed tick
                log.exception("ingest lease check failed")

    def start_lease_thread(self) -> None:
        """Check the lease every ``renew_s`` seconds in a daemon thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._keep_lease, name="ingest-lease", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop ingest and the lease thread, and release the lease so a follower takes over at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        leading = self.leading
        self._stop_following()
        self._stop_ingest()
        self.hub.live_alerts.close()
        if leading and self.lease is not None:
            try:
                self.lease.release()
            except SQLAlchemyError as exc:
                log.warning(
                    "ingest lease %s not released (%s): it expires in at most %.0f s",
                    self.lease.name,
                    one_line(exc),
                    LEASE_S,
                )
        self.hub.db.dispose()


def place_default_job(state: SiteTables, job_name: str | None = None) -> list[PlacedJob]:
    """The site's default job (or ``job_name``) placed on GPUs from id 0; [] when none is named."""
    name = job_name if job_name is not None else state.default_job
    if not name:
        return []
    path = JOBS_DIR / f"{name}.toml" if not name.endswith(".toml") else name
    spec = load_job(path)
    return [PlacedJob(spec=spec, gpu_ids=contiguous_placement(state, spec.parallel.n_gpus))]


def source_poller(spec: str, inventory: Inventory) -> Poller:
    """The poller of one ``--source`` specification: a scheduler's (``slurm=``) or a telemetry source's."""
    kind, targets, _host = parse_source_spec(spec)
    if kind == "slurm":
        return make_slurm_poller(targets[0] if targets else "", inventory)
    return make_poller(spec, inventory)


def build_hub(
    site: str,
    db_url: str | None = None,
    *,
    sources: tuple[str, ...] = ("synthetic",),
    faults: tuple[str, ...] = (),
    seed: int = 0,
    job: str | None = None,
    record: bool = True,
    start: datetime | None = None,
    shard: tuple[int, int] = (0, 1),
    record_every_s: float = 5.0,
    retention_s: float = 3600.0,
    publish_every_s: float = 1.0,
) -> LiveHub:
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
        pollers = [source_poller(spec, inventory) for spec in sources if spec != "synthetic"]
    except SourceSpecError as exc:
        raise LiveSetupError(str(exc)) from None
    try:
        jobs = place_default_job(state, job)
    except PlacementError as exc:
        raise LiveSetupError(f"default job: {exc}") from None
    synthetic = None
    if "synthetic" in sources:
        job_gpus = np.concatenate([j.gpu_ids for j in jobs]) if jobs else None
        synthetic = SyntheticSource(
            state, start=start, seed=seed, faults=[parse_fault(state, f) for f in faults], job_gpu_ids=job_gpus
        )
    elif faults:
        raise LiveSetupError("faults are injected into the synthetic source; add it to the sources")
    hub = LiveHub(
        state,
        engine,
        synthetic=synthetic,
        pollers=pollers,
        jobs=jobs,
        record=record,
        start=start,
        shard=shard,
        record_every_s=record_every_s,
        retention_s=retention_s,
        publish_every_s=publish_every_s,
    )
    runs = hub.ticker.jobs.runs
    if synthetic is not None and runs:
        # the plant's job stops and restarts on the same cycle the twin expects; its checkpoints are
        # the workload's own, so the plant's restart cycle writes none
        synthetic.restart_timings = replace(runs[0].timings, checkpoint_interval_s=math.inf)
    return hub


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/n"`` → (i, n), naming what is wrong otherwise."""
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and 0 <= int(index) < int(count)):
        raise LiveSetupError(f"shard {text!r}: expected i/n with 0 ≤ i < n, e.g. 0/4")
    return int(index), int(count)


def start_hub(
    site: str,
    db_url: str | None = None,
    sources: tuple[str, ...] = ("synthetic",),
    *,
    shard: str = "0/1",
    tick_s: float = 1.0,
    lease_s: float = LEASE_S,
    renew_s: float = RENEW_S,
    follow_only: bool = False,
    **hub_kw,
) -> Runtime:
    """Build the hub and take the ingest lease of its site and shard, or follow the process that holds it.

    Either way a thread keeps checking the lease every ``renew_s`` seconds: the leader
    renews it, a follower takes over once it has expired (``lease_s`` after the last
    renewal).  With ``follow_only`` the process never leads (a web process of a deployment
    whose ingest runs elsewhere).
    """
    url = resolve_db_url(db_url)
    hub = build_hub(site, url, sources=sources, shard=parse_shard(shard), **hub_kw)
    hub.writable = False
    lease = Lease(hub.db, lease_name(hub.site_name, shard), lease_s=lease_s)
    runtime = Runtime(hub=hub, db_url=url, lease=lease, tick_s=tick_s, renew_s=renew_s, follow_only=follow_only)
    if follow_only:
        runtime.check_lease()
        runtime.notes.append(f"following the ingest leader of site {hub.site_name} (this process never leads)")
    elif not runtime.check_lease():
        takeover_s = lease_s + renew_s
        runtime.notes.append(
            f"another process runs ingest for site {hub.site_name} shard {shard}: following "
            f"its live state, and taking over within {takeover_s:.0f} s if it stops"
        )
        log.warning(
            "another process runs ingest for %s in %s: this one follows it",
            lease.name,
            lease.engine.url.render_as_string(hide_password=True),
        )
    runtime.start_lease_thread()
    return runtime
