"""Database writes of a live hub that must not stop its tick: a failure is counted into one outage.

Frames, alert changes, prunes and live states are written from the tick; when the
database is down the tick goes on.  :class:`GuardedWrites` runs each write and hands its
failures (and the first success after them) to the hub's :class:`ingest.store.outage.WriteOutage`,
which logs one line when the outage starts and one when it ends.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.exc import SQLAlchemyError

from ingest.store.outage import WriteOutage


class GuardedWrites:
    """Runs the database writes of one hub, turning their failures into one :class:`WriteOutage`."""

    def __init__(self, outage: WriteOutage) -> None:
        self.outage = outage

    def run(
        self, cost: str, write: Callable[[], object], reached_db: Callable[[object], bool] = lambda _result: True
    ) -> None:
        """Run ``write()``; a database error is counted as an outage, never raised.

        ``cost`` names what a failure loses; ``reached_db(result)`` says whether the write
        touched the database (only then does its success end an outage).  A failed frame
        is lost; failed alert changes are retried on the next tick (the tracker only
        records what it committed).
        """
        try:
            result = write()
        except SQLAlchemyError as exc:
            self.outage.failed(cost, exc)
        else:
            if reached_db(result):
                self.outage.succeeded()
