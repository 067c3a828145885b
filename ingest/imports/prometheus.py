"""Prometheus history: a window of dcgm-exporter (and node) metrics from ``/api/v1/query_range``.

The answer goes through the same parser and name table as live Prometheus reads
(:mod:`ingest.sources.prometheus_api`); with a site, GPUs are resolved by the site's
:class:`ingest.sources.inventory.Inventory` (hostnames, UUIDs), and the series names the
site's own node names; unresolved GPUs keep their raw host label and are reported as
skipped when the series is mapped.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ingest.imports.series import GPU_METRICS, RecordingImportError, make_series
from ingest.sources import prometheus_api
from ingest.sources.inventory import Inventory
from ingest.sources.samples import ENTITY_KINDS, METRICS, SampleBatch
from twin.site.tables import SiteTables

MAX_POINTS = 11000  # Prometheus refuses more than 11,000 points per series


def batch_series(batch: SampleBatch, state: SiteTables | None) -> pd.DataFrame:
    """The GPU samples of ``batch`` as a series (site node names where the inventory resolves them)."""
    if state is not None:
        batch = Inventory.from_site(state).map_batch(batch)
    kinds = batch.entity_kind
    rows = []
    ents = batch.entities
    for i in np.flatnonzero(kinds == ENTITY_KINDS.index("gpu")):
        metric = METRICS[batch.metric[i]]
        if metric not in GPU_METRICS or not np.isfinite(batch.value[i]):
            continue
        ref = batch.entity_ref[i]
        gid = -1 if batch.entity_id is None else int(batch.entity_id[i])
        if gid >= 0:
            host, index = state.node_name[state.gpu_node[gid]], int(state.gpu_index[gid])
        else:
            host, index = ents.host[ref], int(ents.index[ref])
        rows.append((int(round(batch.timestamp_s[i] * 1000)), host, index, metric, float(batch.value[i])))
    return make_series(rows)


def fetch_history(
    base_url: str,
    start_s: float,
    end_s: float,
    step_s: float,
    state: SiteTables | None,
    query: str = prometheus_api.DEFAULT_QUERY,
    **http_kw,
) -> pd.DataFrame:
    """Query ``[start_s, end_s]`` every ``step_s`` and return the GPU series."""
    if not end_s > start_s or step_s <= 0:
        raise RecordingImportError("prometheus import: needs --start before --end and a positive --step")
    if (end_s - start_s) / step_s > MAX_POINTS:
        raise RecordingImportError(
            f"prometheus import: {(end_s - start_s) / step_s:.0f} points per series exceed "
            f"Prometheus' {MAX_POINTS}; use a larger --step"
        )
    resp, _ = prometheus_api.query_range(base_url, query, start_s, end_s, step_s, **http_kw)
    if not resp.ok:
        raise RecordingImportError(f"prometheus import: {resp.error_type}: {resp.error}")
    return batch_series(prometheus_api.to_samples(resp), state)
