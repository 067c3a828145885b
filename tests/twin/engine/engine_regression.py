"""Summary figures of a few engine ticks under faults, for the before/after regression check.

``summarise(site)`` runs two short fault sequences on a reference site and reduces every
Snapshot and TickDetail array to a handful of figures (count of infinities, sum, min,
max and a position-weighted sum of the finite values, so that moved values show).
``engine_golden.json`` holds the figures the engine produced before its phases were
rewritten as typed results; ``test_engine_regression.py`` compares against it.
Regenerate (only for an intended change of behaviour) with
``python -m tests.twin.engine.engine_regression``.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from pathlib import Path

import numpy as np

GOLDEN_FILE = Path(__file__).with_name("engine_golden.json")
SITES = ("demo", "colossus")


def _figures(values) -> list[float]:
    a = np.asarray(values, dtype=np.float64).ravel()
    finite = np.isfinite(a)
    f = np.where(finite, a, 0.0)
    weights = np.linspace(1.0, 2.0, a.size) if a.size else a
    return [
        float(np.count_nonzero(np.isposinf(a))),
        float(np.count_nonzero(np.isnan(a))),
        float(f.sum()),
        float(f[finite].min()) if finite.any() else 0.0,
        float(f[finite].max()) if finite.any() else 0.0,
        float(np.dot(f, weights)),
    ]


def _summary_of(obj, prefix: str, out: dict) -> None:
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        key = f"{prefix}{field.name}"
        if dataclasses.is_dataclass(value):
            _summary_of(value, key + ".", out)
        elif isinstance(value, dict):
            for k, v in value.items():
                out[f"{key}.{k}"] = _figures(v)
        elif isinstance(value, (np.ndarray, float, int, bool, np.floating, np.integer, np.bool_)):
            out[key] = _figures(value)
        elif field.name == "jobs":
            for job in value:
                out[f"{key}.{job.name}.step_time_s"] = _figures(job.step_time_s)
                out[f"{key}.{job.name}.tokens_per_s"] = _figures(job.tokens_per_s)
                out[f"{key}.{job.name}.bottleneck_racks"] = _figures(job.bottleneck_racks)


def _sequences(state, placed_job):
    """Two fault sequences of (dt_s, TickInputs keyword arguments)."""
    from twin.engine.tick import PlacedJob  # noqa: F401  (type of placed_job)

    rng = np.random.default_rng(8)
    n, n_cdus, n_nodes = state.n_gpus, state.n_cdus, state.n_nodes
    util = np.clip(rng.normal(0.85, 0.1, n), 0.0, 1.0)
    util[::97] = 0.0
    util_gaps = util.copy()
    util_gaps[::13] = np.nan
    pumps = np.asarray(state.cdu_spec_array("pumps"), dtype=np.float64).copy()
    pumps[0] = 0.0
    pumps[min(1, n_cdus - 1)] = 1.0
    limit = np.where(np.arange(n) % 2 == 0, 600.0, 700.0)
    psus_failed = np.zeros(n_nodes)
    psus_failed[::7] = 2.0
    nodes_off = np.zeros(n_nodes, dtype=bool)
    nodes_off[3::11] = True
    r_factor = np.ones(n)
    r_factor[: n // 8] = 1.6
    flow = np.full(n_cdus, np.nan)
    flow[2] = 0.5 * float(state.cdu_spec_array("design_flow_lpm")[2])
    jobs = [placed_job] if placed_job is not None else []
    partial = dict(
        gpu_util_frac=util,
        failed_power=[6],
        failed_sources=[1],
        failed_links=list(range(0, 40, 3)),
        pumps_running_count=pumps,
        node_psus_failed=psus_failed,
        gpu_power_limit_w=limit,
        outdoor_dry_bulb_c=38.0,
        outdoor_wet_bulb_c=29.0,
        gpu_r_th_factor=r_factor,
        jobs=jobs,
    )
    seq_a = [
        (1.0, dict(gpu_util_frac=util)),
        (1.0, partial),
        (10.0, dict(partial, gpu_util_frac=util_gaps)),
        (30.0, dict(partial, coolant_flow_lpm=flow, nodes_off=nodes_off)),
        (5.0, dict(partial, gpu_power_demand_w=np.where(np.arange(n) % 5 == 0, np.nan, 650.0))),
    ]
    hot = np.full(len(state.loop_name), 45.0)
    dark = dict(
        failed_power=[2, 3],
        gpu_util_frac=1.0,
        loop_supply_temp_c=hot,
        plant_chillers_running=np.zeros(len(state.plant_name)),
        swing_jobs=None,
    )
    seq_b = [
        (1.0, dark),
        (20.0, dark),
        (60.0, dict(dark, supply_excursion_k=8.0)),
        (600.0, dict(gpu_util_frac=0.05, recover_down_gpus=True)),
        (1.0, dict(gpu_util_frac=0.9)),
    ]
    return {"faults": seq_a, "dark_and_hot": seq_b}


def summarise(site: str) -> dict[str, dict[str, list[float]]]:
    """Figures of every tick of both sequences on ``site``, keyed by ``<sequence>/<tick>``."""
    from twin.engine.tick import START_TS, TickInputs, TwinEngine
    from twin.scenario.projection import _placed_job
    from twin.site.load import load_site

    state = load_site(site)
    placed = _placed_job(state, None)
    out = {}
    for name, seq in _sequences(state, placed).items():
        engine = TwinEngine(state)
        ts = START_TS
        for i, (dt, kwargs) in enumerate(seq):
            ts = ts + timedelta(seconds=dt)
            snap = engine.tick(dt, TickInputs(ts=ts, **kwargs))
            figures: dict[str, list[float]] = {}
            _summary_of(snap, "snapshot.", figures)
            _summary_of(engine.detail, "detail.", figures)
            out[f"{name}/{i}"] = figures
    return out


if __name__ == "__main__":
    GOLDEN_FILE.write_text(json.dumps({site: summarise(site) for site in SITES}, indent=0, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN_FILE.name}")
