"""Benchmark of the live twin on colossus: synthetic generation rate and reading-to-state lag."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from ingest.live.runtime import build_hub
from twin.bench import benchmark

T0 = datetime(2024, 7, 22, 15, 0, tzinfo=UTC)


@benchmark("live_step")
def live_step_benchmark(site: str = "colossus", steps: int = 30) -> dict:
    """``steps`` 1 Hz live steps with the synthetic source, recording every frame to a fresh SQLite file.

    ``synthetic_hz`` is how many synthetic frames per second the plant + sensor model can
    produce (target ≥ 1 Hz); ``lag_ms`` runs from readings entering the buffer to the
    snapshot being published (twin tick, frame write, alerts); ``realtime_ratio`` is the
    1 s tick period over the whole step's time.
    """
    with tempfile.TemporaryDirectory(prefix="clustertwin-bench-") as tmp:
        hub = build_hub(site, f"sqlite:///{Path(tmp) / 'live.db'}", start=T0, seed=1, record_every_s=1.0)
        timings = []
        for i in range(steps):
            hub.step(T0 + timedelta(seconds=i))
            timings.append(hub.timing)
        hub.db.dispose()
    med = lambda attr: float(np.median([getattr(t, attr) for t in timings[1:]]))  # noqa: E731
    return {
        "site": site,
        "gpus": hub.state.n_gpus,
        "synthetic_ms": med("synthetic_ms"),
        "synthetic_hz": 1000.0 / med("synthetic_ms"),
        "twin_tick_ms": med("twin_ms"),
        "record_ms": med("record_ms"),
        "alerts_ms": med("alerts_ms"),
        "step_ms": med("total_ms"),
        "lag_ms": med("lag_ms"),
        "realtime_ratio": 1000.0 / med("total_ms"),
    }
