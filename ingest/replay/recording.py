"""A recording as the replay reads it: the bundle's tables pivoted onto the site's dense ids.

:func:`load_recording` turns an incident bundle (:mod:`ingest.replay.bundle`) into a
:class:`Recording`: per frame and entity arrays of the recorded readings and inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from ingest.replay.bundle import Bundle
from twin.site.tables import SiteTables

__all__ = ["Recording", "id_array", "load_recording"]


@dataclass
class Recording:
    """A bundle's tables pivoted to arrays [n_frames, n_entities] on the site's dense ids."""

    ts: list[datetime]
    dt_s: np.ndarray
    rack: dict[str, np.ndarray]
    cdu: dict[str, np.ndarray]
    loop_supply_temp_c: np.ndarray
    gpu_ids: np.ndarray
    gpu: dict[str, np.ndarray]  # [n_frames, n_detail_gpus]
    site: pd.DataFrame

    def __post_init__(self) -> None:
        self.site_rows = self.site.to_dict("records")  # row access in the replay loop, without pandas indexing

    @property
    def n_frames(self) -> int:
        return len(self.ts)

    @property
    def duration_s(self) -> float:
        return float(self.dt_s[1:].sum())


def _pivot(frame: pd.DataFrame, id_col: str, n_ids: int, ts_index: pd.Index, columns) -> dict[str, np.ndarray]:
    t = ts_index.get_indexer(frame["ts"])
    ids = frame[id_col].to_numpy()
    out = {}
    for c in columns:
        arr = np.full((len(ts_index), n_ids), np.nan)
        arr[t, ids] = frame[c].to_numpy(dtype=np.float64)
        out[c] = arr
    return out


def load_recording(bundle: Bundle, state: SiteTables) -> Recording:
    """Pivot ``bundle`` onto ``state``'s ids (the bundle must have been validated against it)."""
    site = bundle.frame("site").sort_values("ts").reset_index(drop=True)
    index = pd.Index(site["ts"])
    ts = [t.to_pydatetime().astimezone(UTC) for t in site["ts"]]
    secs = np.array([t.timestamp() for t in ts])
    dt = np.diff(secs, prepend=secs[0])
    rack_df, cdu_df, loop_df, gpu_df = (bundle.frame(k) for k in ("rack", "cdu", "loop", "gpu"))
    rack = _pivot(rack_df, "rack_id", state.n_racks, index, rack_df.columns[2:])
    cdu = _pivot(cdu_df, "cdu_id", state.n_cdus, index, cdu_df.columns[2:])
    loop = _pivot(loop_df, "loop_id", len(state.loop_name), index, ["loop_supply_temp_c"])["loop_supply_temp_c"]
    gpu_ids = np.unique(gpu_df["gpu_id"].to_numpy()).astype(np.int64)
    local = pd.Index(gpu_ids)
    g = gpu_df.assign(local=local.get_indexer(gpu_df["gpu_id"]))
    gpu = _pivot(g, "local", gpu_ids.size, index, gpu_df.columns[2:])
    return Recording(ts, dt, rack, cdu, loop, gpu_ids, gpu, site)


def id_array(value) -> np.ndarray:
    """A recorded id list (None: empty) as an int64 array."""
    return np.asarray(value if value is not None else [], dtype=np.int64)
