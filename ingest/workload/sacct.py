"""Slurm accounting dumps: ``sacct --parsable`` / ``--parsable2`` text as a job trace [Slurm-sacct].

The first line names the fields; the delimiter is ``|`` or, as Meta's GPU cluster monitor
asks for it, ``|#`` (found from the header).  A free-text field (a comment, a job name) may
hold line breaks: a line with fewer delimiters than the header is joined with the next
ones until the count is right, the break kept as ``\\n`` (the repair Meta's own wrapper
makes, [Meta-GCM] ``get_sacct_lines``).  Invalid UTF-8 is replaced, not fatal.

Job steps (``123.batch``, ``123.extern``, ``123.0``) are not jobs: a job is its allocation row;
a job whose dump holds only steps (``sacct`` without the allocation lines) is taken from its
longest step.  A job
becomes a :class:`twin.fleet.workload.FleetJob`: team = ``Account``, user, QoS, submit time
(shifted so the first is 0), GPUs from ``AllocTRES`` (else ``ReqTRES``, else ``AllocGRES``)
``gres/gpu=N``, wall limit from ``TimelimitRaw`` [min] (``Timelimit`` otherwise), run time
from ``ElapsedRaw`` [s], and the end state from ``State``.  Rows without GPUs, without a run
time, or too short are skipped with a count and the first reasons.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from ingest.workload.common import MAX_BYTES, MAX_ROWS, ImportResult, WorkloadInputError, read_capped
from twin.fleet.workload import FleetJob, WorkloadError

_GPU_TRES = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)")
_GPU_GRES = re.compile(r"gpu(?::[^:,()]+)?:(\d+)")
_STEP = re.compile(r"\.(batch|extern|interactive|\d+)$")
_STATES = {
    "COMPLETED": "completed",
    "FAILED": "failed",
    "NODE_FAIL": "failed",
    "OUT_OF_MEMORY": "failed",
    "BOOT_FAIL": "failed",
    "CANCELLED": "cancelled",
    "PREEMPTED": "cancelled",
    "DEADLINE": "timeout",
    "TIMEOUT": "timeout",
    "RUNNING": "completed",
}
NEEDED = ("JobID", "Submit")


def delimiter_of(header: str) -> str:
    """``|#`` when the header uses Meta's delimiter, else ``|``."""
    return "|#" if "|#" in header else "|"


def records(text: str, delimiter: str | None = None) -> list[str]:
    """The lines of a dump with broken records joined (the header first), as GCM's ``get_sacct_lines``."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return []
    d = delimiter or delimiter_of(lines[0])
    want = lines[0].count(d)
    out, held, held_n = [lines[0]], "", 0
    for line in lines[1:]:
        n = line.count(d)
        if n >= want:
            out.append(line)
            continue
        if held_n + n == want:
            out.append(held + line)
            held, held_n = "", 0
        elif held_n + n > want:
            out.append(held + line)  # more fields than the header: the row check refuses it
            held, held_n = "", 0
        else:
            held += line.replace("\n", "\\n")
            held_n += n
    if held:
        out.append(held)
    return out


def _seconds(text: str) -> float:
    """``[D-]HH:MM:SS`` or ``MM:SS`` as seconds."""
    days, _, rest = text.rpartition("-")
    parts = [float(p) for p in rest.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    h, m, s = parts
    return (float(days) if days else 0.0) * 86400.0 + h * 3600.0 + m * 60.0 + s


def _time(text: str) -> datetime | None:
    if text in ("", "Unknown", "None"):
        return None
    return datetime.fromisoformat(text)


def _gpus(row: dict[str, str]) -> int:
    for key in ("AllocTRES", "ReqTRES"):
        m = _GPU_TRES.search(row.get(key, ""))
        if m:
            return int(m.group(1))
    m = _GPU_GRES.search(row.get("AllocGRES", ""))
    return int(m.group(1)) if m else 0


def _wall_s(row: dict[str, str], run_s: float) -> float:
    raw = row.get("TimelimitRaw", "")
    if raw.isdigit():
        return float(raw) * 60.0
    limit = row.get("Timelimit", "")
    if limit and limit[0].isdigit():
        return _seconds(limit)
    return max(run_s, 1.0)  # UNLIMITED / Partition_Limit: the scheduler knows no better than the run


def _elapsed_or_zero(row: dict[str, str]) -> float:
    try:
        return _run_s(row)
    except ValueError:
        return 0.0


def _run_s(row: dict[str, str]) -> float:
    raw = row.get("ElapsedRaw", "")
    if raw.isdigit():
        return float(raw)
    return _seconds(row["Elapsed"]) if row.get("Elapsed") else 0.0


def read_sacct(path: Path | str, max_bytes: int = MAX_BYTES, max_rows: int = MAX_ROWS) -> ImportResult:
    """Jobs of an ``sacct --parsable`` dump (see the module docstring)."""
    res = ImportResult(source=f"sacct:{path}")
    text = read_capped(path, max_bytes).decode("utf-8", errors="replace")
    if "\ufffd" in text:
        res.notes.append("invalid UTF-8 bytes replaced")
    lines = records(text)
    if not lines:
        raise WorkloadInputError(f"{path}: empty file, no sacct header")
    delim = delimiter_of(lines[0])
    header = lines[0].rstrip("\n").split(delim)
    missing = [k for k in NEEDED if k not in header]
    if missing:
        raise WorkloadInputError(f"{path}: not an sacct --parsable dump (no {missing[0]} field in the header)")
    jobs: dict[str, tuple[bool, float, int, dict]] = {}  # base id → (allocation row?, elapsed, line, row)
    steps = 0
    for n, line in enumerate(lines[1:], 2):
        if n > max_rows + 1:
            res.notes.append(f"stopped at the row cap of {max_rows:,} rows")
            break
        if not line.strip():
            continue
        res.rows_count += 1
        fields = line.rstrip("\n").split(delim)
        if fields and fields[-1] == "" and len(fields) == len(header) + 1:
            fields.pop()  # --parsable ends every line with the delimiter
        if len(fields) != len(header):
            res.skip(f"line {n}", f"{len(fields)} fields, the header has {len(header)}")
            continue
        row = dict(zip(header, fields))
        step = _STEP.search(row["JobID"])
        steps += bool(step)
        base = row["JobID"][: step.start()] if step else row["JobID"]
        key = (not step, _elapsed_or_zero(row))
        held = jobs.get(base)
        if held is None or key > held[:2]:
            jobs[base] = (*key, n, {**row, "JobID": base})
    if steps:
        res.notes.append(f"{steps} job-step rows folded into {len(jobs)} jobs")
    parsed: list[tuple[datetime, dict]] = []
    for base, (_, _, n, row) in jobs.items():
        try:
            parsed.append(_job(row))
        except (ValueError, KeyError, WorkloadError) as exc:
            res.skip(f"line {n} (job {base})", str(exc))
    t0 = min((t for t, _ in parsed), default=None)
    for submit, fields in parsed:
        try:
            res.jobs.append(FleetJob(submit_s=(submit - t0).total_seconds(), **fields))
        except WorkloadError as exc:
            res.skip(f"job {fields['job_id']}", str(exc))
    return res


def _job(row: dict[str, str]) -> tuple[datetime, dict]:
    submit = _time(row["Submit"])
    if submit is None:
        raise ValueError("no submit time")
    g = _gpus(row)
    if g <= 0:
        raise ValueError("no GPUs (a CPU job)")
    run = _run_s(row)
    if run <= 0:
        raise ValueError(f"state {row.get('State', '?')}: never ran")
    state = row.get("State", "COMPLETED").split()[0] if row.get("State") else "COMPLETED"
    return submit.replace(tzinfo=None), {
        "job_id": row["JobID"],
        "team": row.get("Account") or "unknown",
        "user": row.get("User") or "unknown",
        "qos": row.get("QOS") or "normal",
        "n_gpus": g,
        "wall_s": max(_wall_s(row, run), run),
        "run_s": run,
        "kind": "trace",
        "end_state": _STATES.get(state, "completed"),
    }


def end_between(lines: list[str], lo: datetime, hi: datetime) -> list[str]:
    """The header and the records whose ``End`` lies in ``[lo, hi]`` (naive local times), without the End column
    when it is the last one — the filter Meta's wrapper applies at day boundaries ([Meta-GCM] midnight case)."""
    if not lines:
        return []
    delim = delimiter_of(lines[0])
    header = lines[0].strip().split(delim)
    idx = header.index("End")
    last = idx == len(header) - 1
    out = [delim.join(header[:-1]) if last else lines[0].strip()]
    for line in lines[1:]:
        fields = line.strip().split(delim)
        if not line.strip() or len(fields) != len(header):
            continue
        end = _time(fields[idx])
        if end is not None and lo <= end <= hi:
            out.append(delim.join(fields[:-1]) if last else line.strip())
    return out
