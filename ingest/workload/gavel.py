"""Gavel's Philly-derived job traces (``scheduler/traces/msr``, tab-separated) [Gavel-OSDI20].

Seven fields per line: job type, command, steps argument, needs-data-dir flag, total steps,
arrival time [s], scale factor (GPUs) — the order Gavel's ``parse_trace`` reads (commit
cb906b1 of stanford-futuredata/gavel).  A trace names work in training steps; the run time
is total steps over the job type's throughput on a V100 at its scale factor, from Gavel's
``simulation_throughputs.json`` (the table below: steps/s, keyed by scale factor).  A scale
factor the table lacks scales the nearest smaller one linearly [E].  Each file is one
virtual cluster of Philly: its name (the file stem) becomes the team.  The trace has no
wall-time requests; the run time stands in (a perfect estimate, as in Gavel's simulator).
"""

from __future__ import annotations

from pathlib import Path

from ingest.workload.common import MAX_BYTES, MAX_ROWS, ImportResult, finite_float, read_capped, text_lines
from twin.fleet.workload import FleetJob, WorkloadError

# [Gavel-OSDI20] scheduler/simulation_throughputs.json, "v100", key (job type, scale factor), "null"
# (the job alone on the GPUs): steps per second.
V100_STEPS_PER_S = {
    "A3C": {1: 7.1758},
    "CycleGAN": {1: 4.4261},
    "LM (batch size 10)": {1: 81.6516, 2: 163.129, 4: 121.4776, 8: 615.0935},
    "LM (batch size 20)": {1: 64.7425, 2: 132.1741, 4: 110.9969, 8: 497.2953},
    "LM (batch size 40)": {1: 45.2374, 2: 91.5927, 4: 96.0312, 8: 359.3069},
    "LM (batch size 5)": {1: 109.1666, 2: 185.7238, 4: 126.7157, 8: 698.7733},
    "LM (batch size 80)": {1: 28.24, 2: 58.0915, 4: 74.8073, 8: 231.1762},
    "Recommendation (batch size 1024)": {1: 13.2826},
    "Recommendation (batch size 2048)": {1: 7.4696},
    "Recommendation (batch size 4096)": {1: 3.9061},
    "Recommendation (batch size 512)": {1: 23.3176},
    "Recommendation (batch size 8192)": {1: 2.8415},
    "ResNet-18 (batch size 128)": {1: 17.9949, 2: 23.9854, 4: 69.9505, 8: 162.0916},
    "ResNet-18 (batch size 16)": {1: 32.3534, 2: 100.1421, 4: 123.8538, 8: 382.5974},
    "ResNet-18 (batch size 256)": {1: 10.3003, 2: 15.8828, 4: 27.7821, 8: 81.5066},
    "ResNet-18 (batch size 32)": {1: 29.9472, 2: 94.2489, 4: 114.7334, 8: 340.0384},
    "ResNet-18 (batch size 64)": {1: 24.0932, 2: 74.1359, 4: 95.5881, 8: 255.8291},
    "ResNet-50 (batch size 128)": {1: 2.4968, 2: 4.223, 4: 7.0293, 8: 10.2932},
    "ResNet-50 (batch size 16)": {1: 11.3961, 2: 13.8598, 4: 23.1956, 8: 27.7991},
    "ResNet-50 (batch size 32)": {1: 7.7873, 2: 10.8346, 4: 13.7632, 8: 24.0674},
    "ResNet-50 (batch size 64)": {1: 4.3948, 2: 7.9221, 4: 9.4519, 8: 17.3032},
    "Transformer (batch size 128)": {1: 5.4461, 2: 10.0692, 4: 14.1745, 8: 30.8835},
    "Transformer (batch size 16)": {1: 11.0641, 2: 14.1538, 4: 20.085, 8: 71.6517},
    "Transformer (batch size 256)": {1: 1.5951, 2: 2.8852, 4: 4.763, 8: 9.717},
    "Transformer (batch size 32)": {1: 10.6209, 2: 13.328, 4: 22.8225, 8: 63.9777},
    "Transformer (batch size 64)": {1: 8.6178, 2: 15.8765, 4: 19.6596, 8: 49.6507},
}


def steps_per_s(job_type: str, scale_factor: int) -> float:
    """Throughput of ``job_type`` on ``scale_factor`` V100s [steps/s] (ValueError for an unknown type)."""
    table = V100_STEPS_PER_S.get(job_type)
    if table is None:
        raise ValueError(f"unknown job type {job_type!r}")
    if scale_factor in table:
        return table[scale_factor]
    base = max(k for k in table if k <= scale_factor)
    return table[base] * scale_factor / base


def read_gavel(
    path: Path | str, team: str | None = None, max_bytes: int = MAX_BYTES, max_rows: int = MAX_ROWS
) -> ImportResult:
    """Jobs of one Gavel trace file (team: the file stem unless given)."""
    p = Path(path)
    res = ImportResult(source=f"gavel:{p}")
    name = team or p.stem
    for n, line in text_lines(read_capped(p, max_bytes), res, max_rows):
        if not line.strip():
            continue
        res.rows_count += 1
        f = line.split("\t")
        try:
            if len(f) != 7:
                raise ValueError(f"{len(f)} tab-separated fields, Gavel traces have 7")
            steps, arrival, scale = int(f[4]), finite_float(f[5]), int(f[6])
            if steps <= 0 or scale <= 0 or arrival < 0:
                raise ValueError("steps and scale factor must be positive, arrival >= 0")
            run = steps / steps_per_s(f[0], scale)
            res.jobs.append(
                FleetJob(
                    job_id=f"{name}-{n}",
                    team=name,
                    user=name,
                    submit_s=arrival,
                    n_gpus=scale,
                    wall_s=run,
                    run_s=run,
                    kind="trace",
                )
            )
        except (ValueError, WorkloadError) as exc:
            res.skip(f"line {n}", str(exc))
    return res


def read_gavel_dir(path: Path | str, max_bytes: int = MAX_BYTES, max_rows: int = MAX_ROWS) -> ImportResult:
    """Every ``*.trace`` of a directory, one team per file (job ids prefixed by the file stem)."""
    p = Path(path)
    res = ImportResult(source=f"gavel:{p}")
    files = sorted(p.glob("*.trace"))
    total = 0
    for f in files:
        part = read_gavel(f, max_bytes=max_bytes, max_rows=max_rows)
        total += f.stat().st_size
        if total > max_bytes:
            res.notes.append(f"stopped at the size cap of {max_bytes // (1 << 20)} MiB")
            break
        res.jobs += part.jobs
        res.rows_count += part.rows_count
        res.skipped_count += part.skipped_count
        res.skipped_reasons += part.skipped_reasons[: max(0, 5 - len(res.skipped_reasons))]
    return res
