"""Benchmarks of incidents on colossus: headless replay speed and the import time of a 30-minute bundle."""

from __future__ import annotations

import os
import resource
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ingest.replay import diebench  # noqa: F401  (registers die_model)
from ingest.replay.bundle import Bundle, read_bundle, write_bundle
from ingest.replay.library import SHIPPED_DIR, import_file, validate
from ingest.replay.replay import TICK_S, load_recording, replay
from twin.bench import benchmark
from twin.engine.tick import TwinEngine

INCIDENT = "colossus-cdu-pump-failure"


def _live_tick_peer(state, ticks: int = 20) -> dict:
    """The named peer: the live engine's own 1 s tick on the whole site, one process, nominal inputs."""
    engine = TwinEngine(state)
    engine.tick(1.0)
    t0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(ticks):
        engine.tick(1.0)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {
        "tick_ms": wall / ticks * 1e3,
        "gpu_ticks_per_s": state.n_gpus * ticks / wall,
        "gpu_ticks_per_cpu_s": state.n_gpus * ticks / cpu,
    }


@benchmark("replay_colossus")
def replay_colossus_benchmark(incident: str = INCIDENT, tick_s: float = TICK_S) -> dict:
    """Replay a shipped colossus incident with the twin re-simulated every ``tick_s`` (1 s), as fast as possible.

    ``speed_x`` is recorded seconds per wall second (target ≥ 150, stretch 500);
    ``gpu_ticks_per_s`` counts every GPU of the site at every tick, over the wall clock
    (target ≥ 15 M) and over the CPU time of all the processes (``gpu_ticks_per_cpu_s``).
    The named peer, measured in the same run, is the live engine ticking the whole site in
    one process (``peer_live_tick_*``); ``ratio_vs_live_tick`` is the replay's GPU-ticks
    per wall second over the peer's, ``ratio_cpu_vs_live_tick`` the same per CPU second
    (independent of what else runs; ``load_avg_1min`` says how busy the machine was).  ``replay_one_process_*`` is the same replay without
    the hall shards.
    """
    bundle = read_bundle(SHIPPED_DIR / f"{incident}.ctincident")
    state = validate(bundle)
    t0 = time.perf_counter()
    rec = load_recording(bundle, state)
    load_s = time.perf_counter() - t0
    peer = _live_tick_peer(state)
    cpu0, child0 = time.process_time(), _children_cpu_s()
    result = replay(bundle, state, rec=rec, tick_s=tick_s)
    cpu_s = time.process_time() - cpu0 + _children_cpu_s() - child0
    one = replay(bundle, state, rec=rec, tick_s=tick_s, workers=1)
    return {
        "incident": incident,
        "gpus": state.n_gpus,
        "frames": result.frames,
        "frame_every_s": bundle.metadata["frame_every_s"],
        "tick_s": tick_s,
        "n_ticks": result.n_ticks,
        "n_workers": result.n_workers,
        "duration_s": result.duration_s,
        "load_s": load_s,
        "replay_s": result.wall_s,
        "speed_x": result.speed_x,
        "gpu_ticks_per_s": result.gpu_ticks_per_s,
        # on a shared machine the wall clock includes waiting for a core; CPU time does not
        "cpu_s": cpu_s,
        "gpu_ticks_per_cpu_s": state.n_gpus * result.n_ticks / cpu_s,
        "replay_one_process_s": one.wall_s,
        "replay_one_process_speed_x": one.speed_x,
        "peer_live_tick_ms": peer["tick_ms"],
        "peer_live_tick_gpu_ticks_per_s": peer["gpu_ticks_per_s"],
        "peer_live_tick_gpu_ticks_per_cpu_s": peer["gpu_ticks_per_cpu_s"],
        "ratio_vs_live_tick": result.gpu_ticks_per_s / peer["gpu_ticks_per_s"],
        # per CPU second: what a replay costs against the live tick, whatever else runs on the machine
        "ratio_cpu_vs_live_tick": state.n_gpus * result.n_ticks / cpu_s / peer["gpu_ticks_per_cpu_s"],
        "load_avg_1min": os.getloadavg()[0],
        "ratio_one_process_vs_live_tick": state.n_gpus * one.n_ticks / one.wall_s / peer["gpu_ticks_per_s"],
    }


def _children_cpu_s() -> float:
    """CPU seconds of this process's ended children (the replay's worker processes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def stretched(bundle: Bundle, times: int) -> Bundle:
    """``bundle`` repeated ``times`` times back to back (a longer recording of the same shape)."""
    start, end = (bundle.frame("site")["ts"].iloc[k] for k in (0, -1))
    span = (end - start) + timedelta(seconds=bundle.metadata["frame_every_s"])
    tables = {}
    for name, table in bundle.tables.items():
        parts = []
        for k in range(times):
            shift = pa.scalar(int(span.total_seconds() * 1000 * k), type=pa.duration("ms"))
            parts.append(table.set_column(0, "ts", pc.add(table.column("ts"), shift)))
        tables[name] = pa.concat_tables(parts)
    meta = dict(bundle.metadata, name=f"{bundle.name}-x{times}", end=(end + span * (times - 1)).isoformat())
    return Bundle(meta, bundle.site_toml, tables)


@benchmark("bundle_import")
def bundle_import_benchmark(incident: str = INCIDENT, minutes: float = 30.0) -> dict:
    """Import (read, checksum, schema and site validation, store) of a colossus bundle of ``minutes``.

    The bundle is the shipped 10-minute incident repeated back to back (same entities,
    same detail), written once; the import is timed from file to stored copy (target ≤ 10 s).
    """
    bundle = read_bundle(SHIPPED_DIR / f"{incident}.ctincident")
    ten_min_s = (bundle.frame("site")["ts"].iloc[-1] - bundle.frame("site")["ts"].iloc[0]).total_seconds()
    times = max(1, round(minutes * 60 / (ten_min_s + bundle.metadata["frame_every_s"])))
    big = stretched(bundle, times)
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        path = write_bundle(Path(tmp) / "big.ctincident", big)
        t0 = time.perf_counter()
        import_file(path, Path(tmp) / "lib")
        import_s = time.perf_counter() - t0
        size = path.stat().st_size
    return {
        "incident": big.name,
        "minutes": times * (ten_min_s + bundle.metadata["frame_every_s"]) / 60,
        "frames": big.tables["site"].num_rows,
        "bundle_mb": size / 1e6,
        "import_s": import_s,
    }
