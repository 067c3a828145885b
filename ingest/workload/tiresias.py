"""Tiresias' simulator traces (``simulator/*.csv``) [Tiresias-NSDI19].

Header ``job_id,num_gpu,submit_time,iterations,model_name,duration,interval``; ``duration``
is the run time [s] and ``submit_time`` the arrival [s].  No wall-time requests: the run
time stands in (Tiresias schedules without estimates).  One team, ``tiresias``, unless given.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ingest.workload.common import MAX_BYTES, MAX_ROWS, ImportResult, WorkloadInputError, finite_float, read_capped
from twin.fleet.workload import FleetJob, WorkloadError

FIELDS = ("job_id", "num_gpu", "submit_time", "duration")


def read_tiresias(
    path: Path | str, team: str = "tiresias", max_bytes: int = MAX_BYTES, max_rows: int = MAX_ROWS
) -> ImportResult:
    """Jobs of a Tiresias CSV trace."""
    res = ImportResult(source=f"tiresias:{path}")
    text = read_capped(path, max_bytes).decode("utf-8", errors="replace")
    reader = csv.DictReader(io.StringIO(text))
    missing = [k for k in FIELDS if k not in (reader.fieldnames or [])]
    if missing:
        raise WorkloadInputError(f"{path}: not a Tiresias trace (no {missing[0]} column)")
    for n, row in enumerate(reader, 2):
        if n > max_rows + 1:
            res.notes.append(f"stopped at the row cap of {max_rows:,} rows")
            break
        res.rows_count += 1
        try:
            run = finite_float(row["duration"])
            res.jobs.append(
                FleetJob(
                    job_id=f"t{row['job_id']}",
                    team=team,
                    user=row.get("model_name") or team,
                    submit_s=finite_float(row["submit_time"]),
                    n_gpus=int(row["num_gpu"]),
                    wall_s=run,
                    run_s=run,
                    kind="trace",
                )
            )
        except (ValueError, TypeError, WorkloadError) as exc:
            res.skip(f"line {n}", str(exc))
    return res
