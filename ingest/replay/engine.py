"""The twin engine as a replay runs it: the phases whose results a replay neither scores nor shows are skipped.

A replay compares temperatures, power and throttling with the recording; it does not use
the engine's estimated link utilisation (links and the job are evaluated on the full site
from the recorded link failures, :mod:`ingest.replay.replay`) nor the per-rack projections
of time to throttle after a hypothetical cooling failure.  :class:`ReplayEngine` replaces
those two phases with their cheapest valid results and leaves every other phase — and so
every replayed signal — as :class:`twin.engine.tick.TwinEngine` computes it
(``tests/ingest/replay/test_parallel.py`` checks they agree).
"""

from __future__ import annotations

import numpy as np

from twin.engine.phases import FabricResult, ProjectionResult
from twin.engine.tick import TwinEngine


class ReplayEngine(TwinEngine):
    """:class:`TwinEngine` without link-utilisation estimates and failure projections (see module docstring)."""

    _replay_fabric: FabricResult | None = None

    def _fabric(self, *_args, **_kwargs) -> FabricResult:
        if self._replay_fabric is None:  # the same read-only answer every tick
            n = self.state.n_links
            up, util = np.ones(n, dtype=bool), np.zeros(n)
            up.flags.writeable = util.flags.writeable = False
            self._replay_fabric = FabricResult(link_up_flag=up, link_util_frac=util)
        return self._replay_fabric

    def _projections(self, *_args, **_kwargs) -> ProjectionResult:
        never = np.full(self.state.n_racks, np.inf)
        return ProjectionResult(
            times_s={"pump_loss_throttle_s": never}, rack_max_gpu_temp_c=self.by_rack.max(self.gpu_temp_c)
        )
