"""Benchmarks of the twin engine, registered with :mod:`twin.bench`.

``twin_tick``: one full :meth:`TwinEngine.tick` on a reference site (default
``colossus``: 100,352 GPUs, 1,568 racks/CDUs, the power tree and the fabric) against a
plain-numpy floor over the same per-GPU arrays: the minimum elementwise work any tick
must do to produce its per-GPU outputs — demand from utilisation, steady temperature,
one exponential relaxation, HBM, a rack maximum and a node sum (12 passes over
100k-element float64 arrays).  ``tick_to_floor_ratio`` is the issue's ≤ 20× target.

``twin_tick_hour``: the mean tick over a simulated hour of 1-s ticks (every tick counted,
not the best of a few), optionally against a peer checkout in the same run (#11: ≤ 6 ms).
``twin_memory_day``: heap and resident-set growth over a simulated day (flat = no leak).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from twin.bench import benchmark, best_of

if TYPE_CHECKING:
    import subprocess


def _numpy_floor(util: np.ndarray, temp: np.ndarray, supply: np.ndarray, n_racks: int, n_nodes: int) -> np.ndarray:
    """The per-GPU work of a tick as bare numpy passes (the memory-bandwidth floor)."""
    idle, tdp, r_th, decay, k_hbm = 85.0, 700.0, 0.04, 0.97, 0.85
    demand = idle + util * (tdp - idle)
    steady = supply + demand * r_th
    new = steady + (temp - steady) * decay
    hbm: np.ndarray = supply + (new - supply) * k_hbm
    new.reshape(n_racks, -1).max(axis=1)
    demand.reshape(n_nodes, -1).sum(axis=1)
    return hbm


@benchmark("twin_tick")
def twin_tick(site: str = "colossus", repeat: int = 20) -> dict[str, Any]:
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


# One engine in a child process: builds the site, then runs blocks of 1-s ticks on request and
# answers each with the block's mean and worst tick [ms].  The same code runs the peer checkout.
_HOUR_CHILD = r"""
import sys, time
import numpy as np
from twin.engine.tick import TickInputs, TwinEngine
from twin.site.load import load_site
state = load_site(sys.argv[1])
engine = TwinEngine(state)
util = np.clip(np.random.default_rng(0).normal(0.9, 0.03, state.n_gpus), 0.0, 1.0)
inputs = TickInputs(gpu_util_frac=util)
print("ready", flush=True)
for line in sys.stdin:
    times = []
    for _ in range(int(line)):
        start = time.perf_counter()
        engine.tick(1.0, inputs)
        times.append(time.perf_counter() - start)
    print(sum(times) * 1e3, max(times) * 1e3, flush=True)
"""


def _tick_child(source_dir: str, site: str) -> subprocess.Popen[str]:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": source_dir}
    child = subprocess.Popen(
        [sys.executable, "-c", _HOUR_CHILD, site],
        cwd=source_dir,
        env=env,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None  # stdout=PIPE
    if child.stdout.readline().strip() != "ready":
        raise RuntimeError(f"tick benchmark child in {source_dir} did not start")
    return child


@benchmark("twin_tick_hour")
def twin_tick_hour(
    site: str = "colossus", ticks: int = 3600, block: int = 300, peer_dir: str | None = None
) -> dict[str, Any]:
    """Mean wall time of a tick over a simulated hour (``ticks`` 1-s ticks in a row, every tick counted).

    With ``peer_dir`` (default: the ``CLUSTERTWIN_BENCH_PEER`` environment variable), a checkout
    of other code, e.g. ``main`` unpacked with ``git archive``, runs the same hour in a second
    process; the two alternate in blocks of ``block`` ticks so both see the same machine load,
    and ``tick_hour_to_peer_ratio`` compares them.
    """
    import os
    from pathlib import Path

    import twin

    peer_dir = peer_dir or os.environ.get("CLUSTERTWIN_BENCH_PEER") or None
    runs = {"tick_hour": str(Path(twin.__file__).resolve().parents[1])}
    if peer_dir:
        runs["peer_tick_hour"] = str(Path(peer_dir).resolve())
    children = {name: _tick_child(path, site) for name, path in runs.items()}
    total = {name: 0.0 for name in runs}
    worst = {name: 0.0 for name in runs}
    done = 0
    try:
        while done < ticks:
            n = min(block, ticks - done)
            for name, child in children.items():
                assert child.stdin is not None and child.stdout is not None  # both PIPE
                child.stdin.write(f"{n}\n")
                child.stdin.flush()
                block_ms, block_worst_ms = map(float, child.stdout.readline().split())
                total[name] += block_ms
                worst[name] = max(worst[name], block_worst_ms)
            done += n
    finally:
        for child in children.values():
            if child.stdin is not None:
                child.stdin.close()
            child.wait()
    out = {"site": site, "ticks_count": ticks}
    for name in runs:
        out[f"{name}_mean_ms"] = total[name] / ticks
        out[f"{name}_worst_ms"] = worst[name]
    if peer_dir:
        out["tick_hour_to_peer_ratio"] = total["tick_hour"] / total["peer_tick_hour"]
    out["target_tick_hour_mean_ms"] = 6.0
    return out


@benchmark("twin_memory_day")
def twin_memory_day(site: str = "colossus", dt_s: float = 60.0, hours: float = 24.0) -> dict[str, Any]:
    """Memory over a simulated day at ``dt_s`` steps: Python-heap growth (tracemalloc) and resident-set
    growth from the end of the first hour to the end of the day [MB]; flat means no state accumulates."""
    import resource
    import tracemalloc

    from twin.engine.tick import TickInputs, TwinEngine
    from twin.site.load import load_site

    def rss_mb() -> float:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() / 1e6

    state = load_site(site)
    engine = TwinEngine(state)
    util = np.clip(np.random.default_rng(0).normal(0.9, 0.03, state.n_gpus), 0.0, 1.0)
    inputs = TickInputs(gpu_util_frac=util)
    steps = int(round(hours * 3600.0 / dt_s))
    first_hour = int(round(3600.0 / dt_s))
    tracemalloc.start()
    try:
        for i in range(steps):
            engine.tick(dt_s, inputs)
            if i + 1 == first_hour:
                heap_hour, rss_hour = tracemalloc.get_traced_memory()[0], rss_mb()
        heap_day, heap_peak = tracemalloc.get_traced_memory()
        rss_day = rss_mb()
    finally:
        tracemalloc.stop()
    return {
        "site": site,
        "ticks_count": steps,
        "tick_s": dt_s,
        "heap_after_hour_mb": heap_hour / 1e6,
        "heap_after_day_mb": heap_day / 1e6,
        "heap_growth_mb": (heap_day - heap_hour) / 1e6,
        "heap_peak_mb": heap_peak / 1e6,
        "rss_after_hour_mb": rss_hour,
        "rss_after_day_mb": rss_day,
        "rss_growth_mb": rss_day - rss_hour,
    }
