"""A recording carried over to an edited site (a what-if scenario with layout edits), entity by entity name.

A bundle's tables use the dense ids of the site it was recorded on.  A layout edit
(:mod:`twin.site.edits`) builds a new site whose ids differ, so every recorded entity is
found again by name: racks, CDUs, loops, power elements and sources by their names, nodes
by hostname, GPUs by hostname and index, fabric links by the names of the two switches
they join.  What the edited site no longer has is reported and skipped (its readings and
its failures are dropped); what is new has no recorded input, so the twin runs it on its
defaults (nominal utilisation, all pumps, the pump model's flow).  The recorded job is
placed on the edited site as the live twin would place it; nodes the recording shows
powered off (idle) that the new placement uses are powered on (:func:`power_on_job_nodes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ingest.replay.recording import Recording
from twin.site.tables import SiteTables

ID_LIST_COLUMNS = {"failed_power": "power", "failed_sources": "source", "failed_links": "link", "nodes_off": "node"}


@dataclass
class RemapReport:
    """What did not carry over: entities of the recording the edited site lacks, and its new racks."""

    racks_missing: list[str] = field(default_factory=list)
    racks_new: list[str] = field(default_factory=list)
    cdus_missing: list[str] = field(default_factory=list)
    gpus_missing_count: int = 0  # recorded detail GPUs whose rack is gone
    failures_dropped: list[str] = field(default_factory=list)  # failed elements, sources, links, nodes off

    def as_dict(self) -> dict:
        return {
            "racks_missing": self.racks_missing,
            "racks_new": self.racks_new,
            "cdus_missing": self.cdus_missing,
            "n_gpus_missing": self.gpus_missing_count,
            "failures_dropped": self.failures_dropped,
        }


def _names(state: SiteTables, kind: str) -> list[str]:
    if kind == "gpu":
        return [f"{state.node_name[n]}/{i}" for n, i in zip(state.gpu_node, state.gpu_index)]
    if kind == "link":
        return [f"{state.switch_name[a]}/{state.switch_name[b]}" for a, b in zip(state.link_a, state.link_b)]
    return {
        "rack": state.rack_name,
        "cdu": state.cdu_name,
        "loop": state.loop_name,
        "power": state.power_name,
        "source": state.source_name,
        "node": state.node_name,
    }[kind]


def id_map(base: SiteTables, edited: SiteTables, kind: str) -> np.ndarray:
    """For each ``kind`` id of ``base``, its id in ``edited`` (-1 where the edited site lacks it)."""
    index = {name: i for i, name in enumerate(_names(edited, kind))}
    return np.array([index.get(name, -1) for name in _names(base, kind)], dtype=np.int64)


def _columns(arrays: dict[str, np.ndarray], mapping: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Per-entity columns moved to the edited ids (NaN for entities without a recorded one)."""
    keep = mapping >= 0
    out = {}
    for key, values in arrays.items():
        moved = np.full((values.shape[0], n), np.nan)
        moved[:, mapping[keep]] = values[:, keep]
        out[key] = moved
    return out


def remap_recording(rec: Recording, base: SiteTables, edited: SiteTables) -> tuple[Recording, RemapReport]:
    """``rec`` (recorded on ``base``) on ``edited``'s ids, and what did not carry over."""
    report = RemapReport()
    racks, cdus, loops = (id_map(base, edited, k) for k in ("rack", "cdu", "loop"))
    report.racks_missing = [base.rack_name[i] for i in np.flatnonzero(racks < 0)]
    report.racks_new = [edited.rack_name[i] for i in np.setdiff1d(np.arange(edited.n_racks), racks[racks >= 0])]
    report.cdus_missing = [base.cdu_name[i] for i in np.flatnonzero(cdus < 0)]
    gpu_map = id_map(base, edited, "gpu")[rec.gpu_ids]
    keep = gpu_map >= 0
    report.gpus_missing_count = int(np.count_nonzero(~keep))
    order = np.argsort(gpu_map[keep], kind="stable")
    gpu = {k: v[:, keep][:, order] for k, v in rec.gpu.items()}
    site = rec.site.copy()
    for column, kind in ID_LIST_COLUMNS.items():
        mapping = id_map(base, edited, kind)
        names = _names(base, kind)
        moved = []
        for ids in site[column]:
            ids = np.asarray(ids if ids is not None else [], dtype=np.int64)
            lost = ids[mapping[ids] < 0]
            report.failures_dropped.extend(
                f"{kind} {names[i]}" for i in lost if f"{kind} {names[i]}" not in report.failures_dropped
            )
            moved.append(np.sort(mapping[ids][mapping[ids] >= 0]))
        site[column] = pd.Series(moved, index=site.index, dtype=object)
    loop = _columns({"t": rec.loop_supply_temp_c}, loops, len(edited.loop_name))["t"]
    out = Recording(
        rec.ts,
        rec.dt_s,
        _columns(rec.rack, racks, edited.n_racks),
        _columns(rec.cdu, cdus, edited.n_cdus),
        loop,
        gpu_map[keep][order],
        gpu,
        site,
    )
    return out, report


def power_on_job_nodes(rec: Recording, state: SiteTables, gpu_ids: np.ndarray) -> Recording:
    """``rec`` with the nodes of ``gpu_ids`` (a job placed on the edited site) left out of the nodes powered off."""
    job_nodes = np.unique(state.gpu_node[np.asarray(gpu_ids, dtype=np.int64)])
    site = rec.site.copy()
    site["nodes_off"] = pd.Series(
        [
            np.setdiff1d(np.asarray(ids if ids is not None else [], dtype=np.int64), job_nodes)
            for ids in site["nodes_off"]
        ],
        index=site.index,
        dtype=object,
    )
    return Recording(rec.ts, rec.dt_s, rec.rack, rec.cdu, rec.loop_supply_temp_c, rec.gpu_ids, rec.gpu, site)
