"""A poll's watchdog: runs a fetch in a worker thread and abandons it past its deadline.

The second line of defence against what no socket deadline covers (a hung DNS lookup, a
parser on a pathological page): the abandoned thread cannot be killed, but its readings
are discarded, the next poll may start, and a watchdog with ``max_abandoned`` threads
still stuck starts no more (:mod:`ingest.live.pollers`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class PollAbandoned(RuntimeError):
    """A poll outlived its watchdog deadline (or too many earlier ones are still stuck)."""


class Watchdog:
    """Runs a callable in a worker thread and waits at most ``deadline_s`` for it (see module docstring)."""

    def __init__(self, name: str, deadline_s: float, max_abandoned: int = 2) -> None:
        self.name, self.deadline_s, self.max_abandoned = name, deadline_s, max_abandoned
        self.abandoned_total = 0
        self._stuck: list[threading.Thread] = []

    @property
    def stuck(self) -> int:
        """Abandoned worker threads still running."""
        self._stuck = [t for t in self._stuck if t.is_alive()]
        return len(self._stuck)

    def run(self, func: Callable[[], object]) -> object:
        """``func()``'s value; raises :class:`PollAbandoned` after ``deadline_s`` s, or ``func``'s exception."""
        if self.stuck >= self.max_abandoned:
            raise PollAbandoned(f"{self.name}: {len(self._stuck)} earlier poll(s) still stuck; no new poll started")
        box: dict[str, object] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["value"] = func()
            except BaseException as exc:  # noqa: BLE001 — handed to the waiting caller
                box["error"] = exc
            finally:
                done.set()

        worker = threading.Thread(target=work, name=f"poll-{self.name}", daemon=True)
        worker.start()
        if not done.wait(self.deadline_s):
            self._stuck.append(worker)
            self.abandoned_total += 1
            raise PollAbandoned(f"{self.name}: poll abandoned after {self.deadline_s:g} s")
        if "error" in box:
            raise box["error"]
        return box["value"]
