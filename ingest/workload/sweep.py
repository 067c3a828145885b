"""Parameter sweeps of the fleet: one simulation per point of a grid, on Dask or on local processes.

A sweep is the cross product of policy settings (``backfill=none,easy``, ``power=off,per_job``,
``power_margin_frac=0.01,0.2`` …, any field of :class:`twin.fleet.policy.Policy` that
``workload simulate --compare`` accepts) over one site and one generated workload.  Every
point is an independent task that loads the site, generates the workload from its seed and
runs :func:`ingest.workload.run.simulate`: a task carries only names and numbers, never
arrays, so that it travels to any worker.

With a scheduler address the tasks go to that Dask distributed cluster [Dask-Distributed]
(``distributed.Client(address)``); without one to ``processes`` local processes
(:class:`concurrent.futures.ProcessPoolExecutor`).  Rows come back in grid order with the
point's settings and the figures of :data:`ROW_KEYS`.
"""

from __future__ import annotations

import itertools
import math
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from ingest.workload.common import WorkloadInputError

MAX_POINTS = 1_000  # grid points of one sweep
SCHEDULER_TIMEOUT_S = 30.0  # connecting to a Dask scheduler
TASK_TIMEOUT_S = 6 * 3600.0  # one point's simulation, at the most
ROW_KEYS = (
    "jobs_count",
    "jobs_completed_count",
    "mean_wait_s",
    "median_wait_s",
    "mean_turnaround_s",
    "utilisation_frac",
    "allocated_frac",
    "energy_mwh",
    "tokens_count",
    "tokens_per_mwh",
    "sim_wall_s",
)


@dataclass(frozen=True)
class SweepSpec:
    """One site, one generated workload, a horizon and the grid of policy settings."""

    site: str
    generate: str
    days: float
    grid: tuple[tuple[str, tuple[str, ...]], ...]  # (policy key, values as text)
    seed: int = 0
    failures: bool = True

    def points(self) -> list[dict[str, str]]:
        """Every combination of the grid's values, in order (the last key varies fastest)."""
        keys = [k for k, _ in self.grid]
        return [dict(zip(keys, combo)) for combo in itertools.product(*(v for _, v in self.grid))]


def parse_grid(items: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``KEY=V1,V2,…`` items into the grid (a key twice, or an empty value list, is refused)."""
    out: dict[str, tuple[str, ...]] = {}
    for item in items:
        key, sep, values = item.partition("=")
        vals = tuple(v.strip() for v in values.split(",") if v.strip())
        if not sep or not key.strip() or not vals:
            raise WorkloadInputError(f"--grid: expected KEY=V1,V2,…, got {item!r}")
        if key.strip() in out:
            raise WorkloadInputError(f"--grid: {key.strip()!r} given twice")
        out[key.strip()] = vals
    n = math.prod(len(v) for v in out.values()) if out else 0
    if not 1 <= n <= MAX_POINTS:
        raise WorkloadInputError(f"--grid: {n} points; a sweep takes 1 … {MAX_POINTS:,}")
    return tuple(out.items())


def run_point(spec: SweepSpec, point: dict[str, str]) -> dict:
    """One grid point: the site, the workload and the policy with ``point``'s settings, simulated."""
    from ingest.workload import run
    from twin.fleet.policy import Policy
    from twin.fleet.simulate import SimOptions
    from twin.site.load import load_site

    state = load_site(spec.site)
    wl = run.parse_generate(spec.generate, state.n_gpus, spec.days, spec.seed, state)
    base = run.build_policy(Policy(), wl, None, state)
    policy = run.policy_changes(",".join(f"{k}={v}" for k, v in point.items()), base, "--grid")
    rep = run.simulate(
        state, wl, policy, SimOptions(horizon_s=spec.days * 86_400.0, failures=spec.failures, seed=spec.seed)
    )
    return {"point": dict(point), **{k: rep[k] for k in ROW_KEYS}}


def check(spec: SweepSpec) -> None:
    """Refuse a bad point before any task runs (each point's policy is built once here, cheaply)."""
    from ingest.workload.run import policy_changes
    from twin.fleet.policy import Policy

    for point in spec.points():
        policy_changes(",".join(f"{k}={v}" for k, v in point.items()), Policy(), "--grid")


def run_sweep(spec: SweepSpec, scheduler: str | None = None, processes: int = 2) -> list[dict]:
    """Every point of ``spec``, on the Dask cluster at ``scheduler`` or on ``processes`` local processes."""
    check(spec)
    points = spec.points()
    if scheduler:
        return _on_dask(spec, points, scheduler)
    if not 1 <= processes <= 256:
        raise WorkloadInputError(f"--processes must be within 1 … 256, got {processes}")
    with ProcessPoolExecutor(max_workers=min(processes, len(points))) as pool:
        futures = [pool.submit(run_point, spec, p) for p in points]
        return [f.result(timeout=TASK_TIMEOUT_S) for f in futures]


def _on_dask(spec: SweepSpec, points: list[dict[str, str]], address: str) -> list[dict]:
    from distributed import Client, wait

    try:
        client = Client(address, timeout=SCHEDULER_TIMEOUT_S)
    except OSError as exc:
        raise WorkloadInputError(f"--scheduler {address}: cannot reach a Dask scheduler ({exc})") from None
    try:
        futures = client.map(run_point, [spec] * len(points), points, pure=False)
        wait(futures, timeout=TASK_TIMEOUT_S)
        return client.gather(futures)
    finally:
        client.close()
