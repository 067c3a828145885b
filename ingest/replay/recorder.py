"""The flight recorder: the last N minutes of a whole site on disk, saved as an incident on demand or on a critical alert.

Each tick of a live hub is handed to :meth:`FlightRecorder.on_tick`: its snapshot, the alert
conditions it raised (:attr:`ingest.live.live_alerts.LiveAlerts.conditions`) and the failures
its readings report (:class:`ingest.live.readings.ReadingsBuffer`), as
:func:`ingest.replay.session.recorder_tick` does.  Every ``every_s`` a
:class:`ingest.replay.window.SiteFrame` is written to the ring directory as one file
(``<epoch ms>.npz``) through a synced temporary file and a rename; events are appended to
``events.jsonl``, one synced line each: an alert as it opens, and a row of severity
``CLEARED`` (:data:`ingest.replay.bundle.CLEARED`) when it clears (its episode ends: the
condition is no longer among the hub's conditions).  Frames older than
``window_s`` are deleted.  Killing the process at any moment therefore loses at most the
frame being written (and a torn last event line, which loading skips); a restarted
recorder picks up the ring where it was, with the alerts its log leaves open (so one that
still holds is not logged as opening again, and one that cleared meanwhile gets its clearing).
With a fleet, each recorded frame also notes the jobs running (``jobs``: :class:`RunningJob`
rows) and the recorder keeps, in memory, each job's team, size, racks and the first and last
frame it was seen running; a saved window carries those that ran in it as its ``jobs`` table
(the replay names the jobs and teams an incident hit from it).  After a restart the jobs are
known from the first frame on.

:meth:`FlightRecorder.save` writes a window of the ring as an incident bundle into the
incident directory (atomically, see :mod:`ingest.replay.bundle`).  When a critical alert
opens, a save of ``[alert − pre_roll_s, alert + post_roll_s]`` is scheduled and written
once the post-roll has been recorded.  Saved bundles live outside the ring and are never
pruned.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from ingest.replay.bundle import CLEARED, SCHEMAS, SUFFIX, Bundle, write_bundle
from ingest.replay.window import SiteFrame, capture, detail_racks, window_tables
from twin.engine.snapshot import Snapshot
from twin.site.tables import SiteTables

log = logging.getLogger(__name__)
WINDOW_S = 900.0  # ring length: the last 15 minutes
EVERY_S = 5.0  # frame cadence, the hub's recording cadence
PRE_ROLL_S = 300.0
POST_ROLL_S = 120.0


@dataclass
class PendingSave:
    """An automatic save waiting for its post-roll."""

    trigger_ts: datetime
    due_ts: datetime
    reason: str
    entity_racks: list[int]


@dataclass(frozen=True)
class RunningJob:
    """A job running at a recorded frame: its id, team, GPUs and the racks holding them (dense ids)."""

    job_id: str
    team: str
    n_gpus: int
    rack_ids: tuple[int, ...]


def _ms(ts: datetime) -> int:
    return int(round(ts.timestamp() * 1000))


def _field(alert, name):
    return alert[name] if isinstance(alert, dict) else getattr(alert, name)


EVENT_FIELDS = ("severity", "source", "entity_kind", "entity_id", "entity_name", "metric", "value", "message")


def _event_row(ts: datetime, alert) -> dict:
    """The logged line of ``alert`` opening at ``ts``: the bundle's event fields, with the alert's key."""
    return {"ts_ms": _ms(ts), "key": _field(alert, "key"), **{k: _field(alert, k) for k in EVENT_FIELDS}}


def clearing_row(ts: datetime, opening: dict, last_value: float) -> dict:
    """The ``CLEARED`` line for the alert ``opening`` (its logged line) ending at ``ts``.

    Same key, source, entity and metric as the opening; ``value`` is the alert's last value
    while it was open; the message names what cleared.
    """
    return {
        **opening,
        "ts_ms": _ms(ts),
        "severity": CLEARED,
        "value": last_value,
        "message": f"cleared: {opening['message']}",
    }


class FlightRecorder:
    """See module docstring."""

    def __init__(
        self,
        state: SiteTables,
        ring_dir: Path,
        incidents_dir: Path,
        *,
        site_toml: str,
        site_version: int = 1,
        window_s: float = WINDOW_S,
        every_s: float = EVERY_S,
        pre_roll_s: float = PRE_ROLL_S,
        post_roll_s: float = POST_ROLL_S,
        auto_save: bool = True,
        origin: str = "flight recorder",
    ) -> None:
        if not 0 < every_s <= window_s or pre_roll_s < 0 or post_roll_s < 0:
            raise ValueError("need 0 < every_s ≤ window_s and non-negative pre/post-roll seconds")
        self.state, self.site_toml, self.site_version = state, site_toml, site_version
        self.ring_dir, self.incidents_dir = Path(ring_dir), Path(incidents_dir)
        self.window_s, self.every_s = window_s, every_s
        self.pre_roll_s, self.post_roll_s, self.auto_save = pre_roll_s, post_roll_s, auto_save
        self.origin = origin
        self.ring_dir.mkdir(parents=True, exist_ok=True)
        self.incidents_dir.mkdir(parents=True, exist_ok=True)
        for tmp in self.ring_dir.glob(".*.tmp-*"):
            tmp.unlink(missing_ok=True)  # a write the previous process did not finish
        self._frames = sorted(int(p.stem) for p in self.ring_dir.glob("*.npz") if p.stem.isdigit())
        self._events_path = self.ring_dir / "events.jsonl"
        # alert key → its logged opening line and its last value, for the alerts open now
        self._open: dict[str, tuple[dict, float]] = self._open_in_log()
        self.pending: list[PendingSave] = []
        self.saved: list[Path] = []
        # job id → [its RunningJob, first and last frame it ran at (epoch ms)]
        self._jobs: dict[str, list] = {}

    # ------------------------------------------------------------------ ticks
    def on_tick(
        self,
        ts: datetime,
        snapshot: Snapshot,
        alerts=(),
        *,
        failed_power=(),
        failed_sources=(),
        failed_links=None,
        nodes_off=None,
        jobs: list[RunningJob] | None = None,
    ) -> list[Path]:
        """Record ``snapshot`` (at the cadence) and the alerts that opened or cleared; returns bundles saved now.

        ``jobs``: the fleet's running jobs now (None without a fleet), noted with each recorded frame.
        """
        critical = self._log_alerts(ts, alerts)
        if not self._frames or _ms(ts) - self._frames[-1] >= self.every_s * 1000 - 1:
            if jobs is not None:
                self._note_jobs(_ms(ts), jobs)
            frame = capture(
                ts,
                snapshot,
                failed_power=failed_power,
                failed_sources=failed_sources,
                failed_links=failed_links,
                nodes_off=nodes_off,
            )
            self._write_frame(frame)
        self._prune(ts)
        if self.auto_save and critical and not any(p.due_ts >= ts for p in self.pending):
            racks = sorted({int(_field(a, "entity_id")) for a in critical if _field(a, "entity_kind") == "rack"})
            self.pending.append(
                PendingSave(ts, ts + timedelta(seconds=self.post_roll_s), _field(critical[0], "message"), racks)
            )
        return self._flush_pending(ts)

    def _write_frame(self, frame: SiteFrame) -> None:
        ts_ms = _ms(frame.ts)
        path = self.ring_dir / f"{ts_ms}.npz"
        tmp = self.ring_dir / f".{ts_ms}.tmp-{os.getpid()}"
        with open(tmp, "wb") as f:
            np.savez(f, **frame.arrays())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self._frames.append(ts_ms)

    def _log_alerts(self, ts: datetime, alerts) -> list:
        """Log the alerts that opened and cleared since the last tick; returns the critical ones that opened."""
        now = {_field(a, "key"): a for a in alerts}
        opened = [a for k, a in now.items() if k not in self._open]
        rows = [clearing_row(ts, line, value) for k, (line, value) in self._open.items() if k not in now]
        opening = {k: _event_row(ts, a) for k, a in now.items() if k not in self._open}
        rows += opening.values()
        self._open = {
            k: ((opening[k] if k in opening else self._open[k][0]), float(_field(a, "value"))) for k, a in now.items()
        }
        if rows:
            lines = "".join(json.dumps(row, default=float) + "\n" for row in rows)
            with open(self._events_path, "a", encoding="utf-8") as f:
                f.write(lines)
                f.flush()
                os.fsync(f.fileno())
        return [a for a in opened if _field(a, "severity") == "critical"]

    def _log_lines(self) -> list[dict]:
        """The event log's lines, oldest first (a torn or unreadable line skipped)."""
        rows = []
        if self._events_path.exists():
            for line in self._events_path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and "ts_ms" in row:
                    rows.append(row)
        return rows

    def _open_in_log(self) -> dict[str, tuple[dict, float]]:
        """The alerts the event log leaves open (opened, not cleared since), by key, with their opening line."""
        out: dict[str, tuple[dict, float]] = {}
        for row in self._log_lines():
            key = row.get("key")
            if key is None:
                continue  # a line of a recorder that did not log keys
            if row.get("severity") == CLEARED:
                out.pop(key, None)
            else:
                out[key] = (row, float(row.get("value", float("nan"))))
        return out

    def _note_jobs(self, ts_ms: int, jobs: list[RunningJob]) -> None:
        for job in jobs:
            seen = self._jobs.get(job.job_id)
            if seen is None or seen[0] != job:  # new, or restarted elsewhere: noted afresh from here
                self._jobs[job.job_id] = [job, ts_ms, ts_ms]
            else:
                seen[2] = ts_ms

    def _prune(self, ts: datetime) -> None:
        horizon = _ms(ts) - int(self.window_s * 1000)
        keep_from = horizon - int((self.pre_roll_s if self.pending else 0) * 1000)
        while self._frames and self._frames[0] < keep_from:
            (self.ring_dir / f"{self._frames.pop(0)}.npz").unlink(missing_ok=True)
        if self._jobs:
            self._jobs = {k: v for k, v in self._jobs.items() if v[2] >= keep_from}

    def _flush_pending(self, ts: datetime) -> list[Path]:
        done = [p for p in self.pending if p.due_ts <= ts]
        self.pending = [p for p in self.pending if p.due_ts > ts]
        out = []
        for p in done:
            name = f"{self.state.name}-{p.trigger_ts.strftime('%Y%m%dT%H%M%SZ')}"
            out.append(
                self.save(
                    p.trigger_ts - timedelta(seconds=self.pre_roll_s),
                    p.due_ts,
                    name=name,
                    title=f"Critical alert: {p.reason}",
                    tags=["automatic", "critical"],
                    extra_racks=p.entity_racks,
                )
            )
        return out

    # ------------------------------------------------------------------- ring
    def frame_times(self) -> list[datetime]:
        return [datetime.fromtimestamp(ms / 1000, tz=UTC) for ms in self._frames]

    def frames(self, start: datetime, end: datetime) -> list[SiteFrame]:
        """The ring's frames between ``start`` and ``end`` (inclusive), oldest first."""
        out = []
        for ms in self._frames:
            if _ms(start) <= ms <= _ms(end):
                with np.load(self.ring_dir / f"{ms}.npz") as arrays:
                    out.append(SiteFrame.from_arrays(arrays))
        return out

    def events(self, start: datetime, end: datetime) -> pa.Table:
        """Events logged between ``start`` and ``end`` as the bundle's events table (torn lines skipped)."""
        rows = [row for row in self._log_lines() if _ms(start) <= row["ts_ms"] <= _ms(end)]
        return events_table(rows)

    # ------------------------------------------------------------------- save
    def save(
        self,
        start: datetime,
        end: datetime,
        *,
        name: str,
        title: str = "",
        tags=(),
        notes: str = "",
        extra_racks=(),
        max_detail_racks: int | None = None,
    ) -> Path:
        """Write the ring's ``[start, end]`` as the incident ``name``; returns the bundle's path."""
        frames = self.frames(start, end)
        if not frames:
            raise ValueError(f"the flight recorder holds no frame between {start} and {end}")
        kw = {} if max_detail_racks is None else {"limit": max_detail_racks}
        detail = detail_racks(self.state, frames, list(extra_racks), **kw)
        tables = window_tables(self.state, frames, detail)
        tables["events"] = self.events(start, end)
        if self._jobs:
            tables["jobs"] = self.jobs_table(_ms(frames[0].ts), _ms(frames[-1].ts))
        meta = {
            "name": name,
            "title": title or name,
            "site_name": self.state.name,
            "site_version": self.site_version,
            "start": frames[0].ts.isoformat(),
            "end": frames[-1].ts.isoformat(),
            "frame_every_s": self.every_s,
            "tags": list(tags),
            "notes": notes,
            "origin": self.origin,
            "detail_racks": [self.state.rack_name[r] for r in detail],
        }
        path = write_bundle(self.incidents_dir / f"{name}{SUFFIX}", Bundle(meta, self.site_toml, tables))
        self.saved.append(path)
        log.info("saved incident %s (%d frames, %d detail racks)", name, len(frames), detail.size)
        return path

    def jobs_table(self, start_ms: int, end_ms: int) -> pa.Table:
        """The bundle's jobs table: the jobs noted running between ``start_ms`` and ``end_ms``."""
        rows = [
            (j, max(a, start_ms), min(b, end_ms)) for j, a, b in self._jobs.values() if b >= start_ms and a <= end_ms
        ]
        schema = SCHEMAS["jobs"]
        ts = lambda values: pa.array(
            np.array(values, dtype=np.int64).astype("datetime64[ms]"), type=schema.field("first_ts").type
        )  # noqa: E731
        return pa.Table.from_arrays(
            [
                pa.array([j.job_id for j, _, _ in rows], type=pa.string()),
                pa.array([j.team for j, _, _ in rows], type=pa.string()),
                pa.array([j.n_gpus for j, _, _ in rows], type=pa.int32()),
                pa.array([list(j.rack_ids) for j, _, _ in rows], type=schema.field("rack_ids").type),
                ts([a for _, a, _ in rows]),
                ts([b for _, _, b in rows]),
            ],
            schema=schema,
        )


def events_table(rows: list[dict]) -> pa.Table:
    """The bundle events table from event dicts (``ts_ms`` plus the event fields)."""
    schema = SCHEMAS["events"]
    cols = [
        pa.array(
            np.array([r["ts_ms"] for r in rows], dtype=np.int64).astype("datetime64[ms]"), type=schema.field("ts").type
        )
    ]
    for f in list(schema)[1:]:
        cols.append(pa.array([r[f.name] for r in rows], type=f.type))
    return pa.Table.from_arrays(cols, schema=schema)
