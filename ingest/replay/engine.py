"""The twin engine as a replay runs it: the phases whose results a replay neither scores nor shows are skipped.

A replay compares temperatures, power and throttling with the recording; it does not use
the engine's estimated link utilisation (links and the job are evaluated on the full site
from the recorded link failures, :mod:`ingest.replay.replay`) nor the per-rack projections
of time to throttle after a hypothetical cooling failure.  :class:`ReplayEngine` puts the
cheapest valid results of those two phases in their place and leaves every other phase —
and so every replayed signal — as :class:`twin.engine.tick.TwinEngine` computes it
(``tests/ingest/replay/test_parallel.py`` checks they agree).
"""

from __future__ import annotations

import numpy as np

from twin.engine.network import FabricPhase
from twin.engine.phases import FabricResult, ProjectionResult
from twin.engine.projections import ProjectionPhase
from twin.engine.tick import TwinEngine


class AllLinksUp(FabricPhase):
    """Every link up and idle: the same read-only answer every tick."""

    def __init__(self, const) -> None:
        n = const.state.n_links
        up, util = np.ones(n, dtype=bool), np.zeros(n)
        up.flags.writeable = util.flags.writeable = False
        self.answer = FabricResult(link_up_flag=up, link_util_frac=util)

    def run(self, *_args, **_kwargs) -> FabricResult:
        return self.answer


class NoProjections(ProjectionPhase):
    """No rack ever throttles after a failure; only the racks' hottest GPU is kept."""

    def __init__(self, const) -> None:
        self.const = const

    def run(self, inp, ps, cool, gt, itp, heat, gpu_temp_c: np.ndarray) -> ProjectionResult:
        never = np.full(self.const.state.n_racks, np.inf)
        return ProjectionResult(
            times_s={"pump_loss_throttle_s": never}, rack_max_gpu_temp_c=self.const.by_rack.max(gpu_temp_c)
        )


class ReplayEngine(TwinEngine):
    """:class:`TwinEngine` without link-utilisation estimates and failure projections (see module docstring)."""

    fabric_phase = AllLinksUp
    projection_phase = NoProjections
