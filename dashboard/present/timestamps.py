"""UTC timestamp normalisation for values read back from storage."""

from __future__ import annotations

from datetime import UTC, datetime


def aware(ts: datetime | None) -> datetime | None:
    """Timezone-aware UTC (databases such as SQLite hand back naive UTC datetimes)."""
    if ts is None:
        return None
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts


def normalise_alert(alert: dict) -> dict:
    """A copy of ``alert`` with aware UTC times."""
    out = dict(alert)
    for key in ("ts", "silenced_until", "cleared_at"):
        out[key] = aware(out.get(key))
    return out
