"""Record incidents from the synthetic plant: a live hub with injected faults feeding a flight recorder.

This is how the incidents in ``data/incidents/`` are produced (``clustertwin incidents
record``, see docs/incidents.md): the same hub, sensors and alert rules as the live twin,
stepped on a simulated clock as fast as the machine allows.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ingest.live.hub import LiveHub
from ingest.live.runtime import build_hub
from ingest.replay.recorder import FlightRecorder
from twin.site.load import site_path

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=timezone.utc)  # a July afternoon at Colossus (15:00 UTC = 10:00 CDT)


def recorder_tick(hub: LiveHub, recorder: FlightRecorder, ts: datetime) -> list[Path]:
    """One hub step at ``ts`` handed to ``recorder`` with its alerts and reported failures."""
    snap = hub.step(ts)
    b = hub.buffer
    return recorder.on_tick(ts, snap, hub.conditions, failed_power=b.failed("power"),
                            failed_sources=b.failed("source"), failed_links=b.failed("link"),
                            nodes_off=b.nodes_off())


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


def record_synthetic(spec: RecordSpec, incidents_dir: Path) -> Path:
    """Run the synthetic plant under ``spec`` and save the whole run as one incident; returns its path."""
    text = site_path(spec.site).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="clustertwin-record-") as tmp:
        hub = build_hub(spec.site, f"sqlite:///{Path(tmp) / 'record.db'}", faults=spec.faults, seed=spec.seed,
                        start=spec.start, record=False, job=spec.job)
        try:
            every_s = spec.frame_every_s or spec.tick_s
            recorder = FlightRecorder(hub.state, Path(tmp) / "ring", incidents_dir, site_toml=text,
                                      window_s=spec.duration_s + every_s, every_s=every_s,
                                      auto_save=False, origin="synthetic: " + " ".join(spec.faults))
            n = int(round(spec.duration_s / spec.tick_s)) + 1
            for i in range(n):
                recorder_tick(hub, recorder, spec.start + timedelta(seconds=i * spec.tick_s))
            racks = [hub.state.rack_name.index(r) for r in spec.detail_racks]
            end = spec.start + timedelta(seconds=(n - 1) * spec.tick_s)
            return recorder.save(spec.start, end, name=spec.name, title=spec.title, tags=spec.tags,
                                 notes=spec.notes, extra_racks=racks, max_detail_racks=spec.max_detail_racks)
        finally:
            hub.db.dispose()
