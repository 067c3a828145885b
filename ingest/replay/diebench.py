"""The die model against recorded traces: ``clustertwin bench --only die_model``.

Every nvidia-smi CSV log under ``data/die-traces/`` (``--query-gpu=timestamp,index,
temperature.gpu,power.draw``, each with its source and licence in that folder's README) is
read per GPU; each GPU's first ``fraction`` of samples is fitted on and the rest held out.
Four models predict the held-out die temperature from the recorded power:

* ``two_pole`` / ``one_pole`` — the fits of :mod:`twin.physics.diefit` (the two-node model's
  two poles; one lumped node), their start state and coolant temperature fitted too;
* ``catalogue_two_node`` / ``catalogue_lumped`` — the engine's two-node model and the lumped
  node it replaced, with the catalogue's H100 figures and only the coolant temperature fitted
  (the mean offset on the fitted samples).

Scores are CV(RMSE) and NMBE of the held-out samples [ASHRAE-G14] (median over a trace's
GPUs).  A synthetic trace runs beside the recorded ones, labelled as such: a known two-node
plant stepped 400 → 690 W and left to cool at idle, sampled every 0.3 s and read to whole
°C as nvidia-smi prints it; it checks that the fit recovers what made the trace.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from twin.bench import benchmark
from twin.physics import diefit, thermal
from twin.site.catalogue import DATA_DIR

TRACES_DIR = DATA_DIR / "die-traces"
GPU_TYPE = "H100-SXM5-80GB"
# the synthetic plant [J/K, K/W, °C]: a lighter, better-conducting package than the catalogue's
SYNTHETIC = {"c_j": 30.0, "c_p": 520.0, "r_jp": 0.015, "r_pc": 0.022, "supply": 28.0}


def synthetic_trace(dt_s: float = 0.3, seed: int = 1, plant: dict | None = None) -> tuple[np.ndarray, ...]:
    """``(t_s, power_w, temp_c)``: 60 s at 400 W, 190 s at 690 W, 290 s at idle (75 W), power noise 6 W,
    temperature rounded to whole °C."""
    k = {**SYNTHETIC, **(plant or {})}
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, 540.0, dt_s)
    p = np.maximum(np.where(t < 60, 400.0, np.where(t < 250, 690.0, 75.0)) + rng.normal(0.0, 6.0, t.size), 60.0)
    co = thermal.two_node_coefficients(k["c_j"], k["c_p"], k["r_jp"], k["r_pc"], k["supply"], dt_s)
    tj, tp = thermal.two_node_steady_c(p[0], k["supply"], k["r_jp"], k["r_pc"])
    out = np.empty(t.size)
    for i in range(t.size):
        out[i] = tj
        tj, tp = co[0] * tj + co[1] * tp + co[4] * p[i] + co[6], co[2] * tj + co[3] * tp + co[5] * p[i] + co[7]
    return t, p, np.round(out)


def read_traces(path: Path) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """``(label, t_s, power_w, temp_c)`` per GPU of one nvidia-smi CSV log (samples without both readings dropped)."""
    from ingest.imports.nvidia_smi import parse_csv

    series = parse_csv(path.read_text(encoding="utf-8"), path.stem)
    out = []
    for gpu, rows in series.groupby("gpu"):
        wide = rows.pivot_table(index="ts", columns="metric", values="value", aggfunc="mean").sort_index()
        if not {"gpu_power_w", "gpu_temp_c"} <= set(wide.columns):
            continue
        wide = wide[["gpu_power_w", "gpu_temp_c"]].dropna()
        t = (wide.index - wide.index[0]).total_seconds().to_numpy(dtype=np.float64)
        out.append((f"{path.stem}/{gpu}", t, wide["gpu_power_w"].to_numpy(), wide["gpu_temp_c"].to_numpy()))
    return out


def _catalogue() -> dict:
    """The catalogue's H100 figures and the plate's caloric resistance at the demo site's design flow."""
    from twin.engine.tick import TwinEngine
    from twin.site.load import load_site

    state = load_site("demo")
    spec = next(g for g in state.gpu_specs if g.name == GPU_TYPE)
    cooling = TwinEngine(state, settle=False).cooling
    r_cal = float(np.median(0.5 / (cooling.plate_design_kg_s * cooling.cdu_cp)))
    r_jp = spec.r_th_die_c_per_w * (1.0 - spec.r_th_conv_frac)
    return {
        "c_j": spec.heat_capacity_j_per_k * spec.junction_heat_frac,
        "c_p": spec.heat_capacity_j_per_k * (1.0 - spec.junction_heat_frac),
        "r_jp": r_jp,
        "r_pc": spec.r_th_die_c_per_w - r_jp + r_cal,
        "c": spec.heat_capacity_j_per_k,
    }


def _catalogue_models(cat: dict, t, p, y, split: int) -> dict[str, np.ndarray]:
    """The engine's two-node model and the old lumped node on ``p``, the coolant fitted on ``[0, split)``."""
    r = cat["r_jp"] + cat["r_pc"]
    out = {}
    for name in ("catalogue_two_node", "catalogue_lumped"):
        rel = np.empty(t.size)  # the response above a 0 °C coolant, from the first sample's steady state
        tj, tp = p[0] * r, p[0] * cat["r_pc"]
        for i in range(t.size):
            rel[i] = tj
            if i + 1 == t.size:
                break
            dt = t[i + 1] - t[i]
            if name == "catalogue_two_node":
                co = thermal.two_node_coefficients(cat["c_j"], cat["c_p"], cat["r_jp"], cat["r_pc"], 0.0, dt)
                tj, tp = co[0] * tj + co[1] * tp + co[4] * p[i], co[2] * tj + co[3] * tp + co[5] * p[i]
            else:
                tj = p[i] * r + (tj - p[i] * r) * np.exp(-dt / (cat["c"] * r))
        out[name] = rel + float(np.mean(y[:split] - rel[:split]))
    return out


def score_trace(t, p, y, fraction: float, cat: dict) -> dict:
    """Held-out (and fitted) CV(RMSE) and NMBE of the four models on one GPU's trace, and the fitted poles."""
    res = diefit.fit_and_score(t, p, y, fraction)
    split = res["fit_samples_count"]
    out = {"fit_samples_count": split, "heldout_samples_count": res["heldout_samples_count"]}
    for name in ("one_pole", "two_pole"):
        out[f"{name}_heldout_cv_rmse_frac"] = res[name]["heldout_cv_rmse_frac"]
        out[f"{name}_heldout_nmbe_frac"] = res[name]["heldout_nmbe_frac"]
        out[f"{name}_fit_cv_rmse_frac"] = res[name]["fit_cv_rmse_frac"]
    for name, pred in _catalogue_models(cat, t, p, y, split).items():
        out[f"{name}_heldout_cv_rmse_frac"], out[f"{name}_heldout_nmbe_frac"] = diefit.cv_rmse_frac(
            y[split:], pred[split:]
        )
    fit = res["two_pole"]["fit"]
    out["fast_tau_s"], out["slow_tau_s"] = fit.taus_s
    try:
        params = diefit.two_node_parameters(fit)
        out["junction_heat_j_per_k"], out["plate_heat_j_per_k"] = params.c_junction_j_per_k, params.c_plate_j_per_k
        out["r_jp_c_per_w"], out["r_pc_c_per_w"] = params.r_jp_c_per_w, params.r_pc_c_per_w
    except diefit.DieFitError:
        pass
    return out


def _median(rows: list[dict]) -> dict:
    keys = sorted(set().union(*rows))
    return {k: float(np.median([r[k] for r in rows if k in r])) for k in keys}


@benchmark("die_model")
def die_model(fraction: float = 0.4) -> dict:
    """The die model on every recorded trace of ``data/die-traces`` and on the synthetic one (module docstring)."""
    cat = _catalogue()
    out: dict = {"fraction_fitted_frac": fraction}
    files = sorted(TRACES_DIR.glob("*.csv")) if TRACES_DIR.is_dir() else []
    out["recorded_traces_count"] = len(files)
    for path in files:
        rows = [score_trace(t, p, y, fraction, cat) for _, t, p, y in read_traces(path)]
        out[f"{path.stem}_gpus_count"] = len(rows)
        if rows:
            out.update({f"{path.stem}_{k}": v for k, v in _median(rows).items()})
    t, p, y = synthetic_trace()
    out.update({f"synthetic_{k}": v for k, v in score_trace(t, p, y, fraction, cat).items()})
    out.update({f"synthetic_true_{k}": v for k, v in SYNTHETIC.items()})
    return out
