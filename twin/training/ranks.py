"""Collective groups of a job's ranks (rank order ``[TP, CP, PP, DP]``, TP innermost).

Shared by the placed single job (:mod:`twin.training.sitejob`) and the fleet's per-job
physics (:mod:`twin.fleet.jobspeed`), which must not import the engine's snapshot.
"""

from __future__ import annotations

import numpy as np

from twin.training import steptime as training


def rank_groups(par: training.ParallelSpec) -> dict[str, np.ndarray]:
    """Collective group id of every rank for each dimension (rank order TP, CP, PP, DP)."""
    r = np.arange(par.n_gpus, dtype=np.int64)
    tp, cp, pp = par.tp, par.cp, par.pp
    tp_i = r % tp
    dp_i = r // (tp * cp * pp)
    return {
        "tp": r // tp,
        "cp": (r // (tp * cp)) * tp + tp_i,
        "pp": dp_i * (tp * cp) + r % (tp * cp),
        "dp": r % (tp * cp * pp),
    }
