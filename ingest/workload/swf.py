"""Standard Workload Format (SWF v2.2) of the Parallel Workloads Archive [Feitelson-SWF].

One job per line, 18 whitespace-separated fields (comments start with ``;``)::

    1 job  2 submit [s]  3 wait [s]  4 run time [s]  5 allocated processors  6 CPU time
    7 memory  8 requested processors  9 requested time [s]  10 requested memory
    11 status (1 completed, 0 failed, 5 cancelled)  12 user  13 group  14 executable
    15 queue  16 partition  17 preceding job  18 think time

``-1`` means unknown.  Extra trailing fields are allowed (RAPS's Frontier loader reads 21,
the last a descriptor ``name:excl:NxM`` whose ``N`` is the node count [RAPS-2024]); when such a
descriptor is present it gives the size.  Otherwise the size is the requested processors
(field 8, else field 5) counted in ``units``: ``nodes`` (× ``gpus_per_node``) or ``gpus``.
The requested time is the wall limit (the run time when unknown).  Submit times are shifted
so that the first job arrives at 0.  The group becomes the team (``g<id>``), the user
``u<id>``.
"""

from __future__ import annotations

import re
from pathlib import Path

from ingest.workload.common import MAX_BYTES, MAX_ROWS, ImportResult, finite_float, read_capped, text_lines
from twin.fleet.workload import FleetJob, WorkloadError

UNITS = ("nodes", "gpus")
_DESCRIPTOR = re.compile(r"^[^:]+:[^:]+:(\d+)x\d+$")
_STATUS = {"1": "completed", "0": "failed", "5": "cancelled"}


def read_swf(
    path: Path | str,
    units: str = "nodes",
    gpus_per_node: int = 8,
    max_bytes: int = MAX_BYTES,
    max_rows: int = MAX_ROWS,
) -> ImportResult:
    """Jobs of an SWF file (see the module docstring); bad rows are skipped and counted."""
    if units not in UNITS:
        raise ValueError(f"units must be one of {UNITS}, got {units!r}")
    res = ImportResult(source=f"swf:{path}")
    rows = []
    for n, line in text_lines(read_capped(path, max_bytes), res, max_rows):
        stripped = line.strip()
        if not stripped or stripped.startswith(";"):
            continue
        res.rows_count += 1
        try:
            rows.append(_row(stripped.split(), units, gpus_per_node))
        except (ValueError, IndexError, WorkloadError) as exc:
            res.skip(f"line {n}", str(exc))
    t0 = min((r[1] for r in rows), default=0.0)
    for job_id, submit, fields in rows:
        try:
            res.jobs.append(FleetJob(job_id=job_id, submit_s=submit - t0, **fields))
        except WorkloadError as exc:
            res.skip(f"job {job_id}", str(exc))
    return res


def _row(f: list[str], units: str, gpn: int) -> tuple[str, float, dict]:
    if len(f) < 18:
        raise ValueError(f"{len(f)} fields, SWF has 18")
    submit, run = finite_float(f[1]), finite_float(f[3])
    if submit < 0:
        raise ValueError("no submit time")
    if run <= 0:
        raise ValueError(f"run time {f[3]} s: not a job that ran")
    match = _DESCRIPTOR.match(f[-1]) if len(f) > 18 else None
    if match:
        n_gpus = int(match.group(1)) * gpn
    else:
        procs = int(finite_float(f[7])) if int(finite_float(f[7])) > 0 else int(finite_float(f[4]))
        if procs <= 0:
            raise ValueError("no processor count")
        n_gpus = procs * gpn if units == "nodes" else procs
    limit = finite_float(f[8])
    return (
        f[0],
        submit,
        {
            "team": f"g{f[12]}",
            "user": f"u{f[11]}",
            "n_gpus": n_gpus,
            "wall_s": limit if limit > 0 else run,
            "run_s": run,
            "kind": "trace",
            "end_state": _STATUS.get(f[10], "completed"),
        },
    )
