"""Goodness of fit of a projection against measurements: CV(RMSE) and NMBE of ASHRAE Guideline 14.

With measured values :math:`y_i`, projected values :math:`\\hat y_i`, their number
:math:`n`, the mean measurement :math:`\\bar y` and :math:`p` model parameters
(ASHRAE Guideline 14-2014, §4.3.2.4 and Annex B [ASHRAE-G14])::

    CV(RMSE) = 100 · sqrt( Σ (y_i − ŷ_i)² / (n − p) ) / ȳ        [%]
    NMBE     = 100 · Σ (y_i − ŷ_i) / ((n − p) · ȳ)               [%]

Positive NMBE means the model under-predicts.  For calibrated simulation we take p = 1.
Guideline 14 accepts a model calibrated on hourly data at CV(RMSE) ≤ 30 % and
|NMBE| ≤ 10 %.  Pairs where either value is NaN are left out.
"""

from __future__ import annotations

import numpy as np

N_PARAMETERS = 1
HOURLY_CV_RMSE_MAX_PCT = 30.0
HOURLY_NMBE_MAX_PCT = 10.0


def fit_errors(measured: np.ndarray, projected: np.ndarray, p: int = N_PARAMETERS) -> dict[str, float]:
    """``cv_rmse`` and ``nmbe`` in percent, ``n`` pairs and the ``mean`` measurement; NaN when n ≤ p or ȳ = 0."""
    y = np.asarray(measured, dtype=np.float64).ravel()
    yhat = np.asarray(projected, dtype=np.float64).ravel()
    ok = np.isfinite(y) & np.isfinite(yhat)
    y, yhat = y[ok], yhat[ok]
    n = int(y.size)
    mean = float(y.mean()) if n else float("nan")
    if n <= p or mean == 0.0:
        return {"cv_rmse": float("nan"), "nmbe": float("nan"), "n": n, "mean": mean}
    resid = y - yhat
    return {
        "cv_rmse": float(100.0 * np.sqrt(np.sum(resid**2) / (n - p)) / mean),
        "nmbe": float(100.0 * np.sum(resid) / ((n - p) * mean)),
        "n": n,
        "mean": mean,
    }
