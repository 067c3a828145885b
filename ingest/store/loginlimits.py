"""Login attempts counted in the database, so every server process of one database shares one limit.

:class:`StoredFailureLimiter` has the interface of the in-process
:class:`dashboard.auth.ratelimit.FailureLimiter`: :meth:`~StoredFailureLimiter.reserve`
writes a row (table ``login_failure``) for an attempt *before* the password is checked
and counts the key's rows in the window, its own included, in the same transaction; over
the limit the transaction is rolled back and the attempt refused.  The row stays when the
attempt fails and is deleted (:meth:`~StoredFailureLimiter.release`) when it succeeds.
Reservations of one key are serialized (PostgreSQL: a transaction-level advisory lock on
the key; SQLite: the insert takes the database's write lock), so concurrent attempts
through any number of processes and threads get exactly ``limit`` passes, never more.

Every :data:`TRIM_EVERY`-th row written also deletes the expired rows and trims its scope
to the newest ``max_rows`` rows, so the table stays bounded whatever clients send.  Times
are wall-clock UTC, shared by all processes.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from sqlalchemy import delete, func, insert, select, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from ingest.store.models import LoginFailure
from ingest.store.outage import one_line

log = logging.getLogger(__name__)

MAX_KEY_CHARS = 100  # longer keys (forwarded addresses, names) are cut: a client cannot grow the rows
TRIM_EVERY = 64  # delete expired rows and trim the scope to max_rows on every this many rows written
_T = LoginFailure.__table__


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class StoredFailureLimiter:
    """At most ``limit`` counted attempts per key of ``scope`` within ``window_s`` seconds, in ``engine``."""

    def __init__(
        self,
        engine: Engine,
        scope: str,
        limit: int,
        window_s: float,
        max_rows: int = 100_000,
        clock=time.time,
        trim_every: int = TRIM_EVERY,
    ) -> None:
        self.engine, self.scope, self.limit, self.window_s = engine, scope, limit, window_s
        self.max_rows, self.clock, self.trim_every = max_rows, clock, trim_every

    def _times(self, conn, key: str, now: float) -> list[tuple[int, float]]:
        rows = conn.execute(
            select(_T.c.id, _T.c.attempt_at)
            .where(_T.c.scope == self.scope, _T.c.key == key, _T.c.attempt_at > _at(now - self.window_s))
            .order_by(_T.c.attempt_at, _T.c.id)
        ).all()
        return [(row.id, row.attempt_at.timestamp()) for row in rows]

    def _wait_s(self, times: list[float], now: float) -> float:
        """Seconds until fewer than ``limit`` of ``times`` (ascending) are in the window (0: not over it)."""
        if len(times) < self.limit:
            return 0.0
        return max(times[len(times) - self.limit] + self.window_s - now, 1e-3)

    def reserve(self, key: str) -> tuple[float, int | None]:
        """Count an attempt of ``key``: ``(0, ticket)`` when it may go on, ``(wait_s, None)`` when refused."""
        key, now = key[:MAX_KEY_CHARS], self.clock()
        with self.engine.connect() as conn:
            tx = conn.begin()
            try:
                if conn.dialect.name == "postgresql":  # one attempt of a key at a time, until commit
                    conn.execute(
                        text("SELECT pg_advisory_xact_lock(hashtext(:lock))"),
                        {"lock": f"login_failure {self.scope} {key}"},
                    )
                ticket = conn.execute(
                    insert(_T).values(scope=self.scope, key=key, attempt_at=_at(now))
                ).inserted_primary_key[0]  # SQLite: this write holds the database's write lock until commit
                counted = self._times(conn, key, now)
                if len(counted) > self.limit:
                    tx.rollback()
                    return self._wait_s([t for row_id, t in counted if row_id != ticket], now), None
                tx.commit()
            except BaseException:
                tx.rollback()
                raise
        if ticket % self.trim_every == 0:
            self._housekeep(now)
        return 0.0, ticket

    def _housekeep(self, now: float) -> None:
        """Delete expired rows and the scope's rows beyond the newest ``max_rows`` (a failure only logs)."""
        oldest_kept = (
            select(_T.c.id)
            .where(_T.c.scope == self.scope)
            .order_by(_T.c.id.desc())
            .limit(1)
            .offset(self.max_rows - 1)
            .scalar_subquery()
        )
        try:
            with self.engine.begin() as conn:
                conn.execute(delete(_T).where(_T.c.attempt_at <= _at(now - self.window_s)))
                conn.execute(delete(_T).where(_T.c.scope == self.scope, _T.c.id < oldest_kept))
        except SQLAlchemyError as exc:
            log.warning("login counters not trimmed (%s); trying again later", one_line(exc))

    def release(self, ticket: int) -> None:
        """The attempt of ``ticket`` succeeded (or was refused): it does not count."""
        with self.engine.begin() as conn:
            conn.execute(delete(_T).where(_T.c.id == ticket))

    def retry_after_s(self, key: str) -> float:
        """Seconds ``key`` must wait before its next attempt (0: it may try now)."""
        now = self.clock()
        with self.engine.connect() as conn:
            return self._wait_s([t for _id, t in self._times(conn, key[:MAX_KEY_CHARS], now)], now)

    def clear(self, key: str) -> None:
        """Forget every counted attempt of ``key``."""
        with self.engine.begin() as conn:
            conn.execute(delete(_T).where(_T.c.scope == self.scope, _T.c.key == key[:MAX_KEY_CHARS]))

    def rows_total(self) -> int:
        """Rows of this scope in the table (expired ones included until the next reservation)."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(_T).where(_T.c.scope == self.scope)).scalar_one())
