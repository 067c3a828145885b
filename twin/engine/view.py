"""What a dashboard page renders: a *view* of a site (live, a what-if scenario, a replayed moment).

A view is named by a key, ``<kind>`` or ``<kind>:<argument>``.  The kinds built in:

* ``live`` — the live twin;
* ``scenario:<name>`` — the twin settled under ``data/scenarios/<name>.toml``;
* ``replay:<incident>@<iso-time>`` — a recorded incident at one instant (UTC).

Each kind is a :class:`ViewKind` in a registry (:func:`register_view_kind`): how its keys
are read and written.  :func:`parse_view_key` and :func:`format_view_key` go through it,
so a new kind registers itself and needs no edit here (the dashboard registers, beside
it, how a key of the kind becomes a view: :mod:`dashboard.views.registry`).

:class:`View` is the read interface every kind offers; pages render through it only, so
a new kind of view needs no page changes.  :class:`ViewTick` keeps a snapshot and the
per-tick detail computed with it together: they are published and read as one object.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

import pandas as pd

from twin.engine.snapshot import Snapshot
from twin.engine.tick import PlacedJob, TickDetail
from twin.site.tables import SiteTables

LIVE, SCENARIO, REPLAY = "live", "scenario", "replay"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # a file stem: no slashes, no leading dot
_KIND = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")  # a kind's name: what comes before the colon


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

    def alerts(self, active_only: bool = True) -> list[dict[str, Any]]:
        """Alerts newest first, as dicts (id, ts, severity, source, entity_*, metric, value, message …)."""

    def rack_history(self, rack_id: int, window_s: float = 600.0) -> pd.DataFrame:
        """GPU values of one rack over the window, long format (ts, gpu, metric, value); may be empty."""

    def cdu_history(self, cdu_id: int, window_s: float = 600.0) -> pd.DataFrame:
        """One CDU's recorded values over the window, a column per CDU field, indexed by UTC time; may be empty."""

    def placed_jobs(self) -> list[PlacedJob]:
        """The training jobs of the view as placed on the site (:class:`twin.engine.tick.PlacedJob`)."""

    def job_timeline(self, job_name: str) -> list[dict[str, Any]]:
        """A job's restart-cycle phase changes, oldest first (``ts``, ``phase``, ``from``…); may be empty."""

    def source_ages(self) -> dict[str, float]:
        """Seconds since each source's last good reading ({} for a view without sources)."""


@dataclass(frozen=True)
class ViewKey:
    """A parsed view key: ``kind``, the scenario or incident ``name``, the replay instant ``at``.

    A kind registered later may use ``name`` for its argument (and ``at`` for an instant).
    """

    kind: str
    name: str = ""
    at: datetime | None = None

    def __str__(self) -> str:
        return format_view_key(self)


LIVE_KEY = ViewKey(LIVE)


@dataclass(frozen=True)
class ViewKind:
    """How the keys of one kind of view are read and written.

    ``name`` is what comes before the colon; ``syntax`` the key as messages show it (e.g.
    ``scenario:<name>``); ``argument`` whether a key has ``:<argument>`` (``live`` has none).
    ``parse(argument, key)`` reads the argument of ``key`` into a :class:`ViewKey` (a
    ValueError naming ``key`` when it is bad); ``format(key)`` writes the whole key back,
    so that ``parse_view_key(format_view_key(k)) == k``.
    """

    name: str
    syntax: str
    parse: Callable[[str, str], ViewKey]
    format: Callable[[ViewKey], str]
    argument: bool = True


_KINDS: dict[str, ViewKind] = {}
_KINDS_LOCK = threading.Lock()


def register_view_kind(kind: ViewKind) -> ViewKind:
    """Make keys of ``kind`` parse and format; a kind of the same name registered before is replaced."""
    if not _KIND.match(kind.name):
        raise ValueError(f"view kind name {kind.name!r} must be lower-case letters, digits, '_' or '-'")
    with _KINDS_LOCK:
        _KINDS[kind.name] = kind
    return kind


def unregister_view_kind(name: str) -> None:
    """Forget the kind ``name`` (its keys no longer parse); nothing happens when it is not registered."""
    with _KINDS_LOCK:
        _KINDS.pop(name, None)


def view_kinds() -> tuple[str, ...]:
    """The names of the registered kinds, in registration order."""
    return tuple(_KINDS)


def _expected() -> str:
    syntaxes = [repr(kind.syntax) for kind in _KINDS.values()]
    return ", ".join(syntaxes[:-1]) + f" or {syntaxes[-1]}" if len(syntaxes) > 1 else "".join(syntaxes)


def _parse_time(text: str, key: str) -> datetime:
    try:
        ts = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"view key {key!r}: {text!r} is not an ISO 8601 time (e.g. 2026-07-15T14:02:10Z)") from None
    if ts.tzinfo is None:
        raise ValueError(f"view key {key!r}: the time needs a zone (e.g. 2026-07-15T14:02:10Z)")
    return ts.astimezone(UTC)


def check_view_name(name: str, what: str, key: str) -> str:
    """``name`` when it is a file stem (letters, digits, '.', '_', '-'), else a ValueError naming ``key``."""
    if not _NAME.match(name):
        raise ValueError(f"view key {key!r}: {what} name {name!r} must be letters, digits, '.', '_' or '-'")
    return name


def parse_view_key(text: str | None) -> ViewKey:
    """The :class:`ViewKey` of ``text``; empty or None is live.  A bad key is a ValueError naming it."""
    key = (text or "").strip()
    if not key:
        return LIVE_KEY
    name, sep, rest = key.partition(":")
    kind = _KINDS.get(name)
    if kind is None or bool(sep) != kind.argument:
        raise ValueError(f"view key {key!r}: expected {_expected()}")
    return kind.parse(rest, key)


def format_view_key(key: ViewKey) -> str:
    """The text of ``key``; ``parse_view_key(format_view_key(k)) == k``."""
    kind = _KINDS.get(key.kind)
    if kind is None:
        raise ValueError(f"cannot format view key {key!r}: no view kind {key.kind!r}")
    return kind.format(key)


def _parse_replay(rest: str, key: str) -> ViewKey:
    incident, at_sep, at = rest.partition("@")
    if not at_sep or not at:
        raise ValueError(f"view key {key!r}: a replay needs an instant, 'replay:<incident>@<iso-time>'")
    return ViewKey(REPLAY, check_view_name(incident, "incident", key), _parse_time(at, key))


def _format_replay(key: ViewKey) -> str:
    if key.at is None:
        raise ValueError(f"cannot format view key {key!r}: a replay needs an instant")
    return f"{REPLAY}:{key.name}@{key.at.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


register_view_kind(ViewKind(LIVE, LIVE, lambda _rest, _key: LIVE_KEY, lambda _key: LIVE, argument=False))
register_view_kind(
    ViewKind(
        SCENARIO,
        "scenario:<name>",
        lambda rest, key: ViewKey(SCENARIO, check_view_name(rest, "scenario", key)),
        lambda key: f"{SCENARIO}:{key.name}",
    )
)
register_view_kind(ViewKind(REPLAY, "replay:<incident>@<time>", _parse_replay, _format_replay))
