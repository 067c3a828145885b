"""APScheduler wiring: one job per source and one twin step, each running once at a time.

Jobs are plain callables (tests call them directly).  ``max_instances=1`` with
``coalesce=True`` means a slow poll never piles up; ``misfire_grace_time`` lets a late
run happen once instead of being dropped; jitter spreads source polls so that many
ingest processes don't hit their targets in lock-step.  :func:`acquire_leader` makes
sure only one process per database runs the jobs (web servers with several workers or
a reloader would otherwise duplicate them).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from apscheduler.schedulers.background import BackgroundScheduler

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScheduledTask:
    """A periodic job: its id, callable, interval and jitter (seconds)."""

    job_id: str
    func: Callable[[], object]
    interval_s: float
    jitter_s: float = 0.0


def build_scheduler(jobs: list[ScheduledTask], misfire_grace_s: float = 5.0) -> BackgroundScheduler:
    """A (not yet started) background scheduler holding ``jobs``."""
    scheduler = BackgroundScheduler(
        timezone="UTC", job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": misfire_grace_s}
    )
    for job in jobs:
        scheduler.add_job(
            _guarded(job),
            "interval",
            seconds=job.interval_s,
            id=job.job_id,
            name=job.job_id,
            jitter=job.jitter_s or None,
            replace_existing=True,
        )
    return scheduler


def _guarded(job: ScheduledTask) -> Callable[[], None]:
    """Run ``job.func``; an exception is logged, never allowed to kill the scheduler thread."""

    def run() -> None:
        try:
            job.func()
        except Exception:  # noqa: BLE001 — a failing source must not stop the others
            log.exception("job %s failed", job.job_id)

    run.__name__ = job.job_id
    return run
