"""Gang placement of one job on the fabric: all of its GPUs now, or none.

Three modes:

* ``flat`` — first fit in node order (node counts only, as RAPS places jobs [RAPS-2024]); for
  cross-checks;
* ``tree`` — Slurm's ``topology/tree`` ([Slurm-Topology]): the lowest switch level whose one
  domain can hold the job (leaf group, then pod, then the whole fabric), the best-fitting
  domain at that level (fewest free nodes that suffice), and inside it the sub-domains with
  the most free nodes first, so that the job spans as few leaves as it can;
* ``block`` — Slurm's ``topology/block``: the job is cut into segments (``segment_nodes``, by
  default the whole job up to one block) and every segment lies inside one NVLink block;
  blocks with the most free nodes first, a single segment in the best-fitting block.

A job smaller than a node (and not ``exclusive``) shares a node: the usable node with the
fewest free GPUs that still hold it (best fit, keeping whole nodes free for gangs); ``flat``
takes the first such node.  Larger jobs take whole nodes.  A job's topology requirement
(``leaf``, ``pod``, ``block``, ``segment``) is a hard limit in every mode.

Every function works on masks and ``np.bincount`` over the nodes; the cost of one placement
is a few passes over the node arrays (12,544 nodes on colossus).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from twin.fleet.cluster import ClusterState

MODES = ("flat", "tree", "block")
_NO_FIT = np.uint32(np.iinfo(np.uint32).max)
_MOST_SPARE = np.uint32(np.iinfo(np.int16).max)  # node_free is int16: a larger unsigned spare is a wrap
TREE_LEVELS = ("leaf", "pod", "site")


class Request(NamedTuple):
    """What one job asks of the placement (a named tuple: one is made for every job tried)."""

    n_gpus: int
    topology: str = "any"  # any | leaf | pod | block | segment
    segment_nodes: int = 0
    exclusive: bool = False
    gpu_type: int = -1  # index into FleetTopology.gpu_type_names, -1 any
    resv: int = -1  # reservation the job runs in, -1 none
    end_s: float = -float("inf")  # when the job would end at the latest (nodes reserved before are avoided)


def nodes_needed(req: Request, gpus_per_node: int) -> int:
    """Whole nodes the request takes (0 for a job that shares a node)."""
    if req.n_gpus < gpus_per_node and not req.exclusive and req.topology in ("any", "leaf", "pod"):
        return 0
    return -(-req.n_gpus // gpus_per_node)


def _type_mask(cl: ClusterState, req: Request) -> np.ndarray | None:
    return None if req.gpu_type < 0 else cl.topo.type_mask(req.gpu_type)


def _gpus_per_node(cl: ClusterState, req: Request) -> int:
    return cl.topo.type_gpus_per_node(req.gpu_type) if req.gpu_type >= 0 else cl.topo.max_node_gpus


def place(cl: ClusterState, req: Request, mode: str) -> np.ndarray | None:
    """GPU ids for ``req`` under ``mode`` on the usable nodes of ``cl``, or None when it does not fit now."""
    if mode not in MODES:
        raise ValueError(f"placement mode {mode!r} is not one of {', '.join(MODES)}")
    gpn = _gpus_per_node(cl, req)
    if gpn <= 0:
        return None
    k = nodes_needed(req, gpn)
    usable = cl.usable(req.resv, req.end_s)
    if k == 0 and usable is cl.usable_mask():
        if req.gpu_type < 0 and mode != "flat":
            return _best_fit_any(cl, req)
        return _place_shared(cl, req, cl.no_fit_mask(req.gpu_type), mode)
    types = _type_mask(cl, req)
    if types is not None:
        usable = usable & types
    elif k and cl.topo.gpu_type_names and len(cl.topo.gpu_type_names) > 1:
        usable = usable & (cl.topo.node_gpus == gpn)  # a gang of whole nodes stays on one node size
    if k == 0:
        return _place_shared(cl, req, np.where(usable, 0, _NO_FIT).astype(np.uint32), mode)
    free = usable & (cl.node_free == cl.topo.node_gpus)
    if np.count_nonzero(free) < k:
        return None
    if req.topology in ("block", "segment") or mode == "block":
        nodes = _place_block(cl, req, free, k)
    elif mode == "tree":
        nodes = _place_tree(cl, free, k, _max_level(req))
    else:
        nodes = _place_flat(cl, free, k, _max_level(req))
    return None if nodes is None else cl.topo.node_gpu_ids(nodes)


def _max_level(req: Request) -> str:
    return {"leaf": "leaf", "pod": "pod"}.get(req.topology, "site")


def _best_fit_any(cl: ClusterState, req: Request) -> np.ndarray | None:
    """:func:`_place_shared`'s best fit for a job of any GPU type on the usable nodes, read off the histogram
    of free GPUs: the fewest free GPUs that hold the job, then the first usable node with that many."""
    hist = cl.free_hist
    fits = hist[req.n_gpus :].nonzero()[0] if req.n_gpus < hist.size else hist[:0]  # 1-D: flatnonzero's answer
    if fits.size == 0:
        return None
    best = (cl.node_free == req.n_gpus + int(fits[0])) & cl.usable_mask()
    node = int(best.argmax())
    if not best[node]:  # the histogram disagrees with the nodes: never expected, answered the long way
        return _place_shared(cl, req, cl.no_fit_mask(-1), "tree")
    return _slots(cl, node, req.n_gpus)


def _slots(cl: ClusterState, node: int, n_gpus: int) -> np.ndarray:
    """The first ``n_gpus`` free GPU ids of ``node``."""
    first = int(cl.topo.node_first_gpu[node])
    slots = (cl.gpu_job[first : first + int(cl.topo.node_gpus[node])] < 0).nonzero()[0][:n_gpus]
    return first + slots.astype(np.int64)


def _place_shared(cl: ClusterState, req: Request, no_fit: np.ndarray, mode: str) -> np.ndarray | None:
    """The node for a job that shares one: best fit (``flat``: first fit) among the nodes where ``no_fit``
    (uint32: 0 usable, the largest uint32 not) is 0."""
    # spare GPUs a node would keep, as unsigned: a node too small wraps round to a huge spare and an
    # unusable one takes the largest, so argmin is the first best-fitting node
    spare = cl.node_free.astype(np.int32)
    spare -= req.n_gpus
    spare = spare.view(np.uint32)
    if mode == "flat":
        spare[spare <= _MOST_SPARE] = 0  # every node that fits ties: the first of them
    np.maximum(spare, no_fit, out=spare)
    node = int(np.argmin(spare))
    if spare[node] > _MOST_SPARE:
        return None
    return _slots(cl, node, req.n_gpus)


def _place_flat(cl: ClusterState, free: np.ndarray, k: int, max_level: str) -> np.ndarray | None:
    if max_level == "site":
        return np.flatnonzero(free)[:k]
    dom = cl.topo.domain(max_level)
    counts = np.bincount(dom[free])
    fits = np.flatnonzero(counts >= k)
    if fits.size == 0:
        return None
    return np.flatnonzero(free & (dom == fits[0]))[:k]


def _best_domain(dom: np.ndarray, free: np.ndarray, k: int, starts: np.ndarray | None = None) -> int:
    """The domain with the fewest free nodes that still hold ``k`` (-1 none); ``starts``: the first node of
    each domain when every domain is one run of nodes (:meth:`FleetTopology.domain_starts`)."""
    if starts is not None:
        counts = np.add.reduceat(free, starts, dtype=np.int64)  # free nodes per domain, as bincount counts them
    else:
        counts = np.bincount(dom[free])  # domains without a free node need no count: k >= 1
    fits = (counts >= k).nonzero()[0]
    return -1 if fits.size == 0 else int(fits[np.argmin(counts[fits])])


def _place_tree(cl: ClusterState, free: np.ndarray, k: int, max_level: str) -> np.ndarray | None:
    topo = cl.topo
    for level in TREE_LEVELS[: TREE_LEVELS.index(max_level) + 1]:
        dom = topo.domain(level)
        best = _best_domain(dom, free, k, topo.domain_starts(level))
        if best < 0:
            continue
        inside = free & (dom == best)
        if level == "leaf":
            return inside.nonzero()[0][:k]
        return _fill_largest_first(topo.node_pod, topo.node_leaf, inside, k)
    return None


def _fill_largest_first(outer: np.ndarray, inner: np.ndarray, free: np.ndarray, k: int) -> np.ndarray:
    """``k`` free nodes, taking outer domains and then inner domains with the most free nodes first."""
    nodes = np.flatnonzero(free)
    outer_free = np.bincount(outer[nodes])  # as long as the domains of ``nodes`` need
    inner_free = np.bincount(inner[nodes])
    order = np.lexsort((nodes, inner[nodes], -inner_free[inner[nodes]], outer[nodes], -outer_free[outer[nodes]]))
    return nodes[order[:k]]


def _place_block(cl: ClusterState, req: Request, free: np.ndarray, k: int) -> np.ndarray | None:
    topo = cl.topo
    block = topo.node_block
    block_nodes = np.bincount(block, minlength=topo.n_blocks)
    seg = req.segment_nodes if req.topology == "segment" else min(k, int(block_nodes.max()))
    if seg <= 0 or k % seg and req.topology == "segment":
        return None  # Slurm refuses a job whose node count is not a multiple of its segment
    n_seg = -(-k // seg)
    free_per_block = np.bincount(block[free], minlength=topo.n_blocks)
    hosts = free_per_block // seg
    if int(hosts.sum()) < n_seg:
        return None
    if n_seg == 1:
        fits = np.flatnonzero(hosts >= 1)
        chosen = fits[np.argmin(free_per_block[fits])]
        return np.flatnonzero(free & (block == chosen))[:k]
    order = np.lexsort((np.arange(topo.n_blocks), -hosts))  # most segments first, then block order (adjacent)
    take = []
    left = n_seg
    for b in order.tolist():
        if left == 0 or hosts[b] == 0:
            break
        m = min(int(hosts[b]), left)
        take.append(np.flatnonzero(free & (block == b))[: m * seg])
        left -= m
    nodes = np.concatenate(take)[:k]
    return nodes if nodes.size == k else None


def domains_spanned(cl: ClusterState, gpu_ids: np.ndarray, level: str) -> int:
    """Number of distinct ``level`` domains a placement touches (for reports and tests)."""
    nodes = np.unique(cl.topo.site.gpu_node[gpu_ids])
    return int(np.unique(cl.topo.domain(level)[nodes]).size)
