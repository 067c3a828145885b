"""Calibration of a site's uncertain parameters on the first part of a recording, scored on the rest.

Fitted, in this order, on frames ``[0, split)`` (``split = fraction × frames``), each
trial a replay of those frames on the site with the parameters applied
(:func:`twin.site.calibration.apply_calibration`):

1. **CDU approach** [K] per CDU: the mean gap between the recorded and projected secondary
   supply temperature is added to the CDU's approach (secondary supply = facility supply +
   approach at rated duty, :func:`twin.physics.cooling.cdu_supply_temp_c`).
2. **Thermal resistance** per detail GPU, as a factor on the die-to-coolant resistance:
   the die rise over the coolant is linear in it, so two replays (factor 1 and 1.25) give
   the factor whose mean temperature matches the recorded mean, clipped to [0.3, 3].
3. **Time constant**: one factor on the GPU heat capacity (τ = C·R), the best of a
   coarse scan by the RMSE of the detail GPUs' temperatures.
4. **PSU efficiency curve**: the efficiencies at the curve's load points
   (:func:`twin.physics.power.fit_psu_efficiency_points`) from the recorded rack input
   power against the rack's DC load rebuilt from the recorded mean GPU power and
   utilisation (:func:`psu_samples`: GPU power plus the nodes' base power,
   :func:`twin.physics.power.node_dc_power_w`), on racks with every node on, no GPU down
   and no power element failed.  No replay is needed: the rack's DC load is recorded.

Held-out errors are computed on ``[split, end)`` of one replay of the whole recording on
the calibrated site, next to the same errors before calibration.  The fitted parameters
are rounded as a site file keeps them before that replay, so the site saved with them
(:func:`twin.site.calibration.with_block`) replays to the same held-out errors.

The PSU curve is identified only where rack input power and GPU power are measured
independently.  In recordings of the live hub both are the live twin's own estimates
(the fit returns the curve the live twin used); MLPerf imports solve GPU load from node
input power with the catalogue curve, so they cannot identify it either.
"""

from __future__ import annotations

import numpy as np

from ingest.replay.recording import Recording, id_array
from ingest.replay.replay import Replayer, recorded_job, score
from twin.physics import power
from twin.site.calibration import SiteCalibration, apply_calibration
from twin.site.tables import SiteTables

R_PROBE = 1.25
HEAT_CAP_FACTORS = (0.5, 0.75, 1.0, 1.5, 2.0)
R_FACTOR_RANGE = (0.3, 3.0)
PSU_MIN_SAMPLES = 20  # rack-frames below which the PSU curve is left at the site's


def summary(cal: SiteCalibration, gpu_ids: np.ndarray) -> dict:
    """Ranges of the fitted parameters (GPU factors over the fitted GPUs ``gpu_ids``)."""
    f = cal.gpu_r_th_factor[gpu_ids]
    d = cal.cdu_approach_delta_k
    return {
        "cdu_approach_delta_k": {"mean": float(np.mean(d)), "min": float(np.min(d)), "max": float(np.max(d))},
        "gpu_r_th_factor": {
            "n_gpus": int(gpu_ids.size),
            "mean": float(np.mean(f)) if f.size else 1.0,
            "min": float(np.min(f)) if f.size else 1.0,
            "max": float(np.max(f)) if f.size else 1.0,
        },
        "heat_capacity_factor": cal.heat_capacity_factor,
    }


def psu_summary(state: SiteTables, cal: SiteCalibration, samples: tuple[np.ndarray, np.ndarray]) -> dict:
    """The PSU curve before and after the fit, and the samples' count and load range."""
    load, _ = samples
    before = power.psu_efficiency_frac(power.PSU_LOAD_POINTS_FRAC, state.psu_efficiency_points_frac)
    fitted = cal.psu_efficiency_points_frac is not None
    return {
        "load_points_frac": power.PSU_LOAD_POINTS_FRAC.tolist(),
        "site_efficiency_frac": before.tolist(),
        "efficiency_points_frac": (cal.psu_efficiency_points_frac if fitted else before).tolist(),
        "fitted_flag": fitted,
        "n_samples": int(load.size),
        "load_min_frac": float(load.min()) if load.size else None,
        "load_max_frac": float(load.max()) if load.size else None,
    }


def psu_samples(state: SiteTables, rec: Recording, frames: range) -> tuple[np.ndarray, np.ndarray]:
    """Per rack and frame of ``frames``: PSU load [fraction of rating] and efficiency (DC over recorded AC input).

    The rack's DC load is its recorded mean GPU power times its GPUs plus each node's base
    power at the rack's mean utilisation; the load is shared equally by every PSU of the
    rack.  Racks with a node off or a GPU down, frames with a failed power element and
    missing readings are left out.
    """
    idx = np.asarray(frames, dtype=np.int64)
    ac_w = rec.rack["rack_power_kw"][idx] * 1e3
    gpu_w = rec.rack["rack_mean_gpu_power_w"][idx] * np.bincount(state.gpu_rack, minlength=state.n_racks)
    util = rec.rack["rack_mean_util_frac"][idx]
    nodes = np.bincount(state.node_rack, minlength=state.n_racks).astype(np.float64)
    base_full = np.bincount(state.node_rack, state.node_base_power_w, minlength=state.n_racks)
    base_idle = np.bincount(state.node_rack, state.node_idle_base_power_w, minlength=state.n_racks)
    rating_w = np.bincount(state.node_rack, state.node_psus * state.node_psu_rating_w, minlength=state.n_racks)
    dc_w = power.node_dc_power_w(gpu_w, util, base_full, base_idle)
    ok = np.isfinite(ac_w) & np.isfinite(dc_w) & (ac_w > 0) & (nodes > 0)
    ok &= np.nan_to_num(rec.rack["rack_gpus_down_total"][idx], nan=1.0) == 0
    for row, i in enumerate(idx):
        site = rec.site_rows[i]
        if id_array(site.get("failed_power")).size:
            ok[row] = False
        ok[row, state.node_rack[id_array(site.get("nodes_off"))]] = False
    with np.errstate(divide="ignore", invalid="ignore"):
        return (dc_w / rating_w)[ok], (dc_w / ac_w)[ok]


def fit_psu(state: SiteTables, rec: Recording, frames: range) -> tuple[np.ndarray | None, tuple]:
    """The site's PSU efficiencies fitted on ``frames`` (None when too few samples) and the samples."""
    samples = psu_samples(state, rec, frames)
    if samples[0].size < PSU_MIN_SAMPLES:
        return None, samples
    prior = power.psu_efficiency_frac(power.PSU_LOAD_POINTS_FRAC, state.psu_efficiency_points_frac)
    return np.clip(power.fit_psu_efficiency_points(*samples, prior_frac=prior), 0.5, 1.0), samples


def _mean_over_time(a: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.nanmean(a, axis=0)


def _project(state: SiteTables, rec: Recording, cal: SiteCalibration, frames: range, site_toml: str | None):
    return Replayer(apply_calibration(state, cal), rec, site_toml=site_toml).run(frames)


def fit(state: SiteTables, rec: Recording, split: int, site_toml: str | None = None) -> SiteCalibration:
    """Fit on frames ``[0, split)`` of ``rec``."""
    if split < 3:
        raise ValueError(f"calibration needs at least 3 frames to fit on, the fraction gives {split}")
    train = range(0, split)
    recorded = rec.cdu["coolant_supply_temp_c"][:split]
    cal = SiteCalibration.neutral(state)
    base = _project(state, rec, cal, train, site_toml)
    cal.cdu_approach_delta_k = np.nan_to_num(_mean_over_time(recorded[1:] - base["coolant_supply_temp_c"][1:]))
    measured = rec.gpu["gpu_temp_c"][1:split]
    measured = np.where(rec.gpu["gpu_power_w"][1:split] > 0, measured, np.nan)
    if rec.gpu_ids.size and np.isfinite(measured).any():
        one = _project(state, rec, cal, train, site_toml)["gpu_temp_c"][1:]
        probe = SiteCalibration(cal.cdu_approach_delta_k, np.ones(state.n_gpus))
        probe.gpu_r_th_factor[rec.gpu_ids] = R_PROBE
        two = _project(state, rec, probe, train, site_toml)["gpu_temp_c"][1:]
        slope = _mean_over_time(two - one) / (R_PROBE - 1.0)
        gap = _mean_over_time(measured - one)
        factor = np.where(np.abs(slope) > 1e-6, 1.0 + gap / np.where(slope == 0, 1.0, slope), 1.0)
        cal.gpu_r_th_factor[rec.gpu_ids] = np.clip(np.nan_to_num(factor, nan=1.0), *R_FACTOR_RANGE)
        best = (np.inf, 1.0)
        for k in HEAT_CAP_FACTORS:
            cal.heat_capacity_factor = k
            proj = _project(state, rec, cal, train, site_toml)["gpu_temp_c"][1:]
            err = np.nanmean((measured - proj) ** 2)
            if err < best[0]:
                best = (err, k)
        cal.heat_capacity_factor = best[1]
    cal.psu_efficiency_points_frac, _ = fit_psu(state, rec, train)
    return cal.rounded()


def calibrate_and_score(
    state: SiteTables, rec: Recording, fraction: float, *, site_toml: str | None = None, incident: str = ""
) -> dict:
    """Fit on the first ``fraction`` of the frames; errors on the rest before and after."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"--calibrate {fraction}: the fitted fraction must lie strictly between 0 and 1")
    split = int(round(rec.n_frames * fraction))
    if rec.n_frames - split < 2:
        raise ValueError(f"--calibrate {fraction}: leaves fewer than 2 frames held out of {rec.n_frames}")
    cal = fit(state, rec, split, site_toml)
    cal.fitted_on = f"{incident} frames 0-{split - 1} of {rec.n_frames}".strip()
    job = recorded_job(state, rec)
    before = Replayer(state, rec, site_toml=site_toml, job=job)
    after = Replayer(apply_calibration(state, cal), rec, site_toml=site_toml, job=job)
    recorded = {k: v[split:] for k, v in before.recorded().items()}
    proj_before = {k: v[split:] for k, v in before.run().items()}
    proj_after = {k: v[split:] for k, v in after.run().items()}
    return {
        "fraction": fraction,
        "fit_frames": split,
        "heldout_frames": rec.n_frames - split,
        "parameters": {
            **summary(cal, rec.gpu_ids),
            "psu": psu_summary(state, cal, psu_samples(state, rec, range(0, split))),
        },
        "heldout_before": score(recorded, proj_before, skip=0),
        "heldout_after": score(recorded, proj_after, skip=0),
        "calibration": cal,
    }


def calibrate_incident(bundle, rec: Recording, fraction: float, site_toml: str | None = None):
    """:func:`calibrate_and_score` of an incident on its site without any earlier calibration.

    Returns (report, fitted :class:`SiteCalibration`, the uncalibrated site it applies to).
    ``site_toml`` is the site the incident is replayed on (default: the bundle's).
    """
    from twin.site.calibration import without_block
    from twin.site.catalogue import load_catalogue
    from twin.site.load import build_site

    site_toml = site_toml or bundle.site_toml
    base = build_site(without_block(site_toml), f"{bundle.name}:site.toml", load_catalogue())
    report = calibrate_and_score(base, rec, fraction, site_toml=site_toml, incident=bundle.name)
    return report, report.pop("calibration"), base


def save_calibration(engine, site_toml: str, base: SiteTables, cal: SiteCalibration) -> int:
    """Store ``site_toml`` with ``cal`` as its ``[calibration]`` block as a new version of the site; its number."""
    from ingest.store.siteversions import record_site_version
    from twin.site.calibration import with_block

    return record_site_version(engine, base.name, with_block(site_toml, base, cal)).version
