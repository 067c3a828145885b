"""Typed decoding of the two big Slurm answers (``squeue --json``, per-node ``sinfo``/``/nodes``).

A 12,544-node site answers with ~26 MB of JSON, most of it fields the twin never reads
(``job_resources.allocated_nodes`` alone lists every allocated core).  msgspec decodes
straight into the typed dicts below, building Python objects only for the fields they
name and skipping the rest in C; they are plain dicts, so the mapping of
:mod:`ingest.sources.slurm_json` serves both them and generically decoded documents.  Fields keep
``Any`` type: every release's forms (plain numbers, ``{"set", "infinite", "number"}``,
strings or lists) arrive as they are and are converted by :mod:`ingest.sources.slurm_map`.
:func:`decode_jobs`/:func:`decode_nodes` return ``None`` when a document does not fit
(an entry that is not an object, ``jobs`` that is not a list): the caller then reads it
the generic way, which counts the odd entries and keeps the rest.
"""

from __future__ import annotations

from typing import Any, TypedDict

import msgspec


class WireJob(TypedDict, total=False):
    """The fields of a ``jobs[]`` entry the readers use (any release)."""

    job_id: Any
    name: Any
    user_name: Any
    account: Any
    partition: Any
    qos: Any
    job_state: Any
    state_reason: Any
    array_job_id: Any
    array_task_id: Any
    array_task_string: Any
    submit_time: Any
    eligible_time: Any
    start_time: Any
    end_time: Any
    time_limit: Any
    nodes: Any
    node_count: Any
    cpus: Any
    tasks: Any
    tres_req_str: Any
    tres_alloc_str: Any
    tres_per_job: Any
    tres_per_node: Any
    tres_per_task: Any
    gres_detail: Any
    dependency: Any
    priority: Any
    exit_code: Any
    shared: Any
    exclusive: Any
    resv_name: Any


class WireNode(TypedDict, total=False):
    """The fields of a ``nodes[]`` entry the readers use (any release)."""

    name: Any
    state: Any
    state_flags: Any
    reason: Any
    reason_changed_at: Any
    reason_set_by_user: Any
    partitions: Any
    gres: Any
    gres_used: Any
    gres_drained: Any
    cpus: Any
    alloc_cpus: Any


class _JobsDoc(msgspec.Struct):
    jobs: list[WireJob]
    meta: Any = None
    errors: Any = None


class _NodesDoc(msgspec.Struct):
    nodes: list[WireNode]
    meta: Any = None
    errors: Any = None


_JOBS = msgspec.json.Decoder(_JobsDoc)
_NODES = msgspec.json.Decoder(_NodesDoc)


def decode_jobs(text: str | bytes) -> dict | None:
    """``{"meta", "errors", "jobs": [WireJob…]}``, or ``None`` if the document does not fit the struct."""
    try:
        doc = _JOBS.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return {"meta": doc.meta, "errors": doc.errors, "jobs": doc.jobs}


def decode_nodes(text: str | bytes) -> dict | None:
    """``{"meta", "errors", "nodes": [WireNode…]}`` of a per-node document, or ``None``."""
    try:
        doc = _NODES.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return {"meta": doc.meta, "errors": doc.errors, "nodes": doc.nodes}
