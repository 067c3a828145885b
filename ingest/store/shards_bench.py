"""Benchmark ``shards_1m``: a generated 1,000,000-GPU site run as N ingest shards into one PostgreSQL.

``clustertwin bench --only shards_1m`` generates ten colossus-class campuses
(:mod:`twin.site.campuses`, 1,003,520 GPUs) in a temporary folder, starts a throwaway
PostgreSQL on 127.0.0.1 and N shard processes (``python -m ingest.store.shards_bench``),
each the live hub of ``clustertwin ingest run --shard i/N`` without the wall clock: it
builds its hub, steps one warm-up tick, waits until every shard is ready, then steps
:data:`TICKS` ticks back to back, storing a full frame every tick (the 1 Hz worst case;
``ingest run`` stores one every 5 s by default), shard 0 also publishing the live state
for followers.  Each shard reports the process CPU seconds of its ticks; the parent
reads the database's write-ahead log position and the chunk table before and after the
measured ticks, for the bytes and rows written per tick, and the CPU seconds of the server's processes
(its ``/proc`` entries: Linux, server on this host) spent while the shards ticked.

Peer, in the same run: one colossus (98,304 GPUs) hub stepped the same way in one shard
process; ``cpu_ratio_to_colossus`` is the 1M shard's CPU per tick over the peer's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from twin.bench import benchmark

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)
TICKS = 5  # measured ticks per shard (after one warm-up tick)
SHARDS = 4  # shard processes of the 1M site
CAMPUSES = 10
STARTUP_TIMEOUT_S = 600.0  # building a 1M-GPU hub takes ~10 s alone; 4 at once on a loaded 2-core host longer


# ---------------------------------------------------------------------- shard process
def shard_main(site: str, url: str, index: int, count: int, ticks: int) -> None:
    """One shard: build, warm up, print ``ready``, wait for a line, step ``ticks`` ticks, print a JSON report."""
    from ingest.live.runtime import build_hub
    from ingest.store.layouts import snapshot_frames
    from twin.engine.snapshot import GPU_OFF

    # no placed job: every GPU of the site powered and in the synthetic workload, so every value changes
    # each tick (the site's default job would leave most of a 1M-GPU site powered off: frames compress away)
    hub = build_hub(site, url, start=T0, shard=(index, count), record_every_s=1.0, job="")
    hub.publisher.holder = f"bench-shard-{index}" if index == 0 else None
    hub.step(T0)
    print("ready", flush=True)
    sys.stdin.readline()
    cpu_s, wall_s, parts = [], [], []
    for second in range(1, ticks + 1):
        c0, w0 = time.process_time(), time.perf_counter()
        hub.step(T0 + timedelta(seconds=second))
        cpu_s.append(time.process_time() - c0)
        wall_s.append(time.perf_counter() - w0)
        parts.append(
            (
                hub.timing.synthetic_ms,
                hub.timing.twin_ms,
                hub.timing.record_ms,
                hub.timing.alerts_ms,
                hub.timing.publish_ms,
            )
        )
    part = np.median(np.array(parts), axis=0)
    print(
        json.dumps(
            {
                "cpu_s_per_tick": float(np.median(cpu_s)),
                "wall_s_per_tick": float(np.median(wall_s)),
                "synthetic_ms": part[0],
                "twin_ms": part[1],
                "record_ms": part[2],
                "alerts_ms": part[3],
                "publish_ms": part[4],
                "live_state_bytes": hub.publisher.bytes,
                "gpus_count": hub.state.n_gpus,
                "gpus_powered_count": int((hub.view.latest().gpu_state != GPU_OFF).sum()),
                "it_power_mw": hub.view.latest().it_power_mw,
                "frame_raw_bytes": 4 * sum(a.size for a in snapshot_frames(hub.view.latest()).values()),
            }
        ),
        flush=True,
    )
    sys.stdin.readline()  # the database connections stay open until the parent has read the server's CPU
    hub.db.dispose()


# ---------------------------------------------------------------------- orchestration
def server_cpu_s(data_dir: Path) -> float:
    """CPU seconds (user + system) of a PostgreSQL server's live processes: the postmaster and its children."""
    postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
    ticks_per_s = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        pid, ppid = int(stat.parent.name), int(fields[1])
        if postmaster in (pid, ppid):
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks_per_s


def _wal_and_chunks(url: str) -> tuple[int, int, int]:
    """(WAL position in bytes, chunk rows, chunk table bytes incl. TOAST and indexes)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            wal = conn.execute(text("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")).scalar()
            rows = conn.execute(text("SELECT count(*) FROM telemetry_chunk")).scalar()
            size = conn.execute(text("SELECT pg_total_relation_size('telemetry_chunk')")).scalar()
    finally:
        engine.dispose()
    return int(wal), int(rows), int(size)


def run_shards(site: str, url: str, count: int, ticks: int, data_dir: Path | None = None) -> dict:
    """Run ``count`` shard processes of ``site`` against ``url``; their reports and the database's writes per tick.

    With ``data_dir`` (the server's data folder, on this host) also the server's CPU seconds per tick.
    """
    from ingest.store.db import open_database
    from ingest.store.frames import FrameStore
    from ingest.store.layouts import site_layouts
    from twin.site.load import load_site

    engine = open_database(url)
    FrameStore(engine, load_site(site).name, site_layouts(load_site(site)))  # layouts registered once, no race
    engine.dispose()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    logs = [tempfile.TemporaryFile("w+") for _ in range(count)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ingest.store.shards_bench", site, url, str(i), str(count), str(ticks)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=logs[i],
            text=True,
            env=env,
        )
        for i in range(count)
    ]

    def line_of(i: int) -> str:
        line = procs[i].stdout.readline().strip()
        if not line:
            logs[i].seek(0)
            raise RuntimeError(f"shard {i}/{count} stopped (exit {procs[i].wait()}): {logs[i].read()[-1500:]}")
        return line

    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        for i in range(count):
            line = line_of(i)
            if line != "ready" or time.monotonic() > deadline:
                raise RuntimeError(f"shard {i}/{count} not ready: {line!r}")
        wal0, rows0, size0 = _wal_and_chunks(url)
        db_cpu0 = server_cpu_s(data_dir) if data_dir else float("nan")
        start = time.perf_counter()
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = [json.loads(line_of(i)) for i in range(count)]
        elapsed_s = time.perf_counter() - start
        db_cpu1 = server_cpu_s(data_dir) if data_dir else float("nan")
        wal1, rows1, size1 = _wal_and_chunks(url)
        for proc in procs:
            proc.stdin.write("bye\n")
            proc.stdin.flush()
    finally:
        for proc in procs:
            if proc.poll() is None:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
        for log in logs:
            log.close()
    return _shards_report(
        reports, count, ticks, elapsed_s, db_cpu1 - db_cpu0, (wal1 - wal0, rows1 - rows0, size1 - size0)
    )


def _shards_report(
    reports: list[dict], count: int, ticks: int, elapsed_s: float, db_cpu_s: float, db_growth: tuple[int, int, int]
) -> dict:
    """The benchmark's figures from the shards' ``reports`` and what the database grew by (WAL, rows, table bytes)."""
    cpu = [r["cpu_s_per_tick"] for r in reports]
    wal, rows, size = db_growth
    return {
        "shards_count": count,
        "gpus_count": reports[0]["gpus_count"],
        "ticks_count": ticks,
        "gpus_powered_count": reports[0]["gpus_powered_count"],
        "it_power_mw": reports[0]["it_power_mw"],
        "frame_raw_bytes": reports[0]["frame_raw_bytes"],
        "cpu_s_per_shard_tick_median": float(np.median(cpu)),
        "cpu_s_per_shard_tick_max": float(max(cpu)),
        "wall_s_all_ticks": elapsed_s,
        "twin_ms_median": float(np.median([r["twin_ms"] for r in reports])),
        "synthetic_ms_median": float(np.median([r["synthetic_ms"] for r in reports])),
        "record_ms_median": float(np.median([r["record_ms"] for r in reports])),
        "alerts_ms_median": float(np.median([r["alerts_ms"] for r in reports])),
        "publish_ms_shard0": reports[0]["publish_ms"],
        "live_state_bytes": reports[0]["live_state_bytes"],
        "db_server_cpu_s_per_tick": db_cpu_s / ticks,
        "db_wal_bytes_per_tick": wal / ticks,
        "db_chunk_rows_per_tick": rows / ticks,
        "db_chunk_table_bytes_per_tick": size / ticks,
    }


@benchmark("shards_1m")
def shards_1m(shards: int = SHARDS, ticks: int = TICKS, campuses: int = CAMPUSES) -> dict:
    """The benchmark (see module docstring)."""
    import tomli_w
    from sqlalchemy import create_engine, text

    from ingest.store.pgserver import throwaway_postgres_server
    from twin.site.campuses import campuses_text
    from twin.site.load import read_site_text, site_path

    with (
        tempfile.TemporaryDirectory(prefix="clustertwin-shards-") as tmp,
        throwaway_postgres_server("twin_shards") as server,
    ):
        url = server.url
        site_file = Path(tmp) / "colossus-x10.toml"
        doc = campuses_text(read_site_text(site_path("colossus")), campuses, f"colossus-x{campuses}")
        site_file.write_text(tomli_w.dumps(doc), encoding="utf-8")
        big = run_shards(str(site_file), url, shards, ticks, server.data)
        peer = run_shards("colossus", url, 1, ticks, server.data)
        engine = create_engine(url)
        with engine.connect() as conn:
            db_bytes = conn.execute(text("SELECT pg_database_size(current_database())")).scalar()
        engine.dispose()
    result = {f"m1_{k}": v for k, v in big.items()}
    result.update({f"colossus_{k}": v for k, v in peer.items() if k not in ("shards_count",)})
    result["cpu_ratio_to_colossus"] = big["cpu_s_per_shard_tick_median"] / peer["cpu_s_per_shard_tick_median"]
    result["db_total_bytes"] = int(db_bytes)
    # every shard ticks the whole site (it splits the writes and the alerts, not the twin): a shard fits a
    # 1 Hz tick on one core while its CPU per tick stays below 1 s; one core per shard
    result["cores_per_shard_at_1hz_count"] = int(np.ceil(big["cpu_s_per_shard_tick_max"]))
    return result


if __name__ == "__main__":
    shard_main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
