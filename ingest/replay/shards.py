"""A site cut into hall shards that tick independently, so a replay can run them in parallel processes.

During a replay the halls of a site do not interact: every input that couples them comes
from the recording (facility supply temperature per loop, failed power elements and
sources), and the site balance the engine computes from all halls (source dispatch,
battery, PUE) is not replayed against anything.  A shard is the site file with only some
of its ``[[halls]]`` (everything else — power chain, sources, plant, loops — kept whole,
so power-element and loop ids are the full site's) and the fabric endpoints left out (its
fabric is generated for its own racks; the replay evaluates jobs and links on the full
site).  The halls' racks, nodes, GPUs and CDUs are contiguous id ranges of the full site,
so a shard maps to it by slices; :func:`hall_shards` checks that mapping and returns None
when a site does not cut cleanly (then the replay runs in one process).  A calibrated site
(:mod:`twin.site.calibration`) is cut without its calibration block, and each shard then
takes the full site's GPU and CDU catalogue entries and PSU curve (:func:`with_specs_of`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from twin.site.calibration import without_block
from twin.site.catalogue import load_catalogue
from twin.site.errors import SiteError
from twin.site.load import build_site
from twin.site.tables import SiteTables

HALL_HEADER = re.compile(r"(?m)^(?=\[\[halls\]\])")
TABLE_HEADER = re.compile(r"(?m)^\[(?!\[halls\]\])")  # any top-level table other than a hall
ENDPOINTS = re.compile(r"(?ms)^endpoints[ \t]*=[ \t]*\[.*?^\][ \t]*$")


@dataclass(frozen=True)
class Shard:
    """Some halls of a site as their own :class:`SiteTables`, with their id ranges in the full site."""

    tables: SiteTables
    gpus: slice
    nodes: slice
    racks: slice
    cdus: slice

    @classmethod
    def whole(cls, state: SiteTables) -> Shard:
        """The whole site as one shard."""
        return cls(
            state, slice(0, state.n_gpus), slice(0, state.n_nodes), slice(0, state.n_racks), slice(0, state.n_cdus)
        )


def _span(ids: np.ndarray, first: int, last: int) -> slice:
    """The contiguous id range of the entities whose parent lies in ``[first, last)``."""
    hits = np.flatnonzero((ids >= first) & (ids < last))
    return slice(int(hits[0]), int(hits[-1]) + 1) if hits.size else slice(0, 0)


def _hall_groups(state: SiteTables, n: int) -> list[tuple[int, int]]:
    """``n`` runs of consecutive halls with about equal GPU counts, as (first, end) hall ids."""
    per_hall = np.bincount(state.rack_hall[state.gpu_rack], minlength=len(state.hall_name))
    bounds = np.searchsorted(np.cumsum(per_hall), np.arange(1, n) * per_hall.sum() / n, side="left") + 1
    edges = [0, *sorted(set(int(b) for b in bounds if 0 < b < len(per_hall))), len(per_hall)]
    return list(zip(edges[:-1], edges[1:]))


def hall_shards(state: SiteTables, site_toml: str, n: int) -> list[Shard] | None:
    """``state`` cut into ``n`` shards of consecutive halls, or None when it cannot be (see module docstring)."""
    parts = HALL_HEADER.split(without_block(site_toml))
    head, halls = parts[0], parts[1:]
    if n < 2 or len(halls) < 2 or len(halls) != len(state.hall_name) or any(TABLE_HEADER.search(h) for h in halls):
        return None
    if np.any(np.diff(state.rack_hall) < 0) or np.any(np.diff(state.rack_cdu) < 0):
        return None
    head = ENDPOINTS.sub("endpoints = []", head)
    catalogue = load_catalogue()
    shards = []
    for first, end in _hall_groups(state, n):
        try:
            tables = build_site(head + "".join(halls[first:end]), f"{state.name} halls {first + 1}-{end}", catalogue)
        except SiteError:
            return None
        racks = _span(state.rack_hall, first, end)
        cdus = state.rack_cdu[racks]
        shard = Shard(
            tables,
            _span(state.gpu_rack, racks.start, racks.stop),
            _span(state.node_rack, racks.start, racks.stop),
            racks,
            slice(int(cdus.min()), int(cdus.max()) + 1) if cdus.size else slice(0, 0),
        )
        if not _matches(state, shard):
            return None
        shards.append(shard)
    return shards if len(shards) >= 2 else None


def _matches(state: SiteTables, shard: Shard) -> bool:
    """The shard's entities are the full site's in the same order, with the same power chain.

    Names are not compared: rack and host names number the halls by their position in the file.
    """
    t = shard.tables
    return (
        np.array_equal(t.rack_x_m, state.rack_x_m[shard.racks])
        and np.array_equal(t.rack_y_m, state.rack_y_m[shard.racks])
        and t.rack_type == state.rack_type[shard.racks]
        and t.n_cdus == shard.cdus.stop - shard.cdus.start
        and t.n_gpus == shard.gpus.stop - shard.gpus.start
        and t.n_nodes == shard.nodes.stop - shard.nodes.start
        and np.array_equal(t.rack_cdu + shard.cdus.start, state.rack_cdu[shard.racks])
        and np.array_equal(t.rack_feed_a, state.rack_feed_a[shard.racks])
        and np.array_equal(t.rack_feed_b, state.rack_feed_b[shard.racks])
        and np.array_equal(t.cdu_loop, state.cdu_loop[shard.cdus])
        and t.power_name == state.power_name
        and t.source_name == state.source_name
        and t.loop_name == state.loop_name
    )


def with_specs_of(state: SiteTables, shard: Shard) -> Shard:
    """``shard`` with ``state``'s GPU and CDU catalogue entries (its calibration) on the shard's entities."""
    tables = dataclasses.replace(
        shard.tables,
        gpu_specs=state.gpu_specs,
        gpu_spec=state.gpu_spec[shard.gpus],
        cdu_specs=state.cdu_specs,
        cdu_spec=state.cdu_spec[shard.cdus],
        psu_efficiency_points_frac=state.psu_efficiency_points_frac,
    )
    return dataclasses.replace(shard, tables=tables)
