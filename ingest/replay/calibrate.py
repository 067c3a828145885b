"""Calibration of a site's uncertain parameters on the first part of a recording, scored on the rest.

Fitted, in this order, on frames ``[0, split)`` (``split = fraction × frames``), each
trial a replay of those frames on the site with the parameters applied
(:func:`twin.site.calibration.apply_calibration`):

1. **CDU approach** [K] per CDU: the mean gap between the recorded and projected secondary
   supply temperature is added to the CDU's approach (secondary supply = facility supply +
   approach at rated duty, :func:`twin.physics.cooling.coolant_supply_temp_c`).
2. **Thermal resistance** per detail GPU, as a factor on the die-to-coolant resistance:
   the die rise over the coolant is linear in it, so two replays (factor 1 and 1.25) give
   the factor whose mean temperature matches the recorded mean, clipped to [0.3, 3].
3. **Thermal poles**: a two-pole fit of each detail GPU's recorded power and die temperature
   (:func:`twin.physics.diefit.fit_two_pole`) maps onto the two-node model
   (:func:`twin.physics.diefit.two_node_parameters`); the medians over the GPUs give the heat
   capacity factor, the junction's share of it and the convective share of the die resistance
   (the plate's caloric resistance at design flow taken out).  Where no GPU's trace separates
   two poles (no power step), one factor on the heat capacity from a coarse scan by the RMSE
   of the detail GPUs' temperatures, as before.
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

import warnings

import numpy as np

from ingest.replay.recording import Recording, id_array
from ingest.replay.replay import Replayer, recorded_job, score
from twin.physics import diefit, power
from twin.site.calibration import SiteCalibration, apply_calibration
from twin.site.tables import SiteTables

R_PROBE = 1.25
HEAT_CAP_FACTORS = (0.5, 0.75, 1.0, 1.5, 2.0)
HEAT_CAP_RANGE = (0.1, 10.0)  # what a site file's heat_capacity_factor may hold
SPLIT_RANGE = (0.01, 0.99)  # junction share of the heat capacity, convective share of the die resistance
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
        "junction_heat_frac": cal.junction_heat_frac,
        "r_th_conv_frac": cal.r_th_conv_frac,
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
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column without any reading: NaN
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
        poles = pole_fits(rec, split)
        if poles:
            apply_poles(state, rec, cal, poles, base["coolant_supply_temp_c"][1:], np.isfinite(recorded).any(axis=0))
        else:
            _fit_by_replays(state, rec, cal, train, site_toml, measured)
    cal.psu_efficiency_points_frac, _ = fit_psu(state, rec, train)
    return cal.rounded()


def _fit_by_replays(state, rec, cal: SiteCalibration, train: range, site_toml, measured) -> None:
    """Steps 2 and 3 without a pole fit: resistance factors from two probe replays, a heat capacity scan."""
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


def _plate_r_cal_c_per_w(state: SiteTables) -> np.ndarray:
    """Caloric resistance of each GPU's plate at its CDU's design flow [K/W] (as the engine computes it)."""
    from twin.engine.tick import TwinEngine

    cooling = TwinEngine(state, settle=False).cooling
    return (0.5 / (cooling.plate_design_kg_s * cooling.cdu_cp))[state.rack_cdu[state.gpu_rack]]


def pole_fits(rec: Recording, split: int) -> dict:
    """Two-pole fits of the detail GPUs' frames ``[0, split)`` mapped onto the two-node model, by column
    (GPUs whose trace separates no two poles are left out)."""
    t_s = np.array([(ts - rec.ts[0]).total_seconds() for ts in rec.ts[:split]], dtype=np.float64)
    out = {}
    for col in range(rec.gpu_ids.size):
        p, y = rec.gpu["gpu_power_w"][:split, col], rec.gpu["gpu_temp_c"][:split, col]
        ok = np.isfinite(p) & np.isfinite(y)
        try:
            out[col] = diefit.two_node_parameters(diefit.fit_two_pole(t_s[ok], p[ok], y[ok]))
        except diefit.DieFitError:
            continue
    return out


def apply_poles(
    state: SiteTables, rec: Recording, cal: SiteCalibration, poles: dict, supply_c, supply_recorded
) -> None:
    """Steps 2 and 3 from the pole fits: each fitted GPU's die resistance (its fitted total less the plate's
    caloric resistance, over the catalogue's), the medians of the heat capacity, its junction share and
    the convective share, and for CDUs whose supply is not recorded the fitted coolant temperature of
    their GPUs against the twin's ``supply_c`` [frame, cdu]."""
    r_cal = _plate_r_cal_c_per_w(state)
    names = ("heat_capacity_j_per_k", "r_th_die_c_per_w", "r_th_conv_frac")
    c_cat, r_die, conv = (state.gpu_spec_array(a) for a in names)
    factor, frac, conv_fit, supply_by_cdu = [], [], [], {}
    for col, params in poles.items():
        g = int(rec.gpu_ids[col])
        die = params.r_jp_c_per_w + params.r_pc_c_per_w - r_cal[g]  # the plate's caloric share taken out
        cal.gpu_r_th_factor[g] = float(np.clip(die / r_die[g], *R_FACTOR_RANGE)) if die > 0 else 1.0
        factor.append(params.heat_capacity_j_per_k / c_cat[g])
        frac.append(params.junction_heat_frac)
        conv_fit.append(1.0 - params.r_jp_c_per_w / die if die > params.r_jp_c_per_w else conv[g])
        supply_by_cdu.setdefault(int(state.rack_cdu[state.gpu_rack[g]]), []).append(params.supply_c)
    cal.heat_capacity_factor = float(np.clip(np.median(factor), *HEAT_CAP_RANGE))
    cal.junction_heat_frac = float(np.clip(np.median(frac), *SPLIT_RANGE))
    cal.r_th_conv_frac = float(np.clip(np.median(conv_fit), *SPLIT_RANGE))
    twin_supply = _mean_over_time(supply_c)
    for cdu, values in supply_by_cdu.items():
        if not supply_recorded[cdu] and np.isfinite(twin_supply[cdu]):
            cal.cdu_approach_delta_k[cdu] = float(np.median(values) - twin_supply[cdu])


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
