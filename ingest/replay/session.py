"""Record incidents from the synthetic plant: a live hub with injected faults feeding a flight recorder.

This is how the incidents in ``data/incidents/`` are produced (``clustertwin incidents
record``, see docs/incidents.md): the same hub, sensors and alert rules as the live twin,
stepped on a simulated clock as fast as the machine allows.  The plant runs the site's default
job (or ``job``) alone, placed as the live hub places it; with ``fleet`` the live fleet model
(:mod:`ingest.live.fleet`) runs beside it, its occupancy driving the plant.  A recording may run on a
variant of a reference site with more power sources (:func:`site_with_sources`, e.g. a
battery the reference site does not have), under its own site name; the bundle keeps the
variant's site file.
"""

from __future__ import annotations

import re
import tempfile
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from ingest.live.hub import LiveHub
from ingest.live.runtime import build_hub
from ingest.replay.recorder import FlightRecorder, RunningJob
from twin.cache import BoundedCache
from twin.site.errors import SiteError
from twin.site.load import load_site, site_path
from twin.site.tables import SiteTables

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)  # a July afternoon at Colossus (15:00 UTC = 10:00 CDT)


SOURCES_LINE = re.compile(r"(?m)^sources[ \t]*=[ \t]*\[[ \t]*(#[^\n]*)?$")  # the sources list of [power]
SITE_NAME_LINE = re.compile(r'(?m)^name[ \t]*=[ \t]*"[^"\n]*"')
CLOSING_LINE = re.compile(r"(?m)^\][ \t]*$")


def site_with_sources(site_toml: str, name: str, sources: tuple[str, ...]) -> str:
    """``site_toml`` renamed ``name`` with ``sources`` (TOML inline tables) added to its power sources.

    Raises ValueError naming the entry that is not an inline table, or when the file has no
    ``sources = [`` line in ``[power]`` or no name in ``[site]``.  The added sources come after the
    site's own, so those keep their ids.
    """
    for entry in sources:
        try:
            value = tomllib.loads(f"x = {entry}")["x"]
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"--add-source {entry!r}: not a TOML inline table ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"--add-source {entry!r}: not a TOML inline table")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,62}", name):
        raise ValueError(f"--site-name {name!r}: lower-case letters, digits and '-' only")
    site_at = site_toml.find("[site]")
    named = SITE_NAME_LINE.search(site_toml, site_at) if site_at >= 0 else None
    if named is None:
        raise ValueError("site file: no name in [site]")
    text = site_toml[: named.start()] + f'name = "{name}"' + site_toml[named.end() :]
    power_at = text.find("[power]")
    listed = SOURCES_LINE.search(text, power_at) if power_at >= 0 else None
    close = CLOSING_LINE.search(text, listed.end()) if listed else None
    if close is None:
        raise ValueError("site file: no 'sources = [' … ']' list in [power]")
    added = "".join(f"  {entry.strip()},  # added for this recording\n" for entry in sources)
    return text[: close.start()] + added + text[close.start() :]  # after the site's own sources: their ids stay


def recorder_tick(hub: LiveHub, recorder: FlightRecorder, ts: datetime) -> list[Path]:
    """One hub step at ``ts`` handed to ``recorder`` with its alerts, reported failures and the fleet's jobs."""
    snap = hub.step(ts)
    b = hub.ticker.buffer
    fleet = hub.view.fleet()
    return recorder.on_tick(
        ts,
        snap,
        hub.live_alerts.conditions,
        failed_power=b.failed("power"),
        failed_sources=b.failed("source"),
        failed_links=b.failed("link"),
        nodes_off=b.nodes_off(),
        jobs=running_jobs(hub.state, fleet.frame()) if fleet is not None else None,
    )


_RUNNING: BoundedCache[tuple[object, list[RunningJob]]] = BoundedCache(2)  # id of the frame → (frame, its jobs)


def running_jobs(state: SiteTables, frame) -> list[RunningJob]:
    """The running jobs of a fleet frame (:class:`ingest.live.fleet_frame.FleetFrame`) with their racks,
    built once per frame (the fleet rebuilds its frame only when an allocation changed)."""
    kept = _RUNNING.get_or_make(id(frame), lambda: (frame, _running_jobs(state, frame)), valid=lambda k: k[0] is frame)
    return kept[1]


def _running_jobs(state: SiteTables, frame) -> list[RunningJob]:
    busy = np.flatnonzero(frame.gpu_job >= 0)
    rows = frame.gpu_job[busy].astype(np.int64)
    pairs = np.unique(rows * state.n_racks + state.gpu_rack[busy])  # one (job row, rack) pair each
    job_rows, racks = pairs // state.n_racks, (pairs % state.n_racks).astype(int)
    unique_rows, starts = np.unique(job_rows, return_index=True)
    jobs = frame.jobs
    return [
        RunningJob(str(jobs["job_id"][r]), str(jobs["team"][r]), int(jobs["n_gpus"][r]), tuple(rs.tolist()))
        for r, rs in zip(unique_rows.tolist(), np.split(racks, starts[1:]))
    ]


@dataclass
class RecordSpec:
    """What to record: site, faults, length, cadence and the incident's metadata."""

    site: str
    name: str
    faults: tuple[str, ...] = ()
    duration_s: float = 600.0
    tick_s: float = 5.0  # the plant's cadence
    frame_every_s: float | None = None  # recorded frames (default: every tick)
    start: datetime = T0
    seed: int = 0
    title: str = ""
    tags: tuple[str, ...] = ()
    notes: str = ""
    detail_racks: tuple[str, ...] = ()
    max_detail_racks: int | None = None
    job: str | None = None
    site_name: str | None = None  # record on a variant of ``site`` under this name …
    add_sources: tuple[str, ...] = ()  # … with these sources added (TOML inline tables)
    fleet: bool = False  # run the live fleet model (the LLM-lab job mix) instead of the one placed job


def record_synthetic(spec: RecordSpec, incidents_dir: Path) -> Path:
    """Run the synthetic plant under ``spec`` and save the whole run as one incident; returns its path."""
    text = site_path(spec.site).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="clustertwin-record-") as tmp:
        site = spec.site
        if spec.site_name or spec.add_sources:
            text = site_with_sources(text, spec.site_name or load_site(spec.site).name, spec.add_sources)
            site = str(Path(tmp) / "site.toml")
            Path(site).write_text(text, encoding="utf-8")
            try:
                load_site(site)
            except SiteError as exc:
                raise ValueError(f"site variant of {spec.site}: {exc}") from None
        hub = build_hub(
            site,
            f"sqlite:///{Path(tmp) / 'record.db'}",
            faults=spec.faults,
            seed=spec.seed,
            start=spec.start,
            record=False,
            job=spec.job,
            fleet=spec.fleet,
        )
        try:
            every_s = spec.frame_every_s or spec.tick_s
            recorder = FlightRecorder(
                hub.state,
                Path(tmp) / "ring",
                incidents_dir,
                site_toml=text,
                window_s=spec.duration_s + every_s,
                every_s=every_s,
                auto_save=False,
                origin="synthetic: " + " ".join(spec.faults),
            )
            n = int(round(spec.duration_s / spec.tick_s)) + 1
            for i in range(n):
                recorder_tick(hub, recorder, spec.start + timedelta(seconds=i * spec.tick_s))
            racks = [hub.state.rack_name.index(r) for r in spec.detail_racks]
            end = spec.start + timedelta(seconds=(n - 1) * spec.tick_s)
            return recorder.save(
                spec.start,
                end,
                name=spec.name,
                title=spec.title,
                tags=spec.tags,
                notes=spec.notes,
                extra_racks=racks,
                max_detail_racks=spec.max_detail_racks,
            )
        finally:
            hub.db.dispose()
