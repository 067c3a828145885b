"""Slurm accounting → records: ``sacct --parsable``, the jobcomp file, ``sacctmgr`` QoS and users.

``sacct -P`` prints one record per line, ``|`` (or the ``--delimiter`` given, e.g. ``|#``)
between fields, the first line naming them.  A user's text (a job comment, a submit
line) may hold line breaks, so a line with too few delimiters is joined with the next
ones, the break kept as the two characters ``\\n``, until the record has the header's
count (the rule of Meta's GPU cluster monitoring; a join that overshoots is malformed).
Bytes that are not UTF-8 become U+FFFD and the record is kept.  ``window_end`` drops the
steps and jobs that ended after the accounting window (``sacct -E`` also lists records
that merely overlap it: the "midnight" case).

Where no slurmdbd runs, completed jobs come from the controller's ``jobcomp/filetxt``
file: one line of ``Key=Value`` per job.  Its values may hold spaces (a job name), so
only the keys Slurm writes start a new field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, tzinfo

from ingest.sources import slurm_map as sm
from ingest.sources.slurm_json import expand_nodes
from ingest.sources.slurm_records import SlurmAccount, SlurmCounts, SlurmJob, SlurmQos

_JOB_ID = re.compile(r"^(\d+)(?:_(\d+)|_\[(.*)\])?(?:\+\d+)?$")
JOBCOMP_KEYS = (
    "JobId",
    "UserId",
    "GroupId",
    "Name",
    "JobState",
    "Partition",
    "TimeLimit",
    "StartTime",
    "EndTime",
    "NodeList",
    "NodeCnt",
    "ProcCnt",
    "WorkDir",
    "ReservationName",
    "Tres",
    "Account",
    "QOS",
    "WcKey",
    "Cluster",
    "SubmitTime",
    "EligibleTime",
    "ArrayJobId",
    "ArrayTaskId",
    "HetJobId",
    "HetJobOffset",
    "DerivedExitCode",
    "ExitCode",
)
_JOBCOMP_KEY = re.compile(r"(?:^|(?<= ))(" + "|".join(JOBCOMP_KEYS) + r")=")


def decode(data: bytes | str) -> str:
    """Command output → text; bytes that are not UTF-8 become U+FFFD (the record is kept)."""
    return data if isinstance(data, str) else data.decode("utf-8", errors="replace")


def sacct_lines(lines: Iterable[str], delimiter: str, counts: SlurmCounts | None = None) -> Iterator[str]:
    """Logical ``sacct -P`` lines: the header, then records with their line breaks joined as ``\\n``."""
    counts = counts if counts is not None else SlurmCounts()
    it = iter(lines)
    header = next(it, None)
    if header is None:
        return
    yield header.rstrip("\n")
    want = header.count(delimiter)
    pending, have = "", 0
    for raw in it:
        line = raw if raw.endswith("\n") else raw + "\n"
        n = line.count(delimiter)
        if n >= want and not pending:
            yield line.rstrip("\n")
            continue
        if have + n == want:
            yield (pending + line).rstrip("\n")
            pending, have = "", 0
        elif have + n > want:
            counts.n_malformed_records += 1
            pending, have = "", 0
        else:
            pending += line.replace("\n", "\\n")
            have += n
    if pending:
        counts.n_malformed_records += 1


def sacct_rows(
    text: bytes | str,
    delimiter: str | None = None,
    counts: SlurmCounts | None = None,
    window_end: datetime | None = None,
    tz: tzinfo = UTC,
) -> list[dict[str, str]]:
    """``sacct -P`` output → one dict per record (field → text), header names as keys.

    ``delimiter`` defaults to ``|#`` when the header holds it, else ``|``.  Records with
    the wrong number of fields are counted as malformed and skipped.
    """
    counts = counts if counts is not None else SlurmCounts()
    lines = decode(text).splitlines(keepends=True)
    if not lines:
        return []
    delimiter = delimiter or ("|#" if "|#" in lines[0] else "|")
    logical = sacct_lines(lines, delimiter, counts)
    names = [h.strip() for h in next(logical).split(delimiter)]
    rows = []
    for line in logical:
        counts.n_records += 1
        cells = line.split(delimiter)
        if len(cells) != len(names):
            counts.n_malformed_records += 1
            continue
        row = dict(zip(names, cells))
        if window_end is not None and (end := sm.timestamp(row.get("End", ""), tz)) is not None and end > window_end:
            continue
        rows.append(row)
    return rows


def _job_ids(text: str) -> tuple[int, int | None, int | None, str] | None:
    """``8012944_24093`` → (8012944, 8012944, 24093, ""); a step (``….batch``, ``….0``) → ``None``."""
    m = _JOB_ID.match(text.strip())
    if m is None:
        return None
    base = int(m.group(1))
    if m.group(2) is None and m.group(3) is None:
        return base, None, None, ""
    return base, base, int(m.group(2)) if m.group(2) else None, m.group(3) or ""


def job_from_sacct_row(r: dict[str, str], counts: SlurmCounts, tz: tzinfo = UTC) -> SlurmJob | None:
    """One ``sacct`` job record → :class:`SlurmJob`; steps are counted in ``skipped_steps``."""
    ids = _job_ids(r.get("JobID", ""))
    if ids is None:
        counts.n_skipped_steps += 1
        return None
    display_id, array_job, task, tasks = ids
    raw = r.get("JobIDRaw", "").strip()
    state, flags = sm.job_state(r.get("State"))
    start, end = sm.timestamp(r.get("Start"), tz), sm.timestamp(r.get("End"), tz)
    done = state not in ("pending", "running", "suspended", "completing")
    names = expand_nodes(sm.text_value(r.get("NodeList")), counts) if state != "pending" else ()
    exit_code = r.get("ExitCode", "").split(":")[0]
    return SlurmJob(
        job_id=int(raw) if raw.isdigit() else display_id,
        name=r.get("JobName", ""),
        user=sm.user_name(r.get("User")),
        account=sm.text_value(r.get("Account")),
        partition=sm.text_value(r.get("Partition")),
        qos=sm.text_value(r.get("QOS")),
        state=state,
        state_flags=flags,
        reason=sm.text_value(r.get("Reason")),
        array_job_id=array_job,
        array_task_id=task,
        array_tasks=tasks,
        submitted_at=sm.timestamp(r.get("Submit"), tz),
        eligible_at=sm.timestamp(r.get("Eligible"), tz),
        started_at=start if state != "pending" else None,
        ended_at=end if done else None,
        time_limit_s=sm.duration_s(r.get("Timelimit")),
        n_nodes_requested=sm.integer(r.get("ReqNodes")) or sm.integer(r.get("NNodes")),
        n_nodes_allocated=len(names),
        n_gpus_requested=sm.tres_gpus(r.get("ReqTRES")),
        n_gpus_allocated=sm.tres_gpus(r.get("AllocTRES")),
        n_cpus_allocated=sm.integer(r.get("AllocCPUS")),
        nodes=sm.text_value(r.get("NodeList")) if names else "",
        node_names=names,
        priority=sm.number(r.get("Priority")),
        exit_code=int(exit_code) if exit_code.isdigit() and done else None,
    )


def parse_sacct(
    text: bytes | str,
    counts: SlurmCounts | None = None,
    tz: tzinfo = UTC,
    window_end: datetime | None = None,
    delimiter: str | None = None,
) -> list[SlurmJob]:
    """``sacct -P`` output → the jobs (steps skipped and counted)."""
    counts = counts if counts is not None else SlurmCounts()
    out = []
    for r in sacct_rows(text, delimiter, counts, window_end, tz):
        job = job_from_sacct_row(r, counts, tz)
        if job is not None:
            out.append(job)
    return out


def jobcomp_records(text: bytes | str) -> list[dict[str, str]]:
    """The ``jobcomp/filetxt`` file → one dict per line (only Slurm's keys start a field)."""
    out = []
    for line in decode(text).splitlines():
        keys = list(_JOBCOMP_KEY.finditer(line))
        if not keys:
            continue
        out.append(
            {
                k.group(1): line[k.end() : nxt.start() if nxt else len(line)].strip()
                for k, nxt in zip(keys, keys[1:] + [None])
            }
        )
    return out


def job_from_jobcomp(r: dict[str, str], counts: SlurmCounts, tz: tzinfo = UTC) -> SlurmJob | None:
    """One jobcomp line → :class:`SlurmJob` (times in the controller's zone ``tz``)."""
    raw = r.get("JobId", "")
    if not raw.isdigit():
        counts.n_malformed_records += 1
        return None
    state, flags = sm.job_state(r.get("JobState"))
    array_job = sm.integer(r.get("ArrayJobId"))
    task = r.get("ArrayTaskId", "")
    names = expand_nodes(sm.text_value(r.get("NodeList")), counts)
    exit_code = r.get("ExitCode", "").split(":")[0]
    return SlurmJob(
        job_id=int(raw),
        name=r.get("Name", ""),
        user=sm.user_name(r.get("UserId")),
        account=sm.text_value(r.get("Account")),
        partition=sm.text_value(r.get("Partition")),
        qos=sm.text_value(r.get("QOS")),
        state=state,
        state_flags=flags,
        array_job_id=array_job or None,
        array_task_id=int(task) if task.isdigit() and array_job else None,
        submitted_at=sm.timestamp(r.get("SubmitTime"), tz),
        eligible_at=sm.timestamp(r.get("EligibleTime"), tz),
        started_at=sm.timestamp(r.get("StartTime"), tz),
        ended_at=sm.timestamp(r.get("EndTime"), tz),
        time_limit_s=sm.duration_s(r.get("TimeLimit")),
        n_nodes_requested=sm.integer(r.get("NodeCnt")),
        n_nodes_allocated=len(names),
        n_gpus_requested=sm.tres_gpus(r.get("Tres")),
        n_gpus_allocated=sm.tres_gpus(r.get("Tres")),
        n_cpus_allocated=sm.integer(r.get("ProcCnt")),
        nodes=sm.text_value(r.get("NodeList")),
        node_names=names,
        exit_code=int(exit_code) if exit_code.isdigit() else None,
    )


def parse_jobcomp(text: bytes | str, counts: SlurmCounts | None = None, tz: tzinfo = UTC) -> list[SlurmJob]:
    counts = counts if counts is not None else SlurmCounts()
    out = []
    for r in jobcomp_records(text):
        counts.n_records += 1
        job = job_from_jobcomp(r, counts, tz)
        if job is not None:
            out.append(job)
    return out


def _gpu_limit(tres_text: str) -> int | None:
    return sm.tres_gpus(tres_text) if "gres/gpu" in (tres_text or "") else None


def qos_from_row(r: dict[str, str]) -> SlurmQos:
    """One ``sacctmgr show qos -P`` row → :class:`SlurmQos`."""
    usage = sm.number(r.get("UsageFactor"))
    return SlurmQos(
        name=r.get("Name", ""),
        priority=sm.integer(r.get("Priority")),
        preempt=tuple(p for p in r.get("Preempt", "").split(",") if p),
        preempt_mode=r.get("PreemptMode", "").lower(),
        flags=tuple(f.lower() for f in r.get("Flags", "").split(",") if f),
        max_wall_s=sm.duration_s(r.get("MaxWall")),
        group_gpus_limit_count=_gpu_limit(r.get("GrpTRES", "")),
        per_user_gpus_limit_count=_gpu_limit(r.get("MaxTRESPU", "")),
        per_job_gpus_limit_count=_gpu_limit(r.get("MaxTRES", "")),
        usage_factor_ratio=1.0 if usage is None else usage,
    )


def parse_sacctmgr_qos(text: bytes | str) -> tuple[list[dict[str, str]], list[SlurmQos]]:
    """``sacctmgr show qos -P`` → (the rows as printed, the QoS records)."""
    rows = sacct_rows(text, "|")
    return rows, [qos_from_row(r) for r in rows if r.get("Name")]


def parse_sacctmgr_users(text: bytes | str) -> tuple[list[dict[str, str]], list[SlurmAccount]]:
    """``sacctmgr show user withassoc format=User,DefaultAccount,Account,DefaultQOS,QOS -P`` → (rows, accounts).

    An ``Account`` cell may list several accounts; each gets the row's user and QoS.
    """
    rows = sacct_rows(text, "|")
    users: dict[str, dict[str, None]] = {}
    qos: dict[str, dict[str, None]] = {}
    default_qos: dict[str, str] = {}
    for r in rows:
        for account in (a for a in r.get("Account", "").split(",") if a):
            users.setdefault(account, {})[r.get("User", "")] = None
            qos.setdefault(account, {}).update(dict.fromkeys(q for q in r.get("QOS", "").split(",") if q))
            default_qos.setdefault(account, r.get("DefaultQOS", ""))
    accounts = [
        SlurmAccount(name, tuple(u for u in users[name] if u), tuple(qos[name]), default_qos[name]) for name in users
    ]
    return rows, accounts
