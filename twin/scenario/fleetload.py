"""The fleet's work on a site, for a what-if: the utilisation of every GPU at one instant.

A what-if's baseline is the site as it runs: the live fleet's occupancy (per GPU: its job's
utilisation, 0 where free) from the moment the what-if was asked.  An edited site keeps each
rack's GPUs as they were when the rack keeps its name and GPU count; a rack that is new or
converted runs the fleet's mean load (the scheduler fills new capacity as it fills the rest).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from twin.site.tables import SiteTables


@dataclass(frozen=True, eq=False)
class FleetLoad:
    """Utilisation per GPU of ``site`` (0 free), taken at ``taken_at``; compared by identity."""

    site: SiteTables
    gpu_util_frac: np.ndarray  # [site.n_gpus]
    taken_at: datetime | None = None
    _on: dict[int, tuple[SiteTables, np.ndarray]] = field(default_factory=dict, repr=False)  # id of a state → array

    @property
    def mean_util_frac(self) -> float:
        """The fleet's load spread over every GPU of the site (allocated share × utilisation)."""
        return float(self.gpu_util_frac.mean()) if self.gpu_util_frac.size else 0.0

    @property
    def allocated_frac(self) -> float:
        return float((self.gpu_util_frac > 0).mean()) if self.gpu_util_frac.size else 0.0

    def on(self, state: SiteTables) -> np.ndarray:
        """Utilisation per GPU of ``state`` (the site itself, or an edited copy of it)."""
        if state is self.site:
            return self.gpu_util_frac
        hit = self._on.get(id(state))
        if hit is not None and hit[0] is state:
            kept: np.ndarray = hit[1]
            return kept
        out = np.full(state.n_gpus, self.mean_util_frac)
        base_rack = {name: r for r, name in enumerate(self.site.rack_name)}
        base_gpus = np.bincount(self.site.gpu_rack, minlength=self.site.n_racks)
        base_first = np.concatenate([[0], np.cumsum(base_gpus)[:-1]])
        order = np.argsort(self.site.gpu_rack, kind="stable")  # the base's GPUs rack by rack
        gpus = np.bincount(state.gpu_rack, minlength=state.n_racks)
        first = np.concatenate([[0], np.cumsum(gpus)[:-1]])
        mine = np.argsort(state.gpu_rack, kind="stable")
        for r, name in enumerate(state.rack_name):
            b = base_rack.get(name)
            if b is None or base_gpus[b] != gpus[r] or gpus[r] == 0:
                continue
            out[mine[first[r] : first[r] + gpus[r]]] = self.gpu_util_frac[
                order[base_first[b] : base_first[b] + gpus[r]]
            ]
        self._on[id(state)] = (state, out)
        return out
