"""The ingest lease: one row per site and shard naming the process that runs ingest, and until when.

The leader renews its lease every :data:`RENEW_S` seconds.  A lease not renewed for
:data:`LEASE_S` seconds has expired, and any follower takes it over with one conditional
``UPDATE … WHERE name = ? AND (holder = me OR expires_at < now)``: the database locks the
row for the update and re-checks the condition, so on SQLite and PostgreSQL alike exactly
one contender wins.  A follower checks every :data:`RENEW_S` seconds, so it leads at
most :data:`TAKEOVER_S` (20 s) after the leader's last renewal; a leader that stops
cleanly releases the lease and a follower takes over at its next check (≤ 5 s).

Expiry times come from each process's UTC clock: hosts sharing a database must agree
within a few seconds (NTP does far better).
"""

from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime, timedelta

from sqlalchemy import case, insert, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from ingest.store.models import IngestLease, utcnow

LEASE_S = 15.0  # a lease not renewed for this long has expired
RENEW_S = 5.0  # the leader renews, and followers check, this often
TAKEOVER_S = LEASE_S + RENEW_S  # the longest a follower waits after the leader's last renewal

_TABLE = IngestLease.__table__


def lease_name(site_name: str, shard: str) -> str:
    """The lease of one site and shard (``"i/n"``)."""
    return f"{site_name}#{shard}"


def new_holder_id() -> str:
    """A holder id unique to this process: host, pid and a random part (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Lease:
    """This process's claim on the lease ``name`` in the database of ``engine``."""

    def __init__(self, engine: Engine, name: str, holder: str | None = None, lease_s: float = LEASE_S) -> None:
        if not lease_s > 0:
            raise ValueError("lease_s must be positive seconds")
        self.engine, self.name, self.lease_s = engine, name, lease_s
        self.holder = holder or new_holder_id()
        self.held_until: datetime | None = None  # our lease's expiry when we last got or renewed it

    def try_acquire(self, now: datetime | None = None) -> bool:
        """Take or renew the lease at ``now`` (default: the clock); True when this process holds it.

        Raises SQLAlchemy's errors when the database cannot be reached.
        """
        now = now or utcnow()
        until = now + timedelta(seconds=self.lease_s)
        column = _TABLE.c
        taken = (
            update(_TABLE)
            .where(column.name == self.name, or_(column.holder == self.holder, column.expires_at < now))
            .values(
                holder=self.holder,
                expires_at=until,
                acquired_at=case((column.holder == self.holder, column.acquired_at), else_=now),
            )
        )
        with self.engine.begin() as conn:
            if conn.execute(taken).rowcount == 1:
                self.held_until = until
                return True
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(_TABLE).values(name=self.name, holder=self.holder, expires_at=until, acquired_at=now)
                )
        except IntegrityError:  # the row exists and someone else holds it
            self.held_until = None
            return False
        self.held_until = until
        return True

    def release(self, now: datetime | None = None) -> None:
        """Give the lease up (if held) so that a follower takes over at its next check."""
        now = now or utcnow()
        column = _TABLE.c
        with self.engine.begin() as conn:
            conn.execute(
                update(_TABLE)
                .where(column.name == self.name, column.holder == self.holder)
                .values(expires_at=now - timedelta(seconds=1))
            )
        self.held_until = None

    def current(self) -> tuple[str, datetime] | None:
        """(holder, expiry) as stored, or None when nobody ever took the lease."""
        column = _TABLE.c
        with self.engine.connect() as conn:
            row = conn.execute(select(column.holder, column.expires_at).where(column.name == self.name)).first()
        return (row.holder, row.expires_at) if row else None
