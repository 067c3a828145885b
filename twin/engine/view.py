"""What a dashboard page renders: a *view* of a site (live, a what-if scenario, a replayed moment).

A view is named by a key:

* ``live`` — the live twin;
* ``scenario:<name>`` — the twin settled under ``data/scenarios/<name>.toml``;
* ``replay:<incident>@<iso-time>`` — a recorded incident at one instant (UTC).

:class:`View` is the read interface every kind offers; pages render through it only, so
a new kind of view needs no page changes.  :class:`ViewTick` keeps a snapshot and the
per-tick detail computed with it together: they are published and read as one object.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

import pandas as pd

from twin.engine.snapshot import Snapshot
from twin.engine.tick import TickDetail
from twin.site.tables import SiteTables

LIVE, SCENARIO, REPLAY = "live", "scenario", "replay"
KINDS = (LIVE, SCENARIO, REPLAY)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # a file stem: no slashes, no leading dot


@dataclass(frozen=True)
class ViewTick:
    """The latest snapshot of a view and the detail computed in the same tick (either may be None)."""

    snapshot: Snapshot | None
    detail: TickDetail | None = None


EMPTY_TICK = ViewTick(None, None)


@runtime_checkable
class View(Protocol):
    """The read side of a view.  Times are timezone-aware UTC, units as in :class:`Snapshot`."""

    key: str  # the view key, e.g. "live" or "scenario:colossus-cdu-loss"
    label: str  # what the shell shows, e.g. "scenario · CDU loss in hall 1"
    is_live: bool  # only a live view ages, polls sources and accepts acknowledge/silence
    state: SiteTables
    site_name: str

    def latest_tick(self) -> ViewTick:
        """The latest snapshot together with its per-tick detail (None where not available)."""

    def latest(self) -> Snapshot | None:
        """The latest snapshot (``latest_tick().snapshot``)."""

    def trend(self, window_s: float = 900.0) -> pd.DataFrame:
        """Site scalars over the last ``window_s`` seconds, indexed by UTC time (may be empty)."""

    def alerts(self, active_only: bool = True) -> list[dict]:
        """Alerts newest first, as dicts (id, ts, severity, source, entity_*, metric, value, message …)."""

    def rack_history(self, rack_id: int, window_s: float = 600.0) -> pd.DataFrame:
        """GPU values of one rack over the window, long format (ts, gpu, metric, value); may be empty."""

    def cdu_history(self, cdu_id: int, window_s: float = 600.0) -> pd.DataFrame:
        """One CDU's recorded values over the window, a column per CDU field, indexed by UTC time; may be empty."""

    def placed_jobs(self) -> list:
        """The training jobs of the view as placed on the site (:class:`twin.engine.tick.PlacedJob`)."""

    def job_timeline(self, job_name: str) -> list[dict]:
        """A job's restart-cycle phase changes, oldest first (``ts``, ``phase``, ``from``…); may be empty."""

    def source_ages(self) -> dict[str, float]:
        """Seconds since each source's last good reading ({} for a view without sources)."""


@dataclass(frozen=True)
class ViewKey:
    """A parsed view key: ``kind``, the scenario or incident ``name``, the replay instant ``at``."""

    kind: str
    name: str = ""
    at: datetime | None = None

    def __str__(self) -> str:
        return format_view_key(self)


LIVE_KEY = ViewKey(LIVE)


def _parse_time(text: str, key: str) -> datetime:
    try:
        ts = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"view key {key!r}: {text!r} is not an ISO 8601 time (e.g. 2026-07-15T14:02:10Z)") from None
    if ts.tzinfo is None:
        raise ValueError(f"view key {key!r}: the time needs a zone (e.g. 2026-07-15T14:02:10Z)")
    return ts.astimezone(UTC)


def _check_name(name: str, what: str, key: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"view key {key!r}: {what} name {name!r} must be letters, digits, '.', '_' or '-'")
    return name


def parse_view_key(text: str | None) -> ViewKey:
    """The :class:`ViewKey` of ``text``; empty or None is live.  A bad key is a ValueError naming it."""
    key = (text or "").strip()
    if key in ("", LIVE):
        return LIVE_KEY
    kind, sep, rest = key.partition(":")
    if not sep or kind not in (SCENARIO, REPLAY):
        raise ValueError(f"view key {key!r}: expected 'live', 'scenario:<name>' or 'replay:<incident>@<time>'")
    if kind == SCENARIO:
        return ViewKey(SCENARIO, _check_name(rest, "scenario", key))
    incident, at_sep, at = rest.partition("@")
    if not at_sep or not at:
        raise ValueError(f"view key {key!r}: a replay needs an instant, 'replay:<incident>@<iso-time>'")
    return ViewKey(REPLAY, _check_name(incident, "incident", key), _parse_time(at, key))


def format_view_key(key: ViewKey) -> str:
    """The text of ``key``; ``parse_view_key(format_view_key(k)) == k``."""
    if key.kind == LIVE:
        return LIVE
    if key.kind == SCENARIO:
        return f"{SCENARIO}:{key.name}"
    if key.kind == REPLAY and key.at is not None:
        return f"{REPLAY}:{key.name}@{key.at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
    raise ValueError(f"cannot format view key {key!r}")
