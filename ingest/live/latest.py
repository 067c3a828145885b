"""The newest tick of a live hub as its readers see it: snapshot and detail together, its counter, the trend.

The tick loop (a leader) or a follower's adoption of the leader's live state replace the
tick; the view, the publisher and the API read it.  The snapshot and the tick detail
computed with it are one :class:`twin.engine.view.ViewTick`, replaced under a lock, so a
reader never gets one tick's snapshot with another tick's detail.
"""

from __future__ import annotations

import threading

from ingest.live.trend import TrendBuffer
from twin.engine.snapshot import Snapshot
from twin.engine.view import EMPTY_TICK, ViewTick


class LatestTick:
    """The tick shown (``get()``), its counter ``seq``, the trend of the ticks shown and how many were adopted."""

    def __init__(self) -> None:
        self._tick: ViewTick = EMPTY_TICK
        self._lock = threading.Lock()
        self.trend = TrendBuffer()
        self.seq = 0  # tick counter of the published (leader) or adopted (follower) live state
        self.adopted_total = 0  # live states taken over from the leader while following

    def get(self) -> ViewTick:
        """The latest snapshot with the detail of the same tick, read together."""
        with self._lock:
            return self._tick

    @property
    def snapshot(self) -> Snapshot | None:
        return self.get().snapshot

    def show(self, tick: ViewTick) -> None:
        """A tick of this process's own (with its snapshot): into the trend, shown, counted."""
        if tick.snapshot is not None:
            self.trend.append(tick.snapshot)
        with self._lock:
            self._tick = tick
        self.seq += 1

    def adopt(self, tick: ViewTick, seq: int) -> None:
        """A leader's tick number ``seq`` (with its snapshot): into the trend and shown."""
        if tick.snapshot is not None:
            self.trend.append(tick.snapshot)
        self.seq = seq
        with self._lock:
            self._tick = tick
        self.adopted_total += 1
