"""Inventory mapping: source identities (hostname, GPU index or UUID, BMC, equipment) → dense site ids.

An :class:`Inventory` is built from SiteTables-like inputs (``node_name``, ``node_bmc``,
``gpu_node``, ``gpu_index`` and optionally ``cdu_name``, ``power_name``, ``rack_name``)
plus optional rewrite rules for sites whose sources name things differently (e.g. a
Kubernetes dcgm-exporter pod name → node, an FQDN → short host).  Resolution is
vectorised: one dict lookup per distinct host, then GPU ids come from a
``(node, index)`` table.  UUIDs seen next to a resolved (host, index) are remembered, so
a later read that only carries the UUID (or a renamed host) still maps.

Nothing is dropped: unresolved samples keep ``entity_id = -1``; distinct unknown hosts
are counted in ``counts.unknown_hosts`` (first few named), entities without any
identity in ``counts.unmapped_entities``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ingest.sources.samples import ENTITY_KINDS, KIND_CODE, SampleBatch

log = logging.getLogger(__name__)

_EXAMPLES = 20
SHOWN_NAME_CHARS = 80  # an unknown host name as logged and reported (a source may send any length)
MAX_REPORTED_UNKNOWN = 10_000  # names remembered as already logged; beyond, new ones are not logged again
# Sources whose GPU index is the site's index (DCGM's ``gpu`` label); BMC numbering is not.
INDEX_AUTHORITATIVE_SOURCES = frozenset({"dcgm", "prometheus", "synthetic"})


@dataclass(frozen=True)
class RewriteRule:
    """``re.sub(pattern, replacement, name)`` applied to source names before lookup.

    ``kinds`` limits the rule to entity kinds (empty: all).  Rules apply in order; each
    sees the previous one's output.
    """

    pattern: str
    replacement: str
    kinds: tuple[str, ...] = ()

    def apply(self, name: str, kind: str) -> str:
        if self.kinds and kind not in self.kinds:
            return name
        return re.sub(self.pattern, self.replacement, name)


def uuid_key(uuid: str) -> str:
    """One spelling of a GPU UUID: DCGM's ``GPU-9DAD…`` and Redfish's ``9dad…`` agree."""
    u = uuid.strip().lower()
    return u[4:] if u.startswith("gpu-") else u


def normalise_host(name: str) -> str:
    """Lower-case, without scheme, port and domain: ``HTTP://H1-R03-K12-N5.dc.local:9400`` → ``h1-r03-k12-n5``."""
    n = name.strip().lower()
    if "://" in n:
        n = n.split("://", 1)[1]
    n = n.split("/", 1)[0]
    if n.count(":") == 1:  # host:port (not IPv6)
        n = n.split(":", 1)[0]
    if not re.fullmatch(r"[\d.]+", n):  # keep IPv4 addresses whole
        n = n.split(".", 1)[0]
    return n


class Inventory:
    """Resolves raw entity identities of :class:`SampleBatch` rows to site ids."""

    def __init__(
        self,
        node_name: Sequence[str],
        node_bmc: Sequence[str],
        gpu_node: np.ndarray,
        gpu_index: np.ndarray,
        *,
        cdu_name: Sequence[str] = (),
        power_name: Sequence[str] = (),
        rack_name: Sequence[str] = (),
        rewrite: Iterable[RewriteRule] = (),
        aliases: dict[str, str] | None = None,
        gpu_uuid: dict[str, int] | None = None,
    ) -> None:
        self.rewrite = tuple(rewrite)
        self.aliases = {normalise_host(k): v for k, v in (aliases or {}).items()}
        self._node: dict[str, int] = {}
        for i, n in enumerate(node_name):
            self._node[normalise_host(n)] = i
        for i, b in enumerate(node_bmc):
            if b:
                self._node.setdefault(normalise_host(b), i)
                self._node.setdefault(b.strip().lower(), i)
        gpu_node = np.asarray(gpu_node, dtype=np.int64)
        gpu_index = np.asarray(gpu_index, dtype=np.int64)
        n_nodes = len(node_name)
        width = int(gpu_index.max()) + 1 if gpu_index.size else 1
        self._gpu_table = np.full((max(n_nodes, 1), width), -1, np.int32)
        if gpu_node.size:
            self._gpu_table[gpu_node, gpu_index] = np.arange(gpu_node.size, dtype=np.int32)
        self._uuid: dict[str, int] = {uuid_key(k): v for k, v in (gpu_uuid or {}).items()}
        self._reported_unknown: set[str] = set()
        self._named = {
            "cdu": {n.lower(): i for i, n in enumerate(cdu_name)},
            "pump": {n.lower(): i for i, n in enumerate(cdu_name)},
            "power_element": {n.lower(): i for i, n in enumerate(power_name)},
            "rack": {n.lower(): i for i, n in enumerate(rack_name)},
        }

    @classmethod
    def from_site(cls, site, rewrite: Iterable[RewriteRule] = (), aliases: dict[str, str] | None = None) -> Inventory:
        """From a :class:`twin.site.tables.SiteTables` (or anything with the same attributes)."""
        return cls(
            site.node_name,
            site.node_bmc,
            site.gpu_node,
            site.gpu_index,
            cdu_name=getattr(site, "cdu_name", ()),
            power_name=getattr(site, "power_name", ()),
            rack_name=getattr(site, "rack_name", ()),
            rewrite=rewrite,
            aliases=aliases,
        )

    @property
    def node_gpu_count(self) -> np.ndarray:
        """GPUs of each site node, by dense node id (int64 [n_nodes])."""
        return (self._gpu_table >= 0).sum(axis=1).astype(np.int64)

    # --- single names -----------------------------------------------------------------
    def _rewritten(self, name: str, kind: str) -> str:
        for rule in self.rewrite:
            name = rule.apply(name, kind)
        return name

    def node_id(self, host: str, kind: str = "node") -> int:
        """Node id of a hostname / BMC name / alias, -1 if unknown."""
        if not host:
            return -1
        name = self._rewritten(host, kind)
        key = normalise_host(name)
        alias = self.aliases.get(key)
        if alias is not None:
            key = normalise_host(alias)
        node = self._node.get(key)
        if node is None:
            node = self._node.get(name.strip().lower(), -1)
        return node

    def named_id(self, kind: str, host: str, name: str) -> int:
        """Id of a CDU / power element / rack from the controller host and equipment name."""
        table = self._named.get(kind, {})
        equipment = name.split("/pump", 1)[0]
        for candidate in (host, f"{host}/{equipment}", equipment, equipment.rsplit("/", 1)[-1]):
            if not candidate:
                continue
            c = self._rewritten(candidate, kind).lower()
            if c in table:
                return table[c]
            alias = self.aliases.get(normalise_host(c))
            if alias is not None and alias.lower() in table:
                return table[alias.lower()]
        return -1

    def gpu_ids(
        self,
        hosts: Sequence[str],
        index: np.ndarray,
        uuids: Sequence[str] | None = None,
        *,
        index_is_authoritative: bool = True,
    ) -> np.ndarray:
        """Dense GPU id per (host, index) pair or UUID; -1 if unknown.

        One dict lookup per distinct host; the (node, index) step is a numpy gather.
        With ``index_is_authoritative`` (DCGM: the ``gpu`` label is the index the site
        uses) the pair wins and its UUID is remembered; otherwise (BMCs number GPUs
        their own way: HGX SXM 1..8, slot order) a known UUID wins over the pair and
        nothing is learned.
        """
        node_of: dict[str, int] = {}
        nodes = np.fromiter(
            (node_of[h] if h in node_of else node_of.setdefault(h, self.node_id(h, "gpu")) for h in hosts),
            np.int64,
            len(hosts),
        )
        idx = np.asarray(index, dtype=np.int64)
        ok = (nodes >= 0) & (idx >= 0) & (idx < self._gpu_table.shape[1])
        gid = np.full(len(hosts), -1, np.int32)
        gid[ok] = self._gpu_table[nodes[ok], idx[ok]]
        if uuids is not None:
            for j, raw in enumerate(uuids):
                if not raw:
                    continue
                uuid = uuid_key(raw)
                known = self._uuid.get(uuid)
                if index_is_authoritative:
                    if gid[j] >= 0:
                        self._uuid[uuid] = int(gid[j])
                    elif known is not None:
                        gid[j] = known
                elif known is not None:
                    gid[j] = known
        return gid

    # --- batches ------------------------------------------------------------------------
    def entity_ids(self, batch: SampleBatch) -> np.ndarray:
        """Site id per row of ``batch.entities`` (-1 unresolved); updates the batch counts."""
        ents = batch.entities
        n = len(ents)
        out = np.full(n, -1, np.int32)
        if n == 0:
            return out
        kinds = ents.kind
        counts = batch.counts
        unknown: set[str] = set()
        host_cache: dict[tuple[str, int], int] = {}
        host_kinds = {KIND_CODE["node"], KIND_CODE["psu"]}
        node_of_row = np.full(n, -1, np.int64)
        for i in range(n):
            k = int(kinds[i])
            if k not in host_kinds:
                continue
            h = ents.host[i]
            key = (h, k)
            nid = host_cache.get(key)
            if nid is None:
                nid = host_cache[key] = self.node_id(h, ENTITY_KINDS[k])
            node_of_row[i] = nid
        # GPUs: (node, index) table first, UUID second
        gpu_rows = np.flatnonzero(kinds == KIND_CODE["gpu"])
        if gpu_rows.size:
            rows = gpu_rows.tolist()
            out[gpu_rows] = self.gpu_ids(
                [ents.host[r] for r in rows],
                ents.index[gpu_rows],
                [ents.uuid[r] for r in rows],
                index_is_authoritative=batch.source in INDEX_AUTHORITATIVE_SOURCES,
            )
        for code in (KIND_CODE["node"], KIND_CODE["psu"]):
            rows = kinds == code
            out[rows] = node_of_row[rows]
        for kind in ("cdu", "pump", "power_element", "rack"):
            for i in np.flatnonzero(kinds == KIND_CODE[kind]).tolist():
                out[i] = self.named_id(kind, ents.host[i], ents.name[i])
        # report
        unresolved = np.flatnonzero(out < 0)
        no_identity = 0
        for i in unresolved.tolist():
            h = ents.host[i]
            if not h and not ents.uuid[i]:
                no_identity += 1
            else:
                unknown.add(h or ents.uuid[i])
        counts.unmapped_entities += no_identity
        if unknown:
            counts.unknown_hosts += len(unknown)
            for h in sorted(unknown):
                if len(counts.unknown_host_names) >= _EXAMPLES:
                    break
                if h[:SHOWN_NAME_CHARS] not in counts.unknown_host_names:
                    counts.unknown_host_names.append(h[:SHOWN_NAME_CHARS])
            new = {h[:SHOWN_NAME_CHARS] for h in unknown} - self._reported_unknown
            if new and len(self._reported_unknown) < MAX_REPORTED_UNKNOWN:  # once per name, not once per read
                self._reported_unknown |= new
                shown = [h if len(h) < SHOWN_NAME_CHARS else h + "…" for h in sorted(new)[:3]]
                log.warning("%s: %d new unknown host(s)/equipment, e.g. %s", batch.source, len(new), shown)
        return out

    def map_batch(self, batch: SampleBatch) -> SampleBatch:
        """A copy of ``batch`` with ``entity_id`` per sample (-1 where unresolved)."""
        ids = self.entity_ids(batch)
        return replace(batch, entity_id=ids[batch.entity_ref] if len(batch) else np.zeros(0, np.int32))
