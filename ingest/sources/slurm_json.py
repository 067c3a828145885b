"""Slurm's JSON (``squeue --json``, ``sinfo --json``, ``scontrol show … --json``, slurmrestd) → records.

One reader for every data_parser release: the OpenAPI v0.0.38 documents of Slurm 22.05
(plain numbers, ``job_state`` a string, node ``state`` plus ``state_flags``, ``sinfo --json``
one object per node under ``nodes``) and those of 23.02 and later (v0.0.39 … v0.0.42:
numbers as ``{"set", "infinite", "number"}``, ``job_state`` and node ``state`` lists,
``sinfo --json`` groups under ``sinfo`` with ``nodes/nodes`` and ``node/state``,
partitions nested as ``nodes/configured``, ``maximums/time``).  Field spellings are
converted by :mod:`ingest.sources.slurm_map`.  A record that lacks its id is counted in
``counts.n_malformed_records`` and skipped; the rest of the document is kept.  A document
with ``errors`` is refused whole: Slurm 22.05's clients answer an unreachable controller
with exit status 0, an error and an empty list, which must not read as an empty cluster.
"""

from __future__ import annotations

import contextlib
import gc
import math
from datetime import UTC, tzinfo

import msgspec

from ingest.sources import slurm_map as sm
from ingest.sources import slurm_wire
from ingest.sources.hostlist import HostlistError, expand
from ingest.sources.jsondoc import JsonError
from ingest.sources.slurm_records import SlurmCounts, SlurmJob, SlurmNode, SlurmPartition, SlurmReservation

RUNNING_LIKE = frozenset({"running", "suspended", "completing"})


class SlurmDocumentError(ValueError):
    """A document that is not the Slurm JSON it should be (named in one line)."""


def load_json(text: str | bytes):
    """Decode a Slurm answer with msgspec; :class:`JsonError` if it is not JSON.

    msgspec refuses nesting deeper than its own limit (a ``DecodeError``); the readers here
    walk fixed paths, never recursively, so no depth walk of the whole document is needed.
    """
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise JsonError(f"not JSON: {exc}") from None


@contextlib.contextmanager
def gc_paused():
    """Hold the cyclic garbage collector while a document becomes records.

    Decoding and mapping a 12,544-node read allocates a few hundred thousand acyclic
    objects; each allocation burst would otherwise start collections that walk every
    live object (about half the mapping time measured on the colossus benchmark).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _get(d: dict, path: str, default=None):
    """``_get(d, "nodes/configured")``: a nested field, or ``default``."""
    node = d
    for key in path.split("/"):
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def document(text_or_doc, what: str, key: str) -> dict:
    """Decode (if text) and check a Slurm JSON answer: an object holding list ``key``, no errors."""
    doc = load_json(text_or_doc) if isinstance(text_or_doc, (str, bytes)) else text_or_doc
    if not isinstance(doc, dict):
        raise SlurmDocumentError(f"{what}: expected a JSON object, got {type(doc).__name__}")
    errors = doc.get("errors") if isinstance(doc.get("errors"), list) else []
    if errors:  # a controller that cannot be reached: exit 0, an error and an empty list (22.05)
        first = errors[0] if isinstance(errors[0], dict) else {"description": str(errors[0])}
        text = first.get("description") or first.get("error") or str(first)
        source = f" ({first['source']})" if first.get("source") else ""
        raise SlurmDocumentError(f"{what}: Slurm answered with an error: {str(text)[:200]}{source}")
    if not isinstance(doc.get(key), list):
        raise SlurmDocumentError(f"{what}: no {key!r} list in the document (keys: {', '.join(sorted(doc)[:8])})")
    return doc


def slurm_version(doc: dict) -> str:
    """``"22.05.8"`` from a document's ``meta`` (``Slurm`` in 22.05, ``slurm`` in 23.02+)."""
    meta = doc.get("meta") if isinstance(doc, dict) else None
    if not isinstance(meta, dict):
        return ""
    slurm = meta.get("slurm") or meta.get("Slurm") or {}
    return str(slurm.get("release") or "") if isinstance(slurm, dict) else ""


def expand_nodes(text, counts: SlurmCounts) -> tuple[str, ...]:
    """A hostlist (or a list of names, 23.02+) → names; an oversized or bad one is counted and empty."""
    if isinstance(text, list):
        return tuple(str(n) for n in text if n)
    try:
        return tuple(expand(text)) if isinstance(text, str) else ()
    except HostlistError:
        counts.n_oversized_hostlists += 1
        return ()


def _requested_gpus(j: dict, n_nodes: int) -> int:
    req = sm.tres_gpus(j.get("tres_req_str"))
    if req:
        return req
    per_job, _ = sm.gres_gpus(j.get("tres_per_job"))
    if per_job:
        return per_job
    per_node, _ = sm.gres_gpus(j.get("tres_per_node"))
    if per_node:
        return per_node * max(n_nodes, 1)
    per_task, _ = sm.gres_gpus(j.get("tres_per_task"))
    return per_task * max(sm.integer(j.get("tasks"), 1), 1)


def _exit_code(value) -> int | None:
    if isinstance(value, dict):
        value = value.get("return_code")
    v = sm.number(value)
    return int(v) if v is not None and math.isfinite(v) else None


def _exclusive(j: dict) -> int:
    """1 for a job that takes whole nodes: ``shared: "none"`` (22.05), ``["none"]`` or ``exclusive: ["true"]`` (23.02+)."""
    shared, exclusive = j.get("shared"), j.get("exclusive")
    shared = shared if isinstance(shared, list) else [shared]
    exclusive = exclusive if isinstance(exclusive, list) else [exclusive]
    return int("none" in shared or "true" in exclusive or True in exclusive)


def _gpu_indices(j: dict, names: tuple[str, ...]) -> tuple[tuple[int, ...], ...]:
    """Per allocated node, the GPU indices ``gres_detail`` gives (one entry per node, in hostlist order)."""
    detail = j.get("gres_detail")
    if not names or not isinstance(detail, list) or len(detail) != len(names):
        return ()
    return tuple(sm.gres_gpu_indices(d) for d in detail)


def job_from_json(j: dict, counts: SlurmCounts, tz: tzinfo = UTC) -> SlurmJob | None:
    """One ``jobs[]`` entry of any release → :class:`SlurmJob`; ``None`` (counted) without a job id."""
    job_id = sm.integer(j.get("job_id"), -1) if isinstance(j, dict) else -1
    if job_id < 0:
        counts.n_malformed_records += 1
        return None
    state, flags = sm.job_state(j.get("job_state"))
    start, end = sm.timestamp(j.get("start_time"), tz), sm.timestamp(j.get("end_time"), tz)
    busy = state in RUNNING_LIKE
    done = not busy and state != "pending"
    names = expand_nodes(j.get("nodes"), counts) if state != "pending" else ()
    n_nodes = sm.integer(j.get("node_count"))
    array_job = sm.integer(j.get("array_job_id"))
    task = sm.number(j.get("array_task_id"))
    limit_min = sm.number(j.get("time_limit"))
    gpus_alloc = sm.tres_gpus(j.get("tres_alloc_str")) or sum(
        sm.gres_gpus(g)[0] for g in j.get("gres_detail") or [] if isinstance(g, str)
    )
    dependency = sm.text_value(j.get("dependency"))
    return SlurmJob(
        job_id=job_id,
        name=sm.text_value(j.get("name")),
        user=sm.user_name(j.get("user_name")),
        account=sm.text_value(j.get("account")),
        partition=sm.text_value(j.get("partition")),
        qos=sm.text_value(j.get("qos")),
        state=state,
        state_flags=flags,
        reason=sm.text_value(j.get("state_reason")),
        array_job_id=array_job or None,
        array_task_id=int(task) if task is not None and math.isfinite(task) and array_job else None,
        array_tasks=sm.text_value(j.get("array_task_string")),
        submitted_at=sm.timestamp(j.get("submit_time"), tz),
        eligible_at=sm.timestamp(j.get("eligible_time"), tz),
        started_at=start if busy or done else None,
        expected_start_at=start if state == "pending" else None,
        ended_at=end if done else None,
        expected_end_at=end if busy else None,
        time_limit_s=None if limit_min is None or not math.isfinite(limit_min) else limit_min * 60.0,
        n_nodes_requested=n_nodes,
        n_nodes_allocated=len(names),
        n_gpus_requested=_requested_gpus(j, n_nodes),
        n_gpus_allocated=gpus_alloc if state != "pending" else 0,
        n_cpus_allocated=sm.integer(j.get("cpus")) if state != "pending" else 0,
        nodes=sm.text_value(j.get("nodes")) if isinstance(j.get("nodes"), str) else "",
        node_names=names,
        dependency=dependency,
        depends_on=sm.dependency_ids(dependency),
        priority=sm.number(j.get("priority")),
        exit_code=_exit_code(j.get("exit_code")) if done else None,
        gpu_indices=_gpu_indices(j, names) if busy else (),
        exclusive_flag=_exclusive(j),
        reservation=sm.text_value(j.get("resv_name")),
    )


def parse_jobs(text_or_doc, counts: SlurmCounts | None = None, tz: tzinfo = UTC, on_doc=None) -> list[SlurmJob]:
    """``squeue --json`` / slurmrestd ``/jobs`` of any release → jobs (malformed entries counted).

    ``on_doc(doc)`` is called with the checked document (its ``meta`` names the release).
    """
    counts = counts if counts is not None else SlurmCounts()
    with gc_paused():
        typed = slurm_wire.decode_jobs(text_or_doc) if isinstance(text_or_doc, (str, bytes)) else None
        doc = document(typed if typed is not None else text_or_doc, "squeue JSON", "jobs")
        if on_doc is not None:
            on_doc(doc)
        out = []
        for j in doc["jobs"]:
            counts.n_records += 1
            job = job_from_json(j, counts, tz)
            if job is not None:
                out.append(job)
    return out


def _partitions_of(value) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(p) for p in value)
    return tuple(p for p in str(value or "").split(",") if p)


def node_from_json(n: dict, counts: SlurmCounts, tz: tzinfo = UTC) -> SlurmNode | None:
    """One ``nodes[]`` entry (``sinfo --json`` 22.05, ``scontrol show nodes --json``, slurmrestd)."""
    name = n.get("name") if isinstance(n, dict) else None
    if not isinstance(name, str) or not name:
        counts.n_malformed_records += 1
        return None
    state, flags = sm.node_state(n.get("state"), n.get("state_flags") or ())
    gpus, gpu_type = sm.gres_gpus(n.get("gres"))
    return SlurmNode(
        name=name,
        state=state,
        state_flags=flags,
        reason=sm.text_value(n.get("reason")),
        reason_set_at=sm.timestamp(n.get("reason_changed_at"), tz),
        reason_set_by=sm.user_name(n.get("reason_set_by_user")),
        partitions=_partitions_of(n.get("partitions")),
        gpu_type=gpu_type,
        n_gpus_configured=gpus,
        n_gpus_allocated=sm.gres_gpus(n.get("gres_used"))[0],
        n_gpus_drained=sm.gres_gpus(n.get("gres_drained"))[0],
        n_cpus_configured=sm.integer(n.get("cpus")),
        n_cpus_allocated=sm.integer(n.get("alloc_cpus")),
    )


def _nodes_from_sinfo_groups(groups: list, counts: SlurmCounts, tz: tzinfo) -> list[SlurmNode]:
    """23.02+ ``sinfo --json``: groups of identical nodes, one per partition → one record per node."""
    by_name: dict[str, SlurmNode] = {}
    for g in groups:
        counts.n_records += 1
        if not isinstance(g, dict):
            counts.n_malformed_records += 1
            continue
        names = expand_nodes(_get(g, "nodes/nodes"), counts)
        state, flags = sm.node_state(_get(g, "node/state"))
        gpus, gpu_type = sm.gres_gpus(_get(g, "gres/total"))
        n_nodes = max(len(names), 1)
        partition = _get(g, "partition/name") or ""
        for name in names:
            node = by_name.get(name)
            if node is not None:
                node.partitions = tuple(dict.fromkeys(node.partitions + ((partition,) if partition else ())))
                continue
            by_name[name] = SlurmNode(
                name=name,
                state=state,
                state_flags=flags,
                reason=sm.text_value(_get(g, "reason/description")),
                reason_set_at=sm.timestamp(_get(g, "reason/time"), tz),
                reason_set_by=sm.user_name(_get(g, "reason/user")),
                partitions=(partition,) if partition else (),
                gpu_type=gpu_type,
                n_gpus_configured=gpus,
                n_gpus_allocated=sm.gres_gpus(_get(g, "gres/used"))[0],
                n_cpus_configured=sm.integer(_get(g, "cpus/maximum")),
                n_cpus_allocated=sm.integer(_get(g, "cpus/allocated")) // n_nodes,
            )
    return list(by_name.values())


def parse_nodes(text_or_doc, counts: SlurmCounts | None = None, tz: tzinfo = UTC) -> list[SlurmNode]:
    """``sinfo --json`` (either layout), ``scontrol show nodes --json`` or slurmrestd ``/nodes`` → nodes."""
    counts = counts if counts is not None else SlurmCounts()
    with gc_paused():
        return _parse_nodes(text_or_doc, counts, tz)


def _parse_nodes(text_or_doc, counts: SlurmCounts, tz: tzinfo) -> list[SlurmNode]:
    raw = isinstance(text_or_doc, (str, bytes))
    typed = slurm_wire.decode_nodes(text_or_doc) if raw else None
    doc = typed if typed is not None else load_json(text_or_doc) if raw else text_or_doc
    if isinstance(doc, dict) and isinstance(doc.get("sinfo"), list):
        return _nodes_from_sinfo_groups(document(doc, "sinfo JSON", "sinfo")["sinfo"], counts, tz)
    doc = document(doc, "sinfo JSON", "nodes")
    out = []
    for n in doc["nodes"]:
        counts.n_records += 1
        node = node_from_json(n, counts, tz)
        if node is not None:
            out.append(node)
    return out


def _minutes_s(value) -> float | None:
    v = sm.number(value)
    return None if v is None or not math.isfinite(v) or v < 0 else v * 60.0


def partition_from_json(p: dict, counts: SlurmCounts) -> SlurmPartition | None:
    """One ``partitions[]`` entry of 22.05 (flat) or 23.02+ (nested) → :class:`SlurmPartition`."""
    name = p.get("name") if isinstance(p, dict) else None
    if not isinstance(name, str) or not name:
        counts.n_malformed_records += 1
        return None
    nested = isinstance(p.get("nodes"), dict)
    nodes = _get(p, "nodes/configured", "") if nested else p.get("nodes", "")
    state = _get(p, "partition/state") if nested else p.get("state")
    state_text = (state[0] if isinstance(state, list) and state else state) or "UP"
    max_nodes = sm.number(_get(p, "maximums/nodes") if nested else p.get("maximum_nodes_per_job"))
    tres_text = _get(p, "tres/configured") if nested else p.get("tres")
    flags = [str(f).lower() for f in p.get("flags") or []] if isinstance(p.get("flags"), list) else []
    return SlurmPartition(
        name=name,
        state=str(state_text).lower(),
        nodes=nodes if isinstance(nodes, str) else "",
        node_names=expand_nodes(nodes, counts),
        default_flag=int("default" in flags),
        qos=sm.text_value(_get(p, "qos/assigned") if nested else p.get("qos")),
        max_time_s=_minutes_s(_get(p, "maximums/time") if nested else p.get("max_time_limit")),
        max_nodes_per_job_count=int(max_nodes) if max_nodes is not None and 0 <= max_nodes < 0xFFFFFFFE else None,
        priority_tier=sm.integer(_get(p, "priority/tier") if nested else p.get("priority_tier"), 1),
        n_nodes=sm.integer(_get(p, "nodes/total") if nested else p.get("total_nodes")),
        n_cpus=sm.integer(_get(p, "cpus/total") if nested else p.get("total_cpus")),
        n_gpus=sm.tres_gpus(tres_text),
        preempt_mode=",".join(str(m).lower() for m in p.get("preemption_mode") or [])
        if isinstance(p.get("preemption_mode"), list)
        else "",
    )


def parse_partitions(text_or_doc, counts: SlurmCounts | None = None) -> list[SlurmPartition]:
    """slurmrestd ``/partitions`` or ``scontrol show partitions --json`` → partitions."""
    counts = counts if counts is not None else SlurmCounts()
    doc = document(text_or_doc, "partitions JSON", "partitions")
    out = []
    for p in doc["partitions"]:
        counts.n_records += 1
        part = partition_from_json(p, counts)
        if part is not None:
            out.append(part)
    return out


def _names(value) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v) for v in value if sm.text_value(str(v)))
    return tuple(p.strip() for p in sm.text_value(value).split(",") if p.strip())


def reservation_from_json(r: dict, counts: SlurmCounts, tz: tzinfo = UTC) -> SlurmReservation | None:
    """One ``reservations[]`` entry (slurmrestd ``/reservations``, any release) → :class:`SlurmReservation`."""
    name = r.get("name") if isinstance(r, dict) else None
    if not isinstance(name, str) or not name:
        counts.n_malformed_records += 1
        return None
    start, end = sm.timestamp(r.get("start_time"), tz), sm.timestamp(r.get("end_time"), tz)
    nodes = r.get("node_list")
    flags = tuple(str(f).lower() for f in r.get("flags") or []) if isinstance(r.get("flags"), list) else ()
    return SlurmReservation(
        name=name,
        state="",  # the JSON does not say; the window does
        start_at=start,
        end_at=end,
        nodes=nodes if isinstance(nodes, str) else "",
        node_names=expand_nodes(nodes, counts),
        users=_names(r.get("users")),
        accounts=_names(r.get("accounts")),
        flags=flags,
    )


def parse_reservations(text_or_doc, counts: SlurmCounts | None = None, tz: tzinfo = UTC) -> list[SlurmReservation]:
    """slurmrestd ``/reservations`` → reservations."""
    counts = counts if counts is not None else SlurmCounts()
    doc = document(text_or_doc, "reservations JSON", "reservations")
    out = []
    for r in doc["reservations"]:
        counts.n_records += 1
        resv = reservation_from_json(r, counts, tz)
        if resv is not None:
            out.append(resv)
    return out
