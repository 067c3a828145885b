"""A follower: show the ingest leader's live state through this process's hub, doing no twin work.

A web process that does not hold the ingest lease runs a :class:`Follower` thread.  On
PostgreSQL it keeps one connection in ``LISTEN clustertwin_live`` and ``LISTEN
clustertwin_alerts`` (:mod:`ingest.store.livestate`): a new live state is read and handed
to :meth:`ingest.live.hub.LiveHub.adopt` as soon as the leader commits it, after the trend
points stored since the hub's last one (:meth:`~ingest.live.publisher.LivePublisher.catch_up_trend`:
the whole trend window when it starts, the missed ticks after a gap); an alert change
by any process resets the hub's alert cache.  Each time LISTEN starts (first connection
or reconnect) it reads the stored state and resets the alert cache, since changes made
before were not notified to it; :attr:`Follower.listening` is set from then until the
connection ends.  It also re-reads the row every :data:`RESYNC_S` seconds, so a lost
notification costs at most that long.
On SQLite (no notifications) it polls the row's ``seq`` every :data:`POLL_S` seconds and
reads the payload only when it changed.

A database outage is logged once when it starts and once when it ends; the hub keeps
showing the last state it adopted meanwhile.
"""

from __future__ import annotations

import logging
import threading
import time

import psycopg
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from ingest.store.livestate import (
    ALERTS_CHANNEL,
    LIVE_CHANNEL,
    LiveStateError,
    decode_state,
    is_postgres,
    latest_seq,
    read_latest,
)
from ingest.store.outage import one_line

log = logging.getLogger(__name__)
POLL_S = 0.5  # SQLite: how often a follower checks for a new live state (half the 1 s tick)
RESYNC_S = 5.0  # PostgreSQL: re-read the row this often even without a notification
RETRY_S = 2.0  # wait this long after a failed connection before trying again
WAKE_S = 0.25  # PostgreSQL: longest wait for a notification before checking whether to stop


class Follower:
    """Keeps ``hub`` showing the latest live state its site's leader published (see module docstring)."""

    def __init__(self, hub, engine: Engine | None = None, poll_s: float = POLL_S, resync_s: float = RESYNC_S) -> None:
        self.hub, self.engine = hub, engine or hub.db
        self.poll_s, self.resync_s = poll_s, resync_s
        self.uses_notify = is_postgres(self.engine)
        self.notifications_total = 0
        self.listening = threading.Event()  # PostgreSQL: set once LISTEN is on and the state read after it
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    # ------------------------------------------------------------- control
    def start(self) -> Follower:
        """Adopt the current live state now, then follow in a daemon thread until :meth:`stop`."""
        self.refresh()
        self._thread = threading.Thread(target=self._run, name="live-follower", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------- work
    def refresh(self) -> bool:
        """Adopt the stored live state if it is newer than the hub's; True when one was adopted."""
        site = self.hub.site_name
        try:
            head = latest_seq(self.engine, site)
            if head is None or head[0] == self.hub.latest.seq:
                self._ok()
                return False
            row = read_latest(self.engine, site)
            self.hub.publisher.catch_up_trend()  # stored with that state or after it: also the ticks not notified
        except SQLAlchemyError as exc:
            self._failed(exc)
            return False
        self._ok()
        if row is None:
            return False
        seq, holder, payload = row
        try:
            state = decode_state(payload)
        except LiveStateError as exc:
            log.error("live state of %s from %s not shown: %s", site, holder, exc)
            return False
        latest = self.hub.latest
        before = latest.adopted_total
        if seq < latest.seq:
            latest.seq = 0  # a new leader counts from zero: follow it by time, not by counter
        self.hub.adopt(seq, state)
        return latest.adopted_total > before

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.uses_notify:
                    self._listen()
                else:
                    self._poll()
            except Exception as exc:  # noqa: BLE001 — a follower must outlive a lost connection
                self._failed(exc)
                self._stop.wait(RETRY_S)

    def _poll(self) -> None:
        while not self._stop.wait(self.poll_s):
            self.refresh()

    def _listen(self) -> None:
        url = self.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f"LISTEN {LIVE_CHANNEL}")
            conn.execute(f"LISTEN {ALERTS_CHANNEL}")
            self._ok()
            self.hub.live_alerts.forget()  # alert changes made while not listening were not notified
            self.refresh()  # whatever was published while not listening
            self.listening.set()
            try:
                self._wait_for_notifications(conn)
            finally:
                self.listening.clear()

    def _wait_for_notifications(self, conn: psycopg.Connection) -> None:
        """Adopt each live state notified on ``conn`` (or every ``resync_s``); reset alerts on a change."""
        last_read = time.monotonic()
        while not self._stop.is_set():
            live, alert_changes = False, 0
            # back at once on a notification; several that arrived together come in one batch
            for note in conn.notifies(timeout=WAKE_S, stop_after=1):
                self.notifications_total += 1
                if note.payload.split(" ", 1)[0] == self.hub.site_name:
                    live |= note.channel == LIVE_CHANNEL
                    alert_changes += note.channel == ALERTS_CHANNEL
            if alert_changes:
                self.hub.live_alerts.changed(alert_changes)
            if live or time.monotonic() - last_read >= self.resync_s:
                self.refresh()
                last_read = time.monotonic()

    def _failed(self, exc: BaseException) -> None:
        if self._stop.is_set():
            return
        if not self._failing:
            log.error(
                "following the live state of %s failed (%s); retrying every %.0f s",
                self.hub.site_name,
                one_line(exc),
                RETRY_S,
            )
        self._failing = True

    def _ok(self) -> None:
        if self._failing:
            log.warning("following the live state of %s again", self.hub.site_name)
        self._failing = False
