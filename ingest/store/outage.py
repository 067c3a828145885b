"""Database outages seen by a writer: one log line when one starts, one when it ends, and what was lost.

A live hub writes every few seconds; while the database is down each write fails the
same way.  :class:`WriteOutage` turns that stream of failures into two lines: what failed
(the first error, on one line) and that writes are being dropped; then how long the
outage lasted and how many writes of each kind were lost.
"""

from __future__ import annotations

import logging
import time
from collections import Counter


def one_line(error: BaseException) -> str:
    """The error's type and first line of its message (SQLAlchemy appends the SQL and a link)."""
    cause = getattr(error, "orig", None) or error
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[0] if text else ''}".strip().rstrip(":")


class WriteOutage:
    """Failure state of the writes of one process to one database."""

    def __init__(self, logger: logging.Logger, what: str = "database") -> None:
        self.log, self.what = logger, what
        self.started_s: float | None = None
        self.lost: Counter[str] = Counter()
        self.outages_total = 0

    @property
    def active(self) -> bool:
        return self.started_s is not None

    def failed(self, kind: str, error: BaseException, now_s: float | None = None) -> None:
        """A write of ``kind`` (what it costs, e.g. ``"frames dropped"``) failed with ``error``: counted, logged only at the start."""
        if self.started_s is None:
            self.started_s = time.monotonic() if now_s is None else now_s
            self.outages_total += 1
            self.log.error(
                "%s write failed (%s): dropping recorded frames and holding alert changes until it "
                "is back; logging once until then",
                self.what,
                one_line(error),
            )
        self.lost[kind] += 1

    def succeeded(self, now_s: float | None = None) -> None:
        """A write went through: ends the outage (logged with its length and what was lost), if any."""
        if self.started_s is None:
            return
        now_s = time.monotonic() if now_s is None else now_s
        lost = ", ".join(f"{n} {kind}" for kind, n in sorted(self.lost.items())) or "nothing"
        self.log.warning(
            "%s writes work again after %.1f s; during the outage: %s", self.what, now_s - self.started_s, lost
        )
        self.started_s = None
        self.lost.clear()


def remembered_alerts(kept: dict, active_only: bool, limit: int) -> list[dict]:
    """The alert list to show while the database cannot be read: from the lists last read (``kept``).

    ``kept`` maps ``(active_only, limit)`` to a list read before.  The same query's list if
    there is one, else one derived from another (the active ones of a full list, a longer
    list cut), else an empty list: never an error, so pages and the API keep answering.
    """
    if (active_only, limit) in kept:
        return kept[(active_only, limit)]
    for (kept_active, _kept_limit), rows in sorted(kept.items(), key=lambda kv: -kv[0][1]):
        if kept_active == active_only:
            return rows[:limit]
        if active_only and not kept_active:
            return [a for a in rows if a.get("cleared_at") is None][:limit]
    return []
