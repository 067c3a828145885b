"""Benchmark of site loading (file → validated struct-of-arrays state)."""

from __future__ import annotations

from functools import partial
from typing import Any

from twin.bench import benchmark, best_of
from twin.site.catalogue import load_catalogue
from twin.site.load import load_site


@benchmark("site_load")
def site_load_benchmark() -> dict[str, Any]:
    """Best-of-5 load time of each reference site (target: colossus ≤ 3 s)."""
    load_catalogue()
    result: dict[str, Any] = {}
    for name in ("demo", "colossus"):
        result[f"{name}_load_s"] = best_of(partial(load_site, name), repeat=5)
        result[f"{name}_gpus"] = load_site(name).n_gpus
    return result
