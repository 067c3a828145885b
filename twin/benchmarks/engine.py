"""Benchmarks of the twin engine, registered with :mod:`twin.bench`.

``twin_tick``: one full :meth:`TwinEngine.tick` on a reference site (default
``colossus``: 100,352 GPUs, 1,568 racks/CDUs, the power tree and the fabric) against a
plain-numpy floor over the same per-GPU arrays: the minimum elementwise work any tick
must do to produce its per-GPU outputs — demand from utilisation, steady temperature,
one exponential relaxation, HBM, a rack maximum and a node sum (12 passes over
100k-element float64 arrays).  ``tick_to_floor_ratio`` is the issue's ≤ 20× target.
"""

from __future__ import annotations

import numpy as np

from twin.bench import benchmark, best_of


def _numpy_floor(util: np.ndarray, temp: np.ndarray, supply: np.ndarray, n_racks: int, n_nodes: int) -> None:
    """The per-GPU work of a tick as bare numpy passes (the memory-bandwidth floor)."""
    idle, tdp, r_th, decay, k_hbm = 85.0, 700.0, 0.04, 0.97, 0.85
    demand = idle + util * (tdp - idle)
    steady = supply + demand * r_th
    new = steady + (temp - steady) * decay
    hbm = supply + (new - supply) * k_hbm
    new.reshape(n_racks, -1).max(axis=1)
    demand.reshape(n_nodes, -1).sum(axis=1)
    return hbm


@benchmark("twin_tick")
def twin_tick(site: str = "colossus", repeat: int = 20) -> dict:
    """Best-of-``repeat`` wall time of one engine tick and of the numpy floor [ms]."""
    from twin.engine.tick import TickInputs, TwinEngine
    from twin.site.load import load_site

    state = load_site(site)
    engine = TwinEngine(state)
    rng = np.random.default_rng(0)
    util = np.clip(rng.normal(0.9, 0.03, state.n_gpus), 0.0, 1.0)  # per-GPU telemetry-like input
    inputs = TickInputs(gpu_util_frac=util)
    tick_s = best_of(lambda: engine.tick(1.0, inputs), repeat=repeat)
    temp = engine.gpu_temp_c.copy()
    supply = np.full(state.n_gpus, 30.0)
    floor_s = best_of(lambda: _numpy_floor(util, temp, supply, state.n_racks, state.n_nodes), repeat=repeat * 5)
    return {
        "site": site,
        "gpus": state.n_gpus,
        "racks": state.n_racks,
        "power_elements": state.n_power,
        "links": state.n_links,
        "tick_ms": tick_s * 1e3,
        "numpy_floor_ms": floor_s * 1e3,
        "tick_to_floor_ratio": tick_s / floor_s,
        "target_tick_ms": 20.0,
        "target_ratio": 20.0,
    }
