"""Fitting the die thermal model to a recorded trace of one GPU's power and die temperature.

Pure numpy; used by the replay calibration (:mod:`ingest.replay.calibrate`) and the
``die_model`` benchmark.  A recording (nvidia-smi or DCGM, every 0.1–1 s) gives the board
power ``P(t)`` and the die temperature ``T(t)`` (whole °C from nvidia-smi); the coolant
supply is usually not recorded and is fitted as a constant.

* **Two poles** (:func:`fit_two_pole`) — the two-node model of :mod:`twin.physics.thermal`
  from power to junction is ``H(s) = g₁/(1 + sτ₁) + g₂/(1 + sτ₂)`` (two real poles, one zero),
  so ``T = T_s + g₁ x₁ + g₂ x₂ + d₁ e^{−t/τ₁} + d₂ e^{−t/τ₂}`` with ``x_i`` the power through
  a first-order lag ``τ_i`` (exact for power held between samples) and the last two terms
  the start from an unknown state.  For fixed ``(τ₁, τ₂)`` the rest is linear: the fit
  scans log-spaced pole pairs by least squares (variable projection) and refines the best
  pair on a finer grid around it.
* **One pole** (:func:`fit_one_pole`) — the lumped node, the same way with one lag.
* **Physical parameters** (:func:`two_node_parameters`) — the poles and gains map one to one
  onto ``(C_j, C_p, R_jp, R_pc)``: with ``a₁ = τ₁ + τ₂``, ``a₂ = τ₁τ₂``, ``R = g₁ + g₂`` and
  ``b₁ = g₁τ₂ + g₂τ₁`` (the transfer function's coefficients), ``C_j = a₂/b₁``,
  ``R_jp = b₁/(a₁ − C_j R)``, ``R_pc = R − R_jp``, ``C_p = (a₁ − C_j R)/R_pc``.
* **Scores** (:func:`cv_rmse_frac`) — CV(RMSE) and NMBE as ASHRAE Guideline 14 defines them
  [ASHRAE-G14]: RMSE and mean error over the mean of the recorded values.

Fits use the first part of a trace and are scored on the rest (held out), as the replay's
``--calibrate`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

POLE_GRID_COUNT = 40  # [E] (numerical) log-spaced time constants per scan
POLE_RANGE_S = (0.05, 600.0)  # time constants a die trace can show between 10 Hz sampling and a long run
REFINE_ROUNDS = 3  # finer scans around the best pair


class DieFitError(ValueError):
    """A trace that cannot be fitted (too short, no power change, non-finite values)."""


@dataclass(frozen=True)
class PoleFit:
    """A fitted response ``T = T_s + Σ g_i x_i(τ_i) + Σ d_i e^{−t/τ_i}`` [°C, K/W, s]."""

    supply_c: float
    gains_c_per_w: tuple[float, ...]
    taus_s: tuple[float, ...]
    starts_k: tuple[float, ...]
    rmse_k: float  # on the fitted samples

    @property
    def r_total_c_per_w(self) -> float:
        return float(sum(self.gains_c_per_w))


def _check(t_s: np.ndarray, power_w: np.ndarray, temp_c: np.ndarray) -> tuple[np.ndarray, ...]:
    t, p, y = (np.asarray(v, dtype=np.float64) for v in (t_s, power_w, temp_c))
    if not (t.shape == p.shape == y.shape and t.ndim == 1):
        raise DieFitError(
            f"a trace needs times, power and temperature of one length (got {t.shape}, {p.shape}, {y.shape})"
        )
    if t.size < 12:
        raise DieFitError(f"a trace needs at least 12 samples to fit two poles (got {t.size})")
    if not (np.isfinite(t).all() and np.isfinite(p).all() and np.isfinite(y).all()):
        raise DieFitError("a trace holds non-finite values (drop the missing samples first)")
    if not (np.diff(t) > 0).all():
        raise DieFitError("a trace's times must increase")
    if np.ptp(p) <= 0.0:
        raise DieFitError("a trace without any change of power cannot separate the thermal poles")
    return t, p, y


def lag(t_s: np.ndarray, power_w: np.ndarray, tau_s: float) -> np.ndarray:
    """``x' = (P − x)/τ`` from ``x(0) = 0`` with ``P`` held between samples (exact) [W]."""
    dt = np.diff(t_s)
    decay = np.exp(-dt / tau_s)
    x = np.zeros(t_s.size)
    for k in range(1, t_s.size):
        x[k] = power_w[k - 1] + (x[k - 1] - power_w[k - 1]) * decay[k - 1]
    return x


def _basis(t_s: np.ndarray, lags: list[np.ndarray], taus: tuple[float, ...]) -> np.ndarray:
    rel = t_s - t_s[0]
    cols = [np.ones(t_s.size), *lags, *(np.exp(-rel / tau) for tau in taus)]
    return np.stack(cols, axis=1)


def _solve(a: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = y - a @ coef
    return coef, float(np.sqrt(np.mean(resid * resid)))


def _grid(lo: float, hi: float, n: int) -> np.ndarray:
    return np.geomspace(lo, hi, n)


def fit_one_pole(t_s: np.ndarray, power_w: np.ndarray, temp_c: np.ndarray) -> PoleFit:
    """The lumped node: ``T = T_s + g x(τ) + d e^{−t/τ}`` (see module docstring)."""
    t, p, y = _check(t_s, power_w, temp_c)
    lo, hi = max(POLE_RANGE_S[0], 0.5 * float(np.min(np.diff(t)))), POLE_RANGE_S[1]
    best: tuple[float, tuple[float, np.ndarray] | None] = (math.inf, None)
    for _ in range(REFINE_ROUNDS + 1):
        for tau in _grid(lo, hi, POLE_GRID_COUNT):
            coef, rmse = _solve(_basis(t, [lag(t, p, tau)], (tau,)), y)
            if rmse < best[0] and coef[1] > 0:
                best = (rmse, (tau, coef))
        if best[1] is None:
            break
        tau = best[1][0]
        lo, hi = tau / 1.5, tau * 1.5
    if best[1] is None:
        raise DieFitError("no positive thermal resistance fits the trace")
    tau, coef = best[1]
    return PoleFit(float(coef[0]), (float(coef[1]),), (float(tau),), (float(coef[2]),), best[0])


def fit_two_pole(t_s: np.ndarray, power_w: np.ndarray, temp_c: np.ndarray) -> PoleFit:
    """Two poles ``τ₁ < τ₂`` with positive gains (see module docstring)."""
    t, p, y = _check(t_s, power_w, temp_c)
    lo, hi = max(POLE_RANGE_S[0], 0.5 * float(np.min(np.diff(t)))), POLE_RANGE_S[1]
    fast_grid, slow_grid = _grid(lo, hi, POLE_GRID_COUNT), _grid(lo, hi, POLE_GRID_COUNT)
    best: tuple[float, tuple[float, float, np.ndarray] | None] = (math.inf, None)
    for _ in range(REFINE_ROUNDS + 1):
        lags = {tau: lag(t, p, tau) for tau in np.union1d(fast_grid, slow_grid)}
        for t1 in fast_grid:
            for t2 in slow_grid:
                if t2 <= t1 * 1.05:
                    continue
                coef, rmse = _solve(_basis(t, [lags[t1], lags[t2]], (t1, t2)), y)
                if rmse < best[0] and coef[1] > 0 and coef[2] > 0:
                    best = (rmse, (t1, t2, coef))
        if best[1] is None:
            break
        t1, t2, _ = best[1]
        fast_grid, slow_grid = _grid(t1 / 1.6, t1 * 1.6, 9), _grid(t2 / 1.6, t2 * 1.6, 9)
    if best[1] is None:
        raise DieFitError("no pair of poles with positive gains fits the trace")
    t1, t2, coef = best[1]
    return PoleFit(
        float(coef[0]),
        (float(coef[1]), float(coef[2])),
        (float(t1), float(t2)),
        (float(coef[3]), float(coef[4])),
        best[0],
    )


def predict(
    fit: PoleFit, t_s: np.ndarray, power_w: np.ndarray, temp_now_c: float | None = None, start: int = 0
) -> np.ndarray:
    """The fitted response over a whole trace; from sample ``start`` on, started from the state the fit
    had there when ``temp_now_c`` is None (a held-out prediction never reads the held-out temperatures)."""
    t, p = np.asarray(t_s, dtype=np.float64), np.asarray(power_w, dtype=np.float64)
    rel = t - t[0]
    out = np.full(t.size, fit.supply_c)
    for g, tau, d in zip(fit.gains_c_per_w, fit.taus_s, fit.starts_k):
        out += g * lag(t, p, tau) + d * np.exp(-rel / tau)
    return out


@dataclass(frozen=True)
class TwoNodeParameters:
    """The two-node model behind a two-pole fit [J/K, K/W, °C]."""

    c_junction_j_per_k: float
    c_plate_j_per_k: float
    r_jp_c_per_w: float
    r_pc_c_per_w: float
    supply_c: float

    @property
    def heat_capacity_j_per_k(self) -> float:
        return self.c_junction_j_per_k + self.c_plate_j_per_k

    @property
    def junction_heat_frac(self) -> float:
        return self.c_junction_j_per_k / self.heat_capacity_j_per_k


def two_node_parameters(fit: PoleFit) -> TwoNodeParameters:
    """``(C_j, C_p, R_jp, R_pc)`` of a two-pole fit (module docstring); DieFitError when they are not positive."""
    if len(fit.taus_s) != 2:
        raise DieFitError("the two-node parameters need a two-pole fit")
    (g1, g2), (t1, t2) = fit.gains_c_per_w, fit.taus_s
    a1, a2, r, b1 = t1 + t2, t1 * t2, g1 + g2, g1 * t2 + g2 * t1
    c_j = a2 / b1
    rest = a1 - c_j * r
    r_jp = b1 / rest if rest > 0 else -1.0
    r_pc = r - r_jp
    c_p = rest / r_pc if r_pc > 0 else -1.0
    if min(c_j, c_p, r_jp, r_pc) <= 0:
        raise DieFitError(f"the fitted poles ({t1:.3g} s, {t2:.3g} s) and gains map onto no positive two-node model")
    return TwoNodeParameters(c_j, c_p, r_jp, r_pc, fit.supply_c)


def cv_rmse_frac(recorded: np.ndarray, predicted: np.ndarray) -> tuple[float, float]:
    """``(CV(RMSE), NMBE)`` of ``predicted`` against ``recorded`` [ASHRAE-G14]: over the recorded mean."""
    y, f = np.asarray(recorded, dtype=np.float64), np.asarray(predicted, dtype=np.float64)
    mean = float(np.mean(y))
    err = f - y
    return float(np.sqrt(np.mean(err * err))) / mean, float(np.mean(err)) / mean


def fit_and_score(t_s: np.ndarray, power_w: np.ndarray, temp_c: np.ndarray, fraction: float = 0.4) -> dict[str, Any]:
    """Both fits on the first ``fraction`` of a trace, scored on the rest (held out) and on the fitted part."""
    t, p, y = _check(t_s, power_w, temp_c)
    if not 0.0 < fraction < 1.0:
        raise DieFitError(f"fraction must lie strictly between 0 and 1 (got {fraction!r})")
    split = int(round(t.size * fraction))
    if split < 12 or t.size - split < 2:
        raise DieFitError(f"a split at {fraction} leaves {split} samples to fit and {t.size - split} to score")
    out: dict[str, Any] = {"fit_samples_count": split, "heldout_samples_count": int(t.size - split)}
    for name, fitter in (("one_pole", fit_one_pole), ("two_pole", fit_two_pole)):
        fit = fitter(t[:split], p[:split], y[:split])
        pred = predict(fit, t, p)
        cv_fit, _ = cv_rmse_frac(y[:split], pred[:split])
        cv, nmbe = cv_rmse_frac(y[split:], pred[split:])
        out[name] = {"fit": fit, "fit_cv_rmse_frac": cv_fit, "heldout_cv_rmse_frac": cv, "heldout_nmbe_frac": nmbe}
    return out
