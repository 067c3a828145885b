"""Benchmark of full-site frame storage on SQLite and a throwaway PostgreSQL.

Peer: the obvious relational design, one row per GPU with a column per field, written
with the driver's raw ``executemany`` (the fastest row path measured on this machine).
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from sqlalchemy import text

from ingest.store.db import open_database
from ingest.store.frames import FrameStore
from ingest.store.layouts import site_layouts
from ingest.store.pgserver import PostgresUnavailable, throwaway_postgres
from twin.bench import benchmark
from twin.site.load import load_site

WINDOW_S = 600  # the 10-minute window of the read target
T0 = datetime(2024, 7, 22, 9, 20, tzinfo=UTC)


def _frames(layouts, rng):
    return {lay.kind: rng.normal(50, 10, (len(lay.fields), lay.n_entities)).astype(np.float32) for lay in layouts}


def _row_per_gpu_write_s(engine, gpu_frame: np.ndarray) -> float:
    import time

    n_fields = gpu_frame.shape[0]
    cols = ", ".join(f"f{i} REAL" for i in range(n_fields))
    with engine.begin() as conn:
        conn.execute(text(f"CREATE TABLE IF NOT EXISTS bench_rows (ts BIGINT, gpu INTEGER, {cols})"))
    rows = [(0, g, *map(float, gpu_frame[:, g])) for g in range(gpu_frame.shape[1])]
    marks = ", ".join(["%s" if engine.dialect.name == "postgresql" else "?"] * (n_fields + 2))
    raw = engine.raw_connection()
    try:
        start = time.perf_counter()
        cur = raw.cursor()
        cur.executemany(f"INSERT INTO bench_rows VALUES ({marks})", rows)
        raw.commit()
        return time.perf_counter() - start
    finally:
        raw.close()


def _measure(url: str, state, frames: int) -> dict:
    import time

    engine = open_database(url)
    store = FrameStore(engine, state.name, site_layouts(state))
    rng = np.random.default_rng(0)
    data = _frames(store.layouts.values(), rng)
    write_s = []
    for t in range(frames):
        start = time.perf_counter()
        store.write_frame(T0 + timedelta(seconds=t), data)
        write_s.append(time.perf_counter() - start)
    rack = int(state.n_racks // 2)
    gpus = np.flatnonzero(state.gpu_rack == rack)
    read_s = []
    for _ in range(3):
        start = time.perf_counter()
        ts, values = store.read_window("gpu", gpus, T0, T0 + timedelta(seconds=WINDOW_S))
        read_s.append(time.perf_counter() - start)
    assert values.shape == (frames, len(store.layouts["gpu"].fields), gpus.size)
    peer_s = _row_per_gpu_write_s(engine, data["gpu"])
    frame_mb = sum(a.nbytes for a in data.values()) / 1e6
    engine.dispose()
    write_ms = float(np.median(write_s) * 1000)
    return {
        "frame_write_ms": write_ms,
        "frame_write_p95_ms": float(np.percentile(write_s, 95) * 1000),
        "frame_mb": frame_mb,
        "rack_window_read_ms": float(min(read_s) * 1000),
        "window_frames": frames,
        "row_per_gpu_write_ms": peer_s * 1000,
        "row_per_gpu_to_frame_write_ratio": peer_s * 1000 / write_ms,
    }


@benchmark("frame_store")
def frame_store_benchmark(site: str = "colossus", frames: int = WINDOW_S) -> dict:
    """Write ``frames`` full-site frames at 1 Hz, then read one rack's GPUs over the window."""
    state = load_site(site)
    result = {"site": site, "gpus": state.n_gpus}
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        for key, value in _measure(f"sqlite:///{Path(tmp) / 'bench.db'}", state, frames).items():
            result[f"sqlite_{key}"] = value
    try:
        with throwaway_postgres("twin_bench") as url:
            for key, value in _measure(url, state, frames).items():
                result[f"postgresql_{key}"] = value
    except PostgresUnavailable as exc:
        result["postgresql_skipped"] = str(exc)
    return result
