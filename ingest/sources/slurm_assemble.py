"""Pieces of one Slurm read → a :class:`SlurmSnapshot` on the site's hosts.

The queue (``squeue``) and the accounting (``sacct`` or jobcomp) are merged, the queue
winning for a job in both; node names (of nodes, of jobs' allocations, of partitions) are
resolved to the site's dense node ids through an :class:`ingest.sources.inventory.Inventory`
(one lookup per distinct name).  With a site, nodes the site does not know are counted
in ``counts.n_unknown_hosts`` (first few named) and left out of ``nodes``; jobs keep their
Slurm node names and get the ids of the names the site knows.  A partition without a
``gres/gpu`` TRES (no accounting TRES configured) counts the GPUs of its nodes' GRES.
QoS and accounts come from ``sacctmgr`` where a slurmdbd runs, else from the names the
jobs carry.
"""

from __future__ import annotations

from datetime import datetime

from ingest.sources.slurm_records import (
    SlurmAccount,
    SlurmCounts,
    SlurmJob,
    SlurmNode,
    SlurmPartition,
    SlurmQos,
    SlurmReservation,
    SlurmSnapshot,
)


class _Resolver:
    """Site node id per Slurm node name, cached; remembers the names the site does not know."""

    def __init__(self, inventory) -> None:
        self.inventory = inventory
        self.ids: dict[str, int] = {}
        self.unknown: set[str] = set()

    def __call__(self, name: str) -> int:
        nid = self.ids.get(name)
        if nid is None:
            nid = self.ids[name] = self.inventory.node_id(name) if self.inventory is not None else -1
            if nid < 0 and self.inventory is not None:
                self.unknown.add(name)
        return nid


def _merge_jobs(queue: list[SlurmJob], done: list[SlurmJob]) -> list[SlurmJob]:
    seen = {(j.job_id, j.array_task_id) for j in queue}
    return queue + [j for j in done if (j.job_id, j.array_task_id) not in seen]


def _map_jobs(jobs: list[SlurmJob], resolve: _Resolver) -> None:
    for job in jobs:
        if job.node_names:
            ids = [resolve(n) for n in job.node_names]
            job.node_ids = tuple(i for i in ids if i >= 0)


def _map_nodes(nodes: list[SlurmNode], resolve: _Resolver, with_site: bool) -> list[SlurmNode]:
    kept = []
    for node in nodes:
        node.node_id = resolve(node.name)
        if node.node_id >= 0 or not with_site:
            kept.append(node)
    return kept


def _map_reservations(reservations: list[SlurmReservation], resolve: _Resolver) -> None:
    for resv in reservations:
        ids = [resolve(n) for n in resv.node_names]
        resv.node_ids = tuple(i for i in ids if i >= 0)


def _partition_gpus(partitions: list[SlurmPartition], nodes: list[SlurmNode]) -> None:
    gpus = {n.name: n.n_gpus_configured for n in nodes}
    for p in partitions:
        if not p.n_gpus:
            p.n_gpus = sum(gpus.get(n, 0) for n in p.node_names)


def _accounts_from_jobs(jobs: list[SlurmJob]) -> list[SlurmAccount]:
    users: dict[str, dict[str, None]] = {}
    qos: dict[str, dict[str, None]] = {}
    for j in jobs:
        if j.account:
            users.setdefault(j.account, {})[j.user] = None
            if j.qos:
                qos.setdefault(j.account, {})[j.qos] = None
    return [SlurmAccount(a, tuple(u for u in users[a] if u), tuple(qos.get(a, ()))) for a in sorted(users)]


def assemble(pieces: dict, counts: SlurmCounts, inventory=None, *, version: str = "", read_at: datetime | None = None):
    """Merge, map and complete the pieces of one read (see module docstring) into a snapshot."""
    from ingest.sources.slurm_json import gc_paused

    with gc_paused():
        return _assemble(pieces, counts, inventory, version, read_at)


def _assemble(pieces: dict, counts: SlurmCounts, inventory, version: str, read_at: datetime | None) -> SlurmSnapshot:
    queue = pieces.get("jobs") or []
    jobs = _merge_jobs(queue, pieces.get("done") or [])
    resolve = _Resolver(inventory)
    nodes = _map_nodes(pieces.get("nodes") or [], resolve, inventory is not None)
    _map_jobs(jobs, resolve)
    partitions = pieces.get("partitions") or []
    _partition_gpus(partitions, pieces.get("nodes") or [])
    reservations = pieces.get("reservations") or []
    _map_reservations(reservations, resolve)
    counts.add_unknown(resolve.unknown)
    qos: list[SlurmQos] = pieces.get("qos") or [SlurmQos(q) for q in sorted({j.qos for j in jobs if j.qos})]
    accounts = pieces.get("accounts") or _accounts_from_jobs(jobs)
    return SlurmSnapshot(
        jobs=jobs,
        nodes=nodes,
        partitions=partitions,
        qos=qos,
        accounts=accounts,
        reservations=reservations,
        config=pieces.get("config") or {},
        counts=counts,
        slurm_version=version,
        read_at=read_at,
    )
