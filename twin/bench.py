"""Benchmark registry behind ``clustertwin bench``.

Areas register functions with :func:`benchmark`; each returns a flat dict of figures
(units in the keys, ``*_ratio`` for comparisons against a named peer measured in the
same run).  ``clustertwin bench --json`` runs them all.  Packages name the modules that
register benchmarks in the ``clustertwin.benchmarks`` entry-point group.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

BENCH_GROUP = "clustertwin.benchmarks"

_REGISTRY: dict[str, Callable[..., dict[str, Any]]] = {}


def benchmark(name: str) -> Callable[[Callable[..., dict[str, Any]]], Callable[..., dict[str, Any]]]:
    """Register ``func`` as benchmark ``name``."""

    def decorate(func: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        _REGISTRY[name] = func
        return func

    return decorate


def registry() -> dict[str, Callable[..., dict[str, Any]]]:
    """All registered benchmarks, importing every area's benchmark module first."""
    for ep in sorted(entry_points(group=BENCH_GROUP), key=lambda ep: ep.name):
        ep.load()
    return dict(_REGISTRY)


def best_of(func: Callable[[], object], repeat: int = 5, min_time_s: float = 0.0) -> float:
    """Smallest wall time of ``repeat`` calls of ``func`` in seconds (noise-robust)."""
    best = float("inf")
    start_all = time.perf_counter()
    runs = 0
    while runs < repeat or time.perf_counter() - start_all < min_time_s:
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
        runs += 1
    return best
