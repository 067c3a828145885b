"""Slurm's text outputs → records: ``scontrol show node|partition|config``, ``squeue -O``, ``sinfo``.

Slurm 22.05's ``scontrol`` has no ``--json``, so nodes' reasons, reason times and users
and the partitions come from its ``Key=Value`` text (multi-line, or one line per record
with ``-o``).  A value may hold spaces (``OS=Linux 6.1 #1 SMP``); keys are recognised as
words that start with a capital letter and end in ``=`` after white space.  A node's
``Reason=… [user@time]`` is cut out first, so a reason may hold anything but that
suffix.  ``squeue`` with ``|#`` between fields (the layout Meta's GPU cluster monitoring
uses, :data:`SQUEUE_FIELDS`) and ``sinfo`` with ``|`` (a header line, or the field list
given) are read for sites whose Slurm predates ``--json`` and for recorded outputs.
"""

from __future__ import annotations

import re
from datetime import UTC, tzinfo

from ingest.sources import slurm_map as sm
from ingest.sources.slurm_json import expand_nodes
from ingest.sources.slurm_records import SlurmCounts, SlurmJob, SlurmNode, SlurmPartition, SlurmReservation

_RECORD_START = re.compile(r"^\s*(NodeName|PartitionName|JobId|ReservationName)=")
_KEY = re.compile(r"(?:^|(?<=\s))([A-Z][A-Za-z0-9_:/.\[\]]*)=")
_REASON = re.compile(r"(?:^|\s)Reason=(.*?)\s*\[([^\]@]*)@([^\]]*)\]")
_ARRAY_ID = re.compile(r"^(\d+)_(?:(\d+)|\[(.*)\])$")
SQUEUE_DELIMITER = "|#"
# ``squeue --all --noheader -O FIELD:|#,…`` in this order (the layout of the recorded Meta outputs)
SQUEUE_FIELDS = (
    "TRES-PER-NODE",
    "MINCPUS",
    "JOBARRAYID",
    "JOBID",
    "NAME",
    "TIMELIMIT",
    "MINMEMORY",
    "COMMAND",
    "PRIORITY",
    "STATE",
    "USERNAME",
    "NUMCPUS",
    "NUMNODES",
    "TIMELEFT",
    "TIMEUSED",
    "NODELIST",
    "DEPENDENCY",
    "EXCNODES",
    "STARTTIME",
    "SUBMITTIME",
    "ELIGIBLETIME",
    "ACCRUETIME",
    "PENDINGTIME",
    "COMMENT",
    "PARTITION",
    "ACCOUNT",
    "QOS",
    "REASON",
    "TRES-ALLOC",
    "RESERVATION",
    "REQUEUE",
    "FEATURE",
    "RESTARTCNT",
    "SCHEDNODES",
)


def scontrol_records(text: str) -> list[dict[str, str]]:
    """``scontrol show node|partition|job`` text (multi-line or ``-o``) → one dict per record."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if _RECORD_START.match(line) or not blocks:
            blocks.append([])
        blocks[-1].append(line.strip())
    return [_pairs(block) for block in blocks]


def _pairs(lines: list[str]) -> dict[str, str]:
    text = " ".join(lines)
    out: dict[str, str] = {}
    m = _REASON.search(text)
    if m is not None:
        out["Reason"], out["ReasonUser"], out["ReasonTime"] = m.group(1), m.group(2), m.group(3)
        text = text[: m.start()] + " " + text[m.end() :]
    keys = list(_KEY.finditer(text))
    for k, nxt in zip(keys, keys[1:] + [None]):
        out[k.group(1)] = text[k.end() : nxt.start() if nxt else len(text)].strip()
    return out


def node_from_scontrol(r: dict[str, str], counts: SlurmCounts, tz: tzinfo = UTC) -> SlurmNode | None:
    """One ``scontrol show node -d`` record → :class:`SlurmNode` (``GresUsed`` needs ``-d``)."""
    name = r.get("NodeName", "")
    if not name:
        counts.n_malformed_records += 1
        return None
    state, flags = sm.node_state(r.get("State", ""))
    gpus, gpu_type = sm.gres_gpus(r.get("Gres"))
    return SlurmNode(
        name=name,
        state=state,
        state_flags=flags,
        reason=sm.text_value(r.get("Reason")),
        reason_set_at=sm.timestamp(r.get("ReasonTime"), tz),
        reason_set_by=sm.user_name(r.get("ReasonUser")),
        partitions=tuple(p for p in r.get("Partitions", "").split(",") if p),
        gpu_type=gpu_type,
        n_gpus_configured=gpus,
        n_gpus_allocated=sm.gres_gpus(r.get("GresUsed"))[0] or sm.tres_gpus(r.get("AllocTRES")),
        n_gpus_drained=sm.gres_gpus(r.get("GresDrain"))[0],
        n_cpus_configured=sm.integer(r.get("CPUTot")),
        n_cpus_allocated=sm.integer(r.get("CPUAlloc")),
    )


def partition_from_scontrol(r: dict[str, str], counts: SlurmCounts) -> SlurmPartition | None:
    """One ``scontrol show partition`` record → :class:`SlurmPartition`."""
    name = r.get("PartitionName", "")
    if not name:
        counts.n_malformed_records += 1
        return None
    max_nodes = sm.number(r.get("MaxNodes"))
    return SlurmPartition(
        name=name,
        state=r.get("State", "UP").lower(),
        nodes=sm.text_value(r.get("Nodes")),
        node_names=expand_nodes(sm.text_value(r.get("Nodes")), counts),
        default_flag=int(r.get("Default", "NO").upper() == "YES"),
        qos=sm.text_value(r.get("QoS")),
        max_time_s=sm.duration_s(r.get("MaxTime")),
        max_nodes_per_job_count=int(max_nodes) if max_nodes is not None and max_nodes < 0xFFFFFFFE else None,
        priority_tier=sm.integer(r.get("PriorityTier"), 1),
        n_nodes=sm.integer(r.get("TotalNodes")),
        n_cpus=sm.integer(r.get("TotalCPUs")),
        n_gpus=sm.tres_gpus(r.get("TRES")),
        preempt_mode=r.get("PreemptMode", "").lower(),
    )


def parse_scontrol_nodes(text: str, counts: SlurmCounts | None = None, tz: tzinfo = UTC) -> list[SlurmNode]:
    counts = counts if counts is not None else SlurmCounts()
    out = []
    for r in scontrol_records(text):
        counts.n_records += 1
        node = node_from_scontrol(r, counts, tz)
        if node is not None:
            out.append(node)
    return out


def parse_scontrol_partitions(text: str, counts: SlurmCounts | None = None) -> list[SlurmPartition]:
    counts = counts if counts is not None else SlurmCounts()
    out = []
    for r in scontrol_records(text):
        counts.n_records += 1
        part = partition_from_scontrol(r, counts)
        if part is not None:
            out.append(part)
    return out


def names_list(text) -> tuple[str, ...]:
    """``a,b`` (or a list, 23.02+ JSON) → ("a", "b"); Slurm's "nothing" spellings → ()."""
    if isinstance(text, list):
        return tuple(str(x) for x in text if sm.text_value(str(x)))
    return tuple(p for p in (x.strip() for x in sm.text_value(text).split(",")) if p)


def reservation_from_scontrol(r: dict[str, str], counts: SlurmCounts, tz: tzinfo = UTC) -> SlurmReservation | None:
    """One ``scontrol show reservation`` record → :class:`SlurmReservation`."""
    name = r.get("ReservationName", "")
    if not name:
        counts.n_malformed_records += 1
        return None
    nodes = sm.text_value(r.get("Nodes"))
    return SlurmReservation(
        name=name,
        state=r.get("State", "INACTIVE").strip().lower() or "inactive",
        start_at=sm.timestamp(r.get("StartTime"), tz),
        end_at=sm.timestamp(r.get("EndTime"), tz),
        nodes=nodes,
        node_names=expand_nodes(nodes, counts),
        users=names_list(r.get("Users")),
        accounts=names_list(r.get("Accounts")),
        flags=tuple(f.lower() for f in names_list(r.get("Flags"))),
    )


def parse_scontrol_reservations(text: str, counts: SlurmCounts | None = None, tz: tzinfo = UTC):
    """``scontrol show reservation -o`` → reservations (``No reservations in the system`` → [])."""
    counts = counts if counts is not None else SlurmCounts()
    out = []
    for r in scontrol_records(text):
        if not r:
            continue  # the "No reservations in the system" line
        counts.n_records += 1
        resv = reservation_from_scontrol(r, counts, tz)
        if resv is not None:
            out.append(resv)
    return out


def parse_scontrol_config(text: str) -> dict[str, str]:
    """``scontrol show config`` → {key: value} (``Key   = value`` lines; the header line skipped)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            out[key.strip()] = value.strip()
    return out


def delimited_rows(text: str, delimiter: str, fields: tuple[str, ...] | None = None) -> list[dict[str, str]]:
    """Rows of ``delimiter``-separated text: the first line names the fields unless ``fields`` does.

    Repeated header names (``sinfo -o %all`` has two ``STATE`` columns) get ``_2``, ``_3``.
    Cells are stripped; a row with more cells than fields keeps only the named ones, one
    with fewer has the missing ones empty.
    """
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    if fields is None:
        header = [h.strip() for h in lines[0].split(delimiter)]
        names, seen = [], {}
        for h in header:
            seen[h] = seen.get(h, 0) + 1
            names.append(h if seen[h] == 1 else f"{h}_{seen[h]}")
        fields, lines = tuple(names), lines[1:]
    rows = []
    for line in lines:
        cells = [c.strip() for c in line.split(delimiter)]
        rows.append({f: (cells[i] if i < len(cells) else "") for i, f in enumerate(fields)})
    return rows


def _array_ids(display: str) -> tuple[int | None, int | None, str]:
    m = _ARRAY_ID.match(display.strip())
    if m is None:
        return None, None, ""
    return int(m.group(1)), (int(m.group(2)) if m.group(2) else None), m.group(3) or ""


def job_from_squeue_row(r: dict[str, str], counts: SlurmCounts, tz: tzinfo = UTC) -> SlurmJob | None:
    """One ``squeue -O`` row (:data:`SQUEUE_FIELDS` names) → :class:`SlurmJob`."""
    job_id = sm.integer(r.get("JOBID"), -1) if r.get("JOBID", "").isdigit() else -1
    if job_id < 0:
        counts.n_malformed_records += 1
        return None
    state, flags = sm.job_state(r.get("STATE"))
    array_job, task, tasks = _array_ids(r.get("JOBARRAYID", ""))
    start = sm.timestamp(r.get("STARTTIME"), tz)
    names = expand_nodes(sm.text_value(r.get("NODELIST")), counts) if state != "pending" else ()
    n_nodes = sm.integer(r.get("NUMNODES"))
    per_node, _ = sm.gres_gpus(r.get("TRES-PER-NODE"))
    dependency = sm.text_value(r.get("DEPENDENCY"))
    return SlurmJob(
        job_id=job_id,
        name=r.get("NAME", ""),
        user=sm.user_name(r.get("USERNAME")),
        account=sm.text_value(r.get("ACCOUNT")),
        partition=sm.text_value(r.get("PARTITION")),
        qos=sm.text_value(r.get("QOS")),
        state=state,
        state_flags=flags,
        reason=sm.text_value(r.get("REASON")),
        array_job_id=array_job,
        array_task_id=task,
        array_tasks=tasks,
        submitted_at=sm.timestamp(r.get("SUBMITTIME"), tz),
        eligible_at=sm.timestamp(r.get("ELIGIBLETIME"), tz),
        started_at=start if state != "pending" else None,
        expected_start_at=start if state == "pending" else None,
        time_limit_s=sm.duration_s(r.get("TIMELIMIT")),
        n_nodes_requested=n_nodes,
        n_nodes_allocated=len(names),
        n_gpus_requested=per_node * max(n_nodes, 1),
        n_gpus_allocated=sm.tres_gpus(r.get("TRES-ALLOC")) if state != "pending" else 0,
        n_cpus_allocated=sm.integer(r.get("NUMCPUS")) if state != "pending" else 0,
        nodes=sm.text_value(r.get("NODELIST")) if state != "pending" else "",
        node_names=names,
        dependency=dependency,
        depends_on=sm.dependency_ids(dependency),
        priority=sm.number(r.get("PRIORITY")),
    )


def parse_squeue_text(
    text: str, counts: SlurmCounts | None = None, tz: tzinfo = UTC, fields: tuple[str, ...] = SQUEUE_FIELDS
) -> list[SlurmJob]:
    """``squeue --all --noheader -O …`` with ``|#`` separators → jobs."""
    counts = counts if counts is not None else SlurmCounts()
    out = []
    for r in delimited_rows(text, SQUEUE_DELIMITER, fields):
        counts.n_records += 1
        job = job_from_squeue_row(r, counts, tz)
        if job is not None:
            out.append(job)
    return out


def node_from_sinfo_row(r: dict[str, str], counts: SlurmCounts, tz: tzinfo = UTC) -> SlurmNode | None:
    """One ``sinfo -N`` row: ``-o %all`` headers (``HOSTNAMES``, ``STATE``…) or ``-O`` names (``nodelist``…)."""
    low = {k.lower().strip(): v for k, v in r.items()}
    name = low.get("nodelist") or low.get("node_list") or low.get("hostnames") or ""
    if not name or any(c in name for c in "[],"):
        counts.n_malformed_records += 1
        return None
    long_state = low.get("state_2") or low.get("statelong") or low.get("state") or ""
    gpus, gpu_type = sm.gres_gpus(low.get("gres"))
    cpus_state = (low.get("cpus(a/i/o/t)") or low.get("cpusstate") or "").split("/")
    state, flags = sm.node_state(long_state)
    return SlurmNode(
        name=name,
        state=state,
        state_flags=flags,
        reason=sm.text_value(low.get("reason")) if low.get("reason", "").lower() != "none" else "",
        reason_set_at=sm.timestamp(low.get("timestamp"), tz),
        reason_set_by=sm.user_name(low.get("user_2") or ""),
        partitions=tuple(p for p in (low.get("partition") or low.get("partitionname") or "").split(",") if p),
        gpu_type=gpu_type,
        n_gpus_configured=gpus,
        n_gpus_allocated=sm.gres_gpus(low.get("gres_used") or low.get("gresused"))[0],
        n_cpus_configured=sm.integer(low.get("cpus")),
        n_cpus_allocated=sm.integer(cpus_state[0]) if len(cpus_state) == 4 else 0,
    )


def parse_sinfo_text(
    text: str, counts: SlurmCounts | None = None, tz: tzinfo = UTC, fields: tuple[str, ...] | None = None
) -> list[SlurmNode]:
    """``sinfo -N -o %all`` (header line) or ``sinfo -N --noheader -O f:256|,…`` (``fields``) → nodes.

    A node listed once per partition becomes one record holding every partition.
    """
    counts = counts if counts is not None else SlurmCounts()
    by_name: dict[str, SlurmNode] = {}
    for r in delimited_rows(text, "|", fields):
        counts.n_records += 1
        node = node_from_sinfo_row(r, counts, tz)
        if node is None:
            continue
        seen = by_name.get(node.name)
        if seen is None:
            by_name[node.name] = node
        else:
            seen.partitions = tuple(dict.fromkeys(seen.partitions + node.partitions))
    return list(by_name.values())
