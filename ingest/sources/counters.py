"""Counter resets and power from energy counters, only across intervals without a reset.

DCGM's energy counter (mJ since driver load), Redfish ``EnergyJoules`` and PDU kWh
counters reset on driver reload, BMC reboot or a manual reset.  A reading lower than
the previous one is a reset: the interval that spans it carries no information and its
derived power is NaN (never a huge negative number).
"""

from __future__ import annotations

import numpy as np

from ingest.sources.samples import METRIC_CODE, SampleBatch


def reset_mask(value: np.ndarray) -> np.ndarray:
    """True at positions where a counter went down against the previous reading.

    NaN readings neither reset nor hide a reset: the comparison is against the last
    finite reading before them.
    """
    v = np.asarray(value, dtype=np.float64)
    out = np.zeros(v.size, bool)
    finite = np.flatnonzero(np.isfinite(v))
    if finite.size > 1:
        fv = v[finite]
        out[finite[1:]] = fv[1:] < fv[:-1]
    return out


def power_from_energy(timestamp_s: np.ndarray, energy_j: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean power over each interval of an energy series.

    Returns ``(interval_end_s, power_w, reset)``, one entry per interval between
    consecutive readings: ``power_w = Δenergy_j / Δt_s``, NaN where the interval spans a
    counter reset, a NaN reading or a non-positive Δt.
    """
    t = np.asarray(timestamp_s, dtype=np.float64)
    e = np.asarray(energy_j, dtype=np.float64)
    if t.size < 2:
        return t[1:], np.zeros(0), np.zeros(0, bool)
    de = np.diff(e)
    dt = np.diff(t)
    reset = de < 0
    with np.errstate(divide="ignore", invalid="ignore"):
        p = de / dt
    p[reset | ~np.isfinite(p) | (dt <= 0)] = np.nan
    return t[1:], p, reset


class EnergyTracker:
    """Derives GPU power from successive reads of ``gpu_energy_j`` and counts resets.

    Keyed by the raw entity identity (host, index, uuid, name), so it works before and
    without inventory mapping.  :meth:`update` returns ``{key: power_w}`` for entities
    seen in both reads (NaN across a reset) and adds the resets to the batch's counts.
    """

    def __init__(self) -> None:
        self._last: dict[tuple, tuple[float, float]] = {}

    def update(self, batch: SampleBatch) -> dict[tuple, float]:
        code = METRIC_CODE["gpu_energy_j"]
        idx = np.flatnonzero(batch.metric == code)
        ents = batch.entities
        out: dict[tuple, float] = {}
        resets = 0
        for r, e, t in zip(batch.entity_ref[idx].tolist(), batch.value[idx].tolist(), batch.timestamp_s[idx].tolist()):
            if e != e:  # NaN: keep the previous reading
                continue
            key = (ents.host[r], int(ents.index[r]), ents.uuid[r], ents.name[r])
            prev = self._last.get(key)
            self._last[key] = (e, t)
            if prev is None:
                continue
            de, dt = e - prev[0], t - prev[1]
            if de < 0:
                resets += 1
                out[key] = float("nan")
            elif dt > 0:
                out[key] = de / dt
        batch.counts.counter_resets += resets
        return out
