"""ClusterTwin's own workload file: TOML written by hand, Parquet for large workloads (``docs/fleet.md``).

TOML::

    [workload]
    name = "two teams"

    [[teams]]                       # optional: Kueue ClusterQueues
    name = "research"
    nominal_gpus = 64
    cohort = "lab"

    [[jobs]]
    id = "pt-1"
    team = "research"
    user = "ana"
    submit_s = 0
    gpus = 16384
    wall_s = 864000
    run_s = 600000
    kind = "pretrain"               # pretrain | finetune | eval | debug | trace
    job_file = "llama3-405b-16k"    # optional: a file of data/jobs/ (or a path); its GPUs must match
    checkpoint_interval_s = 3600    # optional, with checkpoint_write_s and restore_s
    qos = "high"
    after_ok = ["data-prep"]        # optional Slurm --dependency=afterok
    topology = "pod"                # any | leaf | pod | block | segment (with segment_nodes)
    tokens_per_s = 2.0e6            # optional, for a job without a job file: tokens/s at full speed

Parquet: one row per job with the same column names (``id``, ``team``, ``user``, ``submit_s``,
``gpus``, ``wall_s``, ``run_s`` required; the others optional, ``after_ok`` a comma-separated
string).  Unknown keys and columns are errors, as in every ClusterTwin file.
"""

from __future__ import annotations

import io
import math
import tomllib
from pathlib import Path

from ingest.workload.common import MAX_BYTES, MAX_ROWS, ImportResult, WorkloadInputError, read_capped
from twin.cache import BoundedCache
from twin.fleet.policy import TeamQuota
from twin.fleet.workload import FleetJob, WorkloadError
from twin.training.jobfile import JobFileError, load_job

JOBS_DIR = Path(__file__).resolve().parents[2] / "data" / "jobs"
REQUIRED = ("id", "team", "user", "submit_s", "gpus", "wall_s", "run_s")
OPTIONAL = {
    "kind": str,
    "qos": str,
    "job_file": str,
    "end_state": str,
    "checkpoint_interval_s": float,
    "checkpoint_write_s": float,
    "restore_s": float,
    "priority": float,
    "after_ok": list,
    "topology": str,
    "segment_nodes": int,
    "exclusive": bool,
    "gpu_type": str,
    "util_frac": float,
    "tokens_per_s": float,
}
TEAM_KEYS = {"name", "nominal_gpus", "cohort", "borrowing_limit_gpus", "shares"}


def job_file(name: str):
    """A training job file by name (``data/jobs/NAME.toml``) or path; cached per name."""
    return _job_files.get_or_make(
        name, lambda: load_job(Path(name) if name.endswith(".toml") else JOBS_DIR / f"{name}.toml")
    )


_job_files: BoundedCache[object] = BoundedCache(64)  # a job file's name or path → the loaded job


def _job(rec: dict, where: str) -> FleetJob:
    unknown = [k for k in rec if k not in REQUIRED and k not in OPTIONAL]
    if unknown:
        raise WorkloadError(f"{where}: unknown key {unknown[0]!r}")
    missing = [k for k in REQUIRED if k not in rec or rec[k] is None]
    if missing:
        raise WorkloadError(f"{where}: missing {missing[0]!r}")
    extra = {k: rec[k] for k in OPTIONAL if k in rec and rec[k] is not None and k != "job_file"}
    if isinstance(extra.get("after_ok"), str):
        extra["after_ok"] = [d for d in extra["after_ok"].split(",") if d]
    if "after_ok" in extra:
        extra["after_ok"] = tuple(str(d) for d in extra["after_ok"])
    training = None
    if rec.get("job_file"):
        try:
            training = job_file(str(rec["job_file"]))
        except JobFileError as exc:
            raise WorkloadError(f"{where}: {exc}") from None
        if training.parallel.n_gpus != int(rec["gpus"]):
            raise WorkloadError(
                f"{where}: job_file runs on {training.parallel.n_gpus} GPUs, the job asks for {rec['gpus']}"
            )
    for key in ("submit_s", "wall_s", "run_s"):
        if not isinstance(rec[key], (int, float)) or isinstance(rec[key], bool) or not math.isfinite(rec[key]):
            raise WorkloadError(f"{where}: {key} must be a finite number")
    return FleetJob(
        job_id=str(rec["id"]),
        team=str(rec["team"]),
        user=str(rec["user"]),
        submit_s=float(rec["submit_s"]),
        n_gpus=int(rec["gpus"]),
        wall_s=float(rec["wall_s"]),
        run_s=float(rec["run_s"]),
        training=training,
        **extra,
    )


def read_ct(
    path: Path | str, max_bytes: int = MAX_BYTES, max_rows: int = MAX_ROWS
) -> tuple[ImportResult, list[TeamQuota]]:
    """Jobs and team quotas of a ``.toml`` or ``.parquet`` workload file."""
    p = Path(path)
    if p.suffix == ".parquet":
        return _read_parquet(p, max_bytes, max_rows), []
    data = read_capped(p, max_bytes)
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise WorkloadInputError(f"{p}: not a TOML workload file ({exc})") from None
    unknown = [k for k in doc if k not in ("workload", "teams", "jobs")]
    if unknown:
        raise WorkloadInputError(f"{p}: unknown section {unknown[0]!r}")
    res = ImportResult(source=f"ct:{p}")
    jobs = doc.get("jobs", [])
    if len(jobs) > max_rows:
        raise WorkloadInputError(f"{p}: {len(jobs)} jobs, more than the row cap of {max_rows:,}")
    for i, rec in enumerate(jobs):
        res.rows_count += 1
        try:
            res.jobs.append(_job(rec, f"jobs[{i}]"))
        except (WorkloadError, TypeError, ValueError) as exc:
            res.skip(f"jobs[{i}]", str(exc))
    return res, _teams(doc.get("teams", []), p)


def _teams(recs: list, p: Path) -> list[TeamQuota]:
    out = []
    for i, t in enumerate(recs):
        unknown = [k for k in t if k not in TEAM_KEYS]
        if unknown or "name" not in t or "nominal_gpus" not in t:
            raise WorkloadInputError(f"{p}: teams[{i}] needs name and nominal_gpus (unknown: {unknown[:1]})")
        out.append(
            TeamQuota(
                team=str(t["name"]),
                nominal_gpus=int(t["nominal_gpus"]),
                cohort=str(t.get("cohort", "")),
                borrowing_limit_gpus=int(t.get("borrowing_limit_gpus", -1)),
                shares=float(t.get("shares", 0.0)),
            )
        )
    return out


def _read_parquet(p: Path, max_bytes: int, max_rows: int) -> ImportResult:
    import pyarrow.parquet as pq

    data = read_capped(p, max_bytes)
    try:
        table = pq.read_table(io.BytesIO(data))
    except Exception as exc:  # pyarrow raises its own error types for a bad file
        raise WorkloadInputError(f"{p}: not a Parquet workload file ({exc})") from None
    unknown = [c for c in table.column_names if c not in REQUIRED and c not in OPTIONAL]
    if unknown:
        raise WorkloadInputError(f"{p}: unknown column {unknown[0]!r}")
    if table.num_rows > max_rows:
        raise WorkloadInputError(f"{p}: {table.num_rows:,} rows, more than the row cap of {max_rows:,}")
    res = ImportResult(source=f"ct:{p}")
    for i, rec in enumerate(table.to_pylist()):
        res.rows_count += 1
        try:
            res.jobs.append(_job(rec, f"row {i}"))
        except (WorkloadError, TypeError, ValueError) as exc:
            res.skip(f"row {i}", str(exc))
    return res


def write_parquet(jobs: list[FleetJob], path: Path | str) -> None:
    """Write ``jobs`` as a Parquet workload file (job files by name are not kept: kinds only)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols: dict[str, list] = {
        k: [] for k in (*REQUIRED, "kind", "qos", "end_state", "priority", "checkpoint_interval_s")
    }
    for j in jobs:
        cols["id"].append(j.job_id)
        cols["team"].append(j.team)
        cols["user"].append(j.user)
        cols["submit_s"].append(j.submit_s)
        cols["gpus"].append(j.n_gpus)
        cols["wall_s"].append(j.wall_s)
        cols["run_s"].append(j.run_s)
        cols["kind"].append(j.kind)
        cols["qos"].append(j.qos)
        cols["end_state"].append(j.end_state)
        cols["priority"].append(j.priority)
        cols["checkpoint_interval_s"].append(j.checkpoint_interval_s)
    pq.write_table(pa.table(cols), str(path))
